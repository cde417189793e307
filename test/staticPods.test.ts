/**
 * The upgrade gate's reading of a master's static pods. World: the functions themselves (parseStaticPods and
 * staticPodFindings on the static-pods operation's lines, waitForStaticPods on a stepped clock); and the static-pods operation script in the script sandbox
 * (testing/sandbox) with the real kubectl v1.36.3 of test/kube/build.sh for its offline `label --local`, the API
 * server's answers (the kubelet's /pods, the mirror pods) given by a stand-in. Without that kubectl the script test is
 * skipped with one line (CI=true fails instead).
 */
import * as assert from "assert";
import * as path from "path";
import { decompress } from "../src/cloud/operations";
import { renderOperation } from "../src/shell/render";
import { parseStaticPods, staticPodFindings } from "../src/upgrade/status";
import { makeSandbox } from "../testing/sandbox";
import { fill } from "../testing/savedCommands";
import { steppedClock } from "../testing/steppedClock";
import { waitForStaticPods } from "../src/upgrade/gate";
import type { NodeCommandIds } from "../src/rules";
import { binDir, isExecutable } from "./kube/cluster";

const NODE = "master-0";
const COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

/** The operation's lines: each component run by the kubelet from its file under `hash`, its mirror pod on NODE, Ready. */
function lines(over: { kubelet?: string[]; mirror?: string[] } = {}): string[] {
    return [
        ...COMPONENTS.map((c) => `kubelet\t${c}-${NODE}\th-${c}\tfile`),
        ...(over.kubelet ?? []),
        ...COMPONENTS.map((c) => `mirror\t${c}-${NODE}\t${NODE}\th-${c}\tTrue`),
        ...(over.mirror ?? []),
    ];
}
const findings = (l: string[]) => staticPodFindings(parseStaticPods(l.join("\n")), NODE);

describe("static pods: what the gate reads from the kubelet and the mirror pods", () => {
    it("every control-plane pod the kubelet runs from a file, mirrored with its hash on its node and Ready: nothing to wait for", () => {
        assert.deepStrictEqual(findings(lines()), []);
    });

    it("a pod from the API named like a static pod neither stands in for one the kubelet does not run nor blocks one it runs", () => {
        // Any pod creator may bind a pod named kube-apiserver-master-0 (in any namespace) to master-0: the kubelet lists
        // it with source "api". It is not the static pod.
        const noStatic = lines().filter((l) => !l.startsWith("kubelet\tkube-apiserver-"));
        assert.deepStrictEqual(findings([...noStatic, "kubelet\tkube-apiserver-master-0\th-kube-apiserver\tapi"]),
            ["the kubelet of master-0 does not run kube-apiserver-master-0 (yet)"]);
        assert.deepStrictEqual(findings(lines({ kubelet: ["kubelet\tkube-apiserver-master-0\tother-uid\tapi", "kubelet\tetcd-master-0\tx\tapi"] })), []);
    });

    it("a missing mirror pod, one bound to another node, one of another hash and an unready one are each waited for", () => {
        const without = (name: string) => lines().filter((l) => !l.startsWith(`mirror\t${name}\t`));
        assert.deepStrictEqual(findings(without("etcd-master-0")), ["no mirror pod etcd-master-0 on master-0 yet"]);
        // Any kubelet may post a mirror pod of that name bound to itself (NodeRestriction checks only the node).
        assert.deepStrictEqual(findings([...without("etcd-master-0"), "mirror\tetcd-master-0\tmaster-1\th-etcd\tTrue"]), ["no mirror pod etcd-master-0 on master-0 yet"]);
        assert.deepStrictEqual(findings([...without("kube-scheduler-master-0"), "mirror\tkube-scheduler-master-0\tmaster-0\told\tTrue"]),
            ["kube-scheduler-master-0 not restarted by the kubelet yet"]);
        assert.deepStrictEqual(findings([...without("kube-controller-manager-master-0"), "mirror\tkube-controller-manager-master-0\tmaster-0\th-kube-controller-manager\tFalse"]),
            ["kube-controller-manager-master-0 not Ready"]);
        assert.deepStrictEqual(findings(lines().filter((l) => !l.startsWith("kubelet\tkube-apiserver-"))), ["the kubelet of master-0 does not run kube-apiserver-master-0 (yet)"]);
    });

    it("escaped values are data: a name that spells other lines with tabs and newlines is one name", () => {
        // What the template's js escaper prints for a tab and a newline (src/shell/kubectl_template.sh).
        const spelled = "x\\u000Akubelet\\u0009kube-apiserver-master-0\\u0009forged\\u0009file";
        const p = parseStaticPods([...lines().filter((l) => !l.startsWith("kubelet\tkube-apiserver-")), `kubelet\t${spelled}\tu\tfile`,
            "mirror\tetcd-master-0\\u0009master-0\tmaster-0\th\tTrue"].join("\n"));
        assert.strictEqual(p.kubelet.get("kube-apiserver-master-0"), undefined);
        assert.strictEqual(p.kubelet.get("x\nkubelet\tkube-apiserver-master-0\tforged\tfile"), "u");
        assert.ok(p.mirrors.has("etcd-master-0\tmaster-0"));
        assert.strictEqual(p.mirrors.get("etcd-master-0")!.hash, "h-etcd");
        assert.deepStrictEqual(staticPodFindings(p, NODE), ["the kubelet of master-0 does not run kube-apiserver-master-0 (yet)"]);
    });
});

