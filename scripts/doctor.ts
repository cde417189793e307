// doctor: tells an operator why a node did not join, did not leave, or did not scale.
// Usage: npm run doctor -- --stack <name> | --outputs <file> [--json] [--check ess,nodes,...]
// Exit: 0 no problem, 1 a problem, 2 could not look. Read-only. See --help and docs/troubleshooting.md.
import { spawnSync } from "child_process";
import * as fs from "fs";
import { CHECKS, exitCodeOf, renderJson, renderTable, runDoctor, useColour, CheckName, ClusterInfo, EXIT } from "../src/doctor";
import { parseClusterInfo } from "../src/doctor/clusterInfo";
import { credentialProblem, localCredentialSource, NO_CREDENTIALS_FIX, offlineChainEnv } from "../src/doctor/credentials";
import * as os from "os";
import { parseArgs as parseArgv } from "node:util";
import { wrapText } from "../src/doctor/report";
import { reportPacingTo } from "../src/cloud/pacer";

/** Parsed command line. */
export interface DoctorArgs { stack?: string; outputs?: string; json: boolean; help: boolean; checks?: CheckName[]; pollIntervalMs?: number }

/** The `--help` text: usage, every check with what it looks at, exit codes. */
export function helpText(): string {
    return [
        "Usage: npm run doctor -- (--stack <name> | --outputs <file>) [--json] [--check <name,...>]",
        "",
        "Looks at ESS, the Cluster Autoscaler, the Nodes, the VPC routes and the join material of a cluster",
        "and reports each finding as ok / warning / problem, with the evidence and the next step. Read-only:",
        "Describe/List OpenAPI calls and read-only commands over Cloud Assistant (kubectl get/logs on master 0,",
        "kubeadm token list, tail of bootstrap logs).",
        "",
        "Options:",
        "  --stack <name>      read the outputs with `pulumi stack output --json --stack <name>` (needs the Pulumi CLI)",
        "  --outputs <file>    read the outputs from a JSON file (`pulumi stack output --json > outputs.json`)",
        "  --json              print JSON for machines instead of the table",
        `  --check <names>     run only these checks (comma-separated: ${CHECKS.map((c) => c.name).join(", ")})`,
        "  --poll-interval-ms  first Cloud Assistant poll delay (default 1000)",
        "  --help              this text",
        "",
        "Checks:",
        ...CHECKS.flatMap((c) => wrapText(`${c.title}: ${c.looksAt}`, 86).map((l, i) => `  ${(i === 0 ? c.name : "").padEnd(11)} ${l}`)),
        "",
        "Credentials: the standard Alibaba Cloud chain (ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET, profiles), or on an ECS",
        "instance its RAM role named with ALIBABA_CLOUD_ECS_METADATA=<role>. Without any, doctor says so and exits 2",
        "before it looks (it never asks the metadata service unless a role is named).",
        "Exit codes: 0 no problem, 1 at least one problem, 2 could not look (outputs unreadable, no credentials,",
        "API or master 0 unreachable; the other checks still print).",
        "",
    ].join("\n");
}

/**
 * Parses argv (without node and the script) with node:util's parseArgs.
 * @throws Error naming the bad argument.
 */
export function parseArgs(argv: string[]): DoctorArgs {
    let values: { stack?: string; outputs?: string; json?: boolean; help?: boolean; check?: string; "poll-interval-ms"?: string };
    try {
        ({ values } = parseArgv({
            args: argv, allowPositionals: false, strict: true,
            options: {
                stack: { type: "string" }, outputs: { type: "string" }, json: { type: "boolean" }, help: { type: "boolean", short: "h" },
                check: { type: "string" }, "poll-interval-ms": { type: "string" },
            },
        }));
    } catch (e) {
        // node:util says e.g. "Unknown option '--x'" or "Option '--stack <value>' argument missing".
        throw new Error(`${(e as Error).message} (see --help)`);
    }
    const a: DoctorArgs = { json: values.json ?? false, help: values.help ?? false, stack: values.stack, outputs: values.outputs };
    for (const [name, value] of [["--stack", values.stack], ["--outputs", values.outputs], ["--check", values.check]] as const) {
        if (value !== undefined && (value === "" || value.startsWith("--"))) throw new Error(`${name} needs a value`);
    }
    const poll = values["poll-interval-ms"];
    if (poll !== undefined) {
        if (!/^[1-9][0-9]*$/.test(poll)) throw new Error(`--poll-interval-ms must be a whole number of milliseconds above 0, not "${poll}"`);
        a.pollIntervalMs = Number(poll);
    }
    if (values.check !== undefined) {
        const names = values.check.split(",").map((s) => s.trim()).filter(Boolean);
        const bad = names.filter((n) => !CHECKS.some((c) => c.name === n));
        if (bad.length) throw new Error(`unknown check(s) ${bad.join(", ")}; known: ${CHECKS.map((c) => c.name).join(", ")}`);
        a.checks = names as CheckName[];
    }
    if (!a.help && !a.stack === !a.outputs) throw new Error("give exactly one of --stack <name> or --outputs <file> (see --help)");
    return a;
}

