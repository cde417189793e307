// restore: an etcd backup back onto the control plane (docs/disaster-recovery.md#lost-whole-control-plane).
// Usage: npm run restore -- (--stack <name> | --outputs <file>) [--from-stack <old> | --from-outputs <file> | --bucket <b>]
//        [--snapshot <object key>] [--keys <file>] [--dry-run] [--force] [--discard]
// With --from-stack (or --from-outputs, or --bucket) the backup is another stack's: a restore into a new stack
// (docs/disaster-recovery.md#restore-to-a-new-stack).
// Lists the backups, downloads the chosen one (the newest by default), opens it with the backup key, reads the master's
// restore state and prints exactly what it will do; without --dry-run it does it (src/recovery/restoreApply.ts), each
// step recorded on the master so that running it again continues. Exit codes: 0 done (or planned), 1 the backup or key is
// not usable, 2 could not look, 4 the restore was refused or a step failed (the message names the master, the step and
// the fix).
import { spawnSync } from "child_process";
import * as fs from "fs";
import { parseClusterInfo, REGION_ID } from "../src/doctor/clusterInfo";
import { isBackupKey, planRestore, type RestorePlan } from "../src/recovery/restore";
import { applyRestore, describeRestore, readMasterState, restoreRefusal, stackMachines, type ApplyRestoreInputs, type MasterRestoreState } from "../src/recovery/restoreApply";
import { SAVED_OPERATIONS, type NodeCommandIds } from "../src/rules";
import { OSS_BUCKET_NAME as BUCKET_NAME } from "../src/cloud/oss";

export interface RestoreArgs {
    stack?: string; outputs?: string; snapshot?: string; keys?: string; dryRun: boolean; force: boolean; help: boolean;
    /** Into a new stack: the cluster its master 0 runs (its own) may be discarded. Never a rollback of a running cluster (`force`). */
    discard: boolean;
    /** The stack whose backups are restored into this one (a new stack), or its outputs file, or its bucket alone. */
    fromStack?: string; fromOutputs?: string; bucket?: string; bucketRegion?: string;
}

export function helpText(): string {
    return [
        "Usage: npm run restore -- (--stack <name> | --outputs <file>) [--from-stack <old> | --from-outputs <file> | --bucket <b>]",
        "                          [--snapshot <object key>] [--keys <file>] [--dry-run] [--force] [--discard]",
        "",
        "Restores a cluster's etcd from its backups (docs/disaster-recovery.md): lists the backups in the stack's bucket,",
        "downloads the chosen one, opens it with the backup key, reads its revision and key count and the state of the",
        "master it goes onto, prints every step, then runs them over Cloud Assistant: the backup onto that master, the",
        "stale Leases, Nodes and routes cleaned, the other masters re-joined as fresh members. A step that stopped is",
        "continued by running the same command again.",
        "",
        "  --stack <name>     read the outputs with `pulumi stack output --json --show-secrets --stack <name>`",
        "  --outputs <file>   read them from a file written that way (it holds the backup keys: keep it private)",
        "  --snapshot <key>   the object to restore (default: the newest under <cluster>/hourly/ and <cluster>/daily/)",
        "  --keys <file>      backup keys as JSON {keyId: private key PEM} (default: the stack output backupKeys)",
        "  --dry-run          print the steps, change nothing (reads the master's restore state with one command)",
        "  --force            restore even though an API server answers, the master's or another master's",
        "                     (rolls a running cluster back, and resets the masters that run it)",
        "  --discard          into a new stack: discard the cluster its master 0 runs (its own, made by its first",
        "                     `pulumi up`); never rolls back a running cluster (that takes --force)",
        "",
        "Into a new stack (one master, the same cluster name; its own cluster, made by its first `pulumi up`, is discarded):",
        "  --from-stack <old>     the backups of stack <old>: its bucket and backup keys (pulumi stack output of <old>)",
        "  --from-outputs <file>  the same, from <old>'s outputs written to a file",
        "  --bucket <bucket>      the backups in this bucket (with --keys <file>; --bucket-region <r> if not this stack's region)",
        "",
        "Credentials for OSS: ALIBABA_CLOUD_ACCESS_KEY_ID, ALIBABA_CLOUD_ACCESS_KEY_SECRET (and ALIBABA_CLOUD_SECURITY_TOKEN).",
        "",
    ].join("\n");
}

