// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes).
/**
 * Against a real control plane (test/kube/cluster.ts: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler of Kubernetes v1.36.3, KWOK fake nodes), started once for this file on 127.0.0.1.
 *
 * Needs the binaries of `npm run kube:build`. Without them these tests are skipped with one line saying
 * so, except under CI=true, where CI has built them and their absence fails the run.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { Cluster } from "./kube/cluster";
import { AUDITED, cidrWithin, useRealCluster } from "./kube/fixture";

const POD_CIDR = "172.16.0.0/16";
const SERVICE_CIDR = "10.96.0.0/12";
// not kubeadm's default 24, so the allocation proves the project's node-cidr-mask-size extraArg is used (dev uses 25)
const MASK = 25;
const REPO = path.resolve(__dirname, "..");

/** The shell file (anywhere in the repo, outside node_modules) that defines the function `fn`. */
function scriptDefining(fn: string): string {
    const out = execFileSync("git", ["-C", REPO, "grep", "-l", "-E", `^${fn}\\(\\) \\{`, "--", "*.sh"], { encoding: "utf8" });
    // the project's scripts, not copies of them kept as test goldens
    const files = out.trim().split("\n").filter((f) => f && !f.startsWith("test/"));
    assert.strictEqual(files.length, 1, `expected exactly one script defining ${fn}(), found: ${files.join(", ") || "none"}`);
    return path.join(REPO, files[0]);
}

/**
 * Runs one of the project's kubeadm-config functions (ak_init_config, ak_join_config) as the node scripts do:
 * the shared functions file sourced, then the function's definition taken from its role script.
 */
function renderProjectConfig(fn: string, env: Record<string, string>): string {
    const shared = scriptDefining("ak_node_registration");
    const controlPlane = scriptDefining("ak_write_audit_policy"); // its paths (audit, encryption config) are in the master's config
    const policy = scriptDefining("ak_write_admission_config"); // its path (the Pod Security admission config) too
    const role = scriptDefining(fn);
    const script = `set -euo pipefail; source "$1"; source "$4"; source "$5"; eval "$(sed -n "/^$3() {/,/^}/p" "$2")"; "$3"`;
    return execFileSync("bash", ["-c", script, "render", shared, role, fn, controlPlane, policy], {
        encoding: "utf8",
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    });
}

