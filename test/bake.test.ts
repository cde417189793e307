// World: node scripts in the sandbox (testing/sandbox: stub kubeadm, systemctl, curl, package managers); Pulumi mocks
// (testing/mockRuntime.ts).
/**
 * Baked node images: the bake mode runs the one list of preparation steps a stock boot runs; a
 * boot on a matching baked image downloads, installs and pulls nothing; a stale one falls back to installing;
 * the images baked are the ones the kubeadm configuration and the manifests use. All in the script sandbox:
 * an image is baked in a sandbox, cleaned for cloning, and the same sandbox then boots as a node.
 */
import * as crypto from "crypto";
import * as assert from "node:assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as zlib from "zlib";
import * as YAML from "yaml";
import { parseAllDocuments } from "yaml";
import { synthesize } from "../scripts/synth";
import { validateClusterConfig } from "../src/config";
import { assertOk, headerValue, requireTool, SHELLCHECK_INSTALL } from "./tools";
import { flannelObjects, resolvePodNetworkArgs } from "../src/components/podNetwork";
import { nodeImages, defaultMirrors } from "../src/rules";
import { packUserdata, renderAttachNode, renderBakeNode, renderMasterInit, SECRET_PARAMETERS, USERDATA_BUDGET_BYTES, type AttachNodeParams, type MasterInitParams } from "../src/shell/render";
import { callsOf, downloadCalls, installCalls, makeSandbox, pullCalls, type RunResult, type Sandbox, type StubCall } from "../testing/sandbox";
import { readRuleSet, verdict, type Packet } from "../testing/sandbox/iptables";

const POD_TO_METADATA: Packet = { in: "cni0", out: "eth0", src: "172.16.3.7", dst: "100.100.100.200" };
const HOST_TO_METADATA: Packet = { out: "eth0", src: "192.168.0.20", dst: "100.100.100.200" };

const SHELL = path.join(__dirname, "..", "src", "shell");
const REGION = "cn-shanghai";
const VERSION = "1.34.2";
const REPOSITORY = defaultMirrors(REGION).imageRepository;
const FLANNEL = "registry.cn-shanghai.aliyuncs.com/acme/flannel:v0.28.9";
const IMAGES = nodeImages({ kubernetesVersion: VERSION, imageRepository: REPOSITORY, flannel: FLANNEL });
const IMAGE_LIST = Object.values(IMAGES);
const TOKEN = "k9x2ab.0123456789abcdef";

const bakeParams = { region: REGION, kubernetesVersion: VERSION, nodeImages: IMAGE_LIST };
const attachParams: AttachNodeParams = {
    region: REGION, kubernetesVersion: VERSION, apiEndpoint: "192.168.0.10:6443", poolName: "elastic",
    token: TOKEN, caCertHash: `sha256:${"0a".repeat(32)}`, nodeImages: IMAGE_LIST,
};
const masterParams: MasterInitParams = {
    region: REGION, kubernetesVersion: VERSION, apiEndpoint: "192.168.0.10:6443", podCidr: "172.16.0.0/16",
    serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24, // no nodeImages: master 0's userdata as Cluster renders it
};

function tracked(): (...args: Parameters<typeof makeSandbox>) => Sandbox {
    const all: Sandbox[] = [];
    after(() => all.forEach((sb) => sb.cleanup()));
    return (...args) => {
        const sb = makeSandbox(...args);
        all.push(sb);
        return sb;
    };
}

