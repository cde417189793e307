/**
 * The node operations answered by a real cluster: emulator Cloud Assistant handlers that run the saved
 * operation script they receive (the final script, after Cloud Assistant's `{{name}}` substitution) the way
 * a master runs it — in the test sandbox (testing/sandbox: `AK_ROOT`, a PATH of stubs and a few real tools),
 * with the real `kubectl` and `kubeadm` of the harness (test/kube/cluster.ts `c.bin`) on PATH and
 * `${AK_ROOT}/etc/kubernetes/admin.conf` a copy of the fixture's admin kubeconfig, inside the fixture's
 * network namespace (through `c.run`), so the script's kubectl reaches the API server and nothing else.
 *
 * Operations that run on a node (`reset`) are answered by a sandbox of that node with the stub `kubeadm`
 * (there is no kubelet to reset): one sandbox per instance, made on first use — or, for an instance that is a real
 * node (test/kube/nodes.ts, option `realNodes`), by that node itself: the script runs there as root.
 *
 * Usage:
 *   const ops = answerWithRealCluster(emu, c, { master: masterInstanceId });
 *   await removeNode(...);              // the removal core invokes drain, delete-node, ... on the master
 *   ops.log;                            // ["<instance>: drain", ...]
 *   ops.node(instanceId).allCalls();    // what the node's reset ran
 *   ops.cleanup();
 */
import * as fs from "fs";
import * as path from "path";
import type { Emulator } from "../../testing/emulator";
import { makeSandbox, type Sandbox } from "../../testing/sandbox";
import { operation } from "../../testing/savedCommands";
import type { Cluster } from "./cluster";
import type { RealNodes } from "./nodes";

/** Operations a master runs (src/rules/operations.ts `on: "master"`) that the real cluster can answer (init-status
 *  reads files: put `etc/kubernetes/pki/ca.crt` and the init marker into {@link RealOperations.master}). */
export const MASTER_OPERATIONS = ["list-nodes", "pod-owners", "drain", "delete-node", "token-create", "token-delete", "doctor-nodes", "init-status", "stack-credential", "stack-credential-revoke",
    "etcd-member-remove", "etcd-health", "outdated-taint", "cluster-validate", "upgrade-status"] as const;
/** Operations a node runs on itself. */
export const NODE_OPERATIONS = ["reset"] as const;

export interface RealOperations {
    /** The master's sandbox (its filesystem holds etc/kubernetes/admin.conf). */
    master: Sandbox;
    /** The sandbox of a node instance (made on first use; `reset` runs there). */
    node(instanceId: string): Sandbox;
    /** `<instance id>: <operation>` per invocation answered, in order. */
    log: string[];
    /** Runs a saved operation's final script on the master, as the handler does (for tests that call it directly). */
    runOnMaster(script: string, timeoutMs?: number): Promise<{ exitCode: number; output: string }>;
    /** Removes every sandbox. */
    cleanup(): void;
}

/** The first comment line of a rendered operation names it (src/shell/render.ts renderOperation). */
function operationOf(script: string): string {
    return /^# alicloud-kubeadm operation: (\S+) /m.exec(script)?.[1] ?? "unknown";
}

/**
 * Registers the handlers on `emu`: master operations run against `c` when invoked on instance `master`;
 * on any other instance they fail as they would on a machine without an admin kubeconfig. Node operations
 * run in the instance's own sandbox.
 */
export function answerWithRealCluster(emu: Emulator, c: Cluster, opts: { master: string; stubs?: Record<string, string>; realNodes?: RealNodes }): RealOperations {
    const real = (name: string) => `exec ${JSON.stringify(path.join(c.bin, name))} "$@"`;
    const host = (name: string) => `exec ${JSON.stringify(hostTool(name))} "$@"`;
    // gzip and base64 (ak_compact) are the machine's own, like the coreutils the sandbox links.
    // opts.stubs: e.g. a kubectl whose `exec etcd-<node> -- etcdctl` runs the real etcdctl against a test's etcd members
    const master = makeSandbox({ os: "ubuntu", stubs: { kubectl: real("kubectl"), kubeadm: real("kubeadm"), gzip: host("gzip"), base64: host("base64"), ...opts.stubs } });
    master.write("/etc/kubernetes/admin.conf", fs.readFileSync(c.kubeconfig, "utf8"));
    const nodes = new Map<string, Sandbox>();
    const log: string[] = [];
    const node = (id: string): Sandbox => {
        let sb = nodes.get(id);
        if (!sb) {
            sb = makeSandbox({ os: "ubuntu", prebaked: true, instanceId: id });
            nodes.set(id, sb);
        }
        return sb;
    };
    let seq = 0;
    const runOnMaster = async (script: string, timeoutMs = 180_000): Promise<{ exitCode: number; output: string }> => {
        const file = master.at(`/tmp/operation-${++seq}.sh`);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, script, { mode: 0o700 });
        // Only the sandbox's environment (no KUBECONFIG of this process), stdout and stderr in one stream as
        // Cloud Assistant keeps them; `c.run` puts the whole thing in the cluster's network namespace.
        const env = Object.entries(master.env).map(([k, v]) => `${k}=${v}`);
        const r = await c.run("/usr/bin/env", ["-i", ...env, "/bin/bash", "-c", 'exec /bin/bash "$0" 2>&1', file], { allowFail: true, timeoutMs });
        return { exitCode: r.code, output: r.stdout + r.stderr };
    };
    for (const op of MASTER_OPERATIONS) {
        emu.onCommand(operation(op), async (ctx) => {
            log.push(`${ctx.instanceId}: ${operationOf(ctx.script)}`);
            if (ctx.instanceId !== opts.master) {
                return { exitCode: 1, output: "error: /etc/kubernetes/admin.conf: no such file (not a master)\n" };
            }
            return runOnMaster(ctx.script);
        });
    }
    for (const op of NODE_OPERATIONS) {
        emu.onCommand(operation(op), async (ctx) => {
            log.push(`${ctx.instanceId}: ${operationOf(ctx.script)}`);
            const real = opts.realNodes?.get(ctx.instanceId);
            if (real && !real.stopped) {
                // Cloud Assistant runs the script as root on the instance, stdout and stderr in one stream
                const r = await real.run("/bin/bash", ["-c", 'exec /bin/bash -c "$0" 2>&1', ctx.script], { allowFail: true, timeoutMs: 180_000 });
                return { exitCode: r.code, output: r.stdout + r.stderr };
            }
            const r = await node(ctx.instanceId).run(ctx.script);
            return { exitCode: r.code, output: r.stdout + r.stderr };
        });
    }
    return {
        master, node, log, runOnMaster,
        cleanup: () => {
            master.cleanup();
            for (const sb of nodes.values()) sb.cleanup();
        },
    };
}

function hostTool(name: string): string {
    for (const dir of ["/usr/bin", "/bin", "/usr/local/bin"]) {
        const p = path.join(dir, name);
        if (fs.existsSync(p)) return p;
    }
    throw new Error(`${name} not found on this machine`);
}
