/**
 * A validated config is a valid one: content the cloud, Kubernetes or the SSH client would refuse, or that would
 * stop `pulumi up` halfway, is refused (or warned about, where a legitimate setup exists) before anything is
 * created, at the property the user wrote. Hostile configs by class, then tricky configs that must stay accepted.
 * World: validation only (validateClusterConfig, and the argument parsers of ExistingNode and NodePool used
 * directly); no Pulumi runtime, no cloud.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { parseClusterConfig, validateClusterConfig, type ClusterConfigInput, type ValidationResult } from "../src/config";
import { ALIBABA_IDENTITY_CERTIFICATE } from "../src/admission/alibabaCertificate";
import { parseExistingNodeArgs } from "../src/components/existingNode";
import { parseNodePoolArgs } from "../src/components/nodePool";
import { collect, type NodeCommandIds } from "../src/rules";
import { opensshKeyText, testSshPrivateKey } from "./tools";

const ROOT = path.join(__dirname, "..");

/** The cluster of a stack file, and its region. */
function stackConfig(file: string): { cluster: Record<string, unknown>; region: string } {
    const config = YAML.parse(fs.readFileSync(path.join(ROOT, file), "utf8")).config;
    return { cluster: config["alicloud-kubeadm:cluster"], region: config["alicloud:region"] };
}

/** The existing-node example, with a real allowed CIDR: two pools (one autoscaled), a node over Cloud Assistant and one over SSH. */
type Config = ClusterConfigInput & Record<string, unknown>;
function base(): Config {
    const c = structuredClone(stackConfig("examples/Pulumi.existing-nodes.yaml").cluster) as Config;
    c.network!.apiAllowedCidrs = ["47.96.0.0/16"];
    return c;
}
type Mutate = (c: Config) => void;
const net = (c: Config) => c.network as Record<string, unknown>;
const cp = (c: Config) => c.controlPlane as Record<string, unknown>;
const pool = (c: Config, i = 0) => (c.nodePools as unknown as Array<Record<string, unknown>>)[i];
const node = (c: Config, i = 1) => (c.existingNodes as unknown as Array<Record<string, unknown>>)[i];
const ssh = (c: Config, i = 1) => node(c, i).connection as Record<string, unknown>;
const image = (c: Config) => (c.image ??= {}) as Record<string, unknown>;
const images = (c: Config) => (c.images ??= {}) as Record<string, unknown>;
const admission = (c: Config) => (c.admission ??= {}) as Record<string, unknown>;
/** Every pool and the masters on Arm types, booting Ubuntu for arm64 (the CCM image left at its amd64-only default). */
const arm: Mutate = (c) => {
    image(c).nameRegex = "^ubuntu_24_04_arm64";
    cp(c).instanceType = "ecs.g8y.large";
    pool(c, 0).instanceType = "ecs.g8y.xlarge";
    pool(c, 1).instanceType = "ecs.c8y.xlarge";
};
const MULTI_ARCH_CCM = "registry.cn-hangzhou.aliyuncs.com/acs/cloud-controller-manager:v2.14.0";

function validate(c: unknown, region = "cn-hangzhou"): ValidationResult {
    return validateClusterConfig(c, region);
}

