// restore: an etcd backup back onto the control plane (docs/disaster-recovery.md#lost-whole-control-plane).
// Usage: npm run restore -- (--stack <name> | --outputs <file>) [--snapshot <object key>] [--keys <file>] --dry-run
// The dry run lists the backups, downloads the chosen one (the newest by default), opens it with the backup key and
// reads what it holds, finds the master to restore onto and what a restore leaves stale, and prints the plan. It
// changes nothing. The restore itself is not automated yet: without --dry-run the command prints the plan and the
// runbook's steps, and exits 3. Exit codes: 0 plan printed, 1 the backup or key is not usable, 2 could not look.
import { spawnSync } from "child_process";
import * as fs from "fs";
import { parseClusterInfo } from "../src/doctor/clusterInfo";
import { planRestore, type RestorePlan } from "../src/recovery/restore";

export interface RestoreArgs { stack?: string; outputs?: string; snapshot?: string; keys?: string; dryRun: boolean; help: boolean }

export function helpText(): string {
    return [
        "Usage: npm run restore -- (--stack <name> | --outputs <file>) [--snapshot <object key>] [--keys <file>] --dry-run",
        "",
        "Plans the restore of a cluster's etcd from its backups (docs/disaster-recovery.md): lists the backups in the",
        "stack's bucket, downloads the chosen one, opens it with the backup key, reads its revision and key count, and",
        "says which master it goes onto and which Nodes and Leases will be stale. Changes nothing.",
        "",
        "  --stack <name>     read the outputs with `pulumi stack output --json --show-secrets --stack <name>`",
        "  --outputs <file>   read them from a file written that way (it holds the backup keys: keep it private)",
        "  --snapshot <key>   the object to restore (default: the newest under <cluster>/hourly/ and <cluster>/daily/)",
        "  --keys <file>      backup keys as JSON {keyId: private key PEM} (default: the stack output backupKeys)",
        "  --dry-run          plan only (the restore onto the master is not automated yet: see the runbook)",
        "",
        "Credentials for OSS: ALIBABA_CLOUD_ACCESS_KEY_ID, ALIBABA_CLOUD_ACCESS_KEY_SECRET (and ALIBABA_CLOUD_SECURITY_TOKEN).",
        "",
    ].join("\n");
}

export function parseArgs(argv: string[]): RestoreArgs {
    const a: RestoreArgs = { dryRun: false, help: false };
    for (let i = 0; i < argv.length; i++) {
        const v = () => { const x = argv[++i]; if (x === undefined || x.startsWith("--")) throw new Error(`${argv[i - 1]} needs a value`); return x; };
        switch (argv[i]) {
            case "--stack": a.stack = v(); break;
            case "--outputs": a.outputs = v(); break;
            case "--snapshot": a.snapshot = v(); break;
            case "--keys": a.keys = v(); break;
            case "--dry-run": a.dryRun = true; break;
            case "--help": case "-h": a.help = true; break;
            default: throw new Error(`unknown argument ${argv[i]} (see --help)`);
        }
    }
    if (!a.help && !a.stack === !a.outputs) throw new Error("give one of --stack <name> or --outputs <file>");
    return a;
}

/** The stack outputs the restore reads. */
export function readOutputs(a: RestoreArgs): Record<string, unknown> {
    if (a.outputs) return JSON.parse(fs.readFileSync(a.outputs, "utf8"));
    const r = spawnSync("pulumi", ["stack", "output", "--json", "--show-secrets", "--stack", a.stack as string], { encoding: "utf8" });
    if (r.error) throw new Error(`the Pulumi CLI is not installed here: write the outputs with \`pulumi stack output --json --show-secrets --stack ${a.stack} > outputs.json\` where it is, then use --outputs`);
    if (r.status !== 0) throw new Error(`\`pulumi stack output --json --show-secrets --stack ${a.stack}\` failed: ${(r.stderr || r.stdout || "").trim().split("\n").slice(-3).join(" ")}`);
    return JSON.parse(r.stdout);
}

/** Runs the command; returns the exit code. `endpoint`/`connectTo` let the tests point OSS at the emulator. */
export async function main(argv: string[], io: { out: (s: string) => void; env: NodeJS.ProcessEnv; ossEndpoint?: string; connectTo?: string } = { out: (s) => process.stdout.write(s), env: process.env }): Promise<number> {
    let a: RestoreArgs;
    try { a = parseArgs(argv); } catch (e) { io.out(`${(e as Error).message}\n`); return 2; }
    if (a.help) { io.out(helpText()); return 0; }
    let plan: RestorePlan;
    try {
        const outputs = readOutputs(a);
        const info = parseClusterInfo(outputs.clusterInfo);
        const bucket = outputs.backupBucket;
        if (typeof bucket !== "string" || !bucket) throw new Error("the stack has no backupBucket output: it was deployed before backups existed (run `pulumi up` with this version)");
        const keys = a.keys ? JSON.parse(fs.readFileSync(a.keys, "utf8")) : outputs.backupKeys;
        if (!keys || typeof keys !== "object") throw new Error("no backup keys: the stack output backupKeys (read with --show-secrets), or --keys <file>");
        const { ALIBABA_CLOUD_ACCESS_KEY_ID: id, ALIBABA_CLOUD_ACCESS_KEY_SECRET: secret, ALIBABA_CLOUD_SECURITY_TOKEN: token } = io.env;
        if (!id || !secret) throw new Error("no OSS credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET");
        plan = await planRestore({
            clusterName: info.name, region: info.region, masterInstanceIds: info.masterInstanceIds, keys: keys as Record<string, string>,
            bucket: { endpoint: io.ossEndpoint ?? `https://oss-${info.region}.aliyuncs.com`, region: info.region, bucket, connectTo: io.connectTo },
            credentials: { accessKeyId: id, accessKeySecret: secret, securityToken: token }, snapshot: a.snapshot,
        });
    } catch (e) {
        const msg = (e as Error).message;
        io.out(`restore: ${msg}\n`);
        return /does not open|not among the keys|not an alicloud-kubeadm backup|altered|is a backup of cluster|no backup/.test(msg) ? 1 : 2;
    }
    io.out(`restore plan${a.dryRun ? " (dry run: nothing changed)" : ""}:\n${plan.steps.map((s, i) => `  ${i + 1}. ${s}`).join("\n")}\n`);
    if (a.dryRun) return 0;
    io.out("the restore onto the master is not automated yet: follow docs/disaster-recovery.md#lost-whole-control-plane with this backup.\n");
    return 3;
}

if (require.main === module) {
    void main(process.argv.slice(2)).then((code) => process.exit(code));
}
