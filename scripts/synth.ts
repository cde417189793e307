// Offline synth: runs the real stack program (index.ts) in-process under Pulumi mocks with one
// stack's config, and writes what `pulumi up` would create:
//   out/<stack>/resources.json   [{type, name, parent, inputs}], secrets redacted
//   out/<stack>/userdata/*.sh    rendered bootstrap scripts
//   out/<stack>/commands/*.sh    the saved Cloud Assistant commands (node operations, attach, control-plane join)
//   out/<stack>/manifests/*.yaml Kubernetes objects the stack applies
// and prints the resource counts, then an overview a person reads: masters, pools, existing nodes, the
// dynamic resources by role, the files written, which secrets exist (names only) and every warning.
// Usage: npm run synth -- <stack | path/to/Pulumi.<stack>.yaml> [--out <dir>]
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { manifestFiles } from "../src/components/kube";
import { redactUserdata } from "../src/shell/render";
import { validateClusterConfig, type ClusterConfig } from "../src/config";
import * as pulumi from "@pulumi/pulumi";
import { installMocks, REDACTED, valueOf, type RecordedResource } from "../testing/mockRuntime";

const ROOT = path.resolve(__dirname, "..");

export interface SynthResult {
    stack: string;
    file: string;
    outDir: string;
    resources: RecordedResource[];
    /** `<property.path>: <reason>` lines; non-empty means synth failed and nothing was written. */
    problems: string[];
    /** Every warning the program logged (config warnings and others), in order. */
    warnings: string[];
    /** Files written, relative to outDir (empty when synth failed). */
    files: string[];
    /** The stack outputs as written to outputs.json (secrets as "[secret]"). */
    outputs: Record<string, unknown>;
    /** The validated config, when it is valid. */
    config?: ClusterConfig;
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
/**
 * @param opts.runningVersion the version the cluster's API servers answer (ControlPlaneVersion's output under mocks), to
 *   see what a `pulumi up` renders while the control plane still runs it. Default: the configured version.
 */
export async function synthesize(stackArg: string, outRoot = path.join(ROOT, "out"), opts: { runningVersion?: string } = {}): Promise<SynthResult> {
    const { stack, file } = resolveStackFile(stackArg);
    const outDir = path.join(outRoot, stack);
    const read = readStackFile(file);
    const warnings: string[] = [];
    const base = { stack, file, outDir, warnings, files: [] as string[], outputs: {} as Record<string, unknown> };
    if ("problem" in read) {
        return { ...base, resources: [], problems: [read.problem] };
    }
    const recorder = installMocks({ stack, config: read.config, runningVersion: opts.runningVersion });
    const seen = watchValidation();
    const failures: unknown[] = [];
    let outputs: Record<string, unknown> = {};
    const onRejection = (err: unknown) => failures.push(err);
    process.on("unhandledRejection", onRejection);
    // Warnings are collected for the overview instead of printed as they come.
    const log = pulumi.log as { warn: typeof pulumi.log.warn };
    const warn = log.warn;
    log.warn = async (message: string) => { warnings.push(message); };
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
            return { ...base, resources: recorder.resources, problems: problemsOf(err) };
        }
        outputs = await resolveOutputs(exported);
        await recorder.settle();
    } finally {
        process.off("unhandledRejection", onRejection);
        errorClass.prepareStackTrace = prepareStackTrace;
        log.warn = warn;
        seen.stop();
    }
    if (failures.length > 0) {
        return { ...base, resources: recorder.resources, problems: failures.flatMap(problemsOf) };
    }
    const files = writeOutputs(outDir, recorder.resources, outputs);
    return { ...base, resources: recorder.resources, problems: [], files, outputs, config: seen.config };
}

/**
 * The config the program validated, for the overview: seen as the program's Cluster validates it (through the
 * config module's export), so that synth validates it once, as `pulumi up` does, and shows what was deployed.
 */
