// Offline synth: runs the real stack program (index.ts) in-process under Pulumi mocks with one
// stack's config, and writes what `pulumi up` would create:
//   out/<stack>/resources.json   [{type, name, parent, inputs}], secrets redacted
//   out/<stack>/userdata/*.sh    rendered bootstrap scripts
//   out/<stack>/commands/*.sh    the saved Cloud Assistant commands (node operations, attach, control-plane join)
//   out/<stack>/manifests/*.yaml Kubernetes objects the stack applies
// Usage: npm run synth -- <stack | path/to/Pulumi.<stack>.yaml> [--out <dir>]
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { manifestFiles } from "../src/components/kube";
import { redactUserdata } from "../src/shell/render";
import * as pulumi from "@pulumi/pulumi";
import { installMocks, REDACTED, valueOf, type RecordedResource } from "../test/mockRuntime";

const ROOT = path.resolve(__dirname, "..");

export interface SynthResult {
    stack: string;
    file: string;
    outDir: string;
    resources: RecordedResource[];
    /** `<property.path>: <reason>` lines; non-empty means synth failed and nothing was written. */
    problems: string[];
}

/** Finds the stack file for a stack name or a path. */
export function resolveStackFile(arg: string): { stack: string; file: string } {
    const direct = path.resolve(arg);
    const file = fs.existsSync(direct) && fs.statSync(direct).isFile() ? direct : path.join(ROOT, "stacks", `Pulumi.${arg}.yaml`);
    if (!fs.existsSync(file)) {
        throw new Error(`no stack file for "${arg}": looked for ${path.relative(process.cwd(), file)} (stacks: ${listStacks().join(", ")})`);
    }
    const m = /^Pulumi\.(.+)\.ya?ml$/.exec(path.basename(file));
    return { stack: m ? m[1] : path.basename(file).replace(/\.ya?ml$/, ""), file };
}

function listStacks(): string[] {
    return fs.readdirSync(path.join(ROOT, "stacks")).map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1]).filter((s): s is string => !!s);
}

/** The project name from Pulumi.yaml: the namespace of config keys written without one. */
function projectName(): string {
    const doc = YAML.parse(fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8")) as { name?: string };
    return doc.name ?? "alicloud-kubeadm";
}

/**
 * The `config:` map of a stack file as the Pulumi CLI reads it: YAML merge keys (`<<`) applied, keys
 * without a namespace put in the project's, a syntax error reported with its line and column.
 */
export function readStackFile(file: string): { config: Record<string, unknown> } | { problem: string } {
    let doc: { config?: Record<string, unknown> } | null;
    try {
        doc = YAML.parse(fs.readFileSync(file, "utf8"), { merge: true });
    } catch (err) {
        if (err instanceof YAML.YAMLError) {
            const pos = err.linePos?.[0];
            const reason = err.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
            return { problem: `YAML syntax error${pos ? ` at line ${pos.line}, column ${pos.col}` : ""}: ${reason}` };
        }
        throw err;
    }
    const config: Record<string, unknown> = {};
    const project = projectName();
    for (const [key, value] of Object.entries(doc?.config ?? {})) {
        config[key.includes(":") ? key : `${project}:${key}`] = value;
    }
    return { config };
}

/** Problems carried by an error the program threw (InputPropertiesError, InputPropertyError or other). */
function problemsOf(err: unknown): string[] {
    const e = err as { errors?: Array<{ propertyPath: string; reason: string }>; propertyPath?: string; reason?: string; message?: string };
    if (Array.isArray(e?.errors)) {
        return e.errors.map((p) => `${p.propertyPath}: ${p.reason}`);
    }
    if (e?.propertyPath) {
        return [`${e.propertyPath}: ${e.reason}`];
    }
    return [`error: ${e?.message ?? String(err)}`];
}

/**
 * Synthesises one stack in this process. Config comes from the stack file only; the program is
 * re-evaluated on every call, so several stacks can be synthesised one after another.
 */
export async function synthesize(stackArg: string, outRoot = path.join(ROOT, "out")): Promise<SynthResult> {
    const { stack, file } = resolveStackFile(stackArg);
    const outDir = path.join(outRoot, stack);
    const read = readStackFile(file);
    if ("problem" in read) {
        return { stack, file, outDir, resources: [], problems: [read.problem] };
    }
    const recorder = installMocks({ stack, config: read.config });
    const failures: unknown[] = [];
    let outputs: Record<string, unknown> = {};
    const onRejection = (err: unknown) => failures.push(err);
    process.on("unhandledRejection", onRejection);
    // Pulumi captures a stack trace per resource (source positions); under ts-node every trace is
    // source-mapped, which was half of a large synth's time. Synth reports problems, not traces.
    const errorClass = Error as { prepareStackTrace?: unknown };
    const prepareStackTrace = errorClass.prepareStackTrace;
    errorClass.prepareStackTrace = undefined;
    try {
        const program = require.resolve(path.join(ROOT, "index.ts"));
        delete require.cache[program];
        let exported: Record<string, unknown>;
        try {
            exported = require(program);
        } catch (err) {
            return { stack, file, outDir, resources: recorder.resources, problems: problemsOf(err) };
        }
        outputs = await resolveOutputs(exported);
        await recorder.settle();
    } finally {
        process.off("unhandledRejection", onRejection);
        errorClass.prepareStackTrace = prepareStackTrace;
    }
    if (failures.length > 0) {
        return { stack, file, outDir, resources: recorder.resources, problems: failures.flatMap(problemsOf) };
    }
    writeOutputs(outDir, recorder.resources, outputs);
    return { stack, file, outDir, resources: recorder.resources, problems: [] };
}

/** The stack's exports as `pulumi stack output --json` shows them: secrets as "[secret]". */
async function resolveOutputs(exported: Record<string, unknown>): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(exported)) {
        if (pulumi.Output.isInstance(value)) {
            out[key] = (await pulumi.isSecret(value)) ? REDACTED : await valueOf(value);
        } else if (value !== undefined) {
            out[key] = value;
        }
    }
    return out;
}

