// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator); node scripts in the sandbox
// (testing/sandbox: stub kubeadm, systemctl, curl, package managers); Pulumi mocks (testing/mockRuntime.ts).
/**
 * What the stacks render, used on a real control plane (test/kube/cluster.ts, Kubernetes v1.36.3 + KWOK):
 *
 * - every Kubernetes object of the dev and prod stacks applied server-side, for real, and every call the
 *   add-ons' upstream code makes (the table docs/upstream.md#rbac-calls) allowed for their ServiceAccounts;
 * - every kubeadm document the stacks render (master init, worker joins, control-plane join, the saved attach
 *   command), as the node scripts write it in the sandbox, accepted by `kubeadm config validate`;
 * - bootstrap tokens through the project's token operations, JoinInfo's CA hash against cluster-info
 *   discovery, and a node's TLS bootstrap with such a token;
 * - the node CIDRs kube-controller-manager allocates with the prod stack's podCidr and nodeCidrMaskSize,
 *   against flannel's net-conf, the CCM's --cluster-cidr and doctor's routes check;
 * - doctor's node listing and versions (doctor-nodes with the real kubectl) against the real Nodes and kube-apiserver pods.
 *
 * The stacks are synthesized at the harness's Kubernetes version (test/kube/stacks.ts): kubeadm v1.36 deploys
 * only >= 1.35, and the stack files may name an older version. The cluster uses the prod stack's network.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { useEmulator } from "../testing/emulator/fixture";
import { KUBERNETES_VERSION, type Cluster } from "./kube/cluster";
import { cidrsOverlap, cidrWithin, useRealCluster } from "./kube/fixture";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { headerOf, synthesizeAt, withHeader, type RenderedStack } from "./kube/stacks";
import { callsOf, makeSandbox } from "../testing/sandbox";
import { fill, saveNodeCommands } from "../testing/savedCommands";
import { createToken, POOL_LABEL } from "../src/cloud/operations";
import { POOL_PENDING_TAINT } from "../src/rules";
import { flannelNetConf } from "../src/components/podNetwork";
import { DoctorContext } from "../src/doctor/context";
import { checkRoutes } from "../src/doctor/routes";
import type { ClusterInfo } from "../src/doctor/types";
import { createBootstrapToken, deleteBootstrapToken } from "../src/providers/bootstrapToken";
import { caCertHash, readJoinInfo, revokeStackCredential } from "../src/providers/joinInfo";
import type { NodeCommandIds } from "../src/rules";
import { renderOperation } from "../src/shell/render";
import { unpackRunnable } from "./tools";

const REPO = path.resolve(__dirname, "..");
const VERSION = KUBERNETES_VERSION.replace(/^v/, "");

/** The ServiceAccount of each add-on named in the table. */
const SERVICE_ACCOUNTS: Record<string, string> = {
    flannel: "kube-flannel:flannel",
    ccm: "kube-system:cloud-controller-manager",
    autoscaler: "kube-system:cluster-autoscaler",
};

interface RbacRow {
    addon: string;
    resources: string[];
    name: string;
    /** "" for cluster-scoped, "*" for any namespace. */
    namespace: string;
    verbs: string[];
    line: string;
}

/** The rows of the table under docs/upstream.md#rbac-calls. */
function rbacRows(): RbacRow[] {
    const doc = fs.readFileSync(path.join(REPO, "docs", "upstream.md"), "utf8");
    const start = doc.indexOf('<a id="rbac-calls"></a>');
    assert.ok(start >= 0, "docs/upstream.md has the rbac-calls anchor");
    const section = doc.slice(start, doc.indexOf("\n## ", start));
    const dash = (s: string) => (s === "—" ? "" : s);
    return section.split("\n").filter((l) => /^\| (flannel|ccm|autoscaler) \|/.test(l)).map((line) => {
        const [addon, resources, name, namespace, verbs] = line.split("|").slice(1, 6).map((x) => x.trim());
        return { addon, resources: resources.split(/,\s*/), name: dash(name), namespace: dash(namespace), verbs: verbs.split(/,\s*/), line };
    });
}