export function parseArgs(argv: string[]): RestoreArgs {
    const a: RestoreArgs = { dryRun: false, force: false, discard: false, help: false };
    for (let i = 0; i < argv.length; i++) {
        const v = () => { const x = argv[++i]; if (x === undefined || x.startsWith("--")) throw new Error(`${argv[i - 1]} needs a value`); return x; };
        switch (argv[i]) {
            case "--stack": a.stack = v(); break;
            case "--outputs": a.outputs = v(); break;
            case "--snapshot": a.snapshot = v(); break;
            case "--keys": a.keys = v(); break;
            case "--from-stack": a.fromStack = v(); break;
            case "--from-outputs": a.fromOutputs = v(); break;
            case "--bucket": a.bucket = v(); break;
            case "--bucket-region": a.bucketRegion = v(); break;
            case "--dry-run": a.dryRun = true; break;
            case "--force": a.force = true; break;
            case "--discard": a.discard = true; break;
            case "--help": case "-h": a.help = true; break;
            default: throw new Error(`unknown argument ${argv[i]} (see --help)`);
        }
    }
    if (a.help) return a;
    if (!a.stack === !a.outputs) throw new Error("give one of --stack <name> or --outputs <file>");
    if ([a.fromStack, a.fromOutputs, a.bucket].filter((x) => x !== undefined).length > 1) throw new Error("give at most one of --from-stack, --from-outputs and --bucket");
    if (a.discard && a.fromStack === undefined && a.fromOutputs === undefined && a.bucket === undefined) {
        throw new Error("--discard goes with --from-stack, --from-outputs or --bucket (a restore into a new stack)");
    }
    if (a.bucketRegion !== undefined && a.bucket === undefined) throw new Error("--bucket-region goes with --bucket");
    if (a.bucket !== undefined && !BUCKET_NAME.test(a.bucket)) throw new Error("--bucket: an OSS bucket name (3-63 of a-z, 0-9 and -)");
    if (a.snapshot !== undefined && !isBackupKey(a.snapshot)) throw new Error("--snapshot: a key the backups are written under (letters, digits and . _ / - only; `--dry-run` names the newest)");
    if (a.bucketRegion !== undefined && !REGION_ID.test(a.bucketRegion)) throw new Error("--bucket-region: a region id such as cn-hangzhou");
    if (a.fromStack !== undefined && a.fromStack === a.stack) throw new Error("--from-stack names this stack: restore a stack's own backups without it");
    return a;
}

/** Whether the backups are another stack's: a restore into a new stack. */
export function intoNewStack(a: RestoreArgs): boolean {
    return a.fromStack !== undefined || a.fromOutputs !== undefined || a.bucket !== undefined;
}

/**
 * The JSON in `text` (from `what`). Node's own error quotes a fragment of the text, and outputs and keys files hold the
 * backup keys: this one names the file alone.
 */
function parseJson(text: string, what: string): Record<string, unknown> {
    try {
        return JSON.parse(text);
    } catch {
        throw new Error(`${what} is not JSON (not shown here: it may hold the backup keys)`);
    }
}

/** A stack's outputs, from `file` or, with the Pulumi CLI, from stack `stack`. */
export function readStackOutputs(stack: string | undefined, file: string | undefined, flag = "--outputs"): Record<string, unknown> {
    if (file) return parseJson(fs.readFileSync(file, "utf8"), file);
    const r = spawnSync("pulumi", ["stack", "output", "--json", "--show-secrets", "--stack", stack as string], { encoding: "utf8" });
    if (r.error) throw new Error(`the Pulumi CLI is not installed here: write the outputs with \`pulumi stack output --json --show-secrets --stack ${stack} > outputs.json\` where it is, then use ${flag}`);
    if (r.status !== 0) throw new Error(`\`pulumi stack output --json --show-secrets --stack ${stack}\` failed: ${(r.stderr || r.stdout || "").trim().split("\n").slice(-3).join(" ")}`);
    return parseJson(r.stdout, `the output of \`pulumi stack output --json --show-secrets --stack ${stack}\``);
}

/** The stack outputs the restore reads. */
export function readOutputs(a: RestoreArgs): Record<string, unknown> {
    return readStackOutputs(a.stack, a.outputs);
}

