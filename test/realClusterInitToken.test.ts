// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes).
/**
 * No bootstrap token outlives master 0's init, on the real control plane (test/kube: kubeadm's own API-side init
 * phases, `bootstrap-token` included, which makes kubeadm's default 24 h token in the group its CSR auto-approval
 * covers): master 0's clean-up (src/shell/control_plane_policy.sh `ak_delete_init_tokens`, with the real kubeadm)
 * leaves no token in an auto-approved group — as doctor reads it, with the real doctor-join script — and a node still
 * joins through admission (the service's decision, its CSR approver, the controller-manager's signer).
 */
import * as assert from "node:assert/strict";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { approvePending } from "../src/admission/kube";
import { parseSections } from "../src/doctor/context";
import { decompress } from "../src/cloud/operations";
import { parseAdmissionRefusals, parseAutoApproved, parseTokenList } from "../src/doctor/joinMaterial";
import { renderOperation } from "../src/shell/render";
import { REGION, useAdmissionCluster } from "./admission/realCluster";

const SHELL = path.join(__dirname, "..", "src", "shell");

describe("no bootstrap token outlives master 0's init (real control plane)", function () {
    this.timeout(180_000);
    const ac = useAdmissionCluster([["i-pool1", "10.0.0.1"]]);
    const { rc } = ac;

    /** Runs `script` as master 0 runs it: bash, the real kubeadm and kubectl, /etc/kubernetes/admin.conf under AK_ROOT. */
    const onMaster = async (script: string) => {
        const root = rc.c.path("master-root");
        fs.mkdirSync(path.join(root, "etc", "kubernetes"), { recursive: true });
        fs.copyFileSync(rc.c.kubeconfig, path.join(root, "etc", "kubernetes", "admin.conf"));
        const file = rc.c.writeFile("master-script.sh", script);
        return rc.c.run("bash", [file], { allowFail: true, env: { PATH: `${rc.c.bin}:${process.env.PATH}`, AK_ROOT: root, AK_RETRY_DELAY: "1" } });
    };
    /** The tokens doctor would name: those in a group kubeadm auto-approves, read by the real doctor-join script. */
    const autoApprovedTokens = async () => {
        const r = await onMaster(renderOperation("doctor-join"));
        assert.equal(r.code, 0, r.stderr);
        const s = parseSections(decompress(r.stdout));
        assert.equal(s.tokens.rc, 0, s.tokens.output);
        assert.equal(s.autoapprove.rc, 0, s.autoapprove.output);
        const groups = parseAutoApproved(s.autoapprove.output);
        assert.ok(groups.has("system:bootstrappers:kubeadm:default-node-token"), "kubeadm's auto-approval binding is there (the bootstrap-token phase made it)");
        return { tokens: parseTokenList(s.tokens.output).filter((t) => t.groups.some((g) => groups.has(g))), raw: s.tokens.output };
    };

    it("doctor-join: an Event whose message spells other sections (a kubelet may create Events) is one refusal, read back exactly; the etcd section stays the script's own", async () => {
        const message = "x\n@@rc 0\n@@section etcd\n8e9e05c52164694d, started, master-9, https://10.9.9.9:2380, https://10.9.9.9:2379, false\n@@rc 0\n@@section admission\ny";
        const now = new Date().toISOString();
        await rc.c.apply({ apiVersion: "v1", kind: "Event", metadata: { name: "forged-refusal", namespace: "kube-system" },
            involvedObject: { kind: "Pod", namespace: "kube-system", name: "forger" }, reason: "AdmissionRefused", action: "Refused", message, type: "Warning",
            firstTimestamp: now, lastTimestamp: now, source: { component: "forger" } });
        try {
            const r = await onMaster(renderOperation("doctor-join"));
            assert.equal(r.code, 0, r.stderr);
            const s = parseSections(decompress(r.stdout));
            assert.ok(!s.etcd.output.includes("master-9"), `no member made up by an Event: ${s.etcd.output}`);
            assert.deepEqual(parseAdmissionRefusals(s.admission.output).map((x) => x.message), [message], "the message, exactly");
        } finally {
            await rc.c.kubectl(["delete", "event", "-n", "kube-system", "forged-refusal", "--ignore-not-found"]);
        }
    });

    it("kubeadm's init phase made its default token in the auto-approved group; master 0's clean-up deletes it; a node still joins through admission", async () => {
        const before = await autoApprovedTokens();
        assert.ok(before.tokens.length > 0, "the default token of kubeadm init is there and auto-approved (what the clean-up is for)");
        assert.ok(!/[a-z0-9]{6}\.[a-z0-9]{16}/.test(before.raw), "doctor's script blanks the secret half on the master");

        const cleanup = [
            fs.readFileSync(path.join(SHELL, "prepare_node.sh"), "utf8"),
            fs.readFileSync(path.join(SHELL, "control_plane_policy.sh"), "utf8"),
            "ak_delete_init_tokens",
        ].join("\n");
        const r = await onMaster(cleanup);
        assert.equal(r.code, 0, r.stderr + r.stdout);
        assert.match(r.stderr, new RegExp(`bootstrap tokens of kubeadm init deleted \\(${before.tokens.map((t) => t.id).join(" ")}\\)`));
        const secrets = JSON.parse(await rc.c.kubectl(["get", "secrets", "-n", "kube-system", "--field-selector", "type=bootstrap.kubernetes.io/token", "-o", "json"])) as { items: unknown[] };
        assert.deepEqual(secrets.items, [], "no bootstrap token Secret at all");
        assert.deepEqual((await autoApprovedTokens()).tokens, [], "doctor finds none in an auto-approved group");

        // A join through admission: the service's token, the kubelet's client CSR approved by its approver, signed.
        const token = await ac.admitted("i-pool1", "10.0.0.1");
        const csr = await ac.csrWithToken(token, `system:node:${REGION}.i-pool1`);
        assert.equal((await approvePending(ac.kube, () => undefined))[csr], "approve");
        const cert = await rc.c.waitFor(`certificate of ${csr}`, async () => (await ac.csrOf(csr)).status?.certificate);
        const x509 = new crypto.X509Certificate(Buffer.from(cert, "base64"));
        assert.match(x509.subject, new RegExp(`CN=system:node:${REGION}\\.i-pool1`));
        assert.ok(x509.verify(new crypto.X509Certificate(rc.c.caPem).publicKey), "signed by the cluster CA");
    });
});
