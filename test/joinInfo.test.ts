// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { useEmulator } from "../testing/emulator/fixture";
import { caCertHash, joinInfoProvider, readJoinInfo, revokeStackCredential, rewriteKubeconfigServer } from "../src/providers/joinInfo";
import { sealReply } from "./nodeChannel";
import { headerValue } from "./tools";
import { renderOperation } from "../src/shell/render";
import { operation } from "../testing/savedCommands";

/** A self-signed CA made with the openssl CLI, and its pin computed independently by openssl. */
function makeCa(kind: "rsa" | "ec"): { pem: string; pin: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-"));
    try {
        const key = path.join(dir, "ca.key");
        const crt = path.join(dir, "ca.crt");
        const keyArgs = kind === "rsa" ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];
        execFileSync("openssl", ["req", "-x509", ...keyArgs, "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=kubernetes"], { stdio: "ignore" });
        const pin = execFileSync("sh", ["-c", `openssl x509 -pubkey -noout -in ${crt} | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex | sed 's/^.* //'`], { encoding: "utf8" }).trim();
        return { pem: fs.readFileSync(crt, "utf8"), pin: `sha256:${pin}` };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

const ADMIN_CONF = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTi0tLS0t
    server: https://192.168.0.10:6443
  name: kubernetes
contexts:
- context: {cluster: kubernetes, user: kubernetes-admin}
  name: kubernetes-admin@kubernetes
current-context: kubernetes-admin@kubernetes
users:
- name: kubernetes-admin
  user: {client-certificate-data: Y2VydA==, client-key-data: a2V5}
`;

/** A service-account token as the token controller writes it (a JWT). */
const SA_TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06YWxpY2xvdWQta3ViZWFkbS1zdGFjayJ9.c2lnbmF0dXJl";

/** master 0's answer to stack-credential: the token sealed to the provider's one-use key; records the credential names. */
function stackCredential(made: string[]) {
    return (c: { script: string }) => {
        made.push(headerValue(c.script, "AK_CREDENTIAL") ?? "");
        return { output: sealReply(c.script, SA_TOKEN) };
    };
}

describe("JoinInfo", () => {
    const ctx = useEmulator();
    const scripts = { initStatus: renderOperation("init-status"), stackCredential: renderOperation("stack-credential"), stackCredentialRevoke: renderOperation("stack-credential-revoke") };
    const inputs = (masterInstanceId: string) => ({ region: "cn-hangzhou", masterInstanceId, kubeconfigServer: "https://203.0.113.10:6443", scripts, pollSeconds: 0.05, waitTimeoutSeconds: 5 });

    for (const kind of ["rsa", "ec"] as const) {
        it(`computes the CA pin of an ${kind.toUpperCase()} CA exactly as openssl does`, () => {
            const { pem, pin } = makeCa(kind);
            assert.match(pin, /^sha256:[0-9a-f]{64}$/);
            assert.strictEqual(caCertHash(pem), pin);
        });
    }

    it("waits for the init marker, then returns the CA hash and the kubeconfig pointed at the endpoint", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const ca = makeCa("ec");
        let checks = 0;
        emu.onCommand(operation("init-status"), () => {
            checks++;
            return checks < 3 ? { output: "status=waiting\n" } : { output: `status=done\n${Buffer.from(ca.pem).toString("base64")}\n` };
        });
        const made: string[] = [];
        emu.onCommand(operation("stack-credential"), stackCredential(made));
        const progress: string[] = [];
        const out = await readJoinInfo(inputs(master), (m) => progress.push(m));
        assert.strictEqual(checks, 3);
        assert.strictEqual(out.caCertHash, ca.pin);
        const kc = YAML.parse(out.kubeconfig);
        assert.strictEqual(kc.clusters[0].cluster.server, "https://203.0.113.10:6443");
        assert.strictEqual(Buffer.from(kc.clusters[0].cluster["certificate-authority-data"], "base64").toString(), ca.pem);
        assert.deepStrictEqual(kc.users[0].user, { token: SA_TOKEN }, "the service-account token, no client certificate");
        assert.deepStrictEqual(made, [out.credential]);
        assert.match(out.credential, /^alicloud-kubeadm-stack-[a-z0-9]{8}$/);
        assert.match(progress.join("\n"), new RegExp(`waiting for kubeadm init on ${master}`));
        assert.ok(progress.every((m) => !m.includes(SA_TOKEN)), "no token in progress messages");
        assert.deepStrictEqual(emu.mutatingCalls().map((c) => c.action), Array(4).fill("RunCommand"));
        // The token crossed sealed: no request body, URL or recorded output holds it.
        assert.ok(emu.calls.every((c) => !c.body.includes(SA_TOKEN) && !c.url.includes(SA_TOKEN)));
        assert.ok([...emu.state.invocations.values()].every((inv) => !JSON.stringify(inv).includes(SA_TOKEN)));
    });

    it("an update reads back the same credential; delete revokes it; replacement makes a new one", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const ca = makeCa("ec");
        emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(ca.pem).toString("base64")}\n` });
        const made: string[] = [];
        emu.onCommand(operation("stack-credential"), stackCredential(made));
        const revoked: string[] = [];
        emu.onCommand(operation("stack-credential-revoke"), (c) => { revoked.push(headerValue(c.script, "AK_CREDENTIAL") ?? ""); return { output: "revoked\n" }; });
        const first = await joinInfoProvider.create!(inputs(master));
        const updated = await joinInfoProvider.update!(first.id, first.outs, inputs(master));
        assert.strictEqual(updated.outs.credential, first.outs.credential, "an update keeps the credential");
        const second = await joinInfoProvider.create!(inputs(master));
        assert.notStrictEqual(second.outs.credential, first.outs.credential, "a replacement (create before delete) makes a new one");
        await joinInfoProvider.delete!(first.id, first.outs);
        assert.deepStrictEqual(made, [first.outs.credential, first.outs.credential, second.outs.credential]);
        assert.deepStrictEqual(revoked, [first.outs.credential], "the replaced credential is revoked");
    });

    it("a revoke that cannot run warns with the command to run by hand and never blocks the delete", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        emu.onCommand(operation("stack-credential-revoke"), { exitCode: 1, output: "The connection to the server was refused\n" });
        const warnings: string[] = [];
        await revokeStackCredential(inputs(master), "alicloud-kubeadm-stack-abcd1234", (m) => warnings.push(m));
        emu.releaseInstance(master);
        await revokeStackCredential(inputs(master), "alicloud-kubeadm-stack-abcd1234", (m) => warnings.push(m));
        assert.strictEqual(warnings.length, 2);
        assert.ok(warnings.every((w) => w.includes("kubectl -n kube-system delete secret alicloud-kubeadm-stack-abcd1234")), warnings.join("\n"));
    });

    it("a state from before the stack credential (admin.conf copy) gets a credential on update", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const ca = makeCa("rsa");
        emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(ca.pem).toString("base64")}\n` });
        emu.onCommand(operation("stack-credential"), stackCredential([]));
        const old = { ...inputs(master), scripts: { initStatus: scripts.initStatus, readKubeconfig: "cat admin.conf" }, kubeconfig: ADMIN_CONF, caCertHash: ca.pin, providerVersion: "1" };
        const diff = await joinInfoProvider.diff!("x", old, { ...inputs(master), providerVersion: "2" } as never);
        assert.strictEqual(diff.changes, true);
        assert.deepStrictEqual(diff.replaces, [], "an update, not a replacement");
        const out = await joinInfoProvider.update!("x", old, inputs(master));
        assert.deepStrictEqual(YAML.parse(out.outs.kubeconfig).users[0].user, { token: SA_TOKEN });
    });

    it("keeps waiting while the agent is not up yet", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        emu.setAgentOffline(master);
        const ca = makeCa("rsa");
        emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(ca.pem).toString("base64")}\n` });
        emu.onCommand(operation("stack-credential"), stackCredential([]));
        // The agent comes up after two refused tries.
        let tries = 0;
        emu.afterRequest = (req) => { if (req.action === "RunCommand" && ++tries === 2) emu.instances.get(master)!.agentOnline = true; };
        const out = await readJoinInfo(inputs(master));
        assert.strictEqual(out.caCertHash, ca.pin);
        assert.ok(tries >= 3, "it kept trying while the agent was down");
    });

    it("keeps waiting while RunCommand refuses the Running master synchronously (agent still registering)", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const ca = makeCa("ec");
        emu.inject("RunCommand", { status: 400, code: "InvalidInstance.NotMatch", message: "The specified instance type does not match the command.", times: 2 });
        emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(ca.pem).toString("base64")}\n` });
        emu.onCommand(operation("stack-credential"), stackCredential([]));
        const out = await readJoinInfo(inputs(master));
        assert.strictEqual(out.caCertHash, ca.pin);
        assert.strictEqual(emu.callsOf("RunCommand").filter((c) => c.code === "InvalidInstance.NotMatch").length, 2);
    });

    it("a failed init surfaces the tail of the init log and the fix", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        emu.onCommand(operation("init-status"), { output: "status=failed\nstatus=failed\nexit_code=1\n--- last lines of the init log:\n[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: exists\n" });
        await assert.rejects(readJoinInfo(inputs(master)), (err: Error) => {
            assert.match(err.message, new RegExp(`kubeadm init failed on master 0 \\(${master}\\)`));
            assert.match(err.message, /kube-apiserver\.yaml\]: exists/);
            assert.match(err.message, /kubeadm reset -f/);
            return true;
        });
        assert.strictEqual(emu.callsOf("RunCommand").length, 1, "no retry after a failed init");
    });

    it("gives up after the bounded wait with a message saying where to look", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        emu.onCommand(operation("init-status"), { output: "status=waiting\n" });
        await assert.rejects(readJoinInfo({ ...inputs(master), waitTimeoutSeconds: 0.3 }), /did not finish within 0 s.*master-init\.log/s);
    });

    it("rewrites every cluster server and refuses a kubeconfig without clusters", () => {
        const out = YAML.parse(rewriteKubeconfigServer(ADMIN_CONF, "https://nlb.example:6443"));
        assert.strictEqual(out.clusters[0].cluster.server, "https://nlb.example:6443");
        assert.throws(() => rewriteKubeconfigServer("apiVersion: v1\nkind: Config\n", "https://x:6443"), /no clusters section/);
    });
});
