/**
 * kubectl on master 0, over Cloud Assistant: how every dynamic provider and `doctor` talk to the
 * Kubernetes API without a network path from the machine running Pulumi to the cluster. The admin
 * kubeconfig never leaves the master.
 */
import { runOnInstance } from "./cloudAssistant";
import { POOL_LABEL, providerIdOf } from "../rules";

export { POOL_LABEL, providerIdOf };

/** Where kubeadm leaves the admin kubeconfig on masters. */
export const ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf";

/** The master that runs kubectl. */
export interface MasterTarget {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** A master with /etc/kubernetes/admin.conf (master 0). */
    masterInstanceId: string;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
}

/** Quotes one word for a POSIX shell. */
export function shq(word: string): string {
    return /^[A-Za-z0-9_./:=@,+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The shell command line for `kubectl <args>` with the admin kubeconfig. */
export function kubectlCommand(args: string[]): string {
    return ["kubectl", `--kubeconfig=${ADMIN_KUBECONFIG}`, ...args].map(shq).join(" ");
}

/**
 * Runs `kubectl <args>` on the master and returns stdout.
 * @param opts.timeoutSeconds Cloud Assistant timeout. Default 120.
 * @param opts.sensitive the output may carry secrets: keep it out of errors. Default false.
 * @throws CommandError (non-zero exit: the last 2 KB of output are in the message unless sensitive)
 */
export async function kubectl(target: MasterTarget, args: string[], opts: { timeoutSeconds?: number; sensitive?: boolean; name?: string } = {}): Promise<string> {
    return runOnInstance({
        region: target.region,
        instanceId: target.masterInstanceId,
        script: kubectlCommand(args),
        name: opts.name ?? `alicloud-kubeadm-kubectl-${args[0] ?? ""}`,
        timeoutSeconds: opts.timeoutSeconds ?? 120,
        sensitiveOutput: opts.sensitive,
        pollIntervalMs: target.pollIntervalMs,
    });
}

/** What the providers need to know about a Node. */
export interface NodeInfo {
    name: string;
    /** `spec.providerID`, e.g. `cn-hangzhou.i-bp1…` ("" when unset). */
    providerId: string;
    /** Condition Ready == True. */
    ready: boolean;
    /** `spec.unschedulable` (cordoned). */
    unschedulable: boolean;
    podCidr: string;
    /** Value of the `alicloud-kubeadm/pool` label ("" for none). */
    pool: string;
    /** Node creation time (ISO 8601). */
    createdAt: string;
}


/**
 * One tab-separated line per node: Cloud Assistant keeps only 24 KB of output, and `-o json` is
 * ~5 KB per node, so the listing is compact and gzip+Base64 encoded (≈ 15 bytes per node).
 */
export const NODE_LINES_JSONPATH = "{range .items[*]}{.metadata.name}{\"\\t\"}{.spec.providerID}{\"\\t\"}" +
    "{.status.conditions[?(@.type==\"Ready\")].status}{\"\\t\"}{.spec.unschedulable}{\"\\t\"}{.spec.podCIDR}{\"\\t\"}" +
    `{.metadata.labels['${POOL_LABEL}']}{"\\t"}{.metadata.creationTimestamp}{"\\n"}{end}`;

/** Parses the lines printed with {@link NODE_LINES_JSONPATH}. */
export function parseNodeLines(text: string): NodeInfo[] {
    return text.split("\n").filter((l) => l.trim() !== "").map((line) => {
        const [name, providerId, ready, unschedulable, podCidr, pool, createdAt] = line.split("\t");
        return { name, providerId: providerId ?? "", ready: ready === "True", unschedulable: unschedulable === "true", podCidr: podCidr ?? "", pool: pool ?? "", createdAt: createdAt ?? "" };
    });
}

/** Every Node, optionally filtered by a label selector (e.g. `alicloud-kubeadm/pool=general`). */
export async function getNodes(target: MasterTarget, selector?: string): Promise<NodeInfo[]> {
    const args = ["get", "nodes", "-o", `jsonpath=${NODE_LINES_JSONPATH}`, ...(selector ? ["-l", selector] : [])];
    const script = `#!/bin/bash\nset -o pipefail\n${kubectlCommand(args)} | gzip -c | base64 -w0`;
    const out = await runOnInstance({
        region: target.region, instanceId: target.masterInstanceId, script, name: "alicloud-kubeadm-get-nodes",
        timeoutSeconds: 120, pollIntervalMs: target.pollIntervalMs,
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const zlib = require("zlib") as typeof import("zlib");
    return parseNodeLines(zlib.gunzipSync(Buffer.from(out.trim(), "base64")).toString("utf8"));
}
