// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers).
/**
 * Node userdata: rendering (quoting, validation, size, mirrors), shellcheck, and the scripts' behaviour in the
 * sandbox (testing/sandbox) on Ubuntu and Alibaba Cloud Linux images, bare and pre-baked.
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import fc from "fast-check";
import { parseAllDocuments } from "yaml";
import {
    AttachNodeParams, MasterInitParams, compactShell, packUserdata, USERDATA_HARD_LIMIT_BYTES, containerdRpmRepoUrl, defaultMirrors, kubernetesRepoUrl, redactUserdata,
    renderAttachCommand, renderAttachNode, renderControlPlaneJoin, renderControlPlaneJoinCommand, renderMasterInit, renderOperation, renderUpgradeCommand, shellQuote, USERDATA_BUDGET_BYTES,
} from "../src/shell/render";
import { OPERATIONS } from "../src/rules";
import { fill } from "../testing/savedCommands";
import { Sandbox, callsOf, downloadCalls, installCalls, makeSandbox } from "../testing/sandbox";
import { assertOk, requireTool, SHELLCHECK_INSTALL } from "./tools";

const USERDATA_DIR = path.join(__dirname, "..", "src", "shell");
const STUB_DIR = path.join(__dirname, "..", "testing", "sandbox", "stubs");
const GOLDEN = path.join(__dirname, "golden", "attach-node.sh");
const BUDGET = USERDATA_BUDGET_BYTES;

const TOKEN = "k9x2ab.0123456789abcdef";
const HASH_A = `sha256:${"0a".repeat(32)}`;
const HASH_B = `sha256:${"b1".repeat(32)}`;
const CERT_KEY = "c3".repeat(32);
const REGION = "cn-shanghai";
const INSTANCE = "i-uf6stub00000000042";
const PROVIDER_ID = `${REGION}.${INSTANCE}`;

const masterParams: MasterInitParams = {
    region: "cn-shanghai",
    kubernetesVersion: "1.34.2",
    apiEndpoint: "nlb-abc.cn-shanghai.nlb.aliyuncs.com:6443",
    podCidr: "172.16.0.0/16",
    serviceCidr: "10.96.0.0/12",
    nodeCidrMaskSize: 25,
    certSANs: ["192.168.0.10", "k8s.example.com", "nlb-abc.cn-shanghai.nlb.aliyuncs.com"],
};

const attachParams: AttachNodeParams = {
    region: "cn-shanghai",
    kubernetesVersion: "1.34.2",
    apiEndpoint: "192.168.0.10:6443",
    poolName: "elastic",
    labels: { workload_type: "cpu", "node.kubernetes.io/instance-family": "c7" },
    taints: [{ key: "dedicated", value: "batch", effect: "NoSchedule" }, "spot:PreferNoSchedule"],
    token: TOKEN,
    caCertHash: [HASH_A, HASH_B],
};

const { poolName: _pool, labels: _labels, taints: _taints, ...memberParams } = attachParams;

const metadata = { region: REGION, instanceId: INSTANCE };

function parseYaml(text: string | undefined): Array<Record<string, unknown>> {
    assert.ok(text, "expected a kubeadm --config file to have been captured");
    return parseAllDocuments(text).map((d) => d.toJS() as Record<string, unknown>);
}

function byKind(docs: Array<Record<string, unknown>>, kind: string): any {
    const doc = docs.find((d) => d.kind === kind);
    assert.ok(doc, `no ${kind} in the kubeadm config`);
    assert.equal(doc.apiVersion, "kubeadm.k8s.io/v1beta4");
    return doc;
}

function argValue(args: Array<{ name: string; value: string }>, name: string): string | undefined {
    return args.find((a) => a.name === name)?.value;
}

function shellcheck(files: string[]): { status: number | null; output: string } {
    const r = spawnSync("shellcheck", ["-x", ...files], { encoding: "utf8" });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

describe("userdata rendering", () => {
    it("shell-quotes any value so bash reads it back unchanged (property)", () => {
        const tricky = fc.array(fc.constantFrom("'", "\\", "\"", "$", "`", "\n", " ", "!", "a", "é", "${X}", "$(id)", "'\\''", "\t", "*"))
            .map((parts) => parts.join(""));
        const value = fc.oneof(tricky, fc.string({ unit: "binary-ascii" }), fc.string({ unit: "grapheme" }))
            .filter((s) => !s.includes("\0"));
        fc.assert(fc.property(fc.array(value, { minLength: 1, maxLength: 20 }), (values) => {
            const script = values.map((v, i) => `readonly V${i}=${shellQuote(v)}`).join("\n")
                + `\nprintf '%s\\0' ${values.map((_, i) => `"$V${i}"`).join(" ")}\n`;
            const r = spawnSync("bash", ["-c", script], { encoding: "utf8" });
            assert.equal(r.status, 0, r.stderr);
            assert.deepEqual(r.stdout.split("\0").slice(0, -1), values);
        }), { numRuns: 60 });
    });

    it("defaults to Alibaba mirrors in China regions and upstream elsewhere", () => {
        assert.deepEqual(defaultMirrors("cn-hangzhou"), {
            packageMirror: "https://mirrors.cloud.aliyuncs.com", imageRepository: "registry.cn-hangzhou.aliyuncs.com/google_containers",
        });
        assert.deepEqual(defaultMirrors("ap-southeast-1"), { packageMirror: "https://pkgs.k8s.io", imageRepository: "registry.k8s.io" });
        assert.equal(kubernetesRepoUrl("https://mirrors.cloud.aliyuncs.com/", "1.34.2"), "https://mirrors.cloud.aliyuncs.com/kubernetes-new/core/stable/v1.34/");
        assert.equal(kubernetesRepoUrl("https://pkgs.k8s.io", "1.31.0"), "https://pkgs.k8s.io/core:/stable:/v1.31/");
        assert.equal(containerdRpmRepoUrl("https://pkgs.k8s.io"), "https://download.docker.com/linux/centos");
        const script = renderAttachNode({ ...attachParams, region: "eu-central-1" });
        assert.match(script, /^readonly AK_K8S_REPO_URL='https:\/\/pkgs\.k8s\.io\/core:\/stable:\/v1\.34\/'$/m);
        assert.match(script, /^readonly AK_SANDBOX_IMAGE='registry\.k8s\.io\/pause:3\.10\.1'$/m);
    });

    it("honours explicit mirrors, repository URL and sandbox image", () => {
        const script = renderMasterInit({
            ...masterParams, packageMirror: "https://mirror.internal.example", imageRepository: "registry.internal.example/k8s/",
            kubernetesVersion: "1.32.4",
        });
        assert.match(script, /^readonly AK_K8S_REPO_URL='https:\/\/mirror\.internal\.example\/kubernetes-new\/core\/stable\/v1\.32\/'$/m);
        assert.match(script, /^readonly AK_IMAGE_REPOSITORY='registry\.internal\.example\/k8s'$/m);
        assert.match(script, /^readonly AK_SANDBOX_IMAGE='registry\.internal\.example\/k8s\/pause:3\.10'$/m);
        const custom = renderAttachNode({ ...attachParams, kubernetesRepoUrl: "https://repo.example/k8s/", sandboxImage: "reg.example/pause:9" });
        assert.match(custom, /^readonly AK_K8S_REPO_URL='https:\/\/repo\.example\/k8s\/'$/m);
        assert.match(custom, /^readonly AK_SANDBOX_IMAGE='reg\.example\/pause:9'$/m);
    });

    it("rejects missing or empty required parameters, naming each one", () => {
        const missingAttach = { region: "cn-hangzhou", kubernetesVersion: "", apiEndpoint: "x" } as unknown as AttachNodeParams;
        assert.throws(() => renderAttachNode(missingAttach), (e: Error) => {
            for (const name of ["kubernetesVersion", "apiEndpoint", "poolName", "token", "caCertHash"]) assert.match(e.message, new RegExp(`\\b${name}:`));
            return true;
        });
        const missingMaster = { region: "cn-hangzhou", kubernetesVersion: "1.34.2", apiEndpoint: "10.0.0.1:6443" } as unknown as MasterInitParams;
        assert.throws(() => renderMasterInit(missingMaster), (e: Error) => {
            for (const name of ["podCidr", "serviceCidr", "nodeCidrMaskSize"]) assert.match(e.message, new RegExp(`\\b${name}:`));
            return true;
        });
    });

    it("rejects bad values without echoing secrets", () => {
        const badToken = "ABCDEF.not-a-valid-token";
        assert.throws(() => renderAttachNode({ ...attachParams, token: badToken }), (e: Error) => {
            assert.match(e.message, /token: must be a bootstrap token/);
            assert.ok(!e.message.includes(badToken), "the error must not contain the token");
            return true;
        });
        assert.throws(() => renderAttachNode({ ...attachParams, caCertHash: "sha256:abc" }), /caCertHash:/);
        assert.throws(() => renderAttachNode({ ...attachParams, kubernetesVersion: "1.30.5" }), /kubernetesVersion: 1.30.5 is older than 1.31/);
        assert.throws(() => renderAttachNode({ ...attachParams, labels: { "node-role.kubernetes.io/worker": "" } }), /labels\.node-role\.kubernetes\.io\/worker: label "node-role\.kubernetes\.io\/worker" is in a kubernetes\.io\/k8s\.io namespace the kubelet may not set/);
        assert.throws(() => renderAttachNode({ ...attachParams, labels: { "alicloud-kubeadm/pool": "x" } }), /is set from poolName/);
        assert.throws(() => renderAttachNode({ ...attachParams, taints: ["dedicated=gpu:Sometimes"] }), /taints\.0: "dedicated=gpu:Sometimes" is not a taint/);
        assert.throws(() => renderMasterInit({ ...masterParams, nodeCidrMaskSize: 16 }), /nodeCidrMaskSize: must be an integer in 17\.\.30/);
        assert.throws(() => renderMasterInit({ ...masterParams, apiEndpoint: "10.0.0.1" }), /apiEndpoint: must be host:port/);
    });

    it("stays within the 20 KiB budget as delivered (packed) even with many labels, taints and SANs", () => {
        const labels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`example.com/label-${i}`, `value-${i}`]));
        const taints = Array.from({ length: 10 }, (_, i) => `example.com/taint-${i}=v:NoSchedule`);
        const attach = renderAttachNode({ ...attachParams, labels, taints });
        const master = renderMasterInit({ ...masterParams, certSANs: Array.from({ length: 20 }, (_, i) => `api-${i}.k8s.example.com`) });
        // The budget holds for userdata as delivered (packed); unpacked, it stays under ECS's hard limit.
        for (const [what, script] of [["attach", attach], ["master", master]] as const) {
            assert.ok(Buffer.byteLength(packUserdata(script, what)) <= BUDGET, `${what} userdata is ${Buffer.byteLength(packUserdata(script, what))} bytes packed`);
            assert.ok(Buffer.byteLength(script) <= USERDATA_HARD_LIMIT_BYTES, `${what} userdata is ${Buffer.byteLength(script)} bytes unpacked`);
        }
    });

    // What a join over Cloud Assistant runs: an existing node's saved attach command (`mode: manual`) and the saved
    // control-plane join, both compacted and packed, with their parameters filled in. The whole attach script never
    // travels by RunCommand: it is userdata (the 20 KiB budget above) or SSH's stdin.
    it("fits Cloud Assistant's RunCommand limit (24 KiB after Base64) for joins over Cloud Assistant", () => {
        const { poolName: _p, ...joinParams } = attachParams;
        const { labels: _l, taints: _t, token: _k, ...attachCommandParams } = attachParams;
        const attach = fill(renderAttachCommand(attachCommandParams), {
            labels: "workload_type=cpu,node.kubernetes.io/instance-family=c7", taints: "dedicated=batch:NoSchedule,spot:PreferNoSchedule", channel: "0123456789abcdef0123456789abcdef",
        });
        for (const script of [attach, fill(renderControlPlaneJoinCommand(joinParams), { token: TOKEN, certificateKey: CERT_KEY })]) {
            const encoded = Buffer.from(script, "utf8").toString("base64").length;
            assert.ok(encoded <= 24 * 1024, `${encoded} Base64 bytes`);
        }
    });

    it("renders a control-plane join with the certificate key, validated and redactable", () => {
        const script = renderControlPlaneJoin({ ...memberParams, certificateKey: CERT_KEY });
        assert.match(script, /^readonly AK_POOL_NAME='control-plane'$/m);
        assert.match(script, new RegExp(`^readonly AK_CERTIFICATE_KEY='${CERT_KEY}'$`, "m"));
        assert.ok(!redactUserdata(script).includes(CERT_KEY));
        assert.throws(() => renderControlPlaneJoin({ ...attachParams, certificateKey: "xyz" }), /renderControlPlaneJoin: .*certificateKey: must be 64/s);
        assert.ok(!renderAttachNode(attachParams).includes("AK_CERTIFICATE_KEY="), "worker userdata has no certificate key");
    });

    it("redacts the token and CA hashes and nothing else", () => {
        const script = renderAttachNode(attachParams);
        const redacted = redactUserdata(script);
        assert.ok(!redacted.includes(TOKEN) && !redacted.includes(HASH_A) && !redacted.includes(HASH_B));
        assert.match(redacted, /^readonly AK_BOOTSTRAP_TOKEN='<redacted>'$/m);
        assert.match(redacted, /^readonly AK_CA_CERT_HASHES='<redacted>'$/m);
        const differing = script.split("\n").filter((line, i) => line !== redacted.split("\n")[i]);
        assert.equal(differing.length, 2);
    });

    it("matches the reviewed golden attach userdata (UPDATE_GOLDEN=1 rewrites it)", () => {
        const actual = redactUserdata(renderAttachNode({
            region: "cn-hangzhou", kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", poolName: "general",
            labels: { workload_type: "cpu" }, taints: [], token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"0".repeat(64)}`,
        }));
        if (process.env.UPDATE_GOLDEN === "1") {
            fs.mkdirSync(path.dirname(GOLDEN), { recursive: true });
            fs.writeFileSync(GOLDEN, actual);
        }
        assert.equal(actual, fs.readFileSync(GOLDEN, "utf8"), "rendered attach userdata changed: review it and run with UPDATE_GOLDEN=1");
    });
});

describe("userdata scripts: static checks", () => {
    before(function () {
        requireTool(this, "shellcheck", SHELLCHECK_INSTALL, "the shellcheck assertions");
    });

    it("static scripts and sandbox stubs are shellcheck-clean", () => {
        const files = [
            ...fs.readdirSync(USERDATA_DIR).filter((f) => f.endsWith(".sh")).map((f) => path.join(USERDATA_DIR, f)),
            ...fs.readdirSync(STUB_DIR).filter((f) => !f.includes(".") || f.endsWith(".sh")).map((f) => path.join(STUB_DIR, f))
                .filter((f) => fs.statSync(f).isFile()),
        ];
        const r = shellcheck(files);
        assert.equal(r.status, 0, r.output);
    });

    /** shellcheck over rendered scripts, written to a temporary folder. */
    function shellcheckRendered(files: Record<string, string>): void {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-shellcheck-"));
        try {
            for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
            const r = shellcheck(Object.keys(files).map((f) => path.join(dir, f)));
            assert.equal(r.status, 0, r.output);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }

    it("rendered master and attach userdata are shellcheck-clean", () => {
        shellcheckRendered({
            "master.sh": renderMasterInit(masterParams),
            "attach.sh": renderAttachNode(attachParams),
            "attach-intl.sh": renderAttachNode({ ...attachParams, region: "us-west-1", labels: {}, taints: [] }),
        });
    });

    it("every rendered node operation and the saved attach and control-plane join commands are shellcheck-clean", () => {
        const files: Record<string, string> = {
            "attach-command.sh": renderAttachCommand(attachParams),
            "control-plane-join-command.sh": renderControlPlaneJoinCommand({ ...memberParams, caCertHash: HASH_A }),
            "upgrade-command.sh": renderUpgradeCommand({ region: "cn-hangzhou", kubernetesVersion: "1.36.4" }),
        };
        for (const op of Object.keys(OPERATIONS) as Array<keyof typeof OPERATIONS>) {
            if (op !== "attach" && op !== "control-plane-join" && op !== "upgrade") files[`${op}.sh`] = renderOperation(op);
        }
        shellcheckRendered(files);
    });

    it("kubeadm output is redacted before it reaches the log (tokens, certificate keys, CA pins)", () => {
        const functions = fs.readFileSync(path.join(USERDATA_DIR, "prepare_node.sh"), "utf8");
        const line = `kubeadm join nlb:6443 --token ${TOKEN} --discovery-token-ca-cert-hash ${HASH_A} --control-plane --certificate-key=${CERT_KEY}`;
        const r = spawnSync("bash", ["-c", `${functions}\nak_redact`], { input: `${line}\n`, encoding: "utf8", env: { PATH: process.env.PATH } });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout, "kubeadm join nlb:6443 --token <redacted> --discovery-token-ca-cert-hash <redacted> --control-plane --certificate-key=<redacted>\n");
    });

    it("every filesystem path in the scripts is under ${AK_ROOT}", () => {
        // A path written without the prefix would touch the machine running the sandbox tests.
        const allowed = [
            "/etc/apt/keyrings/alicloud-kubeadm-kubernetes.gpg", // inside the apt source line; written via ${AK_ROOT}${keyring}
            "/etc/fstab", "/etc/cni/net.d", "/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.crt", // in messages and comments
            "/run/containerd/containerd.sock", "/dev/null", "/opt/cni/bin", // in a comment
            "/etc/kubernetes/pki/etcd", "/var/log/alicloud-kubeadm/master-init.log", "/var/log/alicloud-kubeadm/", // inside the etcd pod; in messages
            "/etc/kubernetes", // in a message of bake_node.sh
            "/usr/local/sbin/alicloud-kubeadm-metadata-block", // AK_IMDS_BLOCK: written as ${AK_ROOT}${AK_IMDS_BLOCK}, run by the unit on the node
            "/dev/urandom", // read only (the encryption key)
            "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml", "/etc/kubernetes/audit", "/var/log/kubernetes/audit", // AK_* constants, written under ${AK_ROOT}
            "/usr/local/sbin/alicloud-kubeadm-cert-renew", // AK_RENEW_BIN, as AK_IMDS_BLOCK
            "/etc/alicloud-kubeadm/kubeadm-patches", // the node image overlay: read under ${AK_ROOT}, the node's own path in its kubeadm config
            "/etc/alicloud-kubeadm", // in a comment
        ];
        const ops = fs.readdirSync(path.join(USERDATA_DIR, "ops")).map((f) => path.join("ops", f));
        assert.ok(ops.includes(path.join("ops", "reset.sh")));
        for (const file of ["prepare_node.sh", "node_images.sh", "bake_node.sh", "control_plane.sh", "master_init.sh", "attach_node.sh", "channel.sh", ...ops]) {
            // A quoted heredoc's text is a file installed on the node (it runs there, never in the sandbox).
            const text = fs.readFileSync(path.join(USERDATA_DIR, file), "utf8").replace(/<<'(\w+)'[^\n]*\n[\s\S]*?\n\1\n/g, "");
            for (const m of text.matchAll(/(^|[^}A-Za-z0-9_./:-])(\/(?:etc|var|run|opt|usr|lib|root|home|tmp|dev)\/[A-Za-z0-9_./-]*)/gm)) {
                assert.ok(allowed.includes(m[2].replace(/[.]$/, "")), `${file}: path ${m[2]} is not under \${AK_ROOT}`);
            }
        }
    });
});