/** Where the backups are and what opens them: this stack's bucket and keys, or (into a new stack) the old stack's. */
export function backupSource(a: RestoreArgs, outputs: Record<string, unknown>, info: { name: string; region: string }):
    { bucket: string; region: string; keys: unknown } {
    const keysFile = () => (a.keys ? parseJson(fs.readFileSync(a.keys, "utf8"), a.keys) : undefined);
    if (a.bucket !== undefined) return { bucket: a.bucket, region: a.bucketRegion ?? info.region, keys: keysFile() ?? outputs.backupKeys };
    if (a.fromStack !== undefined || a.fromOutputs !== undefined) {
        const old = readStackOutputs(a.fromStack, a.fromOutputs, "--from-outputs");
        const oldInfo = parseClusterInfo(old.clusterInfo);
        if (oldInfo.name !== info.name) {
            throw new Error(`the old stack's cluster is named ${oldInfo.name}, this stack's ${info.name}: a restore keeps the cluster's name (its backups are under ` +
                `${oldInfo.name}/, its etcd holds it): create the new stack with name ${oldInfo.name}`);
        }
        if (typeof old.backupBucket !== "string" || !old.backupBucket) throw new Error("the old stack has no backupBucket output: give its bucket with --bucket <name> --keys <file>");
        // The bucket goes into the host name the signed requests (and the security token) are sent to: an OSS bucket name only.
        if (!BUCKET_NAME.test(old.backupBucket)) throw new Error(`the old stack's backupBucket output (${JSON.stringify(old.backupBucket.slice(0, 80))}) is not an OSS bucket name: give its bucket with --bucket <name> --keys <file>`);
        return { bucket: old.backupBucket, region: oldInfo.region, keys: keysFile() ?? old.backupKeys };
    }
    const bucket = outputs.backupBucket;
    if (typeof bucket !== "string" || !bucket) throw new Error("the stack has no backupBucket output: it was deployed before backups existed (run `pulumi up` with this version)");
    if (!BUCKET_NAME.test(bucket)) throw new Error(`the stack's backupBucket output (${JSON.stringify(bucket.slice(0, 80))}) is not an OSS bucket name: check the outputs file (written by pulumi stack output --json --show-secrets)`);
    return { bucket, region: info.region, keys: keysFile() ?? outputs.backupKeys };
}

/**
 * Where the backup is downloaded from: here, the bucket region's public endpoint; on the master, inside the VPC
 * (undefined: the internal endpoint of the stack's region, src/recovery/restoreApply.ts signedDownload) when the bucket is
 * in the stack's region, else over the Internet from the bucket region's public endpoint (through the stack's NAT).
 */
export function downloadEndpoints(bucketRegion: string, stackRegion: string): { endpoint: string; masterEndpoint?: string } {
    const endpoint = `https://oss-${bucketRegion}.aliyuncs.com`;
    return { endpoint, masterEndpoint: bucketRegion === stackRegion ? undefined : endpoint };
}

/**
 * What follows a restore into a new stack: its JoinInfo still holds the discarded cluster's CA pin and credential, so it is
 * made again from the restored cluster, and the stack's `pulumi up` then updates every join script and its outputs.
 */
export function newStackNext(cluster: string): string {
    return `\`pulumi up --replace '<URN of ${cluster}-join-info>'\` (\`pulumi stack --show-urns | grep ${cluster}-join-info\`): the stack's CA pin and ` +
        "its credential made again from the restored cluster (the ones it holds are the discarded cluster's), and the join scripts updated; " +
        "then the old stack's credential revoked (of the two Secrets kube-system/alicloud-kubeadm-stack-*, the older: " +
        "`kubectl -n kube-system get secrets --sort-by=.metadata.creationTimestamp`), then raise controlPlane.count and the pools, and `npm run doctor`.";
}