/** Reads `clusterInfo` from a file or from the Pulumi CLI. */
export function readOutputs(a: DoctorArgs): ClusterInfo {
    if (a.outputs) {
        let text: string;
        try { text = fs.readFileSync(a.outputs, "utf8"); } catch (e) { throw new Error(`cannot read ${a.outputs}: ${(e as Error).message}`); }
        let json: unknown;
        try { json = JSON.parse(text); } catch (e) { throw new Error(`${a.outputs} is not JSON (${(e as Error).message}); write it with \`pulumi stack output --json > ${a.outputs}\``); }
        return parseClusterInfo(json);
    }
    const r = spawnSync("pulumi", ["stack", "output", "--json", "--stack", a.stack as string], { encoding: "utf8" });
    if (r.error && (r.error as NodeJS.ErrnoException).code === "ENOENT") {
        throw new Error(`the Pulumi CLI is not installed here: run \`pulumi stack output --json --stack ${a.stack} > outputs.json\` where it is, then \`npm run doctor -- --outputs outputs.json\``);
    }
    if (r.status !== 0) throw new Error(`\`pulumi stack output --json --stack ${a.stack}\` failed: ${(r.stderr || r.stdout || "").trim().split("\n").slice(-3).join(" ")}`);
    return parseClusterInfo(JSON.parse(r.stdout));
}

async function main(): Promise<number> {
    let args: DoctorArgs, info: ClusterInfo;
    try {
        args = parseArgs(process.argv.slice(2));
        if (args.help) { process.stdout.write(helpText()); return EXIT.ok; }
        info = readOutputs(args);
    } catch (e) {
        process.stderr.write(`doctor: ${(e as Error).message}\n`);
        return EXIT.couldNotLook;
    }
    if (!localCredentialSource(process.env, os.homedir())) {
        process.stderr.write(`doctor: no Alibaba Cloud credentials here, so nothing was looked at: ${NO_CREDENTIALS_FIX}.\n`);
        return EXIT.couldNotLook;
    }
    Object.assign(process.env, offlineChainEnv(process.env));
    const unusable = await credentialProblem();
    if (unusable) {
        process.stderr.write(`doctor: the Alibaba Cloud credentials here cannot be used (${unusable}), so nothing was looked at: ${NO_CREDENTIALS_FIX}.\n`);
        return EXIT.couldNotLook;
    }
    const tty = !!process.stderr.isTTY && !args.json;
    // Cloud calls that wait long for their turn (the account's API limits, src/cloud/pacer.ts) say so on stderr.
    reportPacingTo((m) => process.stderr.write(`… ${m}\n`));
    const findings = await runDoctor(info, { checks: args.checks, pollIntervalMs: args.pollIntervalMs, progress: tty ? (m) => process.stderr.write(`… ${m}\n`) : undefined });
    process.stdout.write(args.json ? renderJson(info.name, findings) : renderTable(info.name, findings, { colour: useColour(), width: process.stdout.columns ?? 110 }));
    return exitCodeOf(findings);
}

if (require.main === module) {
    main().then((code) => { process.exitCode = code; }, (e: unknown) => {
        process.stderr.write(`doctor: unexpected failure: ${e instanceof Error ? e.message : String(e)}\n`);
        process.exitCode = EXIT.couldNotLook;
    });
}
