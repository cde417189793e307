/**
 * Default images pinned by digest only where a digest can be cited (src/rules/images.ts CITED_DIGESTS), and a warning
 * for every image pulled by tag. World: the source tree, the stack program synthesized under Pulumi mocks (scripts/synth.ts)
 * for both checked-in stacks and the existing-node example, and config validation.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";
import { validateClusterConfig } from "../src/config";
import { CITED_DIGESTS, DEFAULT_ADMISSION_IMAGE, DEFAULT_FLANNEL_IMAGE, pinnedImage } from "../src/rules";

const ROOT = path.join(__dirname, "..");
const DIGEST = /@(sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})/g;

function files(dir: string, ext: RegExp): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? files(path.join(dir, e.name), ext) : ext.test(e.name) ? [path.join(dir, e.name)] : []);
}

/** Each digest in `text` that is not a cited one. */
const uncited = (text: string) => [...text.matchAll(DIGEST)].map((m) => m[1]).filter((d) => !CITED_DIGESTS.some((c) => c.digest === d));

describe("image digests: every one cited, the rest warned about", function () {
    this.timeout(120_000);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "digests-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("each cited digest names its source (repository, path, commit) and docs/upstream.md links that file at that commit", () => {
        assert.ok(CITED_DIGESTS.length > 0);
        const upstream = fs.readFileSync(path.join(ROOT, "docs", "upstream.md"), "utf8");
        const section = upstream.slice(upstream.indexOf('<a id="image-digests"></a>'));
        assert.ok(section.length > 0 && upstream.includes('<a id="image-digests"></a>'), "docs/upstream.md#image-digests");
        for (const c of CITED_DIGESTS) {
            assert.match(c.digest, /^sha256:[0-9a-f]{64}$/, c.reference);
            assert.match(c.source.repository, /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, c.reference);
            assert.match(c.source.commit, /^[0-9a-f]{40}$/, `${c.reference}: a commit, not a branch`);
            assert.ok(c.source.path.length > 0 && !c.source.path.startsWith("/"), c.reference);
            const url = `https://github.com/${c.source.repository}/blob/${c.source.commit}/${c.source.path}`;
            assert.ok(section.includes(url) && section.includes(c.digest), `docs/upstream.md#image-digests cites ${c.reference}: ${url} and its digest`);
            assert.equal(pinnedImage(c.reference), `${c.reference}@${c.digest}`);
        }
        assert.throws(() => pinnedImage(DEFAULT_FLANNEL_IMAGE), /no cited digest for ghcr\.io\/flannel-io\/flannel:v0\.28\.9/, "no digest without a source");
    });

    it("no digest in the library's source without its cited source", () => {
        const found = files(path.join(ROOT, "src"), /\.(ts|sh)$/).flatMap((f) => uncited(fs.readFileSync(f, "utf8")).map((d) => `${path.relative(ROOT, f)}: ${d}`));
        assert.deepEqual(found, []);
        assert.equal(DEFAULT_ADMISSION_IMAGE, pinnedImage("docker.io/library/node:22.23.3-alpine3.23"), "the admission service's image is pinned");
    });

    for (const stack of ["dev", "prod", path.join(ROOT, "examples", "Pulumi.existing-nodes.yaml")]) {
        it(`synth ${path.basename(stack)}: every digest in what it applies and runs has its cited source; the admission service runs by digest`, async () => {
            const result = await synthesize(stack, out);
            assert.deepEqual(result.problems, []);
            const written = files(result.outDir, /\.(yaml|sh|json)$/);
            const found = written.flatMap((f) => uncited(fs.readFileSync(f, "utf8")).map((d) => `${path.relative(result.outDir, f)}: ${d}`));
            assert.deepEqual(found, []);
            const ds = result.resources.find((r) => r.type === "kubernetes:apps/v1:DaemonSet" && r.name.includes("alicloud-kubeadm-admission"))!;
            const containers = (ds.rawInputs.spec as { template: { spec: { containers: Array<{ image: string }> } } }).template.spec.containers;
            assert.deepEqual(containers.map((c) => c.image), [DEFAULT_ADMISSION_IMAGE], "the DaemonSet runs the pinned image");
        });
    }

    it("validation warns at each add-on image pulled by tag, default or configured, with the fix; not at one pinned by digest", () => {
        const base = YAML.parse(fs.readFileSync(path.join(ROOT, "stacks", "Pulumi.dev.yaml"), "utf8")).config["alicloud-kubeadm:cluster"];
        const digestWarnings = (cfg: unknown) => validateClusterConfig(cfg, "cn-hangzhou").warnings.filter((w) => / is pulled by tag /.test(w));
        const defaults = digestWarnings(base);
        assert.deepEqual(defaults.map((w) => w.split(": ")[0]), ["images.flannel", "images.flannelCniPlugin", "images.cloudControllerManager", "images.clusterAutoscalerRepository"]);
        assert.match(defaults[0], /^images\.flannel: ghcr\.io\/flannel-io\/flannel:v0\.28\.9 is pulled by tag .*pin it: ghcr\.io\/flannel-io\/flannel:v0\.28\.9@sha256:<digest> \(docs\/security\.md#image-digests\)$/);
        assert.match(defaults[3], /registry\.k8s\.io\/autoscaling\/cluster-autoscaler:v1\.36\.1 is pulled by tag .*set images\.clusterAutoscalerRepository/);
        const pinned = { ...base, images: { flannel: `${DEFAULT_FLANNEL_IMAGE}@sha256:${"1".repeat(64)}`, admission: "registry.example.com/node:22" } };
        assert.deepEqual(digestWarnings(pinned).map((w) => w.split(": ")[0]), ["images.flannelCniPlugin", "images.cloudControllerManager", "images.admission", "images.clusterAutoscalerRepository"],
            "a pinned flannel is quiet; a configured admission image by tag is warned about");
        const fixedOnly = { ...base, nodePools: base.nodePools.filter((p: { autoscale?: unknown }) => !p.autoscale) };
        assert.ok(!digestWarnings(fixedOnly).some((w) => w.startsWith("images.clusterAutoscalerRepository")), "no autoscaler, no warning about its image");
    });
});
