// World: each dynamic provider's functions called directly, against the OpenAPI emulator (testing/emulator), the Kubernetes
// double (testing/fakeCluster.ts) and, for ApiServerReady, a local HTTPS server; inputs and outputs cross the protobuf
// Struct the dynamic provider server sends them in (testing/partialUpdate.ts, the google-protobuf code the server uses).
/**
 * What a provider answers reaches the engine: its create's and update's outputs (and check's inputs) cross a protobuf
 * Struct, which has no `undefined` (docs/upstream.md#pulumi-partial-update), so a provider that returns one fails the real
 * `pulumi up` while every test under Pulumi's mocks passes. Each provider is created and updated here with its optional
 * inputs left out (only the waits the other tests shorten are set), as the SDK sends them: absent.
 */
import * as assert from "assert";
import * as https from "https";
import type { AddressInfo } from "net";
import { useEmulator } from "../testing/emulator/fixture";
import { fakeCluster, type FakeCluster } from "../testing/fakeCluster";
import { createCommand, operation } from "../testing/savedCommands";
import { engineCreate, engineUpdate, overGrpc } from "../testing/partialUpdate";
import { sealReply, installNodeChannels } from "./nodeChannel";
import { headerValue } from "./tools";
import { renderControlPlaneJoinCommand, renderOperation } from "../src/shell/render";
import { OPERATIONS, TOKEN_PATTERN } from "../src/rules";
import { withCarriedOutputs } from "../src/providers/partialUpdate";
import { admissionCertificateProvider, newAdmissionKey, publicKeyPin, signAdmissionCertificate } from "../src/providers/admissionCertificate";
import { apiServerReadyProvider } from "../src/providers/apiServerReady";
import { backupKeyProvider } from "../src/providers/backupKey";
import { bakedImageProvider } from "../src/providers/bakedImage";
import { bootstrapTokenProvider } from "../src/providers/bootstrapToken";
import { controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { controlPlaneVersionProvider } from "../src/providers/controlPlaneVersion";
import { joinInfoProvider } from "../src/providers/joinInfo";
import { masterGuardProvider } from "../src/providers/masterGuard";
import { masterMaintenanceProvider } from "../src/providers/masterMaintenance";
import { nodeMembershipProvider } from "../src/providers/nodeMembership";
import { nodeVersionsProvider } from "../src/providers/nodeVersions";
import { poolCapacityProvider } from "../src/providers/poolCapacity";
import type * as pulumi from "@pulumi/pulumi";

const REGION = "cn-hangzhou";
type State = Record<string, unknown>;

/** One `pulumi up` that creates the resource, and one that updates it to `news`: the states the engine stores. */
async function createThenUpdate(provider: pulumi.dynamic.ResourceProvider, inputs: State, news: State = inputs): Promise<[State, State]> {
    const created = await engineCreate<State, State>(inputs, (i) => provider.create!(i));
    let updated: State = {};
    await engineUpdate<State, State>(created, news, async (o, n) => (await provider.update!("x", o, n)).outs, (s) => { updated = s; });
    return [created, updated];
}

describe("dynamic providers' outputs reach the engine (a protobuf Struct: no undefined)", () => {
    const ctx = useEmulator();
    let c: FakeCluster;
    beforeEach(async () => { c = await fakeCluster(ctx.emu, REGION); });
    afterEach(() => assert.deepStrictEqual(c.violations, []));

    it("a provider's undefined outputs, at any depth, are left out as the SDK leaves out undefined inputs (array elements: null)", async () => {
        const provider = withCarriedOutputs({
            async create(inputs: State) { return { id: "x", outs: { ...inputs, gone: undefined, nested: { gone: undefined, kept: [1, undefined, { gone: undefined }] } } }; },
            async update(_id: string, _olds: State, news: State) { return { outs: { ...news, gone: undefined } }; },
            async read(id: string, props: State) { return { id, props: { ...props, gone: undefined, list: [undefined] } }; },
            async check(_olds: State, news: State) { return { inputs: { ...news, gone: undefined } }; },
        });
        const [created, updated] = await createThenUpdate(provider, { a: "1" }, { a: "2" });
        assert.deepStrictEqual(created, { a: "1", nested: { kept: [1, null, {}] } });
        assert.deepStrictEqual(updated, { a: "2" });
        assert.deepStrictEqual(overGrpc((await provider.read!("x", updated)).props), { a: "2", list: [null] });
        assert.deepStrictEqual(overGrpc((await provider.check!({}, { a: "3" })).inputs), { a: "3" });
    });

    it("AdmissionCertificate: created, then updated, with its optional inputs left out", async () => {
        const [created, updated] = await createThenUpdate(admissionCertificateProvider, { addresses: ["192.168.0.10"] }, { addresses: ["192.168.0.10", "192.168.0.11"] });
        assert.strictEqual(created.pin, publicKeyPin(created.keyPem as string));
        assert.deepStrictEqual([updated.pin, updated.addresses], [created.pin, ["192.168.0.10", "192.168.0.11"]], "re-signed with the same key");
    });

    it("ApiServerReady: created, then updated, with its optional inputs left out", async () => {
        const keyPem = newAdmissionKey();
        const { certPem } = signAdmissionCertificate(keyPem, ["127.0.0.1"]);
        const server = https.createServer({ key: keyPem, cert: certPem }, (_req, res) => res.writeHead(200).end("ok"));
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        try {
            const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
            const kubeconfig = `apiVersion: v1\nclusters:\n- name: k\n  cluster: {server: "${url}", certificate-authority-data: ${Buffer.from(certPem).toString("base64")}}\n` +
                "contexts:\n- name: a\n  context: {cluster: k, user: a}\ncurrent-context: a\nusers:\n- name: a\n  user: {}\n";
            const [created, updated] = await createThenUpdate(apiServerReadyProvider, { kubeconfig, pollSeconds: 0.02 });
            assert.deepStrictEqual([created.kubeconfig, updated.kubeconfig], [kubeconfig, kubeconfig]);
        } finally {
            await new Promise<void>((r) => server.close(() => r()));
        }
    });

    it("BackupKey: created, then updated, with its optional inputs left out", async () => {
        const [created, updated] = await createThenUpdate(backupKeyProvider, { generation: 1 }, { generation: 2 });
        assert.deepStrictEqual(updated.retired, [{ keyId: created.keyId, publicKey: created.publicKey, privateKey: created.privateKey }]);
    });

    it("BakedImage: created, then updated, with its optional inputs left out", async () => {
        ctx.emu.state.images.set("m-baked1", { imageId: "m-baked1", imageName: "dev-node-0123456789_20261203", status: "Available" });
        ctx.emu.state.imageBuilds.set("exec-1", { executionId: "exec-1", status: "SUCCESS", imageId: "m-baked1", errorInfo: "" });
        const [created, updated] = await createThenUpdate(bakedImageProvider, { region: REGION, executionId: "exec-1", imageNamePrefix: "dev-node-0123456789", pollIntervalMs: 20 });
        assert.deepStrictEqual([created.imageId, updated.imageId], ["m-baked1", "m-baked1"]);
    });

    it("BootstrapToken: created, then updated, with its optional inputs left out", async () => {
        ctx.emu.onCommand(operation("token-create"), (x) => ({ output: `created\n${sealReply(x.script, `${headerValue(x.script, "AK_TOKEN_ID")}.${"a".repeat(16)}`)}` }));
        const inputs = { region: REGION, masterInstanceId: c.master, commands: c.commands, tokenCreateScript: renderOperation("token-create"), pollIntervalMs: 20 };
        const [created, updated] = await createThenUpdate(bootstrapTokenProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.match(created.token as string, TOKEN_PATTERN);
        assert.strictEqual(updated.token, created.token);
    });

    it("ControlPlaneMember: created, then updated, with its optional inputs left out", async () => {
        const joinCommandId = await createCommand(REGION, {
            commandName: "test-control-plane-join", parameters: true, timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds,
            script: renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.34.2", apiEndpoint: "nlb-x.example:6443", caCertHash: `sha256:${"a".repeat(64)}` }),
            description: OPERATIONS["control-plane-join"].description,
        });
        const member = ctx.emu.addInstance({ regionId: REGION }).instanceId;
        const channels = installNodeChannels(ctx.emu);
        ctx.emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `k8sabc.0123456789abcdef ${"f".repeat(64)}`) }));
        // fake: a control-plane kubeadm join cannot run against the harness; the handler plays it
        ctx.emu.onCommand(/kubeadm join --config/, (x) => { channels.take(x.instanceId, x.script); c.addNode(member, { name: "master-1", controlPlane: true }); return { output: "" }; });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const inputs = { region: REGION, masterInstanceId: c.master, memberInstanceId: member, joinCommandId, commands: c.commands, joinSecretsScript: renderOperation("join-secrets"), pollSeconds: 0.02 };
        const [created, updated] = await createThenUpdate(controlPlaneMemberProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.deepStrictEqual([created.nodeName, updated.nodeName], ["master-1", "master-1"]);
    });

    it("ControlPlaneVersion: created, then updated, with its optional inputs left out", async () => {
        c = await fakeCluster(ctx.emu, REGION, { version: "1.35.4" });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const inputs = { region: REGION, masterInstanceId: c.master, commands: c.commands, targetVersion: "1.35.4", upgradeCommandId: "c-upgrade-1.35.4", autoscaled: false,
            autoscalerVersion: "", pollIntervalMs: 2, gateIntervalSeconds: 0.005 };
        const [created, updated] = await createThenUpdate(controlPlaneVersionProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.deepStrictEqual([created.runningVersion, updated.runningVersion, updated.apiServerVersions], ["1.35.4", "1.35.4", { "master-0": "1.35.4" }]);
    });

    it("JoinInfo: created, then updated, with its optional inputs left out", async () => {
        const caPem = signAdmissionCertificate(newAdmissionKey(), ["192.168.0.10"]).certPem;
        ctx.emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(caPem).toString("base64")}\n` });
        ctx.emu.onCommand(operation("stack-credential"), (x) => ({ output: sealReply(x.script, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln") }));
        const scripts = { initStatus: renderOperation("init-status"), stackCredential: renderOperation("stack-credential"), stackCredentialRevoke: renderOperation("stack-credential-revoke") };
        const inputs = { region: REGION, masterInstanceId: c.master, kubeconfigServer: "https://203.0.113.10:6443", scripts, pollSeconds: 0.05 };
        const [created, updated] = await createThenUpdate(joinInfoProvider, inputs);
        assert.strictEqual(updated.credential, created.credential);
        assert.strictEqual(updated.caCertHash, publicKeyPin(caPem));
    });

    it("MasterReplacementGuard: checked, created, then updated, with its optional inputs left out", async () => {
        const inputs = { region: REGION, masters: [{ name: "master-0", zone: "cn-hangzhou-h", systemDiskCategory: "cloud_essd" }] };
        const checked = overGrpc<State>((await masterGuardProvider.check!({}, inputs)).inputs);
        const [created, updated] = await createThenUpdate(masterGuardProvider, checked);
        assert.deepStrictEqual([created.masters, updated.masters], [inputs.masters, inputs.masters]);
    });

    it("MasterMaintenance: created, then updated, with its optional inputs left out", async () => {
        const ran: string[] = [];
        ctx.emu.onCommand(/maintenance-installed/, (x) => { ran.push(x.instanceId); return { output: "maintenance-installed\n" }; });
        const commandId = await createCommand(REGION, { commandName: "m1", script: "#!/bin/bash\necho maintenance-installed\n", parameters: false, timeoutSeconds: 60, description: "m" });
        const other = ctx.emu.addInstance({ regionId: REGION }).instanceId;
        const inputs = { region: REGION, masterInstanceIds: [c.master], commandId };
        const [, updated] = await createThenUpdate(masterMaintenanceProvider, inputs, { ...inputs, masterInstanceIds: [c.master, other] });
        assert.deepStrictEqual([ran, updated.masterInstanceIds], [[c.master, other], [c.master, other]]);
    });

    it("NodeMembership: created, then updated, with its optional inputs left out (no spec, labels or rollout: built outside an ExistingNode)", async () => {
        const node = ctx.emu.addInstance({ regionId: REGION }).instanceId;
        c.addNode(node, { name: "legacy-0" });
        const inputs = { region: REGION, instanceId: node, mode: "ssh", commands: c.commands, masterInstanceId: c.master, pollSeconds: 0.02, pollIntervalMs: 10 };
        const [created, updated] = await createThenUpdate(nodeMembershipProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.deepStrictEqual([created.nodeName, updated.nodeName, "joinedSpec" in updated], ["legacy-0", "legacy-0", false]);
    });

    it("NodeVersions: created, then updated, with its optional inputs left out", async () => {
        c = await fakeCluster(ctx.emu, REGION, { version: "1.35.4" });
        c.addNode(c.master, { name: "master-0", controlPlane: true });
        const worker = ctx.emu.addInstance({ regionId: REGION }).instanceId;
        c.addNode(worker, { name: "worker-0" });
        const inputs = { region: REGION, masterInstanceId: c.master, commands: c.commands, version: "1.35.4", targetVersion: "1.35.4", upgradeCommandId: "c-upgrade-1.35.4",
            pollIntervalMs: 2, gateIntervalSeconds: 0.005 };
        const [created, updated] = await createThenUpdate(nodeVersionsProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.deepStrictEqual([created.kubeletVersions, updated.kubeletVersions].map((v) => (v as Record<string, string>)["worker-0"]), ["1.35.4", "1.35.4"]);
    });

    it("PoolCapacity: created, then updated, with its optional inputs left out", async () => {
        const group = ctx.emu.addScalingGroup({ desiredCapacity: 1, maxSize: 1 }).scalingGroupId;
        const members = ctx.emu.scalingGroupInstances(group);
        members.forEach((id) => c.addNode(id, { pool: "general" }));
        const inputs = { region: REGION, scalingGroupId: group, poolName: "general", masterInstanceId: c.master, commands: c.commands, size: 1, pollSeconds: 0.02, pollIntervalMs: 10 };
        const [created, updated] = await createThenUpdate(poolCapacityProvider, inputs, { ...inputs, masterInstanceIds: c.masters });
        assert.deepStrictEqual([created.readyInstanceIds, updated.readyInstanceIds], [members, members]);
    });
});
