// World: Pulumi's own function serialization of each dynamic provider, no cloud.
// Every dynamic provider must survive Pulumi's function serialization (it runs in another process)
// without capturing a credential: credentials are read at call time from the Alibaba chain.
import * as assert from "assert";
import * as pulumi from "@pulumi/pulumi";
import { apiServerReadyProvider } from "../src/providers/apiServerReady";
import { bakedImageProvider } from "../src/providers/bakedImage";
import { bootstrapTokenProvider } from "../src/providers/bootstrapToken";
import { controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { joinInfoProvider } from "../src/providers/joinInfo";
import { nodeMembershipProvider } from "../src/providers/nodeMembership";
import { poolCapacityProvider } from "../src/providers/poolCapacity";
import { removeNode } from "../src/removal";
import type { NodeCommandIds } from "../src/rules";

/** A provider whose delete runs the removal core, as NodeMembership's and PoolCapacity's do. */
const removalProvider = {
    async delete(_id: string, props: { instanceId: string }) {
        await removeNode({ instanceId: props.instanceId, kind: "existing" }, { region: "cn-hangzhou", masterInstanceIds: ["i-x"], commands: {} as NodeCommandIds });
    },
};

/** [name, provider, text its serialization must contain (proves the code was captured)]. */
const PROVIDERS: Array<[string, object, RegExp]> = [
    ["JoinInfo", joinInfoProvider, /kubeadm init failed on master 0/],
    ["BootstrapToken", bootstrapTokenProvider, /token-create/],
    ["ControlPlaneMember", controlPlaneMemberProvider, /upload-certs/],
    ["NodeMembership", nodeMembershipProvider, /ReplaceSystemDisk/],
    ["PoolCapacity", poolCapacityProvider, /ModifyScalingGroup/],
    ["ApiServerReady", apiServerReadyProvider, /readyz/],
    ["BakedImage", bakedImageProvider, /DescribeImagePipelineExecutions/],
    ["removal core", removalProvider, /drain/],
];

describe("dynamic provider serialization", () => {
    const KEYS = ["ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALICLOUD_KUBEADM_ENDPOINT"];
    let saved: Array<string | undefined>;
    before(() => {
        saved = KEYS.map((k) => process.env[k]);
        process.env.ALIBABA_CLOUD_ACCESS_KEY_ID = "LTAI-distinctive-serialization-id";
        process.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET = "distinctive-serialization-secret";
        process.env.ALIBABA_CLOUD_SECURITY_TOKEN = "distinctive-serialization-token";
        process.env.ALICLOUD_KUBEADM_ENDPOINT = "http://127.0.0.1:9/distinctive-endpoint";
    });
    after(() => KEYS.forEach((k, i) => (saved[i] === undefined ? delete process.env[k] : (process.env[k] = saved[i]))));

    for (const [name, provider, marker] of PROVIDERS) {
        it(`${name} serializes without capturing credentials or the endpoint`, async () => {
            const text = (await pulumi.runtime.serializeFunction(() => provider)).text;
            assert.match(text, marker);
            assert.ok(!text.includes("distinctive-serialization"), "no credential in the serialized provider");
            assert.ok(!text.includes("distinctive-endpoint"), "no endpoint captured either");
            // delete runs the last deployment's code, maybe from a consumer's node_modules: it must not depend on files.
            assert.doesNotMatch(text, /readFileSync|readdirSync/, "a dynamic provider never reads a file when it runs");
        });
    }
});