function writeOutputs(outDir: string, resources: RecordedResource[], outputs: Record<string, unknown>): void {
    fs.rmSync(outDir, { recursive: true, force: true });
    for (const dir of ["userdata", "commands", "manifests"]) {
        fs.mkdirSync(path.join(outDir, dir), { recursive: true });
    }
    const rows = [...resources]
        .sort((a, b) => a.type.localeCompare(b.type) || a.name.localeCompare(b.name))
        .map(({ type, name, parent, inputs }) => ({ type, name, parent: parent ?? null, inputs }));
    fs.writeFileSync(path.join(outDir, "resources.json"), JSON.stringify(rows, null, 2) + "\n");
    // Example of `pulumi stack output --json` (ids are mock ids): `npm run doctor -- --outputs` reads this shape.
    fs.writeFileSync(path.join(outDir, "outputs.json"), JSON.stringify(outputs, null, 2) + "\n");

    // Userdata of instances and scaling configurations, with token / CA hash / certificate key lines redacted.
    for (const r of resources) {
        const script = r.rawInputs.userData;
        if (typeof script === "string" && script !== REDACTED) {
            fs.writeFileSync(path.join(outDir, "userdata", `${r.name}.sh`), redactUserdata(script));
        }
    }

    // Saved Cloud Assistant commands, decoded, secrets redacted like the userdata.
    for (const r of resources.filter((x) => x.type === "alicloud:ecs/command:Command")) {
        const content = r.rawInputs.commandContent;
        if (typeof content === "string") {
            fs.writeFileSync(path.join(outDir, "commands", `${String(r.rawInputs.name ?? r.name)}.sh`), redactUserdata(Buffer.from(content, "base64").toString("utf8")));
        }
    }

    // Kubernetes objects, one multi-document YAML per owning component, in apply order.
    for (const [file, yaml] of Object.entries(manifestFiles(resources.filter((r) => r.custom)))) {
        fs.writeFileSync(path.join(outDir, "manifests", file), yaml);
    }
}

/** Count of resources by type, for the summary table. */
export function countByType(resources: RecordedResource[]): Array<[string, number]> {
    const counts = new Map<string, number>();
    for (const r of resources) {
        counts.set(r.type, (counts.get(r.type) ?? 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => a[0].localeCompare(b[0]));
}

async function main(argv: string[]): Promise<number> {
    const args = argv.filter((a) => a !== "--");
    const outIdx = args.indexOf("--out");
    const outRoot = outIdx >= 0 ? path.resolve(args.splice(outIdx, 2)[1]) : undefined;
    if (args.length !== 1 || args[0] === "--help") {
        console.error(`usage: npm run synth -- <stack | path/to/Pulumi.<stack>.yaml> [--out <dir>]\nstacks: ${listStacks().join(", ")}`);
        return args[0] === "--help" ? 0 : 1;
    }
    let result: SynthResult;
    try {
        result = await synthesize(args[0], outRoot);
    } catch (err) {
        console.error((err as Error).message);
        return 1;
    }
    const relative = path.relative(process.cwd(), result.file);
    const shown = relative.startsWith("..") ? result.file : relative;
    if (result.problems.length > 0) {
        for (const p of result.problems) {
            console.error(`${shown}: ${p}`);
        }
        return 1;
    }
    const counts = countByType(result.resources);
    const width = Math.max(...counts.map(([t]) => t.length), 4);
    console.log(`${result.stack}: ${result.resources.length} resources → ${path.relative(process.cwd(), result.outDir)}/`);
    for (const [type, n] of counts) {
        console.log(`  ${type.padEnd(width)}  ${String(n).padStart(3)}`);
    }
    return 0;
}

if (require.main === module) {
    main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
        console.error(err);
        process.exit(1);
    });
}