/** makeSandbox, with every sandbox made in the enclosing describe cleaned up after it. */
function trackedSandboxes(): (...args: Parameters<typeof makeSandbox>) => Sandbox {
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((sb) => sb.cleanup()));
    return (...args) => {
        const sb = makeSandbox(...args);
        sandboxes.push(sb);
        return sb;
    };
}

describe("master_init.sh in the sandbox", () => {
    const sandbox = trackedSandboxes();

    for (const flavour of [{ os: "ubuntu", ubuntuRelease: "22.04" }, { os: "ubuntu", ubuntuRelease: "24.04" }, { os: "alinux" }] as const) {
        it(`${flavour.os} ${"ubuntuRelease" in flavour ? flavour.ubuntuRelease : "3"}: installs, configures and runs kubeadm init with the rendered config; a second run does nothing`, async () => {
            const sb = sandbox({ ...flavour, ...metadata });
            const r = await sb.run(renderMasterInit(masterParams));
            assertOk(r, sb);

            const inits = callsOf(r.calls, "kubeadm", "init");
            assert.equal(inits.length, 1);
            assert.ok(inits[0].args.includes("--skip-token-print"), "init must not print the bootstrap token into the log");
            const docs = parseYaml(inits[0].config);
            const init = byKind(docs, "InitConfiguration");
            const cluster = byKind(docs, "ClusterConfiguration");
            assert.equal(init.nodeRegistration.name, PROVIDER_ID);
            assert.equal(argValue(init.nodeRegistration.kubeletExtraArgs, "provider-id"), PROVIDER_ID);
            assert.equal(argValue(init.nodeRegistration.kubeletExtraArgs, "cloud-provider"), "external");
            assert.equal(cluster.kubernetesVersion, "v1.34.2");
            assert.equal(cluster.controlPlaneEndpoint, masterParams.apiEndpoint);
            assert.equal(cluster.imageRepository, "registry.cn-hangzhou.aliyuncs.com/google_containers");
            assert.deepEqual(cluster.networking, { podSubnet: "172.16.0.0/16", serviceSubnet: "10.96.0.0/12" });
            assert.equal(argValue(cluster.controllerManager.extraArgs, "node-cidr-mask-size"), "25");
            assert.deepEqual([...cluster.apiServer.certSANs].sort(), ["192.168.0.10", "k8s.example.com", "nlb-abc.cn-shanghai.nlb.aliyuncs.com"]);

            if (flavour.os === "ubuntu") {
                const install = installCalls(r.calls);
                assert.equal(install.length, 1);
                assert.ok(["kubelet=1.34.2-*", "kubeadm=1.34.2-*", "kubectl=1.34.2-*", "conntrack", "socat", "containerd"].every((p) => install[0].args.includes(p)));
                assert.equal(sb.read("/etc/apt/sources.list.d/alicloud-kubeadm-kubernetes.list"),
                    "deb [signed-by=/etc/apt/keyrings/alicloud-kubeadm-kubernetes.gpg] https://mirrors.cloud.aliyuncs.com/kubernetes-new/core/stable/v1.34/deb/ /\n");
                assert.equal(callsOf(r.calls, "dnf").length, 0);
            } else {
                const install = callsOf(r.calls, "dnf", "install");
                assert.equal(install.length, 1);
                assert.ok(["kubelet-1.34.2", "kubeadm-1.34.2", "kubectl-1.34.2", "conntrack-tools", "socat", "containerd.io"].every((p) => install[0].args.includes(p)));
                assert.match(sb.read("/etc/yum.repos.d/alicloud-kubeadm-kubernetes.repo") ?? "",
                    /^baseurl=https:\/\/mirrors\.cloud\.aliyuncs\.com\/kubernetes-new\/core\/stable\/v1\.34\/rpm\/$/m);
                assert.match(sb.read("/etc/yum.repos.d/alicloud-kubeadm-containerd.repo") ?? "",
                    /^baseurl=https:\/\/mirrors\.cloud\.aliyuncs\.com\/docker-ce\/linux\/centos\/8\/\$basearch\/stable$/m);
                assert.equal(callsOf(r.calls, "apt-get").length, 0);
            }
            const containerd = sb.read("/etc/containerd/config.toml") ?? "";
            assert.match(containerd, /^\s*SystemdCgroup = true$/m);
            assert.match(containerd, /^\s*sandbox_image = "registry\.cn-hangzhou\.aliyuncs\.com\/google_containers\/pause:3\.10\.1"$/m);
            assert.equal(sb.read("/etc/sysctl.d/99-alicloud-kubeadm.conf")?.includes("net.ipv4.ip_forward = 1"), true);
            assert.equal(sb.read("/etc/modules-load.d/alicloud-kubeadm.conf"), "overlay\nbr_netfilter\n");
            assert.equal(callsOf(r.calls, "swapoff").length, 1);
            assert.match(sb.read("/var/lib/alicloud-kubeadm/init.done") ?? "", /^status=ok\nnode=cn-shanghai\.i-uf6stub00000000042\ntime=/);
            assert.ok(sb.read("/etc/kubernetes/admin.conf"), "admin.conf stays in place for JoinInfo");
            assert.match(sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? "", /kubeadm init succeeded/);

            const again = await sb.run(renderMasterInit(masterParams));
            assertOk(again, sb);
            assert.deepEqual(again.calls.map((c) => c.cmd), [], "the second run must not call kubeadm, package managers or anything else");
            assert.match(again.stderr, /already completed/);
        });
    }

    it("comments out swap in /etc/fstab and sets the sandbox image with containerd 2.x", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, env: { AK_STUB_CONTAINERD_MAJOR: "2" } });
        sb.write("/etc/fstab", "UUID=1 / ext4 defaults 0 1\n/swapfile none swap sw 0 0\n");
        const r = await sb.run(renderMasterInit(masterParams));
        assertOk(r, sb);
        assert.equal(sb.read("/etc/fstab"), "UUID=1 / ext4 defaults 0 1\n# /swapfile none swap sw 0 0 # disabled by alicloud-kubeadm\n");
        const containerd = sb.read("/etc/containerd/config.toml") ?? "";
        assert.match(containerd, /^\s*sandbox = 'registry\.cn-hangzhou\.aliyuncs\.com\/google_containers\/pause:3\.10\.1'$/m);
        assert.match(containerd, /^\s*SystemdCgroup = true$/m);
        assert.match(containerd, /sandboxer = 'podsandbox'/, "the sandboxer key must not be mistaken for sandbox");
    });

    it("containerd 2.0.0-2.0.6 / 2.1.0-2.1.4 (no SystemdCgroup in the default config): adds the key under the runc options, both layouts", async () => {
        const tables = {
            "1": `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
            "2": `[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]`,
        };
        for (const major of ["1", "2"] as const) {
            const sb = sandbox({ os: "ubuntu", prebaked: true, env: { AK_STUB_CONTAINERD_MAJOR: major, AK_STUB_CONTAINERD_NO_SYSTEMD: "1" } });
            const r = await sb.run(renderMasterInit(masterParams));
            assertOk(r, sb);
            const conf = sb.read("/etc/containerd/config.toml") ?? "";
            const lines = conf.split("\n");
            const header = lines.findIndex((l) => l.trim() === tables[major]);
            assert.ok(header >= 0, `major ${major}: runc options table kept`);
            assert.equal(lines[header + 1], `${lines[header].match(/^\s*/)![0]}  SystemdCgroup = true`, `major ${major}: key right below the header, one step deeper`);
            assert.equal(conf.match(/SystemdCgroup/g)?.length, 1, `major ${major}: exactly one SystemdCgroup`);
            assert.match(r.stderr, /added SystemdCgroup to containerd's config/);
            assert.equal(callsOf(r.calls, "kubeadm", "init").length, 1, `major ${major}: init ran`);
            // Idempotent: the second pass finds the key and leaves the file (and containerd) alone.
            const again = await sb.run(renderAttachNode({ ...attachParams, region: "cn-hangzhou" }));
            assert.equal(sb.read("/etc/containerd/config.toml"), conf);
            assert.equal(callsOf(again.calls, "systemctl", "restart").length, 0, `major ${major}: no restart on a second run`);
        }
    });

    it("a pre-baked image without the CNI plugins flannel needs gets kubernetes-cni from the Kubernetes repository (apt and dnf)", async () => {
        for (const os of ["ubuntu", "alinux"] as const) {
            const sb = sandbox({ os, prebaked: true, prebakedVersion: "1.34.2", prebakedCni: false });
            const r = await sb.run(renderMasterInit(masterParams));
            assertOk(r, sb);
            const install = installCalls(r.calls);
            assert.equal(install.length, 1, os);
            assert.ok(install[0].args.includes("kubernetes-cni"), `${os}: installs kubernetes-cni`);
            assert.ok(!install[0].args.some((a) => /^kube(let|adm|ctl)[=-]/.test(a) || a === "containerd" || a === "containerd.io"), `${os}: nothing else`);
            for (const plugin of ["bridge", "host-local", "portmap", "loopback"]) {
                assert.ok(fs.existsSync(sb.at(`/opt/cni/bin/${plugin}`)), `${os}: ${plugin}`);
            }
            if (os === "ubuntu") {
                assert.match(sb.read("/etc/apt/sources.list.d/alicloud-kubeadm-kubernetes.list") ?? "", /kubernetes-new\/core\/stable\/v1\.34\/deb\//);
            } else {
                assert.ok(install[0].args.includes("--disableexcludes=alicloud-kubeadm-kubernetes"), "the repository excludes kubernetes-cni unless told");
                assert.match(sb.read("/etc/yum.repos.d/alicloud-kubeadm-kubernetes.repo") ?? "", /^baseurl=.*\/v1\.34\/rpm\/$/m);
            }
            assert.match(r.stderr, /CNI plugins: 1/);
        }
        const partial = sandbox({ os: "ubuntu", prebaked: true });
        fs.rmSync(partial.at("/opt/cni/bin/portmap"));
        const r = await partial.run(renderMasterInit(masterParams));
        assertOk(r, partial);
        assert.deepEqual(installCalls(r.calls).map((c) => c.args.filter((a) => /^[a-z]/.test(a) && a !== "install")), [["kubernetes-cni"]], "one missing plugin is enough");
    });

    it("stops with a clear error when the CNI plugins are still missing after the install", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, prebakedCni: false, stubs: { "apt-get": '. "$AK_STUB_SRC/_lib.sh"' } });
        const r = await sb.run(renderMasterInit(masterParams));
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /or CNI plugins still missing; check the package mirror/);
        assert.equal(callsOf(r.calls, "kubeadm", "init").length, 0);
    });

    it("a failure before kubeadm init (package install) also leaves init.failed, so JoinInfo does not wait in vain", async () => {
        for (const os of ["ubuntu", "alinux"] as const) {
            const sb = sandbox({ os, env: { AK_STUB_FAIL_INSTALL: "1" } });
            const r = await sb.run(renderMasterInit(masterParams));
            assert.notEqual(r.code, 0);
            assert.equal(callsOf(r.calls, "kubeadm", "init").length, 0);
            assert.match(sb.read("/var/lib/alicloud-kubeadm/init.failed") ?? "", /^status=failed\nexit_code=(100|1)\nlog=\/var\/log\/alicloud-kubeadm\/master-init\.log\n/);
            assert.match(sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? "", /Unable to (locate package|find a match:) kubeadm/);
        }
    });

    it("looks for runc's SystemdCgroup in runc's options table: another runtime's key does not count", async () => {
        // A pre-baked config (e.g. with the NVIDIA runtime) whose runc options lack the key, as containerd 2.0.0-2.0.6 print them.
        const custom = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.6\"\n" +
            "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n    SystemdCgroup = false\n" +
            "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n    BinaryName = \"\"\n" +
            "  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = \"/etc/containerd/certs.d\"\n";
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        sb.write("/etc/containerd/config.toml", custom);
        assertOk(await sb.run(renderMasterInit(masterParams)), sb);
        const lines = (sb.read("/etc/containerd/config.toml") ?? "").split("\n");
        const table = (name: string) => {
            const at = lines.findIndex((l) => l.trim() === `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.${name}.options]`);
            assert.ok(at >= 0, `${name} options table kept`);
            const end = lines.findIndex((l, i) => i > at && /^\s*\[/.test(l));
            return lines.slice(at + 1, end < 0 ? undefined : end).map((l) => l.trim());
        };
        assert.deepEqual(table("runc"), ["SystemdCgroup = true", "BinaryName = \"\""], "runc's options get the key");
        assert.deepEqual(table("nvidia"), ["BinaryName = \"/usr/bin/nvidia-container-runtime\"", "SystemdCgroup = true"], "every runtime agrees with the kubelet's systemd driver");
    });

    it("patches a pre-baked full containerd config in place, and replaces a packaged config that disables CRI", async () => {
        const custom = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  sandbox_image = \"registry.k8s.io/pause:3.6\"\n" +
            "  [plugins.\"io.containerd.grpc.v1.cri\".registry]\n    config_path = \"/etc/containerd/certs.d\"\n" +
            "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n    SystemdCgroup = false\n";
        const baked = sandbox({ os: "ubuntu", prebaked: true });
        baked.write("/etc/containerd/config.toml", custom);
        assertOk(await baked.run(renderMasterInit(masterParams)), baked);
        assert.equal(baked.read("/etc/containerd/config.toml"), custom
            .replace("registry.k8s.io/pause:3.6", "registry.cn-hangzhou.aliyuncs.com/google_containers/pause:3.10.1")
            .replace("SystemdCgroup = false", "SystemdCgroup = true"));

        const packaged = sandbox({ os: "alinux", prebaked: true });
        packaged.write("/etc/containerd/config.toml", "disabled_plugins = [\"cri\"]\n");
        assertOk(await packaged.run(renderMasterInit(masterParams)), packaged);
        const conf = packaged.read("/etc/containerd/config.toml") ?? "";
        assert.doesNotMatch(conf, /disabled_plugins = \["cri"\]/);
        assert.match(conf, /^\s*SystemdCgroup = true$/m);
    });

    it("reads identity with the IMDSv2 token when required, and falls back to plain GETs without one", async () => {
        const v2 = sandbox({ os: "ubuntu", prebaked: true, imds: "v2-required", ...metadata });
        const r2 = await v2.run(renderMasterInit(masterParams));
        assertOk(r2, v2);
        const metaCalls = callsOf(r2.calls, "curl").filter((c) => c.args.some((a) => a.includes("/meta-data/")));
        assert.ok(metaCalls.length >= 2 && metaCalls.every((c) => c.args.includes("X-aliyun-ecs-metadata-token: stub-imds-token")));
        const tokenCall = callsOf(r2.calls, "curl").find((c) => c.args.some((a) => a.endsWith("/latest/api/token")));
        assert.ok(tokenCall?.args.includes("PUT") && tokenCall.args.includes("X-aliyun-ecs-metadata-token-ttl-seconds: 21600"));

        const v1 = sandbox({ os: "ubuntu", prebaked: true, imds: "v1", ...metadata });
        const r1 = await v1.run(renderMasterInit(masterParams));
        assertOk(r1, v1);
        assert.equal(byKind(parseYaml(callsOf(r1.calls, "kubeadm", "init")[0].config), "InitConfiguration").nodeRegistration.name, PROVIDER_ID);
    });

    it("the static script fails fast naming missing parameters, before touching anything", async () => {
        const unrendered = ["prepare_node.sh", "master_init.sh"].map((f) => fs.readFileSync(path.join(USERDATA_DIR, f), "utf8")).join("\n");
        const sb = sandbox({ os: "ubuntu" });
        const r = await sb.run(unrendered, { AK_KUBERNETES_VERSION: "1.34.2", AK_API_ENDPOINT: "10.0.0.1:6443" });
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /missing required parameter\(s\): AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_IMAGE_REPOSITORY AK_POD_CIDR AK_SERVICE_CIDR AK_NODE_CIDR_MASK_SIZE;/);
        assert.deepEqual(r.calls, []);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/init.failed"), undefined, "a parameter error is not an init failure");
    });

    it("a failed init leaves init.failed with the exit code and the log, and is not retried", async () => {
        const sb = sandbox({ os: "alinux", prebaked: true, fail: { init: true } });
        const r = await sb.run(renderMasterInit(masterParams));
        assert.notEqual(r.code, 0);
        assert.equal(callsOf(r.calls, "kubeadm", "init").length, 1, "exactly one init attempt");
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.failed") ?? "", /^status=failed\nexit_code=1\nlog=\/var\/log\/alicloud-kubeadm\/master-init\.log\n/);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/init.done"), undefined);
        assert.match(sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? "", /error execution phase wait-control-plane/);

        const again = await sb.run(renderMasterInit(masterParams), { AK_STUB_FAIL_INIT: "0" });
        assert.notEqual(again.code, 0);
        assert.equal(callsOf(again.calls, "kubeadm").length, 0, "no automatic retry after a failed init");
        assert.match(again.stderr, /earlier kubeadm init failed .*kubeadm reset -f/s);
    });
});

describe("node operations in the sandbox", () => {
    const sandbox = trackedSandboxes();

    it("the upgrade command gives `kubeadm upgrade` the node image's overlays, as the join had them: its preflight exceptions and its kubeadm patches", async () => {
        const upgrade = renderUpgradeCommand({ region: "cn-hangzhou", kubernetesVersion: "1.36.4" });
        const kubeadmArgs = async (sb: Sandbox, step: string) => {
            const r = await sb.run(fill(upgrade, { upgradeStep: step }));
            assert.equal(r.code, 0, r.stdout + r.stderr);
            return callsOf(r.calls, "kubeadm", "upgrade").map((c) => c.args.map((a) => a.replace(sb.at("/").replace(/\/$/, ""), "")));
        };
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        sb.write("/etc/alicloud-kubeadm/kubeadm-patches/kubeletconfiguration+merge.yaml", "failCgroupV1: false\n");
        sb.write("/etc/alicloud-kubeadm/ignore-preflight-errors", "SystemVerification, Swap,\n");
        const patches = ["--patches", "/etc/alicloud-kubeadm/kubeadm-patches"];
        const ignored = "--ignore-preflight-errors=SystemVerification,Swap";
        assert.deepEqual(await kubeadmArgs(sb, "plan"), [["upgrade", "plan", ignored, "v1.36.4"]]);
        assert.deepEqual(await kubeadmArgs(sb, "apply"), [["upgrade", "apply", "--yes", ignored, ...patches, "v1.36.4"]]);
        assert.deepEqual(await kubeadmArgs(sb, "node"), [["upgrade", "node", ignored, ...patches]]);
        assert.deepEqual(await kubeadmArgs(sb, "control-plane"), [["upgrade", "node", "phase", "control-plane", ...patches]]);
        // an image without overlays: kubeadm's own defaults
        const plain = sandbox({ os: "ubuntu", prebaked: true });
        assert.deepEqual(await kubeadmArgs(plain, "node"), [["upgrade", "node"]]);
        // the file's names are checked, never run
        const hostile = sandbox({ os: "ubuntu", prebaked: true });
        hostile.write("/etc/alicloud-kubeadm/ignore-preflight-errors", "all; touch /tmp/x");
        const h = await hostile.run(fill(upgrade, { upgradeStep: "node" }));
        assert.notEqual(h.code, 0);
        assert.match(h.stdout + h.stderr, /ignore-preflight-errors: expected comma-separated kubeadm check names/);
        assert.equal(callsOf(h.calls, "kubeadm", "upgrade").length, 0);
    });

    it("reset: kubeadm reset, the CNI configuration and state, the links and the join markers are gone; a second run changes nothing more", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        sb.write("/etc/cni/net.d/10-flannel.conflist", "{}");
        sb.write("/var/lib/cni/flannel/x", "lease");
        sb.write("/var/lib/alicloud-kubeadm/join.done", "status=ok\n");
        sb.setLink("cni0", true);
        const r = await sb.run(renderOperation("reset"));
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /reset-complete/);
        assert.deepEqual(callsOf(r.calls, "kubeadm", "reset").map((c) => c.args), [["reset", "-f"]]);
        assert.ok(callsOf(r.calls, "ip", "link").some((c) => c.args.join(" ") === "link delete cni0"), "cni0 deleted");
        for (const gone of ["/etc/cni/net.d/10-flannel.conflist", "/var/lib/cni/flannel/x", "/var/lib/alicloud-kubeadm/join.done"]) {
            assert.equal(sb.read(gone), undefined, gone);
        }
        const again = await sb.run(renderOperation("reset"));
        assert.equal(again.code, 0, again.stderr);
        assert.equal(callsOf(again.calls, "ip", "link").filter((c) => c.args[1] === "delete").length, 0, "no link left to delete");
    });

    it("drain: marks the Node, then drains; prints only the last 8 KB of kubectl's output and a status line; the whole output stays in a log on the master", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const big = "evicting pod default/web-0\n".repeat(1200); // ~31 KB, more than Cloud Assistant keeps (24 KB)
        const params = { node: "node-a", timeout: "600", force: "false", skipWait: "0", mark: "removing" };
        const r = await sb.run(fill(renderOperation("drain"), params), { AK_STUB_KUBECTL_OUTPUT: big });
        assert.equal(r.code, 0, r.stderr);
        assert.ok(Buffer.byteLength(r.stdout) <= 8192 + 32, `printed ${Buffer.byteLength(r.stdout)} bytes`);
        assert.match(r.stdout, /drain-status=0\n$/);
        const kubectl = callsOf(r.calls, "kubectl").map((c) => c.args.filter((a) => !a.startsWith("--kubeconfig")).slice(0, 3).join(" "));
        assert.deepEqual(kubectl.map((k) => k.split(" ")[0]), ["annotate", "drain"], "marked before the drain");
        assert.match(kubectl[0], /^annotate node node-a$/);
        assert.ok(callsOf(r.calls, "kubectl")[0].args.some((a) => a.startsWith("alicloud-kubeadm/removing=")), "a removal's mark");
        assert.ok(Buffer.byteLength(sb.read("/var/log/alicloud-kubeadm/drain-node-a.log") ?? "") > 60_000, "the whole output is kept on the master");
        const failed = await sb.run(fill(renderOperation("drain"), params), { AK_STUB_KUBECTL_RC: "1", AK_STUB_KUBECTL_OUTPUT: 'Error from server (NotFound): nodes "node-a" not found' });
        assert.equal(failed.code, 1);
        assert.match(failed.stdout, /not found\ndrain-status=1\n$/);
        assert.deepEqual(callsOf(failed.calls, "kubectl").map((c) => c.args.find((a) => !a.startsWith("--"))), ["annotate"], "no drain of a Node that could not be marked");
        const upgrade = await sb.run(fill(renderOperation("drain"), { ...params, mark: "upgrading" }), {});
        assert.ok(callsOf(upgrade.calls, "kubectl")[0].args.some((a) => a.startsWith("alicloud-kubeadm/upgrading=")), "an upgrade's mark, not a removal's");
    });

    it("uncordon: only a Node a removal (or an upgrade) marked, read by that mark; the mark goes with the cordon", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const unmarked = await sb.run(fill(renderOperation("uncordon"), { node: "node-a", mark: "removing" }), { AK_STUB_KUBECTL_OUTPUT: "" });
        assert.equal(unmarked.code, 0, unmarked.stderr);
        assert.match(unmarked.stdout, /^not-marked$/m);
        assert.deepEqual(callsOf(unmarked.calls, "kubectl").map((c) => c.args.find((a) => !a.startsWith("--"))), ["get"]);
        const marked = await sb.run(fill(renderOperation("uncordon"), { node: "node-a", mark: "removing" }), { AK_STUB_KUBECTL_OUTPUT: "2026-12-02T10:00:00Z" });
        assert.match(marked.stdout, /^uncordoned$/m);
        const args = callsOf(marked.calls, "kubectl").map((c) => c.args.filter((a) => !a.startsWith("--kubeconfig")).join(" "));
        assert.match(args[0], /jsonpath=\{\.metadata\.annotations\.alicloud-kubeadm\/removing\}/);
        assert.deepEqual(args.slice(1), ["uncordon node-a", "annotate node node-a alicloud-kubeadm/removing-"]);
        const upgrade = await sb.run(fill(renderOperation("uncordon"), { node: "node-a", mark: "upgrading" }), { AK_STUB_KUBECTL_OUTPUT: "2026-12-02T10:00:00Z" });
        const upgradeArgs = callsOf(upgrade.calls, "kubectl").map((c) => c.args.filter((a) => !a.startsWith("--kubeconfig")).join(" "));
        assert.match(upgradeArgs[0], /jsonpath=\{\.metadata\.annotations\.alicloud-kubeadm\/upgrading\}/);
        assert.deepEqual(upgradeArgs.slice(1), ["uncordon node-a", "annotate node node-a alicloud-kubeadm/upgrading-"]);
    });

    it("outdated-taint: add taints only the named Nodes that exist (overwriting); clear untaints only the Nodes whose taint names the pool", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const kubectl = (r: { calls: Parameters<typeof callsOf>[0] }) => callsOf(r.calls, "kubectl").map((c) => c.args.filter((a) => !a.startsWith("--kubeconfig")).join(" "));
        const add = await sb.run(fill(renderOperation("outdated-taint"), { pool: "general", taintMode: "add", outdated: "node-a node-gone" }), { AK_STUB_KUBECTL_OUTPUT: "node-a\nnode-b" });
        assert.equal(add.code, 0, add.stderr);
        assert.match(add.stdout, /^tainted 1$/m);
        assert.equal(kubectl(add)[1], "taint nodes node-a --overwrite alicloud-kubeadm/outdated=general:PreferNoSchedule");
        const none = await sb.run(fill(renderOperation("outdated-taint"), { pool: "general", taintMode: "add", outdated: "" }), { AK_STUB_KUBECTL_OUTPUT: "node-a" });
        assert.match(none.stdout, /^tainted 0$/m);
        assert.equal(kubectl(none).filter((k) => k.startsWith("taint")).length, 0);
        const clear = await sb.run(fill(renderOperation("outdated-taint"), { pool: "general", taintMode: "clear", outdated: "" }),
            { AK_STUB_KUBECTL_OUTPUT: "node-a\tgeneral\tgeneral\nnode-b\tother\tother\nnode-c\t\t\nnode-d\tgeneral\tgeneral" });
        assert.equal(clear.code, 0, clear.stderr);
        assert.match(clear.stdout, /^cleared 2$/m);
        assert.equal(kubectl(clear)[1], "taint nodes node-a node-d alicloud-kubeadm/outdated:PreferNoSchedule-");
        // clear also releases the Nodes the pool's rollout held (the same stubbed listing: name<TAB>taint, then
        // name<TAB>scale-down-disabled<TAB>held-by).
        assert.match(clear.stdout, /^released 2$/m);
        assert.equal(kubectl(clear)[3], "annotate nodes node-a node-d cluster-autoscaler.kubernetes.io/scale-down-disabled- alicloud-kubeadm/scale-down-held-");
    });

    it("outdated-taint hold: annotates the named Nodes scale-down-disabled with the rollout's mark, skipping one gone and one whose annotation somebody else set", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const kubectl = (r: { calls: Parameters<typeof callsOf>[0] }) => callsOf(r.calls, "kubectl").map((c) => c.args.filter((a) => !a.startsWith("--kubeconfig")).join(" "));
        // name<TAB>scale-down-disabled<TAB>held-by: a free, one held before (again: overwritten), one the user's, c free but not named.
        const hold = await sb.run(fill(renderOperation("outdated-taint"), { pool: "general", taintMode: "hold", outdated: "node-a node-b node-u node-gone" }),
            { AK_STUB_KUBECTL_OUTPUT: "node-a\t\t\nnode-b\ttrue\tgeneral\nnode-u\ttrue\t\nnode-c\t\t" });
        assert.equal(hold.code, 0, hold.stderr);
        assert.match(hold.stdout, /^held 2$/m);
        assert.match(kubectl(hold)[0], /go-template=.*index \. "cluster-autoscaler\.kubernetes\.io\/scale-down-disabled"/);
        assert.equal(kubectl(hold)[1], "annotate nodes node-a node-b --overwrite cluster-autoscaler.kubernetes.io/scale-down-disabled=true alicloud-kubeadm/scale-down-held=general");
    });

    it("etcd-member-remove: finds the member by name or by peer address, removes it once; absent is fine", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const list = ["8e9e05c52164694d, started, master-1, https://192.168.1.11:2380, https://192.168.1.11:2379, false",
            "91bc3c398fb3c146, started, master-2, https://192.168.2.12:2380, https://192.168.2.12:2379, false",
            // added by a join that never started it: no name yet, removed by its address without a health answer
            "5a0e0c1f5e2a7b13, unstarted, , https://192.168.3.13:2380, , false"].join("\n");
        const run = (member: string, peerIp: string) => sb.run(fill(renderOperation("etcd-member-remove"), { member, peerIp, etcdNode: "master-0" }), { AK_STUB_KUBECTL_OUTPUT: list });
        const removedArgs = (r: Awaited<ReturnType<typeof run>>) => callsOf(r.calls, "kubectl").map((c) => c.args.join(" ")).filter((a) => / member remove /.test(a)).map((a) => a.split(" ").pop());
        const byName = await run("master-2", "");
        assert.equal(byName.code, 0, byName.stderr);
        assert.match(byName.stdout, /member-removed/);
        assert.deepEqual(removedArgs(byName), ["91bc3c398fb3c146"]);
        const byPeer = await run("", "192.168.3.13");
        assert.deepEqual(removedArgs(byPeer), ["5a0e0c1f5e2a7b13"]);
        const notPrefix = await run("", "192.168.3.1");
        assert.match(notPrefix.stdout, /member-absent/, "192.168.3.1 is not 192.168.3.13");
        assert.deepEqual(removedArgs(notPrefix), []);
        assert.match((await run("master-9", "")).stdout, /member-absent/);
        // A match on the first of many lines (more than a pipe holds): reading on after the match keeps etcdctl
        // from dying of SIGPIPE, which pipefail would turn into a failed removal.
        const long = [list, ...Array.from({ length: 1200 }, (_, k) => `${(0x1000000 + k).toString(16)}aaaaaaaaa, started, node-${k}, https://10.0.${k >> 8}.${k & 255}:2380, https://10.0.0.1:2379, false`)].join("\n");
        const first = await sb.run(fill(renderOperation("etcd-member-remove"), { member: "master-1", peerIp: "", etcdNode: "master-0" }), { AK_STUB_KUBECTL_OUTPUT: long });
        assert.equal(first.code, 0, first.stderr);
        assert.deepEqual(removedArgs(first), ["8e9e05c52164694d"]);
    });

    it("etcd-member-remove: the exact member: by name before address, a started healthy member never removed by its address, two of one name or address remove none", async () => {
        // etcdctl's answers (member list in its simple format, endpoint health as JSON) from files; `member remove` recorded.
        const sb = sandbox({ os: "ubuntu", prebaked: true, stubs: { kubectl: `. "$AK_STUB_SRC/_lib.sh"
case "$*" in
  *"member list"*) cat "$AK_STUB_STATE/members" ;;
  *"endpoint health"*) cat "$AK_STUB_STATE/health"; grep -q '"health":false' "$AK_STUB_STATE/health" && exit 1 ;;
esac
exit 0` } });
        const stale = "aaaa000000000001, started, cn-hangzhou.i-old, https://10.0.0.2:12380, https://10.0.0.2:12379, false";
        const live = "bbbb000000000002, started, cn-hangzhou.i-new, https://10.0.0.2:2380, https://10.0.0.2:2379, false";
        const health = '[{"endpoint":"https://10.0.0.2:2379","health":true,"took":"1ms"},{"endpoint":"https://10.0.0.2:12379","health":false,"took":"5s","error":"context deadline exceeded"}]';
        const run = async (members: string[], member: string, peerIp: string) => {
            fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "members"), members.join("\n") + "\n");
            fs.writeFileSync(path.join(sb.env.AK_STUB_STATE, "health"), health + "\n");
            const r = await sb.run(fill(renderOperation("etcd-member-remove"), { member, peerIp, etcdNode: "cn-hangzhou.i-m0" }));
            return { ...r, removed: callsOf(r.calls, "kubectl").map((c) => c.args.join(" ")).filter((a) => / member remove /.test(a)).map((a) => a.split(" ").pop()) };
        };
        // The leaving master by its name, though a stale member at its address is listed first.
        const byName = await run([stale, live], "cn-hangzhou.i-new", "10.0.0.2");
        assert.equal(byName.code, 0, byName.stderr);
        assert.deepEqual(byName.removed, ["bbbb000000000002"]);
        // No name to go by (its Node is gone): two members at the address, so neither is removed.
        const twoAtAddress = await run([stale, live], "", "10.0.0.2");
        assert.equal(twoAtAddress.code, 1);
        assert.match(twoAtAddress.stderr, /2 etcd members have a peer URL at 10\.0\.0\.2 \(ids aaaa000000000001 bbbb000000000002\)/);
        assert.deepEqual(twoAtAddress.removed, []);
        // A started, healthy member at the address is never removed by it: without a name, and with another name given.
        const healthy = await run([live], "", "10.0.0.2");
        assert.equal(healthy.code, 1);
        assert.match(healthy.stderr, /the etcd member at 10\.0\.0\.2 \(id bbbb000000000002, cn-hangzhou\.i-new\) is healthy/);
        assert.deepEqual(healthy.removed, []);
        const otherName = await run([live], "cn-hangzhou.i-gone", "10.0.0.2");
        assert.equal(otherName.code, 0, otherName.stderr);
        assert.match(otherName.stdout, /member-absent/);
        assert.deepEqual(otherName.removed, []);
        // An unhealthy one at the address (no name given), and one a join added but never started (no name yet), are removed.
        assert.deepEqual((await run([stale], "", "10.0.0.2")).removed, ["aaaa000000000001"]);
        assert.deepEqual((await run([live, "cccc000000000003, unstarted, , https://10.0.0.3:2380, , false"], "cn-hangzhou.i-3", "10.0.0.3")).removed, ["cccc000000000003"]);
        // Two members of one name: neither.
        const twoNamed = await run([live, "dddd000000000004, started, cn-hangzhou.i-new, https://10.0.0.4:2380, https://10.0.0.4:2379, false"], "cn-hangzhou.i-new", "");
        assert.equal(twoNamed.code, 1);
        assert.match(twoNamed.stderr, /2 etcd members are named cn-hangzhou\.i-new/);
        assert.deepEqual(twoNamed.removed, []);
    });

    it("etcd-member-remove: a started member at the address whose health cannot be read (endpoint health answers nothing) is not removed by that address", async () => {
        // etcdctl's member list from a file; `endpoint health` fails without a word (kubectl exec cut off, the API server
        // between two answers): whether the member runs is unknown, so it must not be taken for a dead one.
        const sb = sandbox({ os: "ubuntu", prebaked: true, stubs: { kubectl: `. "$AK_STUB_SRC/_lib.sh"
case "$*" in
  *"member list"*) echo "bbbb000000000002, started, cn-hangzhou.i-new, https://10.0.0.2:2380, https://10.0.0.2:2379, false" ;;
  *"endpoint health"*) echo "error: unable to upgrade connection: container not found" >&2; exit 1 ;;
esac
exit 0` } });
        const r = await sb.run(fill(renderOperation("etcd-member-remove"), { member: "", peerIp: "10.0.0.2", etcdNode: "cn-hangzhou.i-m0" }));
        const removed = callsOf(r.calls, "kubectl").map((c) => c.args.join(" ")).filter((a) => / member remove /.test(a));
        assert.deepEqual(removed, [], r.stdout);
        assert.equal(r.code, 1);
    });

    it("a parameter value that breaks the pattern stops the operation before it does anything", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const r = await sb.run(fill(renderOperation("delete-node"), { nodes: "Node With Spaces" }));
        assert.equal(r.code, 1);
        assert.match(r.stderr, /parameter NODES must be Node names separated by single spaces/);
        assert.equal(r.calls.length, 0, "kubectl never ran");
    });
});