describe("static-pods operation with the real kubectl (kubelet's list printed offline)", function () {
    this.timeout(60_000);
    const kubectl = path.join(binDir(), "kubectl");

    before(function () {
        if (isExecutable(kubectl)) return;
        const msg = `needs ${kubectl}: run \`npm run kube:build\``;
        if (process.env.CI === "true") throw new Error(`CI=true: ${msg} (.ci/run builds them first)`);
        console.log(`    skipped: ${msg}`);
        this.skip();
    });

    /** A pod of the kubelet's /pods (a PodList's item, as the kubelet serializes it). */
    const pod = (name: string, namespace: string, uid: string, source: string, labels?: Record<string, string>) => ({
        metadata: { name, namespace, uid, ...(labels ? { labels } : {}), annotations: { "kubernetes.io/config.source": source, ...(source === "file" ? { "kubernetes.io/config.hash": uid } : {}) } },
        spec: { nodeName: NODE, containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }] },
        status: { phase: "Running" },
    });

    /** The mirror pod of `name` on NODE, Ready, mirroring `mirror`; its config.hash as `hash` (anyone who may patch pods may change it). */
    const mirrorPod = (name: string, mirror: string, hash: string) => ({
        metadata: { name, namespace: "kube-system", uid: `m-${name}`, annotations: { "kubernetes.io/config.source": "file", "kubernetes.io/config.hash": hash, "kubernetes.io/config.mirror": mirror } },
        spec: { nodeName: NODE, containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }] },
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    });
    const podList = (items: unknown[]) => JSON.stringify({ kind: "PodList", apiVersion: "v1", metadata: {}, items });

    /**
     * Runs the operation for NODE: the kubelet's /pods answers `kubeletPods`; the mirror pods' listing prints `mirrors`
     * through the operation's own template, item by item, by the real kubectl offline (as `get` prints each item).
     */
    async function runOperation(kubeletPods: unknown[], mirrors: unknown[]): Promise<string> {
        const sb = makeSandbox({
            os: "ubuntu", stubs: {
                kubectl: `. "$AK_STUB_SRC/_lib.sh"
case " $* " in
  *" --raw "*) cat "$AK_ROOT/pods.json"; exit 0 ;;
  *" --local "*) exec "${kubectl}" "$@" ;;
  *" get pods "*)
    for a in "$@"; do case "$a" in go-template=*) t=\${a#go-template=} ;; esac; done
    t=\${t#"{{range .items}}"}; t=\${t%"{{end}}"}
    exec "${kubectl}" label --local --overwrite -f "$AK_ROOT/mirrors.json" alicloud-kubeadm-test/listed=1 -o "go-template=$t" ;;
esac
exit 1`,
            },
        });
        try {
            sb.write("/etc/kubernetes/admin.conf", "apiVersion: v1\nkind: Config\n");
            sb.write("/pods.json", podList(kubeletPods));
            sb.write("/mirrors.json", podList(mirrors));
            sb.write("/op.sh", fill(renderOperation("static-pods"), { node: NODE }));
            const r = await sb.run('bash "$AK_ROOT/op.sh" 2>&1');
            assert.strictEqual(r.code, 0, r.stdout);
            return decompress(r.stdout);
        } finally {
            sb.cleanup();
        }
    }
    const statics = () => COMPONENTS.map((c) => pod(`${c}-${NODE}`, "kube-system", `h-${c}`, "file"));
    const mirrors = () => COMPONENTS.map((c) => mirrorPod(`${c}-${NODE}`, `h-${c}`, `h-${c}`));

    it("a pod that anyone binds to the master, labelled alicloud-kubeadm/read=0, does not keep the script from printing both sections", async () => {
        // created with spec.nodeName (or a DaemonSet's) carrying the label the script sets on its printed copy
        const squatter = pod("squatter", "default", "00000000-0000-0000-0000-000000000001", "api", { "alicloud-kubeadm/read": "0" });
        const p = parseStaticPods(await runOperation([...statics(), squatter], mirrors()));
        assert.deepStrictEqual([...p.kubelet].sort(), COMPONENTS.map((c) => [`${c}-${NODE}`, `h-${c}`]).sort());
        assert.deepStrictEqual([...p.mirrors].sort(), COMPONENTS.map((c) => [`${c}-${NODE}`, { node: NODE, hash: `h-${c}`, ready: true }]).sort());
        assert.deepStrictEqual(staticPodFindings(p, NODE), []);
    });

    it("a mirror pod's hash is the one the kubelet compares (config.mirror, which no update may change), not a patched config.hash", async () => {
        // Anyone who may patch pods in kube-system may write config.hash: a stale mirror pod would pass, a fresh one never.
        const stale = mirrors().map((m) => m.metadata.name === `kube-apiserver-${NODE}` ? mirrorPod(m.metadata.name, "old", "h-kube-apiserver") : m);
        assert.deepStrictEqual(staticPodFindings(parseStaticPods(await runOperation(statics(), stale)), NODE), [`kube-apiserver-${NODE} not restarted by the kubelet yet`]);
        const patched = mirrors().map((m) => mirrorPod(m.metadata.name, m.metadata.annotations["kubernetes.io/config.mirror"], "patched"));
        assert.deepStrictEqual(staticPodFindings(parseStaticPods(await runOperation(statics(), patched)), NODE), []);
    });
});

describe("static pods gate without its saved command", () => {
    it("fails at once, naming the missing saved command and the fix, without waiting the gate's time", async () => {
        const clock = steppedClock();
        const access = { region: "cn-hangzhou", masterInstanceIds: ["i-1"], commands: {} as NodeCommandIds, pollIntervalMs: 1 };
        await assert.rejects(waitForStaticPods(access, NODE, { clock }), /the saved command static-pods is missing .*commands\["static-pods"\].*NodeCommands.*pulumi up/);
        assert.deepStrictEqual(clock.pauses, [], "the gate waited");
    });
});
