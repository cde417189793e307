// World: the functions and files themselves: no cluster, no cloud.
/**
 * The dynamic resources' diff policies (src/providers/diff.ts): every input of a resource is a replacement, an
 * update or explicitly no change, checked when the code compiles; a change of an input that no list named used
 * to be invisible (NodeMembership's `admission`). Pure: the providers' diff and update, no cloud.
 */
import * as assert from "node:assert/strict";
import { diffInputs, inputDiff } from "../src/providers/diff";
import { NODE_MEMBERSHIP_PROVIDER_VERSION, nodeMembershipProvider, type NodeMembershipInputs } from "../src/providers/nodeMembership";
import type { NodeCommandIds } from "../src/rules";

interface Sample { id: string; size?: number; wait?: number }

describe("dynamic resources: diff policies name every input", () => {
    it("a policy that leaves an input out does not compile; a complete one classifies each change", () => {
        // @ts-expect-error `wait` is in no list (npm test type-checks this file: the error must be there)
        inputDiff<Sample>()({ replace: ["id"], update: ["size"], ignore: [] });
        const policy = inputDiff<Sample>()({ replace: ["id"], update: ["size"], ignore: ["wait"] });
        assert.deepEqual(diffInputs(policy, { id: "a", size: 1 }, { id: "b", size: 1 }), { changes: true, replaces: ["id"] });
        assert.deepEqual(diffInputs(policy, { id: "a", size: 1 }, { id: "a", size: 2 }), { changes: true, replaces: [] });
        assert.deepEqual(diffInputs(policy, { id: "a", wait: 1 }, { id: "a", wait: 2 }), { changes: false, replaces: [] });
    });

    describe("NodeMembership: joining through admission", () => {
        const commands = { "list-nodes": "c-list", drain: "c-drain" } as unknown as NodeCommandIds;
        const manual: NodeMembershipInputs = {
            region: "cn-hangzhou", instanceId: "i-bp1exampleexample01", mode: "manual", attachCommandId: "c-attach", labels: "", taints: "",
            masterInstanceId: "i-master0", commands, replaceSystemDisk: false, providerVersion: NODE_MEMBERSHIP_PROVIDER_VERSION,
        };
        const outputs = { nodeName: "cn-hangzhou.i-bp1exampleexample01", providerId: "cn-hangzhou.i-bp1exampleexample01" };

        it("a change of `admission` alone is an update in place, never a re-join", async () => {
            const olds = { ...manual, token: "abcdef.0123456789abcdef", ...outputs };
            const diff = await nodeMembershipProvider.diff!("m", olds, { ...manual, token: "abcdef.0123456789abcdef", admission: true });
            assert.deepEqual([diff.changes, diff.replaces], [true, []]);
        });

        it("state written by version 2 (no `admission`): one `pulumi up` updates it in place, the next sees no change", async () => {
            const v2 = { ...manual, providerVersion: "2", token: "abcdef.0123456789abcdef", ...outputs };
            const news: NodeMembershipInputs = { ...manual, admission: true };
            const diff = await nodeMembershipProvider.diff!("m", v2, news);
            assert.deepEqual([diff.changes, diff.replaces], [true, []], "an update, not a replacement (which would drain and re-join)");
            const { outs } = await nodeMembershipProvider.update!("m", v2, news);
            assert.deepEqual([outs.admission, outs.providerVersion, outs.nodeName, outs.providerId], [true, NODE_MEMBERSHIP_PROVIDER_VERSION, outputs.nodeName, outputs.providerId]);
            const again = await nodeMembershipProvider.diff!("m", outs, news);
            assert.equal(again.changes, false);
        });
    });
});