describe("attach_node.sh in the sandbox", () => {
    const sandbox = trackedSandboxes();
    const script = renderAttachNode(attachParams);

    for (const os of ["ubuntu", "alinux"] as const) {
        it(`${os}: joins with a JoinConfiguration carrying the header's token, CA pins, endpoint, identity, labels and taints`, async () => {
            const sb = sandbox({ os, ...metadata });
            const r = await sb.run(script);
            assertOk(r, sb);
            const joins = callsOf(r.calls, "kubeadm", "join");
            assert.equal(joins.length, 1);
            assert.deepEqual(joins[0].args.filter((a) => a.startsWith("--")), ["--config"], "only --config: no flag can skip CA verification");
            const join = byKind(parseYaml(joins[0].config), "JoinConfiguration");
            assert.deepEqual(join.discovery.bootstrapToken, {
                apiServerEndpoint: "192.168.0.10:6443", token: TOKEN, caCertHashes: [HASH_A, HASH_B],
            });
            assert.equal(join.nodeRegistration.name, PROVIDER_ID);
            const kubelet = join.nodeRegistration.kubeletExtraArgs;
            assert.equal(argValue(kubelet, "provider-id"), PROVIDER_ID);
            assert.equal(argValue(kubelet, "cloud-provider"), "external");
            assert.equal(argValue(kubelet, "node-labels"), "alicloud-kubeadm/pool=elastic,workload_type=cpu,node.kubernetes.io/instance-family=c7");
            assert.equal(argValue(kubelet, "register-with-taints"), "dedicated=batch:NoSchedule,spot:PreferNoSchedule");
            assert.equal(installCalls(r.calls).length, 1, `one package install on a bare ${os} image`);
            assert.match(sb.read("/var/lib/alicloud-kubeadm/join.done") ?? "", /^status=ok\nnode=cn-shanghai\.i-uf6stub00000000042\npool=elastic\n/);
            assert.equal(sb.read("/var/lib/alicloud-kubeadm/kubeadm-join.yaml"), undefined, "the token-bearing config is removed");
            const log = sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "";
            assert.match(log, /joined the cluster as cn-shanghai\.i-uf6stub00000000042/);
            assert.ok(!log.includes(TOKEN) && !r.stderr.includes(TOKEN), "the token never reaches the log");
        });
    }

    it("the saved attach command (compacted, labels and taints filled in by Cloud Assistant) joins exactly like the userdata", async () => {
        const fromUserdata = sandbox({ os: "ubuntu", prebaked: true, ...metadata });
        const fromCommand = sandbox({ os: "ubuntu", prebaked: true, ...metadata });
        const { labels: _l, taints: _t, ...join } = attachParams;
        const channel = "0123456789abcdef0123456789abcdef";
        const saved = fill(renderAttachCommand(join), {
            labels: "workload_type=cpu,node.kubernetes.io/instance-family=c7", taints: "dedicated=batch:NoSchedule,spot:PreferNoSchedule", channel,
        });
        assert.ok(!saved.includes(TOKEN), "the saved command holds no token");
        // What channel-receive left on the node: the token, root-only on tmpfs.
        fromCommand.write(`/run/alicloud-kubeadm/${channel}`, `${TOKEN}\n`);
        assert.ok(saved.length < script.length, "blank lines and indentation are gone");
        const [a, b] = [await fromUserdata.run(script), await fromCommand.run(saved)];
        assertOk(a, fromUserdata);
        assertOk(b, fromCommand);
        assert.equal(callsOf(b.calls, "kubeadm", "join")[0].config, callsOf(a.calls, "kubeadm", "join")[0].config, "the same JoinConfiguration");
        const steps = (calls: typeof a.calls, root: string) => calls.map((c) => `${c.cmd} ${c.args.join(" ")}`.split(root).join("<root>"));
        assert.deepEqual(steps(b.calls, fromCommand.root), steps(a.calls, fromUserdata.root), "the same steps");
        assert.equal(fromCommand.read(`/run/alicloud-kubeadm/${channel}`), undefined, "the received token is deleted once read");
        assert.equal(compactShell("f() {\n  cat <<EOF\n  keep: me\nEOF\n\n  echo x\n}\n"), "f() {\ncat <<EOF\n  keep: me\nEOF\necho x\n}\n", "heredoc bodies keep their indentation");
    });

    it("a node without labels or taints still gets the pool label and no taint argument", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const r = await sb.run(renderAttachNode({ ...attachParams, labels: {}, taints: [] }));
        assertOk(r, sb);
        const kubelet = byKind(parseYaml(callsOf(r.calls, "kubeadm", "join")[0].config), "JoinConfiguration").nodeRegistration.kubeletExtraArgs;
        assert.equal(argValue(kubelet, "node-labels"), "alicloud-kubeadm/pool=elastic");
        assert.equal(argValue(kubelet, "register-with-taints"), undefined);
    });

    it("a node image's overlays reach the JoinConfiguration: its kubeadm patches and the preflight checks it names, checked", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        sb.write("/etc/alicloud-kubeadm/kubeadm-patches/kubeletconfiguration+merge.yaml", "failCgroupV1: false\n");
        sb.write("/etc/alicloud-kubeadm/ignore-preflight-errors", "SystemVerification, Swap,\nNumCPU\n");
        const r = await sb.run(script);
        assertOk(r, sb);
        const join = byKind(parseYaml(callsOf(r.calls, "kubeadm", "join")[0].config), "JoinConfiguration");
        assert.deepEqual(join.patches, { directory: "/etc/alicloud-kubeadm/kubeadm-patches" });
        assert.deepEqual(join.nodeRegistration.ignorePreflightErrors, ["SystemVerification", "Swap", "NumCPU"]);

        const plain = sandbox({ os: "ubuntu", prebaked: true });
        const p = await plain.run(script);
        assertOk(p, plain);
        const plainJoin = byKind(parseYaml(callsOf(p.calls, "kubeadm", "join")[0].config), "JoinConfiguration");
        assert.equal(plainJoin.patches, undefined);
        assert.equal(plainJoin.nodeRegistration.ignorePreflightErrors, undefined);

        for (const bad of ["all; touch /tmp/x", "Swap\n$(id)", "*"]) {
            const hostile = sandbox({ os: "ubuntu", prebaked: true });
            hostile.write("/etc/alicloud-kubeadm/ignore-preflight-errors", bad);
            const h = await hostile.run(script);
            assert.notEqual(h.code, 0, `refused: ${JSON.stringify(bad)}`);
            assert.match(h.stderr, /ignore-preflight-errors: expected comma-separated kubeadm check names/);
            assert.equal(callsOf(h.calls, "kubeadm", "join").length, 0, "no join with a config the image's file could not be read into");
        }
    });

    it("joins a control-plane member with controlPlane.certificateKey, keeping the key out of the log", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, ...metadata });
        const r = await sb.run(renderControlPlaneJoin({ ...memberParams, certificateKey: CERT_KEY }));
        assertOk(r, sb);
        const join = byKind(parseYaml(callsOf(r.calls, "kubeadm", "join")[0].config), "JoinConfiguration");
        assert.deepEqual(join.controlPlane, { certificateKey: CERT_KEY });
        assert.equal(argValue(join.nodeRegistration.kubeletExtraArgs, "node-labels"), "alicloud-kubeadm/pool=control-plane");
        assert.ok(!(sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "").includes(CERT_KEY));
    });

    it("restarts containerd only when its config changed", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const first = await sb.run(renderAttachNode(attachParams));
        assertOk(first, sb);
        assert.equal(callsOf(first.calls, "systemctl", "restart").length, 1);
        fs.rmSync(sb.at("/var/lib/alicloud-kubeadm/join.done")); // force a second, full run
        const second = await sb.run(renderAttachNode(attachParams));
        assertOk(second, sb);
        assert.equal(callsOf(second.calls, "systemctl", "restart").length, 0);
        assert.deepEqual(callsOf(second.calls, "systemctl", "enable").find((c) => c.args.includes("containerd"))?.args, ["enable", "--now", "containerd"]);
    });

    it("a second run is a no-op", async () => {
        const sb = sandbox({ os: "ubuntu" });
        assert.equal((await sb.run(script)).code, 0);
        const again = await sb.run(script);
        assertOk(again, sb);
        assert.deepEqual(again.calls.map((c) => c.cmd), []);
        assert.match(again.stderr, /already joined/);
    });

    it("a run after a failed join cleans up (reset, cni0, /etc/cni/net.d) and converges", async () => {
        const sb = sandbox({ os: "alinux", prebaked: true, fail: { join: 99 }, env: { AK_JOIN_ATTEMPTS: "2" } });
        const failed = await sb.run(script);
        assert.notEqual(failed.code, 0);
        assert.deepEqual(callsOf(failed.calls, "kubeadm").filter((c) => c.args[0] !== "version").map((c) => c.args[0]), ["join", "reset", "join"]);
        assert.match(sb.read("/var/lib/alicloud-kubeadm/join.failed") ?? "", /^status=failed\nexit_code=1\n/);
        assert.match(failed.stderr, /kubeadm join failed 2 times/);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/kubeadm-join.yaml"), undefined);

        sb.setLink("cni0", true);
        sb.write("/etc/cni/net.d/10-flannel.conflist", "{}");
        const retried = await sb.run(script, { AK_STUB_FAIL_JOIN: "0" });
        assertOk(retried, sb);
        const order = retried.calls.filter((c) => (c.cmd === "kubeadm" && c.args[0] !== "version") || (c.cmd === "ip" && c.args[1] === "delete"))
            .map((c) => `${c.cmd} ${c.args.slice(0, 2).join(" ")}`);
        assert.deepEqual(order, ["kubeadm reset -f", "ip link delete", "kubeadm join --config"]);
        assert.deepEqual(fs.readdirSync(sb.at("/etc/cni/net.d")), []);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/join.failed"), undefined);
        assert.ok(sb.read("/var/lib/alicloud-kubeadm/join.done"));
    });

    it("retries a failed join within one run after cleaning up", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, fail: { join: 1 } });
        const r = await sb.run(script);
        assertOk(r, sb);
        assert.deepEqual(callsOf(r.calls, "kubeadm").filter((c) => c.args[0] !== "version").map((c) => c.args[0]), ["join", "reset", "join"]);
    });

    it("waits for the API endpoint with bounded retries", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, fail: { apiDown: 2 } });
        const r = await sb.run(script);
        assertOk(r, sb);
        assert.equal(callsOf(r.calls, "curl").filter((c) => c.args.includes("https://192.168.0.10:6443/readyz")).length, 3);
        assert.ok(r.calls.every((c) => !c.args.includes("-k") && !c.args.includes("--insecure")), "no insecure TLS anywhere");

        const down = sandbox({ os: "ubuntu", prebaked: true, fail: { apiDown: 1000 }, env: { AK_API_WAIT_ATTEMPTS: "4" } });
        const d = await down.run(script);
        assert.notEqual(d.code, 0);
        assert.equal(callsOf(d.calls, "kubeadm", "join").length, 0);
        assert.match(d.stderr, /API endpoint 192\.168\.0\.10:6443 unreachable after 4 attempts/);
    });

    it("on a pre-baked image installs and downloads nothing", async () => {
        for (const os of ["ubuntu", "alinux"] as const) {
            const sb = sandbox({ os, prebaked: true });
            const r = await sb.run(script);
            assertOk(r, sb);
            assert.deepEqual(installCalls(r.calls), []);
            assert.deepEqual(downloadCalls(r.calls), []);
            assert.equal(callsOf(r.calls, "gpg").length, 0);
            assert.match(r.stderr, /pre-baked image: containerd, CNI plugins, Kubernetes v1\.34\.2/);
        }
    });

    it("replaces a pre-baked Kubernetes of another version", async () => {
        const sb = sandbox({ os: "ubuntu", prebaked: true, prebakedVersion: "1.33.1" });
        const r = await sb.run(script);
        assertOk(r, sb);
        const install = installCalls(r.calls);
        assert.equal(install.length, 1);
        assert.ok(install[0].args.includes("kubeadm=1.34.2-*") && !install[0].args.includes("containerd"));
    });

    it("the static scripts fail fast naming missing parameters, and reject a malformed token without printing it", async () => {
        const unrendered = ["prepare_node.sh", "attach_node.sh"].map((f) => fs.readFileSync(path.join(USERDATA_DIR, f), "utf8")).join("\n");
        const sb = sandbox({ os: "ubuntu", prebaked: true });
        const r = await sb.run(unrendered, { AK_KUBERNETES_VERSION: "1.34.2", AK_POOL_NAME: "x" });
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /missing required parameter\(s\): AK_K8S_REPO_URL AK_SANDBOX_IMAGE AK_API_ENDPOINT AK_BOOTSTRAP_TOKEN AK_CA_CERT_HASHES;/);
        assert.deepEqual(r.calls, [], "nothing runs before the parameters are checked");

        const header = renderAttachNode(attachParams).replace(`readonly AK_BOOTSTRAP_TOKEN='${TOKEN}'`, "readonly AK_BOOTSTRAP_TOKEN='Bad.Token.Value'");
        const bad = await sb.run(header);
        assert.notEqual(bad.code, 0);
        assert.match(bad.stderr, /AK_BOOTSTRAP_TOKEN is not a bootstrap token/);
        assert.ok(!bad.stderr.includes("Bad.Token.Value"));
    });

    it("rendered attach userdata fits the 20 KiB budget", () => {
        assert.ok(Buffer.byteLength(script) <= BUDGET, `${Buffer.byteLength(script)} bytes`);
    });
});