/** What a fresh build instance has that must not survive into the image. */
function seedBuildMachine(sb: Sandbox): void {
    sb.write("/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
    sb.write("/var/lib/dbus/machine-id", "0123456789abcdef0123456789abcdef\n");
    sb.write("/etc/ssh/ssh_host_ed25519_key", "PRIVATE KEY\n");
    sb.write("/etc/ssh/ssh_host_ed25519_key.pub", "ssh-ed25519 AAAA\n");
    sb.write("/etc/ssh/sshd_config", "PermitRootLogin no\n");
    sb.write("/var/lib/cloud/instances/i-build/user-data.txt", "#!/bin/bash\n");
    sb.write("/var/lib/cloud/instance/boot-finished", "done\n");
    sb.write("/var/log/cloud-init.log", "cloud-init ran on the build machine\n");
    sb.write("/root/.bash_history", "history\n");
}

/** Bakes an image in a fresh sandbox: the sandbox is then that image. */
async function bake(make: ReturnType<typeof tracked>, os: "ubuntu" | "alinux", params = bakeParams): Promise<{ sb: Sandbox; r: RunResult }> {
    const sb = make({ os });
    seedBuildMachine(sb);
    const r = await sb.run(renderBakeNode(params));
    assertOk(r, sb, ["bake-node"]);
    return { sb, r };
}

/** The calls of the preparation phase, without the image calls (compared between bake and boot), root-relative. */
function preparation(calls: StubCall[], root: string): string[] {
    // The end: the identity read from the metadata service (not the metadata block's iptables rule, a step), or the bake's clean-up.
    const end = calls.findIndex((c) => (c.cmd !== "iptables" && c.args.some((a) => a.includes("100.100.100.200"))) || c.cmd === "find");
    return calls.slice(0, end < 0 ? undefined : end)
        .filter((c) => c.cmd !== "crictl" && !(c.cmd === "kubeadm" && c.args[0] === "config"))
        .map((c) => `${c.cmd} ${c.args.join(" ")}`.split(root).join("<root>"));
}

/** The list of preparation steps: the one loop of ak_prepare_node, read from the script. */
function prepareSteps(): string[] {
    const text = fs.readFileSync(path.join(SHELL, "prepare_node.sh"), "utf8");
    const m = /^ak_prepare_node\(\) \{\n  local s\n  for s in ([^;]+); do "\$s"; done\n\}$/m.exec(text);
    assert.ok(m, "prepare_node.sh's ak_prepare_node is the one loop over the steps");
    return m[1].trim().split(/\s+/);
}

describe("baked node image: the one list of preparation steps", () => {
    const make = tracked();

    it("ak_prepare_node's list is the only place the steps are called: every role script (bake, init, join) runs ak_prepare_node", () => {
        const steps = prepareSteps();
        const prepare = fs.readFileSync(path.join(SHELL, "prepare_node.sh"), "utf8");
        const images = fs.readFileSync(path.join(SHELL, "node_images.sh"), "utf8");
        for (const step of steps) {
            assert.match(prepare, new RegExp(`^${step}\\(\\) \\{`, "m"), `${step} is defined in prepare_node.sh`);
            for (const text of [prepare, images]) {
                const callers = text.split("\n").filter((l) => new RegExp(`(^|[\\s;|&(])${step}($|[\\s;|&)])`).test(l) && !l.trim().startsWith("#")
                    && !l.startsWith(`${step}()`) && !l.startsWith("  for s in "));
                assert.deepEqual(callers, [], `${step} is only called through ak_prepare_node's list`);
            }
        }
        assert.deepEqual(images.match(/^[a-z_]+\(\)/gm), ["ak_baked_summary()", "ak_pull_images()"], "node_images.sh only replaces the pull step (and its helper)");
        for (const role of ["bake_node.sh", "master_init.sh", "attach_node.sh"]) {
            const text = fs.readFileSync(path.join(SHELL, role), "utf8");
            assert.match(text, /^ak_prepare_node$/m, `${role} runs ak_prepare_node`);
            for (const step of steps) assert.ok(!new RegExp(`^\\s*${step}\\b`, "m").test(text), `${role} does not call ${step} on its own`);
        }
    });

    for (const os of ["ubuntu", "alinux"] as const) {
        it(`${os}: baking and a stock boot of the same bare image make the same preparation calls; the bake records the steps it ran`, async () => {
            const { sb: baked, r: bakeRun } = await bake(make, os);
            const stock = make({ os });
            const boot = await stock.run(renderAttachNode(attachParams));
            assertOk(boot, stock, ["attach-node"]);
            const [a, b] = [preparation(bakeRun.calls, baked.root), preparation(boot.calls, stock.root)];
            // `curl | gpg` run concurrently: compare the order without gpg, and the whole as a multiset.
            assert.deepEqual(a.filter((c) => !c.startsWith("gpg ")), b.filter((c) => !c.startsWith("gpg ")));
            assert.deepEqual([...a].sort(), [...b].sort());
            assert.ok(installCalls(bakeRun.calls).length > 0, "the bake installed the packages");
            const marker = baked.read("/var/lib/alicloud-kubeadm/baked") ?? "";
            assert.match(marker, new RegExp(`^steps=${prepareSteps().join(" ")}$`, "m"));
            assert.match(marker, new RegExp(`^kubernetes_version=${VERSION.replace(/\./g, "\\.")}$`, "m"));
            // The stock boot pulled the node images before joining; the bake pulled those and the control-plane images.
            assert.deepEqual(stock.images().sort(), [...IMAGE_LIST].sort());
            const controlPlane = callsOf(bakeRun.calls, "kubeadm", "config");
            assert.equal(controlPlane.length, 1);
            for (const image of IMAGE_LIST) assert.ok(baked.images().includes(image), `${image} baked`);
            assert.ok(baked.images().some((i) => i.endsWith(`/kube-apiserver:v${VERSION}`)), "control-plane images baked for masters");
        });
    }
});

describe("baked node image: cleaned for cloning, no cluster secret", () => {
    const make = tracked();

    it("the image keeps no machine id, cloud-init instance state, SSH host keys, logs or history; the bake script holds no secret", async () => {
        const { sb } = await bake(make, "ubuntu");
        assert.equal(sb.read("/etc/machine-id"), "", "empty machine-id: systemd makes a new one at first boot");
        assert.equal(sb.read("/var/lib/dbus/machine-id"), undefined);
        assert.deepEqual(fs.readdirSync(sb.at("/etc/ssh")), ["sshd_config"], "host keys gone, configuration kept");
        assert.ok(!fs.existsSync(sb.at("/var/lib/cloud/instances")) && !fs.existsSync(sb.at("/var/lib/cloud/instance")), "userdata runs again on every clone");
        assert.equal(sb.read("/var/log/cloud-init.log"), "", "logs emptied");
        assert.ok(!fs.existsSync(sb.at("/var/log/alicloud-kubeadm")), "the bake log is gone");
        assert.equal(sb.read("/root/.bash_history"), undefined);
        assert.ok(!fs.existsSync(sb.at("/etc/kubernetes/kubelet.conf")) && !fs.existsSync(sb.at("/etc/kubernetes/pki")), "no cluster credentials");
        assert.deepEqual(fs.readdirSync(sb.at("/var/lib/alicloud-kubeadm")), ["baked"], "no join marker, no token-bearing config");
        const script = renderBakeNode(bakeParams);
        for (const name of [...SECRET_PARAMETERS, "AK_API_ENDPOINT"]) assert.ok(!script.includes(`readonly ${name}=`), `${name} not in the bake script`);
        assert.throws(() => renderBakeNode({ ...bakeParams, nodeImages: [] }), /nodeImages: must list the images to bake/);
        assert.throws(() => renderBakeNode({ ...bakeParams, nodeImages: ["registry.k8s.io/pause"] }), /nodeImages\[0\]: .*with a tag or digest/);
    });

    it("a failed pull stops the bake (no half image); on a boot it is only a warning and the node still joins", async () => {
        const sb = make({ os: "ubuntu" });
        const r = await sb.run(renderBakeNode(bakeParams), { AK_STUB_FAIL_PULL: "1" });
        assert.notEqual(r.code, 0);
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/baked"), undefined, "no baked marker");
        const node = make({ os: "ubuntu" });
        const boot = await node.run(renderAttachNode(attachParams), { AK_STUB_FAIL_PULL: "1" });
        assertOk(boot, node, ["attach-node"]);
        assert.ok(node.read("/var/lib/alicloud-kubeadm/join.done"));
        assert.match(node.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "", /WARNING: 4 image pull\(s\) failed/);
    });
});

describe("baked node image: budgets", () => {
    it("a baked pool's userdata (with node_images.sh) stays within the 20 KiB budget; without images node_images.sh is left out", () => {
        const withImages = renderAttachNode({ ...attachParams, labels: { workload_type: "cpu", "node.kubernetes.io/instance-family": "c7" }, taints: ["spot:PreferNoSchedule"] });
        assert.ok(Buffer.byteLength(withImages) <= USERDATA_BUDGET_BYTES, `${Buffer.byteLength(withImages)} bytes`);
        assert.ok(withImages.includes("# ---- src/shell/node_images.sh ----"));
        assert.equal(withImages.match(/^ak_pull_images\(\) \{$/gm)?.length, 1, "node_images.sh's step replaces the empty one: defined once");
        assert.ok(!renderAttachNode({ ...attachParams, nodeImages: undefined }).includes("node_images.sh"));
    });

    it("a baked pool joining through admission, as NodePool delivers it (packed), fits the budget with room to spare", () => {
        const { token: _token, ...rest } = attachParams;
        const plain = renderAttachNode({ ...rest, admission: { endpoints: ["192.168.0.10:10443", "192.168.1.10:10443", "192.168.2.10:10443"], pin: `sha256:${"a".repeat(64)}` },
            labels: { workload_type: "cpu", "node.kubernetes.io/instance-family": "c7" }, taints: ["spot:PreferNoSchedule"] });
        assert.ok(plain.includes("# ---- src/shell/node_images.sh ----") && plain.includes("# ---- src/shell/admission_client.sh ----"));
        assert.ok(Buffer.byteLength(plain) > USERDATA_BUDGET_BYTES, "the plain script alone would not fit (why it is packed)");
        const delivered = packUserdata(plain, "nodePools[elastic]");
        assert.ok(Buffer.byteLength(delivered) <= USERDATA_BUDGET_BYTES * 0.6, `${Buffer.byteLength(delivered)} bytes delivered`);
        assert.throws(() => packUserdata(plain + `# ${crypto.randomBytes(12_000).toString("base64")}\n`.replace(/^# /, "echo "), "nodePools[x]"),
            /nodePools\[x\]: its userdata is \d+ bytes packed, over the 20480-byte budget/);
    });
});

describe("booting a baked image", () => {
    const make = tracked();

    for (const os of ["ubuntu", "alinux"] as const) {
        it(`${os}: a pool node makes no download, no package install and no image pull, and the kubelet finds every image it needs`, async () => {
            const { sb } = await bake(make, os);
            const r = await sb.run(renderAttachNode(attachParams));
            assertOk(r, sb, ["attach-node"]);
            assert.deepEqual([downloadCalls(r.calls).length, installCalls(r.calls).length, pullCalls(r.calls).length], [0, 0, 0]);
            assert.equal(callsOf(r.calls, "kubeadm", "join").length, 1);
            assert.ok(sb.read("/var/lib/alicloud-kubeadm/join.done"));
            assert.deepEqual(IMAGE_LIST.filter((i) => !sb.images().includes(i)), [], "nothing left for the kubelet to pull");
            assert.match(sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "", /baked image matches/);
        });
    }

    it("the image carries the metadata-block unit; a boot of it (no rule in the kernel yet) blocks pods from the metadata service before the kubelet", async () => {
        const { sb } = await bake(make, "ubuntu");
        const unit = sb.read("/etc/systemd/system/alicloud-kubeadm-metadata-block.service") ?? "";
        assert.match(unit, /^RequiredBy=kubelet\.service$/m, "baked: the unit that re-applies the block at every boot");
        assert.ok(sb.read("/usr/local/sbin/alicloud-kubeadm-metadata-block"), "baked: the block script");
        // A clone boots with empty netfilter tables: the bake's rules lived in the build instance's kernel only.
        fs.rmSync(path.join(sb.env.AK_STUB_STATE, "iptables"), { recursive: true, force: true });
        assert.equal(verdict(readRuleSet(sb.env.AK_STUB_STATE), POD_TO_METADATA).verdict, "passed");
        const r = await sb.run(renderAttachNode(attachParams));
        assertOk(r, sb, ["attach-node"]);
        assert.deepEqual(verdict(readRuleSet(sb.env.AK_STUB_STATE), POD_TO_METADATA), { verdict: "dropped", table: "raw", chain: "AK-METADATA-BLOCK",
            rule: "! -i lo -d 100.100.100.200/32 -j DROP" });
        assert.equal(verdict(readRuleSet(sb.env.AK_STUB_STATE), HOST_TO_METADATA).verdict, "passed", "the node itself keeps the metadata service");
        const enabled = r.calls.findIndex((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable alicloud-kubeadm-metadata-block.service");
        const kubelet = r.calls.findIndex((c) => c.cmd === "systemctl" && c.args.join(" ") === "enable kubelet");
        assert.ok(enabled >= 0 && enabled < kubelet, "the block is in place before the kubelet is enabled");
    });

    it("master 0 on the baked image: kubeadm init's own image list is already there", async () => {
        const { sb } = await bake(make, "ubuntu");
        const r = await sb.run(renderMasterInit(masterParams));
        assertOk(r, sb, ["master-init"]);
        assert.deepEqual([downloadCalls(r.calls).length, installCalls(r.calls).length, pullCalls(r.calls).length], [0, 0, 0]);
        const init = parseAllDocuments(callsOf(r.calls, "kubeadm", "init")[0].config ?? "").map((d) => d.toJS());
        const cluster = init.find((d) => d.kind === "ClusterConfiguration");
        const list = await sb.run(`#!/bin/bash\nkubeadm config images list --kubernetes-version ${cluster.kubernetesVersion} --image-repository ${cluster.imageRepository}\n`);
        assert.deepEqual(list.stdout.trim().split("\n").filter((i) => !sb.images().includes(i)), [], "every image kubeadm init needs is baked");
    });

    it("a stale baked image (another Kubernetes version) still joins: it installs and pulls what differs, with a warning in its log", async () => {
        const { sb } = await bake(make, "ubuntu");
        const newer = "1.35.1";
        const images = Object.values(nodeImages({ kubernetesVersion: newer, imageRepository: REPOSITORY, flannel: FLANNEL }));
        const r = await sb.run(renderAttachNode({ ...attachParams, kubernetesVersion: newer, nodeImages: images }));
        assertOk(r, sb, ["attach-node"]);
        assert.equal(installCalls(r.calls).length, 1, "the packages of the cluster's version are installed");
        assert.ok(installCalls(r.calls)[0].args.includes(`kubeadm=${newer}-*`));
        assert.deepEqual(pullCalls(r.calls).map((c) => c.args[c.args.length - 1]), [`${REPOSITORY}/kube-proxy:v${newer}`], "only the image that differs is pulled");
        assert.ok(sb.read("/var/lib/alicloud-kubeadm/join.done"));
        assert.match(sb.read("/var/log/alicloud-kubeadm/attach-node.log") ?? "", /WARNING: stale baked image/);
    });
});

describe("baked image references: one source", () => {
    const make = tracked();

    it("pause, kube-proxy, flannel and its CNI plugin equal what containerd, the kubeadm configuration and the flannel manifest use", async () => {
        // containerd's sandbox image and kubeadm's imageRepository + kubernetesVersion, from a real (sandbox) master init.
        const sb = make({ os: "ubuntu" });
        const r = await sb.run(renderMasterInit({ ...masterParams, nodeImages: undefined }));
        assertOk(r, sb, ["master-init"]);
        const conf = sb.read("/etc/containerd/config.toml") ?? "";
        assert.match(conf, new RegExp(`sandbox_image = "${IMAGES.pause.replace(/[.]/g, "\\.")}"`), "containerd's sandbox image is the baked pause image");
        const cluster = parseAllDocuments(callsOf(r.calls, "kubeadm", "init")[0].config ?? "").map((d) => d.toJS()).find((d) => d.kind === "ClusterConfiguration");
        assert.equal(`${cluster.imageRepository}/kube-proxy:${cluster.kubernetesVersion}`, IMAGES.kubeProxy, "kubeadm's kube-proxy DaemonSet image");
        assert.equal(`${cluster.imageRepository}/pause`, IMAGES.pause.replace(/:[^:]+$/, ""), "kubeadm's pause repository");
        // flannel's DaemonSet.
        const objects = flannelObjects(resolvePodNetworkArgs({ podCidr: "172.16.0.0/16", routeTableId: "vtb-x", region: REGION, kubernetesVersion: VERSION, images: { flannel: FLANNEL } }));
        const ds = objects.find((o) => o.kind === "DaemonSet") as any;
        const used = [...ds.spec.template.spec.initContainers, ...ds.spec.template.spec.containers].map((c: { image: string }) => c.image);
        assert.deepEqual([...new Set(used)].sort(), [IMAGES.flannel, IMAGES.flannelCniPlugin].sort());
    });
});

describe("baked node image: synth of a stack with image.bake", function () {
    this.timeout(300_000);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "bake-synth-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));
    type Row = { type: string; name: string; parent: string | null; inputs: Record<string, any> };

    /** Synthesizes the dev stack with `edit` applied to its cluster config. */
    async function synthDev(name: string, edit: (cluster: any) => void): Promise<{ rows: Row[]; dir: string }> {
        const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
        edit(doc.config["alicloud-kubeadm:cluster"]);
        const file = path.join(out, `Pulumi.${name}.yaml`);
        fs.writeFileSync(file, YAML.stringify(doc));
        const result = await synthesize(file, out);
        assert.deepEqual(result.problems, []);
        return { rows: JSON.parse(fs.readFileSync(path.join(out, name, "resources.json"), "utf8")), dir: path.join(out, name) };
    }
    const bakeOn = (c: any) => { c.image = { bake: true }; };
    const decode = (buildContent: string) => {
        const b64 = [...buildContent.matchAll(/^RUN printf '%s' '([A-Za-z0-9+/=]+)' >> /gm)].map((m) => m[1]).join("");
        return zlib.gunzipSync(Buffer.from(b64, "base64")).toString("utf8");
    };

    it("lists the image-building resources under NodeImage, and masters and pools boot the baked image; existing nodes and the dev stack are unchanged", async () => {
        const { rows, dir } = await synthDev("devbake", bakeOn);
        const of = (type: string) => rows.filter((r) => r.type === type);
        const component = of("alicloud-kubeadm:index:NodeImage");
        assert.deepEqual(component.map((r) => [r.name, r.parent]), [["dev-node-image", "dev"]]);
        const pipeline = of("alicloud:ecs/ecsImagePipeline:EcsImagePipeline");
        const execution = of("alicloud:ecs/imagePipelineExecution:ImagePipelineExecution");
        const image = rows.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.name === "dev-node-image-image");
        assert.deepEqual([pipeline, execution, image].map((l) => l.map((r) => r.parent)), [["dev-node-image"], ["dev-node-image"], ["dev-node-image"]]);
        assert.equal(pipeline[0].inputs.baseImageType, "IMAGE");
        assert.match(pipeline[0].inputs.baseImage, /^ubuntu_24_04_x64/, "built from the cluster's base image");
        assert.equal(pipeline[0].inputs.imageName, image[0].inputs.imageNamePrefix, "BakedImage finds the image by the pipeline's unique name prefix");
        assert.match(pipeline[0].inputs.imageName, /^dev-node-[0-9a-f]{10}$/);
        const baked = "m-bakedimageplaceholder"; // the BakedImage output under mocks
        const bootsBaked = rows.filter((r) => r.inputs.imageId === baked).map((r) => r.name).sort();
        assert.deepEqual(bootsBaked, ["dev-control-plane-master-0", "dev-pool-elastic-config", "dev-pool-general-config"]);
        // The bake script: the same images the pools' userdata checks, and they are the ones the manifests run.
        const script = decode(pipeline[0].inputs.buildContent);
        assert.match(script, /^# ---- src\/shell\/bake_node\.sh ----$/m);
        for (const secret of [...SECRET_PARAMETERS, "AK_API_ENDPOINT"]) assert.equal(headerValue(script, secret), undefined);
        const images = headerValue(script, "AK_NODE_IMAGES")!.split(",");
        const poolUserdata = fs.readFileSync(path.join(dir, "userdata", "dev-pool-general-config.sh"), "utf8");
        const master0 = fs.readFileSync(path.join(dir, "userdata", "dev-control-plane-master-0.sh"), "utf8");
        assert.equal(headerValue(master0, "AK_NODE_IMAGES"), undefined, "master 0 boots the image built just before it: no node_images.sh");
        assert.ok(Buffer.byteLength(master0) <= USERDATA_BUDGET_BYTES, `master 0's userdata is ${Buffer.byteLength(master0)} bytes`);
        assert.deepEqual(headerValue(poolUserdata, "AK_NODE_IMAGES")!.split(","), images);
        assert.equal(headerValue(poolUserdata, "AK_SANDBOX_IMAGE"), images[0]);
        const manifests = fs.readdirSync(path.join(dir, "manifests")).map((f) => fs.readFileSync(path.join(dir, "manifests", f), "utf8")).join("\n");
        const used = [...manifests.matchAll(/^\s*image: (\S*flannel\S*)$/gm)].map((m) => m[1].replace(/^["']|["']$/g, ""));
        assert.deepEqual([...new Set(used)].sort(), images.filter((i) => i.includes("flannel")).sort(), "flannel and its CNI plugin as the manifests run them");
        assert.ok(images.some((i) => /\/kube-proxy:v1\.36\.3$/.test(i)));

        const { rows: plain } = await synthDev("devplain", () => undefined);
        assert.equal(plain.filter((r) => /ImagePipeline|NodeImage/.test(r.type) || r.name.includes("node-image")).length, 0, "without image.bake nothing is baked");
        assert.ok(plain.every((r) => r.inputs.imageId === undefined || /^ubuntu_24_04_x64/.test(r.inputs.imageId)));
        assert.ok(!fs.readFileSync(path.join(out, "devplain", "userdata", "dev-pool-general-config.sh"), "utf8").includes("AK_NODE_IMAGES"));
    });

    it("rebuilds (a new pipeline name) when the Kubernetes version or an image reference changes, not for an unrelated change; validation explains the cost", async () => {
        const name = async (stack: string, edit: (c: any) => void) =>
            (await synthDev(stack, (c) => { bakeOn(c); edit(c); })).rows.find((r) => r.type === "alicloud:ecs/ecsImagePipeline:EcsImagePipeline")!.inputs.imageName;
        const base = await name("k0", () => undefined);
        assert.notEqual(await name("k1", (c) => { c.kubernetesVersion = "1.36.2"; }), base);
        assert.notEqual(await name("k2", (c) => { c.images = { flannel: "registry.cn-hangzhou.aliyuncs.com/acme/flannel:v0.28.9" }; }), base);
        assert.notEqual(await name("k3", (c) => { c.images = { kubernetesRepository: "registry.cn-hangzhou.aliyuncs.com/acme" }; }), base);
        assert.equal(await name("k4", (c) => { c.autoscaler.scaleDownUnneededTime = "20m"; }), base, "an autoscaler setting does not rebuild");
        const raw = { name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"], nodePools: [{ name: "own", instanceType: "ecs.g7.large", size: 1, imageId: "m-own" }] };
        const on = validateClusterConfig({ ...raw, image: { bake: true } }, "cn-hangzhou");
        assert.deepEqual(on.errors, []);
        assert.ok(on.warnings.some((w) => /^image\.bake: .*Image Builder instance \(ecs\.g7\.large.*10–20 minutes.*billed per GB-month/.test(w)), on.warnings.join("\n"));
        assert.ok(on.warnings.some((w) => /^nodePools\.0\.imageId: pool own sets its own image/.test(w)));
        assert.deepEqual(validateClusterConfig(raw, "cn-hangzhou").warnings.filter((w) => /bake|imageId/.test(w)), [], "no word about baking without it");
        assert.deepEqual(validateClusterConfig({ ...raw, image: { bakeInstanceType: "g7" } }, "cn-hangzhou").problems.map((p) => p.path).sort(),
            ["image.bakeInstanceType", "image.bakeInstanceType"]);
    });
});

describe("baked node image: shellcheck of the rendered scripts", () => {
    before(function () {
        requireTool(this, "shellcheck", SHELLCHECK_INSTALL, "the shellcheck assertions");
    });

    it("the bake script and a baked node's userdata (prepare_node.sh + node_images.sh) are shellcheck-clean", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-bake-shellcheck-"));
        try {
            const files = { "bake.sh": renderBakeNode(bakeParams), "attach.sh": renderAttachNode(attachParams), "master.sh": renderMasterInit(masterParams) };
            for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
            const r = spawnSync("shellcheck", ["-x", ...Object.keys(files).map((f) => path.join(dir, f))], { encoding: "utf8" });
            assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
