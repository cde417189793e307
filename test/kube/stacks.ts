/**
 * The checked-in stacks, synthesized offline (scripts/synth.ts, in-process under Pulumi mocks) at the
 * Kubernetes version the real-cluster harness runs, for tests that feed what the stacks render to the real
 * control plane: manifests, userdata, saved commands.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml, stringify } from "yaml";
import { synthesize } from "../../scripts/synth";
import type { MockOptions, RecordedResource } from "../../testing/mockRuntime";
import { headerOf } from "../tools";

const ROOT = path.resolve(__dirname, "..", "..");

export interface RenderedStack {
    stack: string;
    /** `alicloud:region`. */
    region: string;
    /** The stack file's own kubernetesVersion, and the one it was rendered at. */
    stackVersion: string;
    kubernetesVersion: string;
    /** `out/<stack>/manifests/*.yaml`, by file name. */
    manifests: Record<string, string>;
    /** `out/<stack>/userdata/*.sh` (secrets redacted), by file name. */
    userdata: Record<string, string>;
    /** `out/<stack>/commands/*.sh` (saved commands, secrets redacted), by file name. */
    commands: Record<string, string>;
    /** The userdata exactly as each resource was given it (secrets and all), by resource name: what an instance boots. */
    rawUserdata: Record<string, string>;
    /** Every resource synth recorded (type, name, inputs; mock ids). */
    resources: RecordedResource[];
    /** The stack's outputs as `out/<stack>/outputs.json` has them (e.g. `attachCommand`, the one-line manual attach). */
    outputs: Record<string, unknown>;
}

function readDir(dir: string): Record<string, string> {
    return Object.fromEntries(fs.readdirSync(dir).sort().map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));
}

/**
 * Synthesizes `stacks/Pulumi.<stack>.yaml` with its kubernetesVersion replaced by `kubernetesVersion` (`x.y.z`):
 * a kubeadm can deploy its own minor and the one before, so the harness's kubeadm judges what the stack renders
 * for the harness's version. Everything else is the stack's own configuration. `mocks.dynamicOutputs` replaces the
 * placeholders of the dynamic resources' outputs (e.g. a real cluster's `caCertHash`).
 */
export async function synthesizeAt(stack: string, kubernetesVersion: string, mocks: Pick<MockOptions, "dynamicOutputs"> = {}): Promise<RenderedStack> {
    // a stack of stacks/ by name, or a stack file by path (e.g. examples/Pulumi.existing-nodes.yaml)
    const source = stack.includes("/") ? path.resolve(ROOT, stack) : path.join(ROOT, "stacks", `Pulumi.${stack}.yaml`);
    stack = stack.includes("/") ? path.basename(stack).replace(/^Pulumi\.(.+)\.ya?ml$/, "$1") : stack;
    const doc = parseYaml(fs.readFileSync(source, "utf8"));
    const cluster = doc.config["alicloud-kubeadm:cluster"];
    const stackVersion = String(cluster.kubernetesVersion);
    cluster.kubernetesVersion = kubernetesVersion;
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ak-stack-"));
    try {
        const file = path.join(tmp, `Pulumi.${stack}.yaml`);
        fs.writeFileSync(file, stringify(doc));
        const r = await synthesize(file, path.join(tmp, "out"), mocks);
        if (r.problems.length) throw new Error(`synth ${stack} at ${kubernetesVersion}:\n${r.problems.join("\n")}`);
        return {
            stack, region: String(doc.config["alicloud:region"]), stackVersion, kubernetesVersion,
            manifests: readDir(path.join(r.outDir, "manifests")),
            userdata: readDir(path.join(r.outDir, "userdata")),
            commands: readDir(path.join(r.outDir, "commands")),
            rawUserdata: Object.fromEntries(r.resources.filter((x) => typeof x.rawInputs.userData === "string").map((x) => [x.name, x.rawInputs.userData as string])),
            resources: r.resources,
            outputs: r.outputs,
        };
    } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
}

/** The `readonly AK_X='value'` parameters at the top of a rendered script (test/tools.ts). */
export { headerOf };

/** A rendered script with one header parameter's value replaced (e.g. a redacted token by a real one). */
export function withHeader(script: string, name: string, value: string): string {
    const re = new RegExp(`^readonly ${name}='(?:[^']|'\\\\'')*'$`, "m");
    if (!re.test(script)) throw new Error(`no ${name} in the script's header`);
    return script.replace(re, `readonly ${name}='${value.replace(/'/g, "'\\''")}'`);
}