function watchValidation(): { readonly config: ClusterConfig | undefined; stop(): void } {
    const configModule = require("../src/config") as { validateClusterConfig: typeof validateClusterConfig };
    const validate = configModule.validateClusterConfig;
    let config: ClusterConfig | undefined;
    configModule.validateClusterConfig = (raw, region) => {
        const result = validate(raw, region);
        config ??= result.config;
        return result;
    };
    return { get config() { return config; }, stop: () => { configModule.validateClusterConfig = validate; } };
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

/** Writes the files; returns their paths relative to outDir, sorted. */
function writeOutputs(outDir: string, resources: RecordedResource[], outputs: Record<string, unknown>): string[] {
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

    // Kubernetes objects, one multi-document YAML per owning component, in apply order. A Secret's data is secret as
    // a whole: each of its keys is shown, its value redacted, so the manifest still applies.
    const shown = resources.filter((r) => r.custom).map((r) => {
        const raw = r.rawInputs as { stringData?: Record<string, unknown> };
        return r.type === "kubernetes:core/v1:Secret" && r.inputs.stringData === REDACTED && raw.stringData
            ? { ...r, inputs: { ...r.inputs, stringData: Object.fromEntries(Object.keys(raw.stringData).map((k) => [k, REDACTED])) } } : r;
    });
    for (const [file, yaml] of Object.entries(manifestFiles(shown))) {
        fs.writeFileSync(path.join(outDir, "manifests", file), yaml);
    }
    return ["resources.json", "outputs.json", ...["userdata", "commands", "manifests"].flatMap((d) => fs.readdirSync(path.join(outDir, d)).map((f) => `${d}/${f}`))].sort();
}

/** The dynamic resources' roles, by the names the components give them. */
const DYNAMIC_ROLES: Array<[RegExp, string]> = [
    [/-join-info$/, "JoinInfo: waits for kubeadm init on master 0, reads the CA pin and the admin kubeconfig"],
    [/-master-\d+-join$/, "ControlPlaneMember: joins a master with kubeadm join --control-plane, one at a time (etcd quorum checked, a backup taken first); a replaced master leaves etcd first"],
    [/-token$/, "BootstrapToken: a kubeadm bootstrap token (one per pool, one for the existing nodes)"],
    [/-capacity$/, "PoolCapacity: sets a pool's ESS capacity and waits for its Ready nodes; scale-in drains first"],
    [/-membership$/, "NodeMembership: joins an existing node and waits for Ready; removal drains and resets it"],
    [/-api-ready$/, "ApiServerReady: waits until the API server answers /readyz, before the add-ons"],
    [/-admission-tls$/, "AdmissionCertificate: the admission service's own key and certificate for the masters' addresses (nodes pin the key)"],
    [/-backup-key$/, "BackupKey: the X25519 key etcd backups are sealed to; its private half only in this stack's state (secret)"],
    [/-master-maintenance$/, "MasterMaintenance: installs the etcd backup and certificate renewal timers on every master"],
    [/-replacement-guard$/, "MasterReplacementGuard: at preview, refuses a change that would re-create more than one master at once"],
    [/-version$/, "ControlPlaneVersion: reads the version every API server and kubelet runs; at preview refuses a skip, a downgrade or an unhealthy cluster; moves the control plane to kubernetesVersion one master at a time"],
    [/-node-versions$/, "NodeVersions: moves the worker nodes in place to the version the control plane runs, in batches (drain, packages, kubelet, uncordon, gate)"],
];

/** The overview printed after the counts: what `pulumi up` would run, for a person to read. */
export function overview(result: SynthResult): string[] {
    const lines: string[] = [];
    const c = result.config;
    const list = (xs: readonly string[]) => (xs.length === 0 ? "none" : xs.join(", "));
    if (c) {
        lines.push(`cluster ${c.name} in ${c.region}, Kubernetes ${c.kubernetesVersion}, zones ${list(c.zones)}`);
        const cp = c.controlPlane;
        const endpoint = cp.publicEndpoint
            ? `public${c.network.apiAllowedCidrs.length ? `, port 6443 open to ${list(c.network.apiAllowedCidrs)}` : ""}`
            : "internal (reachable from inside the VPC)";
        lines.push(`masters: ${cp.count} × ${cp.instanceType}, ${cp.systemDisk.category} ${cp.systemDisk.size} GiB, API endpoint ${endpoint}${cp.count > 1 ? " behind an NLB" : ""}` +
            `${cp.deletionProtection ? ", deletion protection" : ""}`);
        lines.push(`pools:${c.nodePools.length === 0 ? " none" : ""}`);
        for (const p of c.nodePools) {
            const size = p.autoscale ? `autoscale ${p.autoscale.min}–${p.autoscale.max}` : `size ${p.size}`;
            const taints = p.taints.length ? `, taints ${p.taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(" ")}` : "";
            lines.push(`  ${p.name}: ${size}, ${list(p.instanceTypes)}, zones ${list(c.zones)}${taints}`);
        }
        lines.push(`existing nodes:${c.existingNodes.length === 0 ? " none" : ""}`);
        for (const n of c.existingNodes) {
            const how = n.mode === "auto" ? "auto: userdata + system disk replaced (wipes the disk)"
                : n.connection ? `manual over SSH to ${n.connection.user}@${n.connection.host}:${n.connection.port}` : "manual over Cloud Assistant (the saved attach command)";
            lines.push(`  ${n.instanceId}: ${how}`);
        }
    }
    const dynamic = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource");
    lines.push(`dynamic resources (they run at \`pulumi up\`; under synth they only register): ${dynamic.length}`);
    for (const [pattern, role] of DYNAMIC_ROLES) {
        const names = dynamic.filter((r) => pattern.test(r.name)).map((r) => r.name).sort();
        if (names.length > 0) lines.push(`  ${role}: ${names.join(", ")}`);
    }
    const other = dynamic.filter((r) => !DYNAMIC_ROLES.some(([p]) => p.test(r.name)));
    if (other.length > 0) lines.push(`  other: ${other.map((r) => r.name).join(", ")}`);
    const byDir = new Map<string, string[]>();
    for (const f of result.files) {
        const dir = f.includes("/") ? `${f.split("/")[0]}/` : "";
        byDir.set(dir, [...(byDir.get(dir) ?? []), f]);
    }
    lines.push(`files written to ${path.relative(process.cwd(), result.outDir) || "."}/: ${result.files.length}`);
    for (const [dir, files] of byDir) {
        lines.push(dir === "" ? `  ${files.join(", ")}` : `  ${dir} ${files.length}: ${files.map((f) => path.basename(f)).join(", ")}`);
    }
    const byName = [...result.resources].sort((a, b) => a.name.localeCompare(b.name));
    const secretInputs = byName.filter((r) => r.secretInputs.length > 0).map((r) => `${r.name} (${[...new Set(r.secretInputs)].sort().join(", ")})`);
    const secretOutputs = byName.filter((r) => r.secretOutputs.length > 0).map((r) => `${r.name} (${[...r.secretOutputs].sort().join(", ")})`);
    const stackSecrets = Object.entries(result.outputs).filter(([, v]) => v === REDACTED).map(([k]) => k);
    lines.push("secrets (names only; values never written):");
    lines.push(`  resource inputs: ${list(secretInputs)}`);
    lines.push(`  resource outputs: ${list(secretOutputs)}`);
    lines.push(`  stack outputs: ${list(stackSecrets)}`);
    lines.push(`warnings: ${result.warnings.length === 0 ? "none" : result.warnings.length}`);
    for (const w of result.warnings) {
        lines.push(`  ${w}`);
    }
    return lines;
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
        for (const w of result.warnings) {
            console.error(`warning: ${w}`);
        }
        return 1;
    }
    const counts = countByType(result.resources);
    const width = Math.max(...counts.map(([t]) => t.length), 4);
    console.log(`${result.stack}: ${result.resources.length} resources → ${path.relative(process.cwd(), result.outDir)}/`);
    for (const [type, n] of counts) {
        console.log(`  ${type.padEnd(width)}  ${String(n).padStart(3)}`);
    }
    console.log("");
    for (const line of overview(result)) {
        console.log(line);
    }
    return 0;
}

if (require.main === module) {
    main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
        console.error(err);
        process.exit(1);
    });
}
