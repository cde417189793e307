/**
 * Join material follows the running version, not the config. World: the stack program under Pulumi mocks (npm run synth),
 * whose ControlPlaneVersion answers the version the test says the API servers serve (testing/mockRuntime.ts
 * `runningVersion`). Bumping kubernetesVersion while the mocks still answer the old version changes no join material —
 * pools' userdata, the control-plane join command, the existing nodes' attach command, the admission service's attach
 * script — nor the autoscaler's image; only what moves the control plane changes. Once the version resource answers the
 * new version, the join material takes it.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize, type SynthResult } from "../scripts/synth";
import { unpackScript } from "./tools";

const ROOT = path.join(__dirname, "..");

/** A copy of a stack file with kubernetesVersion set. */
function withVersion(dir: string, source: string, name: string, version: string): string {
    const doc = YAML.parse(fs.readFileSync(path.join(ROOT, source), "utf8"));
    doc.config["alicloud-kubeadm:cluster"].kubernetesVersion = version;
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
}

/** Every resource's inputs by name, secrets revealed. */
function inputsByName(r: SynthResult): Map<string, string> {
    return new Map(r.resources.map((x) => [`${x.type}::${x.name}`, JSON.stringify(x.rawInputs)]));
}

/** The join material of a synth, by what it is, unpacked. */
function joinMaterial(r: SynthResult): Record<string, string> {
    const out: Record<string, string> = {};
    for (const x of r.resources) {
        if (x.type === "alicloud:ess/scalingConfiguration:ScalingConfiguration") out[`userdata ${x.name}`] = unpackScript(String(x.rawInputs.userData));
        if (x.type === "alicloud:ecs/command:Command" && /-(control-plane-join|attach)$/.test(x.name)) {
            out[`command ${x.name}`] = unpackScript(Buffer.from(String(x.rawInputs.commandContent), "base64").toString("utf8"));
        }
        const text = JSON.stringify(x.rawInputs);
        if (x.type.startsWith("kubernetes:") && text.includes("AK_KUBERNETES_VERSION")) out[`served ${x.name}`] = text;
        if (x.type === "kubernetes:apps/v1:Deployment" && text.includes("cluster-autoscaler:")) out[`autoscaler ${x.name}`] = /cluster-autoscaler:v[0-9.]+/.exec(text)![0];
    }
    return out;
}

describe("join material follows the version the control plane runs (synth under mocks)", function () {
    this.timeout(120_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "upgrade-join-"));
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const [source, label] of [["stacks/Pulumi.prod.yaml", "prod (3 masters, autoscaled pools)"], ["examples/Pulumi.existing-nodes.yaml", "existing nodes (attach command)"]] as const) {
        it(`${label}: a patch bump changes nothing that joins a node until the version resource answers it`, async () => {
            const before = await synthesize(withVersion(dir, source, "before", "1.36.3"), dir);
            const bumped = await synthesize(withVersion(dir, source, "bumped", "1.36.4"), dir, { runningVersion: "1.36.3" });
            const moved = await synthesize(withVersion(dir, source, "moved", "1.36.4"), dir, { runningVersion: "1.36.4" });
            for (const r of [before, bumped, moved]) assert.deepStrictEqual(r.problems, []);
            const a = joinMaterial(before);
            assert.ok(Object.keys(a).some((k) => k.startsWith("userdata ")) && Object.keys(a).some((k) => k.startsWith("served ")), Object.keys(a).join(", "));
            assert.ok(Object.keys(a).some((k) => k.startsWith("command ")), `no saved join command in ${Object.keys(a).join(", ")}`);
            assert.deepStrictEqual(joinMaterial(bumped), a, "join material changed before the control plane runs 1.36.4");
            // Nothing else changes either but what moves the control plane: the upgrade command, the version resources, and the
            // masters' own userdata (which they ignore after creation).
            const was = inputsByName(before);
            // (The stack's reference to itself is named after the stack file, which differs here.)
            const changed = [...inputsByName(bumped)].filter(([k, v]) => was.get(k) !== v && !k.startsWith("pulumi:pulumi:StackReference")).map(([k]) => k.split("::")[1]).sort();
            assert.ok(changed.every((n) => /-(upgrade|version|node-versions|control-plane-master-0)$/.test(n)), `changed: ${changed.join(", ")}`);
            assert.ok(changed.some((n) => n.endsWith("-upgrade")) && changed.some((n) => n.endsWith("-version")), `changed: ${changed.join(", ")}`);
            // No master is touched: what changes on a master's instance is only what it ignores after creation (userdata).
            const masters = bumped.resources.filter((x) => x.type === "alicloud:ecs/instance:Instance");
            assert.ok(masters.length > 0);
            for (const m of masters) {
                const old = before.resources.find((x) => x.type === m.type && x.name === m.name)!;
                const keys = Object.keys(m.rawInputs).filter((k) => JSON.stringify(m.rawInputs[k]) !== JSON.stringify(old.rawInputs[k]));
                assert.deepStrictEqual(keys.filter((k) => !m.ignoreChanges.includes(k)), [], `${m.name}: ${keys.join(", ")} change, ignoring ${m.ignoreChanges.join(", ")}`);
                assert.deepStrictEqual(keys.filter((k) => m.replaceOnChanges.includes(k)), [], `${m.name} would be replaced`);
            }
            // Once the API servers run 1.36.4, every piece of join material installs 1.36.4.
            const after = joinMaterial(moved);
            for (const [k, text] of Object.entries(after)) {
                // The admission bootstrap carries no version: it fetches the served script, checked as `served`.
                if (k.startsWith("autoscaler ") || !text.includes("AK_KUBERNETES_VERSION")) continue;
                assert.ok(text.includes("1.36.4") && !/AK_KUBERNETES_VERSION='1\.36\.3'/.test(text), `${k} does not follow the running version`);
            }
        });
    }

    it("a minor: the autoscaler's image stays on the running minor until the API servers run the new one", async () => {
        const source = "stacks/Pulumi.prod.yaml";
        const running = joinMaterial(await synthesize(withVersion(dir, source, "minor-before", "1.36.3"), dir, { runningVersion: "1.35.4" }));
        const moved = joinMaterial(await synthesize(withVersion(dir, source, "minor-after", "1.36.3"), dir));
        const image = (m: Record<string, string>) => Object.entries(m).find(([k]) => k.startsWith("autoscaler "))![1];
        assert.match(image(running), /cluster-autoscaler:v1\.35\./);
        assert.match(image(moved), /cluster-autoscaler:v1\.36\./);
        assert.ok(Object.entries(running).filter(([k]) => k.startsWith("userdata ")).every(([, t]) => /AK_KUBERNETES_VERSION='1\.35\.4'/.test(t)), "pool userdata ahead of the API servers");
    });
});
