/**
 * Every dynamic resource declares its own secret outputs (`additionalSecretOutputs`), whatever
 * its caller passes in: a secret input given as a plain value still comes back secret. The list per resource is
 * here, and every dynamic resource class in src/providers must be in it.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { installMocks, type Recorder } from "../testing/mockRuntime";

/** Per resource class: its secret outputs. A new dynamic resource must be added here. */
const EXPECTED: Record<string, string[]> = {
    JoinInfo: ["caCertHash", "kubeconfig"],
    BootstrapToken: ["token"],
    ApiServerReady: ["kubeconfig"],
    NodeMembership: ["userData", "token"],
    ControlPlaneMember: [],
    PoolCapacity: [],
    BakedImage: [],
    BackupKey: ["privateKey", "retired"],
    MasterMaintenance: [],
    MasterReplacementGuard: [],
    AdmissionCertificate: ["keyPem"],
    ControlPlaneVersion: [],
    NodeVersions: [],
};

describe("secret outputs declared by each dynamic resource", () => {
    let recorder: Recorder;
    before(() => { recorder = installMocks({ stack: "secret-outputs-test" }); });

    it("every dynamic resource class in src/providers is listed", () => {
        const dir = path.join(__dirname, "..", "src", "providers");
        const classes = fs.readdirSync(dir).flatMap((f) => [...fs.readFileSync(path.join(dir, f), "utf8").matchAll(/export class (\w+) extends pulumi\.dynamic\.Resource/g)].map((m) => m[1]));
        assert.deepStrictEqual(classes.sort(), Object.keys(EXPECTED).sort());
    });

    it("each registers exactly its secret outputs, with plain (non-secret) inputs from its caller", async () => {
        const { JoinInfo } = await import("../src/providers/joinInfo");
        const { BootstrapToken } = await import("../src/providers/bootstrapToken");
        const { ApiServerReady } = await import("../src/providers/apiServerReady");
        const { NodeMembership } = await import("../src/providers/nodeMembership");
        const { ControlPlaneMember } = await import("../src/providers/controlPlaneMember");
        const { PoolCapacity } = await import("../src/providers/poolCapacity");
        const { BakedImage } = await import("../src/providers/bakedImage");
        const { BackupKey } = await import("../src/providers/backupKey");
        const { MasterMaintenance } = await import("../src/providers/masterMaintenance");
        const { MasterReplacementGuard } = await import("../src/providers/masterGuard");
        const { AdmissionCertificate } = await import("../src/providers/admissionCertificate");
        const { ControlPlaneVersion } = await import("../src/providers/controlPlaneVersion");
        const { NodeVersions } = await import("../src/providers/nodeVersions");
        const access = { region: "cn-hangzhou", masterInstanceId: "i-master0", commands: { "list-nodes": "c-1" } as never };
        new JoinInfo("join-info", { region: "cn-hangzhou", masterInstanceId: "i-master0", kubeconfigServer: "https://x:6443", scripts: { initStatus: "", stackCredential: "", stackCredentialRevoke: "" } });
        new BootstrapToken("token", { ...access, tokenCreateScript: "" });
        new ApiServerReady("ready", { kubeconfig: "apiVersion: v1" });
        new NodeMembership("membership", { ...access, instanceId: "i-node", mode: "manual", attachCommandId: "c-attach", token: "abcdef.0123456789abcdef" });
        new ControlPlaneMember("member", { ...access, memberInstanceId: "i-member", joinCommandId: "c-join", joinSecretsScript: "" });
        new PoolCapacity("capacity", { ...access, scalingGroupId: "asg-1", poolName: "general" });
        new BakedImage("baked", { region: "cn-hangzhou", executionId: "exec-1", imageNamePrefix: "dev-node-1-36-3-abc" });
        new BackupKey("backup-key", { generation: 1 });
        new MasterMaintenance("maintenance", { region: "cn-hangzhou", masterInstanceIds: ["i-master0"], commandId: "c-m" });
        new AdmissionCertificate("admission-tls", { addresses: ["192.168.0.10"] });
        new MasterReplacementGuard("guard", { region: "cn-hangzhou", masters: [{ name: "c-master-0", zone: "cn-hangzhou-h", systemDiskCategory: "cloud_essd" }] });
        new ControlPlaneVersion("version", { ...access, targetVersion: "1.36.3", upgradeCommandId: "c-upgrade", autoscaled: false, autoscalerVersion: "", instanceType: "ecs.g7.large" });
        new NodeVersions("node-versions", { ...access, version: "1.36.3", targetVersion: "1.36.3", upgradeCommandId: "c-upgrade" });
        await recorder.settle();
        const byName: Record<string, string> = { JoinInfo: "join-info", BootstrapToken: "token", ApiServerReady: "ready", NodeMembership: "membership", ControlPlaneMember: "member", PoolCapacity: "capacity", BakedImage: "baked", BackupKey: "backup-key", MasterMaintenance: "maintenance", MasterReplacementGuard: "guard",
            AdmissionCertificate: "admission-tls", ControlPlaneVersion: "version", NodeVersions: "node-versions" };
        for (const [cls, name] of Object.entries(byName)) {
            const [r] = recorder.resources.filter((x) => x.name === name);
            assert.ok(r, `${cls} registered`);
            assert.deepStrictEqual([...r.secretOutputs].sort(), [...EXPECTED[cls]].sort(), `${cls}'s secret outputs`);
        }
    });
});
