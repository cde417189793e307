/**
 * Master 0 never re-inits a live cluster: src/shell/master_init.sh run in the script sandbox (testing/sandbox: stub
 * kubeadm, curl, package managers; the real openssl). The masters it asks are answered by a curl stub that serves a
 * cluster-info ConfigMap with a real CA (made by openssl here) and checks that /readyz is verified against that CA
 * alone, as an API server would. What is asserted: which kubeadm calls ran, the markers, the exit code.
 */
import * as assert from "node:assert/strict";
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { renderMasterInit, type MasterInitParams } from "../src/shell/render";
import { callsOf, makeSandbox, type Sandbox } from "../testing/sandbox";

const params: MasterInitParams = {
    region: "cn-hangzhou", kubernetesVersion: "1.36.3", apiEndpoint: "nlb-abc.cn-hangzhou.nlb.aliyuncs.com:6443",
    podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24, encryptSecrets: true,
};
const PEERS = ["192.168.16.11", "192.168.32.12"];

/** A self-signed CA made by openssl, and its kubeadm hash. */
function makeCa(dir: string, name: string): { pem: string; hash: string } {
    const key = path.join(dir, `${name}.key`);
    const crt = path.join(dir, `${name}.crt`);
    execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", crt,
        "-days", "1", "-subj", `/CN=${name}`], { stdio: "pipe" });
    const pem = fs.readFileSync(crt, "utf8");
    const spki = new crypto.X509Certificate(pem).publicKey.export({ type: "spki", format: "der" });
    return { pem, hash: `sha256:${crypto.createHash("sha256").update(spki).digest("hex")}` };
}

/**
 * A curl stub for the masters at `answering` (IP → CA PEM): cluster-info carries that CA; /readyz answers `ok` only to a
 * request that trusts exactly that CA (`--cacert` of the same certificate), else the TLS error curl gives. Other
 * addresses refuse the connection; every other URL goes to the sandbox's own curl stub.
 */
function curlStub(answering: Record<string, string>): string {
    const cases = Object.entries(answering).map(([ip, pem]) => {
        const data = Buffer.from(pem).toString("base64");
        const kubeconfig = `apiVersion: v1\\nclusters:\\n- cluster:\\n    certificate-authority-data: ${data}\\n    server: https://${ip}:6443\\n  name: \\"\\"\\nkind: Config\\n`;
        return `  ${ip}) ca_data='${data}'; info='{"kind":"ConfigMap","metadata":{"name":"cluster-info","namespace":"kube-public"},"data":{"kubeconfig":"${kubeconfig}"}}' ;;`;
    }).join("\n");
    return `. "$AK_STUB_SRC/_lib.sh"
url="" out="" cacert=""
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift ;;
    --cacert) cacert=$2; shift ;;
    https://*:6443/*) url=$1 ;;
    *) ;;
  esac
  shift
done
[ -n "$url" ] || exec bash "$AK_STUB_SRC/curl" "\${args[@]}"
host=\${url#https://}; host=\${host%%:*}
ca_data="" info=""
case "$host" in
${cases}
  *) echo "curl: (7) Failed to connect to $host port 6443" >&2; exit 7 ;;
esac
case "$url" in
  */api/v1/namespaces/kube-public/configmaps/cluster-info) printf '%s' "$info" >"\${out:-/dev/stdout}" ;;
  */readyz)
    if [ -n "$cacert" ] && [ "$(base64 -w0 <"$cacert")" = "$ca_data" ]; then printf ok >"\${out:-/dev/stdout}"; exit 0; fi
    echo "curl: (60) SSL certificate problem: unable to get local issuer certificate" >&2; exit 60 ;;
  *) echo "curl: (22) 404" >&2; exit 22 ;;
esac
`;
}