describe("script sandbox", () => {
    let sb: Sandbox | undefined;
    afterEach(() => sb?.cleanup());

    it("is hermetic: only stubs and a short list of real tools are on PATH", async () => {
        sb = makeSandbox({ os: "ubuntu" });
        const r = await sb.run("for c in kubeadm python3 node systemctl cat; do command -v \"$c\" >/dev/null && echo \"$c\"; done; true");
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(r.stdout.trim().split("\n"), ["systemctl", "cat"], "bare image: no kubeadm yet, no host tools beyond the list");
    });

    it("stubs refuse to run outside a sandbox root", () => {
        const r = spawnSync("bash", [path.join(STUB_DIR, "kubeadm"), "reset", "-f"], {
            encoding: "utf8", env: { PATH: process.env.PATH, AK_STUB_SRC: STUB_DIR, AK_ROOT: "" },
        });
        assert.equal(r.status, 97);
        assert.match(r.stderr, /must point into a sandbox/);
    });

    it("takes extra stubs that record calls like the built-in ones", async () => {
        sb = makeSandbox({ os: "alinux", stubs: { kubectl: '. "$AK_STUB_SRC/_lib.sh"\necho "node/cn-hangzhou.i-1 drained"' } });
        const r = await sb.run("kubectl drain cn-hangzhou.i-1 --ignore-daemonsets");
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "node/cn-hangzhou.i-1 drained\n");
        assert.deepEqual(callsOf(r.calls, "kubectl", "drain")[0].args, ["drain", "cn-hangzhou.i-1", "--ignore-daemonsets"]);
    });
});