describe("real cluster (kube-apiserver, controller-manager, scheduler v1.36.3 + KWOK on 127.0.0.1)", function () {
    // The hooks later work uses: a file in the run folder (an audit policy), and apiserver flags that point at it.
    const rc = useRealCluster({ podCidr: POD_CIDR, serviceCidr: SERVICE_CIDR, nodeCidrMaskSize: MASK, ...AUDITED });
    let c: Cluster;
    beforeEach(() => {
        c = rc.c;
    });

    const node = async (name: string) => JSON.parse(await c.kubectl(["get", "node", name, "-o", "json"]));
    const podsOf = async (selector: string) =>
        JSON.parse(await c.kubectl(["get", "pods", "-l", selector, "-o", "json"])).items as Array<{
            metadata: { name: string };
            spec: { nodeName?: string };
            status: { phase: string };
        }>;

    it("everything listens on 127.0.0.1 only, and the control plane runs kubeadm's own flags for the project's config", async function () {
        const flags = (component: string): Map<string, string> => {
            const m = new Map<string, string>();
            for (const a of c.commands[component]) {
                const [k, ...v] = a.replace(/^--/, "").split("=");
                m.set(k, v.join("="));
            }
            return m;
        };
        const api = flags("kube-apiserver");
        assert.strictEqual(api.get("enable-admission-plugins"), "NodeRestriction");
        assert.strictEqual(api.get("enable-bootstrap-token-auth"), "true");
        assert.strictEqual(api.get("authorization-mode"), "Node,RBAC");
        assert.strictEqual(api.get("service-cluster-ip-range"), SERVICE_CIDR);
        assert.strictEqual(api.get("service-account-issuer"), "https://kubernetes.default.svc.cluster.local");
        assert.ok(api.get("service-account-signing-key-file")?.endsWith("/pki/sa.key"));
        assert.strictEqual(api.get("bind-address"), "127.0.0.1");
        assert.strictEqual(api.get("advertise-address"), "127.0.0.1");
        assert.strictEqual(api.get("secure-port"), String(c.ports.apiserver));
        assert.strictEqual(api.get("etcd-servers"), `https://127.0.0.1:${c.ports.etcdClient}`);

        const kcm = flags("kube-controller-manager");
        assert.strictEqual(kcm.get("allocate-node-cidrs"), "true");
        assert.strictEqual(kcm.get("cluster-cidr"), POD_CIDR);
        assert.strictEqual(kcm.get("node-cidr-mask-size"), String(MASK));
        assert.strictEqual(kcm.get("configure-cloud-routes"), "false");
        assert.strictEqual(kcm.get("controllers"), "*,bootstrapsigner,tokencleaner");
        assert.strictEqual(kcm.get("use-service-account-credentials"), "true");
        assert.ok(kcm.get("cluster-signing-cert-file")?.endsWith("/pki/ca.crt"));
        assert.strictEqual(kcm.get("bind-address"), "127.0.0.1");
        assert.strictEqual(flags("kube-scheduler").get("bind-address"), "127.0.0.1");

        const etcd = flags("etcd");
        for (const k of ["listen-client-urls", "advertise-client-urls", "listen-peer-urls", "initial-advertise-peer-urls", "listen-metrics-urls"]) {
            assert.match(etcd.get(k) ?? "", /^https?:\/\/127\.0\.0\.1:\d+$/, `etcd --${k}=${etcd.get(k)}`);
        }
        for (const [component, argv] of Object.entries(c.commands)) {
            for (const a of argv) {
                assert.ok(!a.includes("/etc/kubernetes") && !/\b(0\.0\.0\.0|192\.0\.2\.\d+)\b/.test(a), `${component} ${a}`);
            }
        }
    });

    it("a KWOK node with the project's provider id registers and gets a podCIDR from the pod CIDR with the node mask", async function () {
        await c.addNode({ name: "cn-hangzhou.i-xxx", providerID: "cn-hangzhou.i-xxx", labels: { "alicloud-kubeadm/pool": "workers" } });
        const podCIDR: string = await c.waitFor("podCIDR of cn-hangzhou.i-xxx", async () => (await node("cn-hangzhou.i-xxx")).spec.podCIDR);
        const n = await node("cn-hangzhou.i-xxx");
        assert.strictEqual(n.spec.providerID, "cn-hangzhou.i-xxx");
        assert.strictEqual(n.metadata.labels["alicloud-kubeadm/pool"], "workers");
        assert.deepStrictEqual(n.spec.podCIDRs, [podCIDR]);
        assert.ok(podCIDR.endsWith(`/${MASK}`), `${podCIDR} has the /${MASK} mask`);
        assert.ok(cidrWithin(podCIDR, POD_CIDR), `${podCIDR} lies in ${POD_CIDR}`);
        const pod = await c.createPod({ name: "pinned", nodeName: "cn-hangzhou.i-xxx" });
        assert.strictEqual(pod.spec.nodeName, "cn-hangzhou.i-xxx");
        await c.kubectl(["delete", "pod", "pinned", "--wait=true"]);   // KWOK completes the deletion
    });

    it("a Deployment's pods are scheduled onto KWOK nodes and Running", async function () {
        this.timeout(120_000);
        await c.addNode({ name: "cn-hangzhou.i-yyy", providerID: "cn-hangzhou.i-yyy" });
        await c.addNode({ name: "cn-hangzhou.i-zzz", providerID: "cn-hangzhou.i-zzz" });
        // distinct nodes get distinct pod CIDRs
        const cidrs = await Promise.all(["i-xxx", "i-yyy", "i-zzz"].map((i) =>
            c.waitFor(`podCIDR of ${i}`, async () => (await node(`cn-hangzhou.${i}`)).spec.podCIDR as string)));
        assert.strictEqual(new Set(cidrs).size, 3, `distinct pod CIDRs: ${cidrs.join(", ")}`);

        await c.apply({
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name: "web", namespace: "default" },
            spec: {
                replicas: 3,
                selector: { matchLabels: { app: "web" } },
                template: {
                    metadata: { labels: { app: "web" } },
                    spec: {
                        // one per node, so that draining any node has something to evict
                        topologySpreadConstraints: [{
                            maxSkew: 1,
                            topologyKey: "kubernetes.io/hostname",
                            whenUnsatisfiable: "DoNotSchedule",
                            labelSelector: { matchLabels: { app: "web" } },
                        }],
                        containers: [{ name: "web", image: "registry.invalid/web:1" }],
                    },
                },
            },
        });
        await c.waitFor("deployment web: 3 ready replicas", async () =>
            JSON.parse(await c.kubectl(["get", "deployment", "web", "-o", "json"])).status.readyReplicas === 3, 90_000);
        const pods = await podsOf("app=web");
        assert.strictEqual(pods.length, 3);
        for (const p of pods) {
            assert.strictEqual(p.status.phase, "Running", `${p.metadata.name} Running`);
            assert.match(p.spec.nodeName ?? "", /^cn-hangzhou\.i-/);
        }
        assert.strictEqual(new Set(pods.map((p) => p.spec.nodeName)).size, 3, "spread over the three KWOK nodes");
    });

    it("kubectl drain evicts through the eviction API: a PodDisruptionBudget at minAvailable=replicas blocks it, without it the node empties", async function () {
        this.timeout(120_000);
        const target = "cn-hangzhou.i-xxx";
        assert.ok((await podsOf("app=web")).some((p) => p.spec.nodeName === target), `a web pod runs on ${target}`);
        await c.apply({
            apiVersion: "policy/v1",
            kind: "PodDisruptionBudget",
            metadata: { name: "web", namespace: "default" },
            spec: { minAvailable: 3, selector: { matchLabels: { app: "web" } } },
        });
        const blocked = await c.run("kubectl", ["drain", target, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5s"], {
            allowFail: true,
        });
        assert.notStrictEqual(blocked.code, 0, `drain must fail while the PDB allows no disruption:\n${blocked.stdout}`);
        assert.match(blocked.stderr, /disruption budget/, blocked.stderr);
        assert.strictEqual((await node(target)).spec.unschedulable, true, "drain cordoned the node");
        assert.ok((await podsOf("app=web")).some((p) => p.spec.nodeName === target), "the pod stayed");

        await c.kubectl(["delete", "pdb", "web"]);
        await c.run("kubectl", ["drain", target, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"], { timeoutMs: 90_000 });
        const after = await podsOf("app=web");
        assert.ok(after.every((p) => p.spec.nodeName !== target), "no web pod left on the drained node");

        // The apiserver's audit log (the files/apiserverArgs hooks) shows the eviction subresource answering
        // 429 (PDB) and then 201.
        const audit = fs.readFileSync(c.path("logs/audit.log"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
        const evictions = audit.filter((e) => e.objectRef?.subresource === "eviction" && e.verb === "create");
        assert.ok(evictions.some((e) => e.responseStatus?.code === 429), "an eviction refused with 429");
        assert.ok(evictions.some((e) => e.responseStatus?.code === 201), "an eviction accepted with 201");
        await c.kubectl(["uncordon", target]);
    });

    it("kubeadm token create works against the cluster and the token authenticates as a bootstrap token", async function () {
        this.timeout(90_000);
        const join = (await c.run("kubeadm", ["token", "create", "--kubeconfig", c.kubeconfig, "--ttl", "10m", "--print-join-command"])).stdout;
        const token = /--token (\S+)/.exec(join)?.[1];
        assert.ok(token && /^[a-z0-9]{6}\.[a-z0-9]{16}$/.test(token), `a bootstrap token in: ${join}`);
        assert.match(join, new RegExp(`--discovery-token-ca-cert-hash ${c.caCertHash}\\b`), "the join command pins our CA hash");
        assert.match(join, new RegExp(`kubeadm join 127\\.0\\.0\\.1:${c.ports.apiserver} `));

        const [id, secret] = token.split(".");
        // no client certificate: only the server and the CA it must present
        const empty = c.writeFile("empty.conf", "apiVersion: v1\nkind: Config\n");
        const anonymous = ["--kubeconfig", empty, "--server", c.server, "--certificate-authority", c.caFile];
        const as = (tok: string, args: string[]) => c.run("kubectl", [...anonymous, "--token", tok, ...args], { allowFail: true });
        const who = await as(token, ["auth", "whoami", "-o", "json"]);
        assert.strictEqual(who.code, 0, who.stderr);
        const user = JSON.parse(who.stdout).status.userInfo;
        assert.strictEqual(user.username, `system:bootstrap:${id}`);
        assert.ok(user.groups.includes("system:bootstrappers:kubeadm:default-node-token"), user.groups.join(","));

        // What kubeadm join's discovery reads, anonymously (RBAC lets system:anonymous, not bootstrap tokens, get it): cluster-info,
        // signed for this token by the controller-manager's bootstrapsigner, verified here the way join does.
        // (kubectl without credentials would prompt for a user name, so curl: an anonymous GET, as join does)
        const data = await c.waitFor(`cluster-info signed for token ${id}`, async () => {
            const r = await c.run("curl", ["-sS", "--fail", "--max-time", "10", "--cacert", c.caFile,
                `${c.server}/api/v1/namespaces/kube-public/configmaps/cluster-info`]);
            const d = JSON.parse(r.stdout).data as Record<string, string>;
            return d[`jws-kubeconfig-${id}`] ? d : undefined;
        }, 45_000);
        const [header, , signature] = data[`jws-kubeconfig-${id}`].split(".");
        const b64url = (b: Buffer | string): string => Buffer.from(b).toString("base64url");
        const expected = crypto.createHmac("sha256", secret).update(`${header}.${b64url(data.kubeconfig)}`).digest("base64url");
        assert.strictEqual(signature, expected, "cluster-info's JWS verifies with the token secret");
        assert.match(data.kubeconfig, new RegExp(`server: https://127\\.0\\.0\\.1:${c.ports.apiserver}`));

        const bogus = await as("abcdef.0123456789abcdef", ["auth", "whoami"]);
        assert.notStrictEqual(bogus.code, 0, "an unknown token is refused");
        assert.match(bogus.stderr, /Unauthorized/);
    });

    it("a node's TLS bootstrap as kubeadm join does it: the CSR is auto-approved and signed by the cluster CA; the node registers itself, and NodeRestriction keeps it off other nodes", async function () {
        this.timeout(90_000);
        const name = "cn-hangzhou.i-joined";
        const creds = await c.nodeCredentials(name);
        const cert = new crypto.X509Certificate(creds.certPem);
        assert.ok(cert.verify(new crypto.X509Certificate(c.caPem).publicKey), "signed by the cluster CA");
        assert.match(cert.subject, new RegExp(`CN=system:node:${name.replace(/\./g, "\\.")}`));
        const csr = JSON.parse(await c.kubectl(["get", "csr", creds.csrName, "-o", "json"]));
        assert.strictEqual(csr.spec.username, `system:bootstrap:${creds.token.split(".")[0]}`);
        assert.ok(csr.status.conditions.some((x: { type: string; reason: string }) => x.type === "Approved" && x.reason === "AutoApproved"));

        const asNode = (args: string[], input?: string) => c.run("kubectl", ["--kubeconfig", creds.kubeconfig, ...args], { allowFail: true, input });
        const who = JSON.parse((await asNode(["auth", "whoami", "-o", "json"])).stdout).status.userInfo;
        assert.strictEqual(who.username, `system:node:${name}`);
        assert.ok(who.groups.includes("system:nodes"));

        // registers its own Node with the provider id, as the kubelet would (--provider-id, KWOK plays the kubelet)
        const created = await asNode(["create", "-f", "-"], JSON.stringify({
            apiVersion: "v1",
            kind: "Node",
            metadata: { name, labels: { "kubernetes.io/hostname": name }, annotations: { "kwok.x-k8s.io/node": "fake" } },
            spec: { providerID: name },
        }));
        assert.strictEqual(created.code, 0, created.stderr);
        await c.waitFor(`${name} Ready with a podCIDR`, async () => {
            const n = await node(name);
            return n.spec.podCIDR && n.status.conditions?.some((x: { type: string; status: string }) => x.type === "Ready" && x.status === "True");
        });
        const other = await asNode(["label", "node", "cn-hangzhou.i-yyy", "stolen=yes"]);
        assert.notStrictEqual(other.code, 0, "a node may not label another node");
        assert.match(other.stderr, /forbidden|not allowed to modify node/i, other.stderr);
        const restricted = await asNode(["label", "node", name, "node-restriction.kubernetes.io/x=y"]);
        assert.notStrictEqual(restricted.code, 0, "NodeRestriction: a node may not set node-restriction.kubernetes.io/ labels");
    });

    it("kubeadm config validate accepts the project's master (ak_init_config) and join (ak_join_config) configs", async function () {
        const common = {
            AK_KUBERNETES_VERSION: "1.36.3",
            AK_API_ENDPOINT: `127.0.0.1:${c.ports.apiserver}`,
            AK_PROVIDER_ID: "cn-hangzhou.i-master0",
        };
        const master = renderProjectConfig("ak_init_config", {
            ...common,
            AK_IMAGE_REPOSITORY: "registry.k8s.io",
            AK_POD_CIDR: POD_CIDR,
            AK_SERVICE_CIDR: SERVICE_CIDR,
            AK_NODE_CIDR_MASK_SIZE: String(MASK),
            AK_CERT_SANS: "api.example.internal,10.0.0.10",
            AK_ENCRYPT_SECRETS: "1",
        });
        assert.match(master, /kind: ClusterConfiguration/);
        const masterFile = c.writeFile("project-master.yaml", master);
        const ok = await c.run("kubeadm", ["config", "validate", "--config", masterFile], { allowFail: true });
        assert.strictEqual(ok.code, 0, `master config refused:\n${ok.stderr}\n${master}`);

        const token = (await c.run("kubeadm", ["token", "create", "--kubeconfig", c.kubeconfig, "--ttl", "10m"])).stdout.trim();
        const joinCfg = renderProjectConfig("ak_join_config", {
            ...common,
            AK_PROVIDER_ID: "cn-hangzhou.i-worker1",
            AK_POOL_NAME: "workers",
            AK_BOOTSTRAP_TOKEN: token,
            AK_CA_CERT_HASHES: c.caCertHash,
            AK_NODE_LABELS: "tier=web",
            AK_NODE_TAINTS: "dedicated=web:NoSchedule",
        });
        assert.match(joinCfg, /kind: JoinConfiguration/);
        const joinFile = c.writeFile("project-join.yaml", joinCfg);
        const okJoin = await c.run("kubeadm", ["config", "validate", "--config", joinFile], { allowFail: true });
        assert.strictEqual(okJoin.code, 0, `join config refused:\n${okJoin.stderr}\n${joinCfg}`);

        // and validation is real: a pod CIDR smaller than a node's is refused. (kubeadm checks the pod CIDR against
        // controllerManager `node-cidr-mask-size-ipv4`, default 24; it does not read the `node-cidr-mask-size` the
        // project sets, so that one is checked only by the project's own config validation.)
        const bad = c.writeFile("project-bad.yaml", master.replace(`podSubnet: '${POD_CIDR}'`, "podSubnet: '172.16.0.0/26'"));
        assert.notStrictEqual(bad, masterFile);
        const refused = await c.run("kubeadm", ["config", "validate", "--config", bad], { allowFail: true });
        assert.notStrictEqual(refused.code, 0, "a /26 pod CIDR (smaller than a node's /24) must be refused");
        assert.match(refused.stderr, /smaller than the size of node subnet/);
    });
});
