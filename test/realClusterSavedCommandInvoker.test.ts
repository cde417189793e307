/**
 * An invoker of the saved commands gets no credential out of them, whatever they send (docs/security.md#cloud-assistant-rights).
 * World: the emulator's Cloud Assistant (InvokeCommand called directly with the invoker's own values — their own X25519
 * key wherever a key fits, channels they opened themselves — bypassing the project's client) in front of the real
 * control plane (test/kube; `npm run kube:build`): a master's commands run with the real kubectl and kubeadm and the
 * cluster's admin kubeconfig (test/kube/operations.ts), a node's in a sandbox holding what a joined node holds (its
 * kubelet credential, a secret received for a pending join, an old log line with a token). Each answer is searched for
 * a credential: a bootstrap token, a private key or client key, a service-account token, a certificate key, anything
 * sealed that the invoker's key opens; and the cluster for one made by the call (a new token, certificate key Secret or
 * service-account token). A one-off operation run the same way (RunCommand: who may call it may run anything) is the
 * control that the search finds what token-create would hand out.
 */
import * as assert from "node:assert/strict";
import { callApi } from "../src/cloud/openapi";
import { newChannelId, newRecipient, seal, type Recipient } from "../src/cloud/channel";
import { nodeCommandSpecs } from "../src/components/nodeCommands";
import { fillOperation, OPERATIONS, type ParameterName } from "../src/rules";
import { renderAttachCommand, renderControlPlaneJoinCommand, renderOperation, renderUpgradeCommand } from "../src/shell/render";
import { useEmulator } from "../testing/emulator/fixture";
import { createCommand } from "../testing/savedCommands";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { decompress } from "../src/cloud/operations";
import { useRealCluster } from "./kube/fixture";

const REGION = "cn-hangzhou";
const CLIENT_KEY = "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUp0a2V5LW9mLXRoZS1ub2RlCi0tLS0tRU5EIEVDIFBSSVZBVEUgS0VZLS0tLS0K";
const PENDING = { channel: "fedcba9876543210fedcba9876543210", secret: `k9x2ab.0123456789abcdef ${"c3".repeat(32)} -` };

/** A gzip + Base64 answer (the listing and doctor commands) decoded, "" for any other. */
function unpack(text: string): string {
    try { return decompress(text); } catch { return ""; }
}

/** What shows that a command ran where the secrets are: the token list read and blanked, the node's old log read and blanked. */
const EVIDENCE: Record<string, RegExp> = {
    "doctor-join": /"token": "[a-z0-9]{6}\.<redacted>"[\s\S]*readyz check passed/,
    "doctor-bootstrap-log": /--token k9x2ab\.<redacted>/,
    "token-delete": /already gone/,
    "channel-receive": /^received$/m,
};

/** Every credential-shaped thing in `text`, and whatever sealed text `key` opens. */
function credentialsIn(text: string, key: Recipient): string[] {
    const found: string[] = [];
    for (const t of [text, unpack(text)]) {
        for (const [what, re] of [["a bootstrap token", /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/], ["a private key", /PRIVATE KEY-----/], ["a client key", /client-key-data:\s*\S{8}/],
            ["a service-account token", /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\./], ["a certificate key", /\b[0-9a-f]{64}\b/], ["the node's key", new RegExp(CLIENT_KEY.slice(0, 24))]] as const) {
            if (re.test(t)) found.push(what);
        }
        for (const m of t.matchAll(/MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=\.[A-Za-z0-9+/]+={0,2}/g)) {
            try { found.push(`sealed to the invoker's key: ${key.open(m[0]).slice(0, 6)}…`); } catch { /* not theirs */ }
        }
    }
    return found;
}