/** Runs `work` over `items`, `n` at a time. */
async function limited<T, U>(items: T[], n: number, work: (t: T) => Promise<U>): Promise<U[]> {
    const out: U[] = new Array(items.length);
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
        while (next < items.length) {
            const k = next++;
            out[k] = await work(items[k]);
        }
    }));
    return out;
}

describe("what the stacks render, on a real API server (Kubernetes v1.36.3 + KWOK)", function () {
    this.timeout(180_000);
    const stacks: Record<string, RenderedStack> = {};
    let podCidr = "";
    let mask = 0;
    const rc = useRealCluster(async () => {
        for (const s of ["dev", "prod"]) stacks[s] = await synthesizeAt(s, VERSION);
        const master = headerOf(stacks.prod.userdata["prod-control-plane-master-0.sh"]);
        podCidr = master.AK_POD_CIDR;
        mask = Number(master.AK_NODE_CIDR_MASK_SIZE);
        for (const s of Object.values(stacks)) {
            if (s.stackVersion !== s.kubernetesVersion) console.log(`    ${s.stack}: stack file says ${s.stackVersion}; rendered at ${s.kubernetesVersion} for kubeadm ${KUBERNETES_VERSION}`);
        }
        return { podCidr, nodeCidrMaskSize: mask, region: stacks.prod.region, serviceCidr: master.AK_SERVICE_CIDR };
    });
    const ctx = useEmulator();
    let c: Cluster;
    beforeEach(() => {
        c = rc.c;
    });

    const node = async (name: string) => JSON.parse(await c.kubectl(["get", "node", name, "-o", "json"]));

    describe("manifests and RBAC", () => {
        async function applyStack(s: RenderedStack): Promise<void> {
            for (const [file, text] of Object.entries(s.manifests)) {
                const out = await c.kubectl(["apply", "--server-side", "--field-manager=alicloud-kubeadm", "-f", "-"], { input: text });
                const objects = parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean) as Array<{ kind: string; metadata: { name: string; namespace?: string }; rules?: unknown }>;
                assert.strictEqual(out.trim().split("\n").length, objects.length, `${s.stack}/${file}: one line per object applied:\n${out}`);
                for (const o of objects) {
                    const live = JSON.parse(await c.kubectl(["get", o.kind, o.metadata.name, ...(o.metadata.namespace ? ["-n", o.metadata.namespace] : []), "-o", "json", "--show-managed-fields"]));
                    assert.ok(live.metadata.managedFields.some((m: { manager: string; operation: string }) => m.manager === "alicloud-kubeadm" && m.operation === "Apply"),
                        `${o.kind} ${o.metadata.name} is owned by the server-side apply`);
                    if (o.rules) assert.deepStrictEqual(live.rules, o.rules, `${o.kind} ${o.metadata.name}: the API server keeps the rendered rules as they are`);
                }
            }
        }

        async function checkRows(stack: string): Promise<void> {
            const rows = rbacRows();
            assert.deepStrictEqual([...new Set(rows.map((r) => r.addon))].sort(), ["autoscaler", "ccm", "flannel"]);
            const checks = rows.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((verb) => ({ r, res, verb }))));
            const results = await limited(checks, 6, async ({ r, res, verb }) => {
                const [resource, subresource] = res.split("/");
                const args = ["auth", "can-i", verb, r.name ? `${resource}/${r.name}` : resource, `--as=system:serviceaccount:${SERVICE_ACCOUNTS[r.addon]}`,
                    ...(subresource ? [`--subresource=${subresource}`] : []),
                    ...(r.namespace === "*" ? ["--all-namespaces"] : r.namespace ? ["-n", r.namespace] : [])];
                const out = await c.run("kubectl", args, { allowFail: true });
                return { what: `${r.addon}: kubectl ${args.join(" ")}`, allowed: out.stdout.trim() === "yes", out: out.stdout.trim() + out.stderr.trim() };
            });
            const denied = results.filter((x) => !x.allowed).map((x) => `${x.what} → ${x.out}`);
            assert.deepStrictEqual(denied, [], `${stack}: every call of docs/upstream.md#rbac-calls is allowed`);
            console.log(`    ${stack}: ${results.length} can-i checks of ${rows.length} rows, all allowed`);
        }

        it("every object the dev and prod stacks render applies server-side, and every call of docs/upstream.md#rbac-calls is allowed for its ServiceAccount", async function () {
            for (const s of ["dev", "prod"]) {
                await applyStack(stacks[s]);
                await checkRows(s);
            }
            // the answers are real: what no add-on needs is refused
            for (const [sa, args] of [["kube-flannel:flannel", ["delete", "nodes"]], ["kube-system:cluster-autoscaler", ["delete", "nodes"]], ["kube-system:cloud-controller-manager", ["delete", "namespaces"]],
                ["kube-system:cluster-autoscaler", ["update", "configmaps/kube-proxy", "-n", "kube-system"]]] as const) {
                const r = await c.run("kubectl", ["auth", "can-i", ...args, `--as=system:serviceaccount:${sa}`], { allowFail: true });
                assert.strictEqual(r.stdout.trim(), "no", `${sa} ${args.join(" ")}`);
            }
            // and they hold for the ServiceAccounts' own tokens, not only under impersonation
            const token = (await c.kubectl(["create", "token", "flannel", "-n", "kube-flannel", "--duration=10m"])).trim();
            const empty = c.writeFile("empty-sa.conf", "apiVersion: v1\nkind: Config\n");
            const asFlannel = (args: string[]) => c.run("kubectl", ["--kubeconfig", empty, "--server", c.server, "--certificate-authority", c.caFile, "--token", token, ...args], { allowFail: true });
            assert.strictEqual((await asFlannel(["get", "nodes", "-o", "name"])).code, 0);
            const del = await asFlannel(["delete", "node", "nonexistent"]);
            assert.match(del.stderr, /forbidden/i);
        });

        it("the add-ons schedule where they should: flannel on every node (tolerating the CCM's uninitialized taint), the CCM and the autoscaler on control-plane nodes", async function () {
            const master = `${stacks.prod.region}.i-cpmaster01`;
            const worker = `${stacks.prod.region}.i-cpworker01`;
            await c.addNode({
                name: master, providerID: master, labels: { "node-role.kubernetes.io/control-plane": "", [POOL_LABEL]: "control-plane" },
                taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
            });
            // a worker as the kubelet registers it with --cloud-provider=external, before the CCM initializes it
            await c.addNode({ name: worker, providerID: worker, labels: { [POOL_LABEL]: "general" }, taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" }] });
            const podsOf = async (ns: string, selector: string) => (JSON.parse(await c.kubectl(["get", "pods", "-n", ns, "-l", selector, "-o", "json"])).items as Array<{ spec: { nodeName?: string }; status: { phase: string } }>);
            const runningOn = async (ns: string, selector: string) => (await podsOf(ns, selector)).filter((p) => p.status.phase === "Running").map((p) => p.spec.nodeName).sort();
            await c.waitFor("flannel Running on the master and the uninitialized worker", async () =>
                JSON.stringify((await runningOn("kube-flannel", "app=flannel")).filter((n) => n === master || n === worker)) === JSON.stringify([master, worker].sort()), 60_000);
            await c.waitFor("the CCM Running on the master only", async () => JSON.stringify(await runningOn("kube-system", "app=cloud-controller-manager")) === JSON.stringify([master]), 60_000);
            await c.waitFor("the autoscaler Running on the master", async () => JSON.stringify(await runningOn("kube-system", "app=cluster-autoscaler")) === JSON.stringify([master]), 60_000);
            await c.kubectl(["delete", "node", master, worker]);
        });
    });

    describe("kubeadm documents", () => {
        /** Runs a rendered node script in a sandbox and returns the config it gave kubeadm (`init` or `join`). */
        async function kubeadmConfigOf(script: string, sub: "init" | "join", region: string, files: Record<string, string> = {}): Promise<string> {
            const sb = makeSandbox({ os: "ubuntu", prebaked: true, prebakedVersion: VERSION, region });
            try {
                for (const [p, text] of Object.entries(files)) sb.write(p, text);
                const r = await sb.run(script);
                assert.strictEqual(r.code, 0, `${r.stderr.slice(-2000)}\n${script.split("\n").filter((l) => l.startsWith("readonly ")).join("\n")}`);
                const calls = callsOf(r.calls, "kubeadm", sub);
                assert.strictEqual(calls.length, 1, `one kubeadm ${sub}`);
                return calls[0].config ?? "";
            } finally {
                sb.cleanup();
            }
        }

        async function validate(what: string, config: string): Promise<void> {
            const file = c.writeFile(`validate/${what.replace(/[^a-z0-9.-]+/gi, "_")}.yaml`, config);
            const r = await c.run("kubeadm", ["config", "validate", "--config", file], { allowFail: true });
            assert.strictEqual(r.code, 0, `kubeadm config validate refused ${what}:\n${r.stderr}\n${config}`);
        }

        it("kubeadm config validate accepts every kubeadm document the stacks render: master init (dev, prod), each pool's join, the control-plane join, the saved attach command", async function () {
            const token = (await c.run("kubeadm", ["token", "create", "--kubeconfig", c.kubeconfig, "--ttl", "10m"])).stdout.trim();
            const key = crypto.randomBytes(32).toString("hex");
            let validated = 0;
            for (const s of Object.values(stacks)) {
                // A saved join command reads its secrets from what channel-receive left on the instance, as on a node.
                const channel = "0123456789abcdef0123456789abcdef";
                const received = (...secrets: string[]) => ({ [`/run/alicloud-kubeadm/${channel}`]: `${secrets.join(" ")}\n` });
                for (const [file, script] of Object.entries(s.userdata)) {
                    const h = headerOf(script);
                    if (h.AK_POD_CIDR !== undefined) { // master 0 (kubeadm init)
                        assert.match(script, /^ak_packed=/m, "delivered packed");
                        const cfg = await kubeadmConfigOf(script, "init", s.region);
                        const docs = parseAllDocuments(cfg).map((d) => d.toJS());
                        const cluster = docs.find((d) => d.kind === "ClusterConfiguration");
                        assert.strictEqual(cluster.networking.podSubnet, h.AK_POD_CIDR);
                        assert.strictEqual(cluster.kubernetesVersion, `v${VERSION}`);
                        assert.deepStrictEqual(cluster.controllerManager.extraArgs.find((a: { name: string }) => a.name === "node-cidr-mask-size"), { name: "node-cidr-mask-size", value: h.AK_NODE_CIDR_MASK_SIZE });
                        await validate(`${s.stack} ${file}`, cfg);
                    } else {
                        // A pool joins through admission: as if the service answered with `token`.
                        const admitted = unpackRunnable(script).replace(/\|\| ak_admission_token$/m, `|| { AK_BOOTSTRAP_TOKEN='${token}'; (umask 077 && ak_join_config >"$config"); }`);
                        assert.notStrictEqual(admitted, unpackRunnable(script), "the pool's script asks admission for its token");
                        const cfg = await kubeadmConfigOf(withHeader(admitted, "AK_CA_CERT_HASHES", c.caCertHash), "join", s.region);
                        const join = parseYaml(cfg);
                        assert.strictEqual(join.discovery.bootstrapToken.token, token);
                        // The pool label is the admission service's to set; the node registers with the taint that waits for it.
                        const kubeletArgs = JSON.stringify(join.nodeRegistration.kubeletExtraArgs);
                        assert.doesNotMatch(kubeletArgs, /alicloud-kubeadm\/pool=|alicloud-kubeadm-pool=/);
                        assert.ok(kubeletArgs.includes(`${POOL_PENDING_TAINT}:NoSchedule`), kubeletArgs);
                        await validate(`${s.stack} ${file}`, cfg);
                    }
                    validated++;
                }
                for (const [file, script] of Object.entries(s.commands)) {
                    if (/-control-plane-join\.sh$/.test(file)) {
                        const cfg = await kubeadmConfigOf(withHeader(fill(script, { channel }), "AK_CA_CERT_HASHES", c.caCertHash), "join", s.region, received(token, key, "-"));
                        assert.strictEqual(parseYaml(cfg).controlPlane.certificateKey, key, "a control-plane join carries the certificate key");
                        await validate(`${s.stack} ${file}`, cfg);
                        validated++;
                    } else if (/-attach\.sh$/.test(file)) {
                        const filled = fill(script, { labels: "tier=web", taints: "dedicated=web:NoSchedule", channel });
                        const cfg = await kubeadmConfigOf(withHeader(filled, "AK_CA_CERT_HASHES", c.caCertHash), "join", s.region, received(token));
                        assert.match(cfg, /dedicated=web:NoSchedule/);
                        await validate(`${s.stack} ${file}`, cfg);
                        validated++;
                    }
                }
            }
            // dev: master + 2 pools; prod: master + 3 pools + control-plane join. Neither stack has existing nodes since
            // the example moved to examples/, so no saved attach command is rendered here (its document: test/userdata.test.ts).
            assert.strictEqual(validated, 8, "every kubeadm document of both stacks");
        });
    });

    describe("with the emulator's Cloud Assistant answering from the real cluster", () => {
        let ops: RealOperations;
        let master: string;
        let commands: NodeCommandIds;
        const region = () => stacks.prod.region;
        beforeEach(async () => {
            master = ctx.emu.addInstance({ instanceName: "master-0", regionId: region() }).instanceId;
            commands = await saveNodeCommands(region());
            ops = answerWithRealCluster(ctx.emu, c, { master });
        });
        afterEach(() => ops?.cleanup());

        it("tokens through the project's operations; JoinInfo's CA hash pins cluster-info discovery; a node's TLS bootstrap with the token", async function () {
            // JoinInfo reads the CA and makes the stack's service-account credential on master 0 once kubeadm init is done
            ops.master.write("/etc/kubernetes/pki/ca.crt", c.caPem);
            ops.master.write("/var/lib/alicloud-kubeadm/init.done", "status=ok\n");
            const info = await readJoinInfo({
                region: region(), masterInstanceId: master, kubeconfigServer: c.server, pollSeconds: 0.05,
                scripts: { initStatus: renderOperation("init-status"), stackCredential: renderOperation("stack-credential"), stackCredentialRevoke: renderOperation("stack-credential-revoke") },
            });
            assert.strictEqual(info.caCertHash, c.caCertHash);
            const printed = (await c.run("kubeadm", ["token", "create", "--kubeconfig", c.kubeconfig, "--ttl", "5m", "--print-join-command"])).stdout;
            assert.match(printed, new RegExp(`--discovery-token-ca-cert-hash ${info.caCertHash}\\b`), "kubeadm pins the same hash");
            assert.strictEqual(parseYaml(info.kubeconfig).clusters[0].cluster.server, c.server);
            // The stack's kubeconfig is its own service-account token, not admin.conf: cluster-admin on the real API
            // server, and deleting its Secret (stack-credential-revoke, as a replacement or destroy does) revokes it.
            assert.ok(!info.kubeconfig.includes("client-key-data"), "no client certificate");
            const kcDir = fs.mkdtempSync(path.join(os.tmpdir(), "stack-kubeconfig-"));
            try {
                const kc = path.join(kcDir, "kubeconfig");
                fs.writeFileSync(kc, info.kubeconfig, { mode: 0o600 });
                const canI = await c.run("kubectl", ["--kubeconfig", kc, "auth", "can-i", "*", "*", "--all-namespaces"], { allowFail: true });
                assert.strictEqual(canI.stdout.trim(), "yes", canI.stderr);
                await revokeStackCredential({
                    region: region(), masterInstanceId: master, kubeconfigServer: c.server, pollSeconds: 0.05,
                    scripts: { initStatus: "", stackCredential: "", stackCredentialRevoke: renderOperation("stack-credential-revoke") },
                }, info.credential);
                await c.waitFor("the revoked stack token refused", async () => {
                    const r = await c.run("kubectl", ["--kubeconfig", kc, "get", "namespaces"], { allowFail: true });
                    return r.code !== 0 && /Unauthorized|must be logged in/.test(r.stdout + r.stderr);
                }, 30_000);
            } finally {
                fs.rmSync(kcDir, { recursive: true, force: true });
            }

            // BootstrapToken → token-create on the master, run by the real kubeadm
            const tokenCreateScript = renderOperation("token-create");
            const access = { region: region(), masterInstanceId: master, masterInstanceIds: [master], commands, tokenCreateScript, pollIntervalMs: 10 };
            const { token, tokenId } = await createBootstrapToken({ ...access, ttl: "15m", description: "alicloud-kubeadm pool general" });
            const listed = (await c.run("kubeadm", ["token", "list", "-o", "json", "--kubeconfig", c.kubeconfig])).stdout;
            const mine = listed.split(/\n(?=\{)/).map((j) => JSON.parse(j)).find((t) => t.token === token);
            assert.ok(mine, "the token is in the cluster");
            assert.strictEqual(mine.description, "alicloud-kubeadm pool general");
            assert.deepStrictEqual([...mine.usages].sort(), ["authentication", "signing"]);
            assert.deepStrictEqual(mine.groups, ["system:bootstrappers:kubeadm:default-node-token"]);
            const ttlMs = Date.parse(mine.expires) - Date.now();
            assert.ok(ttlMs > 13 * 60_000 && ttlMs <= 15 * 60_000, `expires in ~15m: ${mine.expires}`);
            assert.deepStrictEqual(await createToken(access, tokenCreateScript, tokenId, "15m", "alicloud-kubeadm pool general"), { token, status: "exists" }, "a retried create reads it back");

            // discovery as kubeadm join does it: cluster-info fetched without trusting the server, its JWS verified with the
            // token, then the CA it carries checked against the pin (JoinInfo's caCertHash)
            const data = await c.waitFor(`cluster-info signed for ${tokenId}`, async () => {
                const r = await c.run("curl", ["-sS", "--fail", "--insecure", "--max-time", "10", `${c.server}/api/v1/namespaces/kube-public/configmaps/cluster-info`]);
                const d = JSON.parse(r.stdout).data as Record<string, string>;
                return d[`jws-kubeconfig-${tokenId}`] ? d : undefined;
            }, 45_000);
            const [header, , signature] = data[`jws-kubeconfig-${tokenId}`].split(".");
            const secret = token.split(".")[1];
            const expected = crypto.createHmac("sha256", secret).update(`${header}.${Buffer.from(data.kubeconfig).toString("base64url")}`).digest("base64url");
            assert.strictEqual(signature, expected, "the JWS verifies with the token");
            const caData = parseYaml(data.kubeconfig).clusters[0].cluster["certificate-authority-data"];
            assert.strictEqual(caCertHash(Buffer.from(caData, "base64").toString("utf8")), info.caCertHash, "the CA in cluster-info matches the pin");
            const forged = crypto.createHmac("sha256", "0123456789abcdef").update(`${header}.${Buffer.from(data.kubeconfig).toString("base64url")}`).digest("base64url");
            assert.notStrictEqual(forged, signature, "another secret does not verify");

            // the kubelet's TLS bootstrap with this token: CSR auto-approved, signed by the pinned CA
            const name = `${region()}.i-tokenjoin01`;
            const creds = await c.nodeCredentials(name, token);
            const csr = JSON.parse(await c.kubectl(["get", "csr", creds.csrName, "-o", "json"]));
            assert.strictEqual(csr.spec.username, `system:bootstrap:${tokenId}`);
            assert.ok(csr.status.conditions.some((x: { type: string; reason: string }) => x.type === "Approved" && x.reason === "AutoApproved"));
            assert.ok(new crypto.X509Certificate(creds.certPem).verify(new crypto.X509Certificate(Buffer.from(caData, "base64").toString("utf8")).publicKey));

            // BootstrapToken deletion → token-delete: gone, no longer authenticates, its signature leaves cluster-info
            const warnings: string[] = [];
            await deleteBootstrapToken(access, tokenId, (m) => warnings.push(m));
            assert.strictEqual(warnings.length, 0, warnings.join("\n"));
            const empty = c.writeFile("empty-token.conf", "apiVersion: v1\nkind: Config\n");
            // (the apiserver's bootstrap-token authenticator reads the token Secrets through an informer: a moment's lag)
            await c.waitFor("the deleted token refused", async () => {
                const who = await c.run("kubectl", ["--kubeconfig", empty, "--server", c.server, "--certificate-authority", c.caFile, "--token", token, "auth", "whoami"], { allowFail: true });
                return who.code !== 0 && /Unauthorized/.test(who.stderr);
            }, 30_000);
            await c.waitFor("cluster-info without the deleted token's signature", async () => {
                const r = await c.run("curl", ["-sS", "--fail", "--insecure", "--max-time", "10", `${c.server}/api/v1/namespaces/kube-public/configmaps/cluster-info`]);
                return !JSON.parse(r.stdout).data[`jws-kubeconfig-${tokenId}`];
            }, 45_000);
            await deleteBootstrapToken(access, tokenId, (m) => warnings.push(m));
            assert.match(warnings.join("\n"), new RegExp(`bootstrap token ${tokenId} was already gone`));
        });

        it("node CIDRs from the prod network: inside podCidr, the node mask, no overlap; equal to flannel's net-conf and the CCM's --cluster-cidr; doctor lists the Nodes as the API server has them and its routes check accepts their podCIDRs", async function () {
            const ids = Array.from({ length: 6 }, () => ctx.emu.addInstance({ regionId: region() }).instanceId);
            const pools = ["general", "general", "elastic", "elastic", "batch", ""];
            await Promise.all(ids.map((id, i) => c.addNode({ name: `${region()}.${id}`, providerID: `${region()}.${id}`, labels: pools[i] ? { [POOL_LABEL]: pools[i] } : {} })));
            const names = ids.map((id) => `${region()}.${id}`);
            const cidrs: string[] = await Promise.all(names.map((n) => c.waitFor(`podCIDR of ${n}`, async () => (await node(n)).spec.podCIDR as string)));
            for (const cidr of cidrs) {
                assert.ok(cidr.endsWith(`/${mask}`), `${cidr}: mask /${mask}`);
                assert.ok(cidrWithin(cidr, podCidr), `${cidr} inside ${podCidr}`);
            }
            for (let i = 0; i < cidrs.length; i++) for (let j = i + 1; j < cidrs.length; j++) assert.ok(!cidrsOverlap(cidrs[i], cidrs[j]), `${cidrs[i]} vs ${cidrs[j]}`);
            const kcm = c.commands["kube-controller-manager"];
            assert.ok(kcm.includes(`--cluster-cidr=${podCidr}`) && kcm.includes(`--node-cidr-mask-size=${mask}`));

            // the same block in what the prod stack renders: flannel's net-conf (and the function that makes it) and the CCM's flag
            const objects = Object.values(stacks.prod.manifests).flatMap((t) => parseAllDocuments(t).map((d) => d.toJS()));
            const netConf = JSON.parse(objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "kube-flannel-cfg").data["net-conf.json"]);
            assert.strictEqual(netConf.Network, podCidr);
            assert.strictEqual(JSON.stringify(netConf, null, 2), flannelNetConf(podCidr));
            const ccm = objects.find((o) => o.kind === "DaemonSet" && o.metadata.name === "cloud-controller-manager");
            assert.ok(ccm.spec.template.spec.containers[0].args.includes(`--cluster-cidr=${podCidr}`));

            // doctor: doctor-nodes through the real kubectl, parsed by doctor's parser
            const table = ctx.emu.addRouteTable().routeTableId;
            ids.forEach((id, i) => ctx.emu.addRouteEntry(table, { destinationCidrBlock: cidrs[i], nextHopId: id }));
            const info: ClusterInfo = {
                name: "prod", region: region(), kubernetesVersion: VERSION, masterInstanceIds: [master], apiEndpoint: "127.0.0.1:6443",
                routeTableId: table, podCidr, pools: [], existingNodes: [], commands,
            };
            const doctor = new DoctorContext(info, { pollIntervalMs: 10, pollMaxIntervalMs: 50 });
            const listed = await doctor.nodes();
            const real = JSON.parse(await c.kubectl(["get", "nodes", "-o", "json"])).items as Array<{
                metadata: { name: string; labels?: Record<string, string> };
                spec: { providerID?: string; podCIDR?: string };
                status: { conditions?: Array<{ type: string; status: string; reason: string }>; nodeInfo?: { kubeletVersion?: string } };
            }>;
            assert.deepStrictEqual(listed.map((n) => n.name).sort(), real.map((n) => n.metadata.name).sort());
            for (const n of real) {
                const l = listed.find((x) => x.name === n.metadata.name)!;
                const ready = n.status.conditions?.find((x) => x.type === "Ready");
                const network = n.status.conditions?.find((x) => x.type === "NetworkUnavailable");
                assert.deepStrictEqual(
                    [l.providerId, l.ready, l.readyStatus, l.readyReason, l.podCidr, l.pool, l.networkUnavailable],
                    [n.spec.providerID ?? "", ready?.status === "True", ready?.status ?? "", ready?.reason ?? "", n.spec.podCIDR ?? "", n.metadata.labels?.[POOL_LABEL] ?? "", network?.status ?? ""],
                    `doctor's view of ${n.metadata.name}`);
            }
            for (const [i, n] of names.entries()) {
                const l = listed.find((x) => x.name === n)!;
                assert.strictEqual(DoctorContext.instanceIdOf(l.providerId), ids[i]);
                assert.strictEqual(l.ready, true);
                assert.strictEqual(l.pool, pools[i]);
            }

            // doctor's versions: the same command's kubelet and kube-apiserver sections, through the real kubectl
            const versions = await doctor.versions();
            assert.deepStrictEqual(versions.kubelets, Object.fromEntries(real.map((n) => [n.metadata.name, (n.status.nodeInfo?.kubeletVersion ?? "").replace(/^v/, "")])));
            const apiPods = JSON.parse(await c.kubectl(["get", "pods", "-n", "kube-system", "-l", "component=kube-apiserver", "-o", "json"])).items as Array<{ spec: { nodeName: string } }>;
            assert.deepStrictEqual(Object.keys(versions.apiServers).sort(), apiPods.map((p) => p.spec.nodeName).sort());
            // A kubelet writes its own Node's status: a Ready message and a kubelet version that spell other lines (another
            // Node, Ready; another kubelet version) are that Node's values, never a Node or a version of another.
            const forger = `zz-doctor-forger`;
            await c.apply({ apiVersion: "v1", kind: "Node", metadata: { name: forger } });
            const message = `ok\n${names[0]}\tTrue\tForged\tforged\tFalse\tz`;
            const kubelet = `v1.36.3\n${names[0]}\tv9.99.0`;
            await c.kubectl(["patch", "node", forger, "--subresource=status", "--type=merge", "-p", JSON.stringify({ status: {
                nodeInfo: { kubeletVersion: kubelet },
                conditions: [{ type: "Ready", status: "False", reason: "Forged", message, lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }],
            } })]);
            const forgedView = new DoctorContext(info, { pollIntervalMs: 10, pollMaxIntervalMs: 50 });
            const withForger = await forgedView.nodes();
            assert.deepStrictEqual(withForger.map((n) => n.name).sort(), [...real.map((n) => n.metadata.name), forger].sort(), "no Node made up by a value");
            assert.strictEqual(withForger.find((n) => n.name === forger)?.readyMessage, message, "the forger's message, exactly");
            assert.strictEqual((await forgedView.versions()).kubelets[names[0]], versions.kubelets[names[0]], "another Node's kubelet version unchanged");
            await c.kubectl(["delete", "node", forger]);

            // routes: only the Nodes of this test have routes, so scope the check to them
            const others = real.map((n) => n.metadata.name).filter((n) => !names.includes(n));
            if (others.length) await c.kubectl(["delete", "node", ...others, "--ignore-not-found"]);
            const fresh = new DoctorContext(info, { pollIntervalMs: 10, pollMaxIntervalMs: 50 });
            const findings = await checkRoutes(fresh);
            assert.deepStrictEqual(findings.map((f) => f.status), ["ok"], JSON.stringify(findings, null, 2));
            assert.match(findings[0].evidence, new RegExp(`6 route\\(s\\) inside ${podCidr.replace(/[./]/g, "\\$&")} match the podCIDRs of 6 Node\\(s\\)`));
            // and it sees what is wrong: a node without its route, a route to an instance that is gone
            const rt = ctx.emu.routeTables.get(table)!;
            rt.entries.splice(rt.entries.findIndex((e) => e.nextHopId === ids[0]), 1);
            await c.kubectl(["delete", "node", names[1]]);
            ctx.emu.releaseInstance(ids[1]);
            const broken = await checkRoutes(new DoctorContext(info, { pollIntervalMs: 10, pollMaxIntervalMs: 50 }));
            assert.deepStrictEqual(broken.map((f) => `${f.status} ${f.subject}`).sort(), [`problem node ${names[0]}`, `problem route ${cidrs[1]}`].sort(), JSON.stringify(broken, null, 2));
            await c.kubectl(["delete", "node", ...names, "--ignore-not-found"]);
        });
    });
});