/** [class, description, mutation, property path, fragment of the reason, region]. Each must be refused: no config, a problem at the path. */
const refused: Array<[string, string, Mutate, string, RegExp, string?]> = [
    // SSH connections of existing nodes.
    ["ssh", "a port in the host", (c) => { ssh(c).host = "192.168.16.20:2222"; }, "existingNodes.1.connection.host", /has a port in it: set connection\.host to "192\.168\.16\.20" and connection\.port to 2222/],
    ["ssh", "a port in a bracketed IPv6 host", (c) => { ssh(c).host = "[fd00::20]:2222"; }, "existingNodes.1.connection.host", /connection\.host to "fd00::20" \(no brackets\) and connection\.port to 2222/],
    ["ssh", "a user in the host", (c) => { ssh(c).host = "ubuntu@192.168.16.20"; }, "existingNodes.1.connection.host", /has a user in it: set connection\.user to "ubuntu"/],
    ["ssh", "a URL as the host", (c) => { ssh(c).host = "ssh://192.168.16.20"; }, "existingNodes.1.connection.host", /is a URL/],
    ["ssh", "an IPv4 address out of range", (c) => { ssh(c).host = "192.168.16.300"; }, "existingNodes.1.connection.host", /not an IPv4 address/],
    ["ssh", "a host in the user", (c) => { ssh(c).user = "root@192.168.16.20"; }, "existingNodes.1.connection.user", /has a host in it/],
    ["ssh", "the private key given as a path", (c) => { ssh(c).privateKey = "~/.ssh/id_ed25519"; }, "existingNodes.1.connection.privateKey", /is a file path, not a key/],
    ["ssh", "the private key given as the public key", (c) => { ssh(c).privateKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOtSwAvVc1PUd1xk8yzu me@laptop"; },
        "existingNodes.1.connection.privateKey", /is a public key \(the \.pub file's one line\)/],
    ["ssh", "a PEM public key", (c) => { ssh(c).privateKey = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"; },
        "existingNodes.1.connection.privateKey", /is a public key \(-----BEGIN PUBLIC KEY-----\)/],
    ["ssh", "a PuTTY key", (c) => { ssh(c).privateKey = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"; }, "existingNodes.1.connection.privateKey", /PuTTY key/],
    ["ssh", "a key cut short", (c) => { ssh(c).privateKey = testSshPrivateKey().split("-----END")[0]; }, "existingNodes.1.connection.privateKey", /cut short/],
    ["ssh", "an encrypted key without its passphrase", (c) => { ssh(c).privateKey = opensshKeyText("aes256-ctr"); }, "existingNodes.1.connection.privateKey",
        /is encrypted with a passphrase: set connection\.privateKeyPassword/],
    ["ssh", "a passphrase for a key that has none", (c) => { Object.assign(ssh(c), { privateKey: opensshKeyText("none"), privateKeyPassword: "pw" }); },
        "existingNodes.1.connection.privateKey", /not encrypted.*remove connection\.privateKeyPassword/],
    ["ssh", "an encrypted PKCS#8 key", (c) => { ssh(c).privateKey = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQww\n-----END ENCRYPTED PRIVATE KEY-----\n"; },
        "existingNodes.1.connection.privateKey", /encrypted PKCS#8 key.*ssh-keygen -p/],
    ["ssh", "a passphrase without a key", (c) => { ssh(c).privateKeyPassword = "pw"; }, "existingNodes.1.connection.privateKeyPassword", /connection\.privateKey, which is not set/],
    ["ssh", "two existing nodes on one host", (c) => { node(c, 0).connection = { host: "192.168.16.20" }; }, "existingNodes.1.connection.host",
        /192\.168\.16\.20 port 22 is also existingNodes\.0's connection/],
    ["ssh", "two existing nodes on one host named in two cases", (c) => { node(c, 0).connection = { host: "Node-1.Example.com", port: 2200 }; Object.assign(ssh(c), { host: "node-1.example.com", port: 2200 }); },
        "existingNodes.1.connection.host", /also existingNodes\.0's connection/],
    // The join tag and the identity certificate.
    ["joinTag", "a key starting with aliyun", (c) => { admission(c).joinTag = "aliyun-join=dev"; }, "admission.joinTag", /reserves keys starting with aliyun or acs:/],
    ["joinTag", "a key starting with acs:", (c) => { admission(c).joinTag = "acs:join=dev"; }, "admission.joinTag", /reserves keys starting with aliyun or acs:/],
    ["joinTag", "a value starting with aliyun", (c) => { admission(c).joinTag = "team=aliyun-dev"; }, "admission.joinTag", /must not start with aliyun or acs:/],
    ["joinTag", "an https:// value", (c) => { admission(c).joinTag = "team=https://example.com"; }, "admission.joinTag", /must not contain http:\/\/ or https:\/\//],
    ["joinTag", "an http:// key", (c) => { admission(c).joinTag = "http://team=dev"; }, "admission.joinTag", /must not contain http:\/\/ or https:\/\//],
    ["joinTag", "the cluster's own tag", (c) => { admission(c).joinTag = "alicloud-kubeadm/cluster=example"; }, "admission.joinTag", /alicloud-kubeadm\/cluster is a tag alicloud-kubeadm puts on its own instances/],
    ["joinTag", "the masters' role tag", (c) => { admission(c).joinTag = "alicloud-kubeadm/role=control-plane"; }, "admission.joinTag", /puts on its own instances/],
    ["joinTag", "a pool's tag", (c) => { admission(c).joinTag = "alicloud-kubeadm/pool=general"; }, "admission.joinTag", /puts on its own instances/],
    ["joinTag", "a fixed pool's spec hash tag", (c) => { admission(c).joinTag = "node-restriction.kubernetes.io/alicloud-kubeadm-spec=a07d2234ea86c5fa"; }, "admission.joinTag", /alicloud-kubeadm-spec is a tag alicloud-kubeadm puts on its own instances/],
    ["joinTag", "a pool's scaling-configuration tag", (c) => { admission(c).joinTag = "node-restriction.kubernetes.io/alicloud-kubeadm-pool=general"; }, "admission.joinTag",
        /puts on its own instances/],
    ["joinTag", "one of the cloud tags", (c) => { c.tags = { env: "dev" }; admission(c).joinTag = "env=dev"; }, "admission.joinTag", /cluster puts on its own instances \(from tags\.env\)/],
    ["joinTag", "a label of a pool (its scaling configuration's tag)", (c) => { admission(c).joinTag = "workload_type=cpu"; }, "admission.joinTag",
        /from nodePools\.1\.labels\.workload_type/],
    ["joinTag", "a second = in the value", (c) => { admission(c).joinTag = "team=a=b"; }, "admission.joinTag", /second "="/],
    ["certificate", "a bundle that also carries a private key", (c) => {
        admission(c).identityCertificate = `${ALIBABA_IDENTITY_CERTIFICATE}\n-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n`;
    }, "admission.identityCertificate", /holds a private key .*treat it as exposed/],
    ["certificate", "an RSA private key before the certificate", (c) => {
        admission(c).identityCertificate = `-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----\n${ALIBABA_IDENTITY_CERTIFICATE}`;
    }, "admission.identityCertificate", /holds a private key \(-----BEGIN RSA PRIVATE KEY-----\)/],
    ["certificate", "a second certificate cut short", (c) => {
        admission(c).identityCertificate = `${ALIBABA_IDENTITY_CERTIFICATE}\n-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n`;
    }, "admission.identityCertificate", /2 BEGIN CERTIFICATE line\(s\) but 1 whole certificate/],
    // Architecture.
    ["architecture", "an Arm pool beside the default x86 image", (c) => { pool(c, 0).instanceType = "ecs.g8y.xlarge"; }, "nodePools.0.instanceType",
        /ecs\.g8y\.xlarge is an Arm \(arm64\) instance type, but it would boot image \^ubuntu_24_04_x64 \(image\.nameRegex\), which is x86/],
    ["architecture", "an Arm pool beside an x86 image of its own", (c) => { Object.assign(pool(c, 0), { instanceType: "ecs.c8y.xlarge", imageId: "ubuntu_24_04_x64_20G_alibase_20260101.vhd" }); },
        "nodePools.0.instanceType", /would boot image ubuntu_24_04_x64_20G_alibase_20260101\.vhd \(nodePools\.0\.imageId\)/],
    ["architecture", "x86 masters beside an arm64 image", (c) => { image(c).id = "ubuntu_24_04_arm64_20G_alibase_20260101.vhd"; }, "controlPlane.instanceType",
        /ecs\.g7\.large is an x86 \(x86_64\) instance type, but it would boot image ubuntu_24_04_arm64.*\(image\.id\)/],
    ["architecture", "Arm and x86 types in one pool", (c) => { delete pool(c, 0).instanceType; pool(c, 0).instanceTypes = ["ecs.g7.xlarge", "ecs.g8y.xlarge"]; },
        "nodePools.0.instanceTypes.1", /ecs\.g8y\.xlarge is Arm \(arm64\) and ecs\.g7\.xlarge \(instanceTypes\.0\) is x86.*each architecture in its own pool/],
    ["architecture", "an Arm cluster baked on the default (x86) builder", (c) => { arm(c); images(c).cloudControllerManager = MULTI_ARCH_CCM; image(c).bake = true; }, "image.bake",
        /the image build runs on ecs\.g7\.large, an x86.*base image \^ubuntu_24_04_arm64 \(image\.nameRegex\) is Arm/],
    ["architecture", "an x86 builder given for an arm64 base image", (c) => { arm(c); images(c).cloudControllerManager = MULTI_ARCH_CCM; Object.assign(image(c), { bake: true, bakeInstanceType: "ecs.g7.xlarge" }); },
        "image.bakeInstanceType", /the image build runs on ecs\.g7\.xlarge/],
    ["architecture", "Arm masters with the amd64-only CCM image", arm, "controlPlane.instanceType", /cloud-controller-manager-amd64:v2\.14\.0, which is built for amd64 only/],
    // NAT off.
    ["natGateway", "NAT off in mainland China with the default registries", (c) => { net(c).natGateway = false; }, "network.natGateway",
        /images\.kubernetesRepository \(default registry\.cn-hangzhou\.aliyuncs\.com\/google_containers\).*images\.flannel \(default ghcr\.io.*location\.aliyuncs\.com/],
    ["natGateway", "NAT off abroad (pkgs.k8s.io)", (c) => { net(c).natGateway = false; c.zones = ["ap-southeast-1a", "ap-southeast-1b"]; }, "network.natGateway",
        /images\.packageMirror \(default https:\/\/pkgs\.k8s\.io\).*images\.kubernetesRepository \(default registry\.k8s\.io\)/, "ap-southeast-1"],
    ["natGateway", "NAT off with an internet mirror written in", (c) => { net(c).natGateway = false; c.nodePools = [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }]; c.images = vpcImages(); images(c).flannel = "docker.io/flannel/flannel:v0.28.9"; },
        "network.natGateway", /need: images\.flannel \(docker\.io\/flannel\/flannel:v0\.28\.9\)\. /],
    ["natGateway", "NAT off with autoscaled pools (the autoscaler's Location lookup)", (c) => { net(c).natGateway = false; c.images = { ...vpcImages(), clusterAutoscalerRepository: "registry-vpc.cn-hangzhou.aliyuncs.com/mirror/cluster-autoscaler" }; },
        "network.natGateway", /need: the Cluster Autoscaler's endpoint lookup \(location\.aliyuncs\.com/],
    ["natGateway", "NAT off with several masters behind a public load balancer", (c) => {
        net(c).natGateway = false; c.nodePools = [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }]; c.images = vpcImages(); cp(c).count = 3; c.zones = ["cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j"];
    }, "network.natGateway", /internet-facing load balancer/],
    // Allowed CIDRs as security-group rules.
    ["apiAllowedCidrs", "a CIDR listed twice", (c) => { net(c).apiAllowedCidrs = ["47.96.0.0/16", "8.8.8.0/24", "47.96.0.0/16"]; }, "network.apiAllowedCidrs.2", /repeats network\.apiAllowedCidrs\.0/],
    ["apiAllowedCidrs", "the VPC's own CIDR", (c) => { net(c).apiAllowedCidrs = ["47.96.0.0/16", "192.168.0.0/16"]; }, "network.apiAllowedCidrs.1", /is network\.vpcCidr.*api-from-vpc/],
    ["apiAllowedCidrs", "more rules than a security group holds", (c) => { net(c).apiAllowedCidrs = Array.from({ length: 100 }, (_, i) => `47.${i}.0.0/16`); },
        "network.apiAllowedCidrs", /100 CIDRs make 101 rules in the API security group .*above the 100 a security group holds/],
    // Versions.
    ["versions", "a Kubernetes patch past a minor's last release", (c) => { c.kubernetesVersion = "1.33.14"; c.nodePools = [pool(c, 0) as never]; }, "kubernetesVersion",
        /Kubernetes 1\.33\.14 does not exist: 1\.33 reached its end of life on 2026-06-28 and its last release is 1\.33\.13/],
    ["versions", "an autoscaler patch past a minor's last release", (c) => { (c.autoscaler as Record<string, unknown>).version = "1.32.9"; }, "autoscaler.version",
        /cluster-autoscaler 1\.32\.9 does not exist: the last 1\.32 release is 1\.32\.7/],
    // Names and labels: a reserved prefix reported where the user wrote it, not under the tag it becomes.
    ["names", "a cluster name the cluster tag's value cannot start with", (c) => { c.name = "aliyun-dev"; }, "name", /becomes the value of the tag alicloud-kubeadm\/cluster=aliyun-dev/],
    ["names", "a pool name the pool tag's value cannot start with", (c) => { pool(c, 1).name = "aliyunpool"; }, "nodePools.1.name", /becomes the value of the tag [^ ]*pool=aliyunpool, and Alibaba Cloud refuses/],
    ["names", "a pool named aliyun", (c) => { pool(c, 0).name = "aliyun"; }, "nodePools.0.name", /refuses tag values starting with aliyun/],
    // Instance types, images and disks.
    ["instanceTypes", "an instance type listed twice", (c) => { delete pool(c, 0).instanceType; pool(c, 0).instanceTypes = ["ecs.g7.xlarge", "ecs.g6.xlarge", "ecs.g7.xlarge"]; },
        "nodePools.0.instanceTypes.2", /listed twice \(also instanceTypes\.0\)/],
    ["instanceTypes", "more instance types than a scaling configuration takes", (c) => {
        delete pool(c, 0).instanceType; pool(c, 0).instanceTypes = ["g5", "g6", "g7", "c5", "c6", "c7", "r5", "r6", "r7", "g6e", "g7a"].map((f) => `ecs.${f}.xlarge`);
    }, "nodePools.0.instanceTypes", /11 instance types; a scaling configuration takes at most 10/],
    ["image", "a Windows image", (c) => { image(c).nameRegex = "^win2022_21H2_x64"; }, "image.nameRegex", /Windows image, which the node scripts cannot set up/],
    ["image", "a CentOS 7 image for a pool", (c) => { pool(c, 0).imageId = "centos_7_9_x64_20G_alibase_20240628.vhd"; }, "nodePools.0.imageId", /CentOS 7 \(yum, no dnf\)/],
    ["image", "a system disk smaller than the image", (c) => { Object.assign(pool(c, 0), { imageId: "ubuntu_24_04_x64_40G_alibase_20260101.vhd", systemDisk: { size: 30 } }); },
        "nodePools.0.systemDisk.size", /30 GiB is smaller than the image .* which is 40 GiB/],
    ["image", "a package mirror given as a repository", (c) => { images(c).packageMirror = "https://pkgs.k8s.io/core:/stable:/v1.36/deb"; }, "images.packageMirror", /names a repository/],
];

/** Image sources that all sit on VPC-internal endpoints (a mirror in the account's Container Registry, reached over its VPC endpoint). */
function vpcImages(): Record<string, string> {
    const vpc = "registry-vpc.cn-hangzhou.aliyuncs.com/mirror";
    return {
        packageMirror: "https://mirrors.cloud.aliyuncs.com", kubernetesRepository: `${vpc}/google_containers`, flannel: `${vpc}/flannel:v0.28.9`,
        flannelCniPlugin: `${vpc}/flannel-cni-plugin:v1.9.1-flannel3`, cloudControllerManager: `${vpc}/cloud-controller-manager-amd64:v2.14.0`, admission: `${vpc}/node:22.12.0-alpine3.20`,
    };
}

/** [class, description, mutation, property path, fragment of the reason, region]. Each is accepted, with a warning at the path. */
const warned: Array<[string, string, Mutate, string, RegExp, string?]> = [
    ["apiAllowedCidrs", "a CIDR inside another", (c) => { net(c).apiAllowedCidrs = ["47.96.0.0/16", "47.96.10.0/24"]; }, "network.apiAllowedCidrs.1", /inside network\.apiAllowedCidrs\.0/],
    ["apiAllowedCidrs", "a CIDR inside the VPC", (c) => { net(c).apiAllowedCidrs = ["47.96.0.0/16", "192.168.16.0/24"]; }, "network.apiAllowedCidrs.1", /inside network\.vpcCidr/],
    ["versions", "a Kubernetes patch above the newest known of a minor still patched", (c) => { c.kubernetesVersion = "1.36.7"; }, "kubernetesVersion",
        /newer than the newest 1\.36 release this project knows \(1\.36\.3, as of 2026-12-02\)/],
    ["versions", "an autoscaler patch above the newest known of a minor still patched", (c) => { (c.autoscaler as Record<string, unknown>).version = "1.36.4"; }, "autoscaler.version",
        /newer than the newest 1\.36 release this project knows \(1\.36\.1, as of 2026-08-22\)/],
    ["zones", "a zone not among the region's known zones", (c) => { c.zones = ["cn-hangzhou-h", "cn-hangzhou-z"]; }, "zones.1", /not among the zones of cn-hangzhou this project knows/],
    ["natGateway", "NAT off with a mirror host of unknown reach", (c) => {
        net(c).natGateway = false; c.nodePools = [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }]; c.images = { ...vpcImages(), flannel: "mirror.corp.example/flannel/flannel:v0.28.9" };
    }, "images.flannel", /mirror\.corp\.example is not a VPC-internal endpoint this project knows/],
    ["labels", "a label the cloud controller manager keeps", (c) => { pool(c, 0).labels = { "topology.kubernetes.io/zone": "cn-hangzhou-h" }; }, "nodePools.0.labels.topology.kubernetes.io/zone",
        /describes the instance itself .*replaces the real one/],
    ["taints", "a taint Kubernetes manages itself", (c) => { node(c, 0).taints = ["node.kubernetes.io/not-ready:NoSchedule"]; }, "existingNodes.0.taints.0", /set and removed by Kubernetes/],
];

describe("config content: hostile configs are refused at the property the user wrote", () => {
    it("the base (the existing-node example with a real allowed CIDR) is valid", () => {
        const r = validate(base());
        assert.deepEqual(r.problems, []);
    });

    for (const [kind, what, mutate, at, reason, region] of refused) {
        it(`${kind}: ${what} is refused at ${at}`, () => {
            const c = base();
            mutate(c);
            const r = validate(c, region);
            assert.equal(r.config, undefined, "no validated config");
            const here = r.problems.filter((p) => p.path === at);
            assert.ok(here.some((p) => reason.test(p.reason)), `a problem at ${at} matching ${reason}; got:\n${r.errors.join("\n")}`);
        });
    }

    it("a private key refused for its content is never repeated in the problem", () => {
        const key = testSshPrivateKey();
        for (const value of [key.split("-----END")[0], `${key.split("\n").slice(1, 3).join("")}`, opensshKeyText("aes256-ctr")]) {
            const c = base();
            ssh(c).privateKey = value;
            const r = validate(c);
            assert.ok(r.problems.some((p) => p.path === "existingNodes.1.connection.privateKey"), r.errors.join("\n"));
            // The end of a Base64 line of the key: its random part.
            const body = (value.split("\n").find((l) => l.length > 40 && !l.startsWith("-----")) ?? value).slice(-24);
            for (const text of [...r.errors, ...r.warnings]) assert.ok(!text.includes(body), `the key is echoed: ${text}`);
        }
    });
});

describe("config content: setups with a legitimate use are accepted with a warning at the property", () => {
    for (const [kind, what, mutate, at, reason, region] of warned) {
        it(`${kind}: ${what} is warned about at ${at}`, () => {
            const c = base();
            mutate(c);
            const r = validate(c, region);
            assert.deepEqual(r.problems, [], "no problem");
            assert.ok(r.warningProblems.some((w) => w.path === at && reason.test(w.reason)), `a warning at ${at} matching ${reason}; got:\n${r.warnings.join("\n")}`);
        });
    }
});

describe("config content: tricky valid configs stay accepted", () => {
    /** Warnings of a config beyond the base's own (0.0.0.0/0 and similar are not what these cases are about). */
    const newWarnings = (r: ValidationResult) => {
        const known = new Set(validate(base()).warnings);
        return r.warnings.filter((w) => !known.has(w));
    };

    it("international regions: zones without a dash and the upstream sources, with no problem and no new warning", () => {
        for (const [region, zones] of [["ap-southeast-1", ["ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c"]], ["eu-central-1", ["eu-central-1a", "eu-central-1b"]],
            ["us-west-1", ["us-west-1a", "us-west-1b"]], ["me-east-1", ["me-east-1a"]]] as const) {
            const c = base();
            c.zones = [...zones];
            const r = validate(c, region);
            assert.deepEqual(r.errors, [], region);
            assert.deepEqual(newWarnings(r), [], region);
        }
    });

    it("5 zones with 5 masters, carved from the VPC", () => {
        const c = base();
        c.zones = ["cn-hangzhou-g", "cn-hangzhou-h", "cn-hangzhou-i", "cn-hangzhou-j", "cn-hangzhou-k"];
        cp(c).count = 5;
        const r = validate(c);
        assert.deepEqual(r.errors, []);
        assert.deepEqual(newWarnings(r), []);
        assert.equal(r.config!.network.vswitchCidrs.length, 5);
    });

    it("several instance types of one architecture in a pool: x86 families, and Arm families with an arm64 image and a multi-arch CCM", () => {
        const x86 = base();
        delete pool(x86, 0).instanceType;
        pool(x86, 0).instanceTypes = ["ecs.g7.xlarge", "ecs.g6.xlarge", "ecs.c7.2xlarge", "ecs.g8i.xlarge", "ecs.gn7i-c8g1.2xlarge"];
        assert.deepEqual(validate(x86).errors, []);
        const armCluster = base();
        arm(armCluster);
        images(armCluster).cloudControllerManager = MULTI_ARCH_CCM;
        delete pool(armCluster, 0).instanceType;
        pool(armCluster, 0).instanceTypes = ["ecs.g8y.xlarge", "ecs.c8y.2xlarge", "ecs.r8y.xlarge"];
        Object.assign(image(armCluster), { bake: true, bakeInstanceType: "ecs.g8y.large" });
        const r = validate(armCluster);
        assert.deepEqual(r.errors, []);
        // A type of a family whose architecture this project does not know is left alone.
        const unknown = base();
        pool(unknown, 0).instanceType = "ecs.g9z.xlarge";
        assert.deepEqual(validate(unknown).errors, []);
    });

    it("an SSH node on a custom port, two nodes behind one address on their own ports, an IPv6 or DNS host, an encrypted key with its passphrase", () => {
        const c = base();
        node(c, 0).connection = { host: "47.96.1.2", port: 2201, privateKey: testSshPrivateKey() };
        Object.assign(ssh(c), { host: "47.96.1.2", port: 2202, user: "ubuntu", privateKey: opensshKeyText("aes256-ctr"), privateKeyPassword: "pw" });
        const r = validate(c);
        assert.deepEqual(r.errors, []);
        assert.deepEqual(r.config!.existingNodes.map((n) => n.connection?.port), [2201, 2202]);
        for (const host of ["fd00::20", "node-1.example.com", "localhost"]) {
            const d = base();
            ssh(d).host = host;
            assert.deepEqual(validate(d).errors, [], host);
        }
    });

    it("NAT off where every source is on a VPC-internal endpoint, the pools fixed and the endpoint internal", () => {
        const c = base();
        net(c).natGateway = false;
        c.nodePools = [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }];
        c.images = vpcImages();
        assert.deepEqual(validate(c).errors, []);
    });

    it("a join tag of the user's own, and a certificate bundle of two certificates (a rotation)", () => {
        const c = base();
        admission(c).joinTag = "alicloud-kubeadm/join=dev";
        admission(c).identityCertificate = `${ALIBABA_IDENTITY_CERTIFICATE}\n${ALIBABA_IDENTITY_CERTIFICATE}`;
        assert.deepEqual(validate(c).errors, []);
    });

    it("the stacks and the existing-node example as they are", () => {
        for (const file of ["stacks/Pulumi.dev.yaml", "stacks/Pulumi.prod.yaml", "examples/Pulumi.existing-nodes.yaml"]) {
            const { cluster, region } = stackConfig(file);
            const r = validate(cluster, region);
            assert.deepEqual(r.errors, [], file);
            assert.ok(r.config, file);
        }
    });
});

describe("config content: components used directly take the same rules, at their own argument paths", () => {
    const config = parseClusterConfig({
        name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h", "cn-hangzhou-i"],
        nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }],
        existingNodes: [{ instanceId: "i-bp1exampleexample01", mode: "manual" }],
    }, "cn-hangzhou");
    const join = {
        config, apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"cd".repeat(32)}`, masterInstanceId: "i-master0",
        commands: { "list-nodes": "c-list" } as unknown as NodeCommandIds,
    };

    it("ExistingNode: a port in the node's connection host, a user in the connection argument's host, a public key as its key", () => {
        const { problems, report } = collect();
        const node = { ...config.existingNodes[0], connection: { host: "10.0.0.5:22", port: 22, user: "root" } };
        assert.equal(parseExistingNodeArgs({ ...join, node: structuredClone(node) as never, token: "abcdef.0123456789abcdef" }, report), undefined);
        assert.deepEqual(problems.map((p) => p.path), ["node.connection.host"]);
        const again = collect();
        assert.equal(parseExistingNodeArgs({ ...join, node: config.existingNodes[0], token: "abcdef.0123456789abcdef",
            connection: { host: "root@10.0.0.5", privateKey: "ssh-rsa AAAAB3NzaC1yc2E me@laptop" } }, again.report), undefined);
        assert.deepEqual(again.problems.map((p) => p.path).sort(), ["connection.host", "connection.privateKey"]);
    });

    it("NodePool: Arm and x86 types in one pool, a pool name the pool tag cannot take, a Kubernetes release that does not exist", () => {
        const { problems, report } = collect();
        const pool = { name: "aliyun-arm", instanceTypes: ["ecs.g8y.xlarge", "ecs.g7.xlarge"], size: 1 };
        assert.equal(parseNodePoolArgs({ ...join, config: { ...config, kubernetesVersion: "1.33.20" }, pool: pool as never, vswitchIds: ["vsw-1"], securityGroupIds: ["sg-1"],
            imageId: "img" }, report), undefined);
        assert.deepEqual(problems.map((p) => p.path).sort(), ["config.kubernetesVersion", "pool.instanceTypes.1", "pool.name"]);
    });
});