describe("an invoker of the saved commands, with their own key, gets no credential (real control plane)", function () {
    this.timeout(240_000);
    const ctx = useEmulator();
    const rc = useRealCluster({ region: REGION });
    let ops: RealOperations;
    let master: string;
    let node: string;

    /** What the call left behind in the cluster: bootstrap tokens, the certificate-key Secret, service-account token Secrets. */
    const clusterSecrets = async () => {
        const json = JSON.parse(await rc.c.kubectl(["get", "secrets", "-A", "-o", "json"])) as { items: Array<{ type: string; metadata: { namespace: string; name: string; resourceVersion: string } }> };
        return json.items.filter((s) => ["bootstrap.kubernetes.io/token", "kubernetes.io/service-account-token"].includes(s.type) || s.metadata.name === "kubeadm-certs")
            .map((s) => `${s.metadata.namespace}/${s.metadata.name}@${s.metadata.resourceVersion}`).sort();
    };
    /** InvokeCommand as the invoker calls it, and the answer once done. */
    const invoke = async (commandId: string, instance: string, parameters: Record<string, string>) => {
        const { InvokeId } = await callApi("ecs", "InvokeCommand", { CommandId: commandId, InstanceId: [instance], Parameters: JSON.stringify(parameters) }, { region: REGION }) as { InvokeId: string };
        return rc.c.waitFor(`invocation ${InvokeId}`, async () => {
            const r = await callApi("ecs", "DescribeInvocationResults", { InvokeId, ContentEncoding: "PlainText" }, { region: REGION }) as
                { Invocation: { InvocationResults: { InvocationResult: Array<{ InvocationStatus: string; Output: string; ExitCode: number }> } } };
            const res = r.Invocation.InvocationResults.InvocationResult[0];
            return res && !["Pending", "Running"].includes(res.InvocationStatus) ? res : undefined;
        }, 120_000);
    };

    beforeEach(() => {
        const { emu } = ctx;
        master = emu.addInstance({ regionId: REGION }).instanceId;
        node = emu.addInstance({ regionId: REGION }).instanceId;
        ops = answerWithRealCluster(emu, rc.c, { master });
        // Every command (saved, or one-off as the control): on the master against the real cluster, else on the node.
        emu.onCommand(/[\s\S]/, async (c) => (c.instanceId === master ? ops.runOnMaster(c.script) : (async () => {
            const r = await ops.node(c.instanceId).run(c.script, { AK_RETRY_DELAY: "0", AK_API_WAIT_ATTEMPTS: "1", AK_JOIN_ATTEMPTS: "1" });
            return { exitCode: r.code, output: r.stdout + r.stderr };
        })()));
        // What a joined node holds.
        const sb = ops.node(node);
        sb.write("/etc/kubernetes/kubelet.conf", `apiVersion: v1\nkind: Config\nusers:\n- name: default-auth\n  user:\n    client-key-data: ${CLIENT_KEY}\n`);
        sb.write(`/run/alicloud-kubeadm/${PENDING.channel}`, `${PENDING.secret}\n`);
        sb.write("/var/log/alicloud-kubeadm/attach-node.log", "kubeadm join 192.168.0.10:6443 --token k9x2ab.0123456789abcdef\n");
    });
    afterEach(() => ops.cleanup());

    const saved = [
        ...nodeCommandSpecs("t").map(({ op, args }) => ({ name: op as string, on: OPERATIONS[op].on, parameters: OPERATIONS[op].parameters as readonly ParameterName[], script: args.script })),
        ...([["attach", renderAttachCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"ab".repeat(32)}`, poolName: "existing" })],
            ["control-plane-join", renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"ab".repeat(32)}` })],
            ["upgrade", renderUpgradeCommand({ region: REGION, kubernetesVersion: "1.36.3" })]] as const)
            .map(([name, script]) => ({ name, on: "node" as const, parameters: OPERATIONS[name].parameters as readonly ParameterName[], script })),
    ];

    it("covers every saved command, and none of them takes a key to answer to", () => {
        assert.deepEqual(saved.map((s) => s.name).sort(), [...Object.keys(OPERATIONS).filter((op) => OPERATIONS[op as keyof typeof OPERATIONS].saved)].sort());
        assert.ok(saved.every((s) => !s.parameters.includes("recipient")), "no saved command seals an answer to a key its invoker names");
    });

    for (const command of saved) {
        it(`${command.name}: run with the invoker's own values, no credential in its answer or made in the cluster`, async () => {
            const key = newRecipient();
            const commandId = await createCommand(REGION, { commandName: `t-${command.name}`, script: command.script, parameters: command.parameters.length > 0, timeoutSeconds: 120, description: "invoker test" });
            const target = command.on === "master" ? master : node;
            // The invoker's own channel on the node: opened by them, their payload sealed to its key.
            const channel = newChannelId();
            let sealed = seal(key.publicKey, "x");
            if (command.parameters.includes("sealed")) {
                const open = await invoke((await createCommand(REGION, { commandName: "t-open", script: nodeCommandSpecs("t").find((s) => s.op === "channel-open")!.args.script,
                    parameters: true, timeoutSeconds: 60, description: "invoker test" })), target, { channel });
                sealed = seal(open.Output.trim(), `${"a".repeat(6)}.${"b".repeat(16)}`);
            }
            const values: Record<ParameterName, string> = {
                node: `${REGION}.i-invokertest`, nodes: `${REGION}.i-invokertest`, selector: "", timeout: "20", force: "true", skipWait: "1", mark: "removing", member: "nobody", peerIp: "", etcdNode: `${REGION}.i-master0`,
                tokenId: "abcdef", ttl: "0", description: "mine", recipient: key.publicKey, channel: command.parameters.includes("sealed") ? channel : PENDING.channel, sealed,
                credential: "alicloud-kubeadm-stack-abcd1234", labels: "", taints: "", lines: "200", upgradeStep: "status", step: "status", restoreId: "0123456789abcdef", discardCa: "", pool: "general", taintMode: "add", outdated: `${REGION}.i-invokertest`,
            };
            const before = await clusterSecrets();
            const r = await invoke(commandId, target, Object.fromEntries(command.parameters.map((n) => [n, values[n]])));
            assert.deepEqual(credentialsIn(r.Output, key), [], `${command.name} (exit ${r.ExitCode}) answered:\n${r.Output.slice(0, 2000)}`);
            // It did run where the credentials are: these answers show it (read, and blanked).
            const seen = EVIDENCE[command.name];
            if (seen) assert.match(`${r.Output}\n${unpack(r.Output)}`, seen, `${command.name} ran against the cluster / the node`);
            assert.deepEqual(await clusterSecrets(), before, `${command.name} made or changed no token, certificate key or service-account token`);
        });
    }

    it("control: the one-off token-create, were it a saved command, would hand the invoker a token — the search finds it", async () => {
        const key = newRecipient();
        const script = fillOperation(renderOperation("token-create"), "token-create", { tokenId: "zz9zz9", ttl: "10m", description: "invoker", recipient: key.publicKey });
        const { InvokeId } = await callApi("ecs", "RunCommand", { Type: "RunShellScript", CommandContent: Buffer.from(script).toString("base64"), ContentEncoding: "Base64",
            InstanceId: [master], Timeout: 60 }, { region: REGION }) as { InvokeId: string };
        const out = await rc.c.waitFor("token-create", async () => {
            const r = await callApi("ecs", "DescribeInvocationResults", { InvokeId, ContentEncoding: "PlainText" }, { region: REGION }) as
                { Invocation: { InvocationResults: { InvocationResult: Array<{ InvocationStatus: string; Output: string }> } } };
            const res = r.Invocation.InvocationResults.InvocationResult[0];
            return res?.InvocationStatus === "Success" ? res.Output : undefined;
        }, 60_000);
        assert.deepEqual(credentialsIn(out, key).map((f) => f.replace(/: .*/, "")), ["sealed to the invoker's key"]);
        await rc.c.run("kubeadm", ["token", "delete", "zz9zz9", "--kubeconfig", rc.c.kubeconfig]);
    });
});