/** Runs the command; returns the exit code. `ossEndpoint`/`connectTo`/`masterOssEndpoint` let the tests point OSS at the emulator. */
export async function main(argv: string[], io: { out: (s: string) => void; env: NodeJS.ProcessEnv; ossEndpoint?: string; connectTo?: string; masterOssEndpoint?: string; pollIntervalMs?: number } = { out: (s) => process.stdout.write(s), env: process.env }): Promise<number> {
    let a: RestoreArgs;
    try { a = parseArgs(argv); } catch (e) { io.out(`${(e as Error).message}\n`); return 2; }
    if (a.help) { io.out(helpText()); return 0; }
    let plan: RestorePlan;
    let inputs: ApplyRestoreInputs;
    const newStack = intoNewStack(a);
    let clusterName = "";
    let from = "";
    try {
        const outputs = readOutputs(a);
        const info = parseClusterInfo(outputs.clusterInfo);
        if (newStack && info.masterInstanceIds.length > 1) {
            throw new Error(`this stack has ${info.masterInstanceIds.length} masters: a restore into a new stack goes onto a stack of one master (controlPlane.count 1; ` +
                "the others would keep running the cluster the restore discards). Create it with one, restore, then raise the count");
        }
        const { bucket, region: bucketRegion, keys } = backupSource(a, outputs, info);
        clusterName = info.name;
        from = newStack ? `  into a new stack: the backups of bucket ${bucket} (${bucketRegion}); this stack's own cluster on master 0 is discarded\n` : "";
        if (!keys || typeof keys !== "object") throw new Error(`no backup keys: ${newStack ? "the old stack's output backupKeys" : "the stack output backupKeys"} (read with --show-secrets), or --keys <file>`);
        const { ALIBABA_CLOUD_ACCESS_KEY_ID: id, ALIBABA_CLOUD_ACCESS_KEY_SECRET: secret, ALIBABA_CLOUD_SECURITY_TOKEN: token } = io.env;
        if (!id || !secret) throw new Error("no OSS credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET");
        const endpoints = downloadEndpoints(bucketRegion, info.region);
        const target = { endpoint: io.ossEndpoint ?? endpoints.endpoint, region: bucketRegion, bucket, connectTo: io.connectTo };
        const masterOssEndpoint = io.masterOssEndpoint ?? endpoints.masterEndpoint;
        const credentials = { accessKeyId: id, accessKeySecret: secret, securityToken: token };
        plan = await planRestore({
            clusterName: info.name, region: info.region, masterInstanceIds: info.masterInstanceIds, keys: keys as Record<string, string>,
            bucket: target, credentials, snapshot: a.snapshot,
        });
        const missing = SAVED_OPERATIONS.filter((op) => !info.commands?.[op]);
        if (missing.length > 0) throw new Error(`the stack's clusterInfo lacks the saved commands ${missing.join(", ")}: run \`pulumi up\` with this version first`);
        inputs = {
            region: info.region, masterInstanceIds: info.masterInstanceIds, commands: info.commands as NodeCommandIds, bucket: target, credentials,
            routeTableId: info.routeTableId, podCidr: info.podCidr, controlPlaneJoinCommandId: info.controlPlaneJoinCommandId, force: a.force, discard: a.discard, newStack,
            stackMachines: newStack ? stackMachines(info) : [], masterOssEndpoint, pollIntervalMs: io.pollIntervalMs, log: (m) => io.out(`  ${m}\n`),
        };
    } catch (e) {
        const msg = (e as Error).message;
        io.out(`restore: ${msg}\n`);
        return /does not open|not among the keys|not an alicloud-kubeadm backup|altered|is a backup of cluster|no backup/.test(msg) ? 1 : 2;
    }
    io.out(`restore ${a.dryRun ? "plan (dry run: nothing changed)" : "plan"}:\n${from}  ${plan.summary}\n`);
    let state: MasterRestoreState;
    try {
        state = await readMasterState(inputs, plan);
    } catch (e) {
        io.out(`restore: could not read the restore state of master ${plan.target}: ${(e as Error).message}\n`);
        return 4;
    }
    io.out(`master ${plan.target}: ${state.mode === "fresh" ? "master 0 that refused kubeadm init" : state.mode === "existing" ? "a control plane (static pods)" : "no control plane"}` +
        `${state.done.length ? `; done already: ${state.done.join(", ")}` : ""}; its API server ${state.apiReady ? "answers" : "does not answer"}\n`);
    io.out(`${describeRestore(plan, state, inputs).map((s, k) => `  ${k + 1}. ${s}`).join("\n")}\n`);
    const refusal = restoreRefusal(plan, state, a.force, newStack, a.discard, inputs.stackMachines);
    if (refusal) {
        io.out(`restore: refused: ${refusal}\n`);
        return 4;
    }
    if (a.dryRun) {
        if (newStack) io.out(`then: ${newStackNext(clusterName)}\n`);
        return 0;
    }
    try {
        const outcome = await applyRestore(inputs, plan, state);
        io.out(`restored ${plan.object.key} onto ${plan.target} (steps run now: ${outcome.ran.join(", ") || "none, all done before"}; ` +
            `stale Nodes deleted: ${outcome.staleNodes.join(", ") || "none"}; masters re-joined: ${outcome.rejoined.join(", ") || "none"}).\n` +
            // The JoinInfo is made again once, after the run that started the restored cluster (a re-run would rotate it again).
            (outcome.discarded && outcome.ran.includes("start") ? `next: ${newStackNext(clusterName)}\n`
                : `next: \`pulumi up${outcome.missingMasters.length ? " --refresh" : ""}\` (the backup and renewal timers on a new master 0` +
                    `${outcome.missingMasters.length ? `; re-creates ${outcome.missingMasters.join(", ")}` : ""}), then \`npm run doctor\`.\n`));
        return 0;
    } catch (e) {
        io.out(`restore: ${(e as Error).message}\n`);
        return 4;
    }
}

if (require.main === module) {
    void main(process.argv.slice(2)).then((code) => process.exit(code));
}