describe("master 0's script with and without a recorded CA hash (sandbox)", function () {
    this.timeout(60_000);
    let dir: string;
    let cluster: { pem: string; hash: string };
    let other: { pem: string; hash: string };
    const sandboxes: Sandbox[] = [];
    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-guard-"));
        cluster = makeCa(dir, "cluster");
        other = makeCa(dir, "other");
    });
    after(() => {
        sandboxes.forEach((sb) => sb.cleanup());
        fs.rmSync(dir, { recursive: true, force: true });
    });
    const sandbox = (answering: Record<string, string>): Sandbox => {
        const sb = makeSandbox({ os: "ubuntu", ubuntuRelease: "24.04", stubs: { curl: curlStub(answering) } });
        sandboxes.push(sb);
        return sb;
    };

    it("a recorded hash and a master answering with that CA: joins it (marker join-pending), never kubeadm init", async () => {
        // master 1 is gone (refuses connections); master 2 answers with the cluster's CA
        const sb = sandbox({ [PEERS[1]]: cluster.pem });
        const r = await sb.run(renderMasterInit({ ...params, recordedCaCertHash: cluster.hash, peerMasterIps: PEERS }));
        assert.equal(r.code, 0, r.stderr + sb.read("/var/log/alicloud-kubeadm/master-init.log"));
        assert.deepEqual(callsOf(r.calls, "kubeadm", "init"), [], "kubeadm init must not run");
        const marker = sb.read("/var/lib/alicloud-kubeadm/init.join-pending") ?? "";
        assert.match(marker, new RegExp(`member=${PEERS[1].replace(/\./g, "\\.")}`));
        assert.equal(sb.read("/var/lib/alicloud-kubeadm/init.done"), undefined);
    });

    it("a recorded hash and no master answering with that CA: stops, names the restore command, never kubeadm init", async () => {
        // master 1 answers, but with another CA (a forked or foreign cluster); master 2 is gone
        const sb = sandbox({ [PEERS[0]]: other.pem });
        const r = await sb.run(renderMasterInit({ ...params, recordedCaCertHash: cluster.hash, peerMasterIps: PEERS }));
        assert.equal(r.code, 1);
        assert.deepEqual(callsOf(r.calls, "kubeadm", "init"), [], "kubeadm init must not run");
        assert.match(r.stderr + r.stdout + (sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? ""), /npm run restore -- --stack/);
        assert.match(sb.read("/var/lib/alicloud-kubeadm/init.refused") ?? "", /status=refused/);
        // what the restore needs to bring it up (src/shell/ops/etcd-restore.sh): its kubeadm config rendered, the node prepared
        assert.match(sb.read("/var/lib/alicloud-kubeadm/kubeadm-init.yaml") ?? "", /kind: InitConfiguration[\s\S]*kind: ClusterConfiguration/);
        assert.ok(r.calls.some((x) => x.cmd === "apt-get" && x.args.includes("install")), "kubeadm, kubelet and containerd installed");
        // a second boot (cloud-init reruns nothing, but a manual rerun) still refuses
        const again = await sb.run(renderMasterInit({ ...params, recordedCaCertHash: cluster.hash, peerMasterIps: PEERS }));
        assert.notEqual(again.code, 0);
        assert.deepEqual(callsOf(again.calls, "kubeadm", "init"), []);
    });

    it("a recorded hash on a single master (no other master to ask): stops with the restore command", async () => {
        const sb = sandbox({});
        const r = await sb.run(renderMasterInit({ ...params, recordedCaCertHash: cluster.hash }));
        assert.equal(r.code, 1);
        assert.deepEqual(callsOf(r.calls, "kubeadm", "init"), []);
        assert.match(sb.read("/var/log/alicloud-kubeadm/master-init.log") ?? "", /npm run restore -- --stack/);
    });

    it("no recorded hash (a new cluster): kubeadm init", async () => {
        const sb = sandbox({ [PEERS[0]]: cluster.pem });
        const r = await sb.run(renderMasterInit(params));
        assert.equal(r.code, 0, r.stderr);
        assert.equal(callsOf(r.calls, "kubeadm", "init").length, 1);
        assert.ok(sb.read("/var/lib/alicloud-kubeadm/init.done"));
    });
});
