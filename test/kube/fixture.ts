/**
 * Mocha fixture for the real-cluster tests: one control plane (test/kube/cluster.ts) for the whole file,
 * started in `before` and stopped in `after`. Without the binaries of `npm run kube:build` the file's
 * tests are skipped with one line saying so; under CI=true their absence fails the run instead.
 *
 *   const rc = useRealCluster({ nodeCidrMaskSize: 25 });
 *   it("...", async () => { await rc.c.kubectl(["get", "nodes"]); });
 */
import * as assert from "assert";
import * as fs from "fs";
import { binDir, Cluster, ClusterOptions, missingBinaries, startCluster } from "./cluster";

/**
 * Registers before/after hooks; read `.c` inside tests. `options` may be a function, called in `before` once
 * the binaries are known to be there (e.g. to derive the network from a synthesized stack). `alsoNeeds` names more
 * binaries the file needs that are missing (e.g. `() => previousKubernetes().missing`): skipped, or failed under CI,
 * like the fixture's own.
 */
export function useRealCluster(options: ClusterOptions | (() => ClusterOptions | Promise<ClusterOptions>) = {},
    alsoNeeds: () => string[] = () => []): { readonly c: Cluster } {
    const box: { c?: Cluster } = {};
    let started = Date.now();
    before(async function () {
        this.timeout(240_000);
        started = Date.now();
        const missing = [...missingBinaries(), ...alsoNeeds()];
        if (missing.length) {
            const msg = `real-cluster tests need ${missing.join(", ")} in ${binDir()}: run \`npm run kube:build\``;
            if (process.env.CI === "true") throw new Error(`CI=true: ${msg} (.ci/run builds them first)`);
            console.log(`    skipped: ${msg}`);
            this.skip();
        }
        box.c = await startCluster(typeof options === "function" ? await options() : options);
        console.log(`    cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s at ${box.c.server}` +
            `${box.c.netns ? " (own network namespace)" : ""}, run folder ${box.c.dir}`);
    });
    after(async function () {
        this.timeout(60_000);
        if (box.c) {
            await box.c.stop();
            if (process.env.KUBE_KEEP_RUN_DIR !== "1") assert.ok(!fs.existsSync(box.c.dir), "stop() removes the run folder");
            console.log(`    real-cluster tests took ${((Date.now() - started) / 1000).toFixed(1)} s in all`);
        }
    });
    return { get c(): Cluster { if (!box.c) throw new Error("real cluster not started"); return box.c; } };
}

/** An audit policy that logs evictions (Metadata) and Node writes (Request: the body shows a cordon). */
export const AUDIT_POLICY = [
    "apiVersion: audit.k8s.io/v1",
    "kind: Policy",
    "omitStages: [RequestReceived]",
    "rules:",
    "  - level: Metadata",
    "    resources: [{ group: \"\", resources: [\"pods/eviction\"] }]",
    "  - level: Request",
    "    verbs: [patch, update, delete]",
    "    resources: [{ group: \"\", resources: [\"nodes\"] }]",
    "  - level: None",
].join("\n") + "\n";

/** Cluster options that turn the apiserver's audit log on with {@link AUDIT_POLICY} (`logs/audit.log`). */
export const AUDITED: Pick<ClusterOptions, "files" | "apiserverArgs"> = {
    files: { "audit-policy.yaml": AUDIT_POLICY },
    apiserverArgs: { "audit-policy-file": "{dir}/audit-policy.yaml", "audit-log-path": "{dir}/logs/audit.log" },
};

/** One apiserver audit event (the fields the tests read). */
export interface AuditEvent {
    verb: string;
    user: { username: string };
    objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
    responseStatus?: { code?: number };
    requestObject?: unknown;
}

/** Every event of the audit log so far. */
export function auditEvents(c: Cluster): AuditEvent[] {
    const file = c.path("logs/audit.log");
    if (!fs.existsSync(file)) return [];
    return fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as AuditEvent);
}

function ipv4(ip: string): number {
    return ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
}

/** First address and size of an IPv4 CIDR. */
export function cidrRange(cidr: string): { start: number; size: number; bits: number } {
    const [a, b] = cidr.split("/");
    return { start: ipv4(a), size: 2 ** (32 - Number(b)), bits: Number(b) };
}

/** Whether `inner` (a.b.c.d/n) lies inside `outer` and starts on its own boundary. */
export function cidrWithin(inner: string, outer: string): boolean {
    const i = cidrRange(inner);
    const o = cidrRange(outer);
    return i.bits >= o.bits && i.start % i.size === 0 && i.start >= o.start && i.start + i.size <= o.start + o.size;
}

/** Whether two IPv4 CIDRs share an address. */
export function cidrsOverlap(a: string, b: string): boolean {
    const x = cidrRange(a);
    const y = cidrRange(b);
    return x.start < y.start + y.size && y.start < x.start + x.size;
}
