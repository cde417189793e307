/**
 * The health gate between two masters (and after each batch of nodes): every API server's own /readyz, every etcd
 * member healthy, and the instance's Node Ready with the kubelet of the target version and schedulable. Observed until
 * it holds or the time is up; the failure names what did not hold.
 */
import type { ClusterAccess } from "../cloud/operations";
import { waitFor, type Clock } from "../cloud/wait";
import { compareVersions } from "../rules";
import { nodeOfInstance, readClusterStatus, readEtcd, readStaticPods, staticPodFindings, type ClusterStatus } from "./status";

/** How long a gate waits, and how often it looks. */
export interface GateOptions {
    /** Default 600 000 (10 minutes: a kubelet restart, static pods coming back). */
    timeoutMs?: number;
    /** Default 10 000. */
    intervalMs?: number;
    /** The clock the gate's time is read from and its pauses slept on (tests). Default the real one. */
    clock?: Clock;
    /** What the gate waits for, while it waits (the Pulumi log): each new state, and the same one again every 30 s. */
    log?: (message: string) => void;
}

/** What does not hold for `instanceId` at `target` in `s` (and the etcd members when `etcd` is given); empty when all holds. */
export function gateFindings(s: ClusterStatus, region: string, instanceId: string, target: string, masters: number,
    etcd?: ReadonlyArray<{ name: string; healthy: boolean }>): string[] {
    const out: string[] = [];
    if (s.apiServers.length < masters) out.push(`${s.apiServers.length} of ${masters} API servers found`);
    const notReady = s.apiServers.filter((a) => !a.ready).map((a) => a.node);
    if (notReady.length > 0) out.push(`/readyz failing on ${notReady.join(", ")}`);
    if (etcd !== undefined) {
        if (etcd.length === 0) out.push("no etcd member answered");
        const sick = etcd.filter((m) => !m.healthy).map((m) => m.name);
        if (sick.length > 0) out.push(`etcd members not healthy: ${sick.join(", ")}`);
    }
    const node = nodeOfInstance(s, region, instanceId);
    if (!node) out.push(`no Node for ${instanceId}`);
    else {
        if (!node.ready) out.push(`Node ${node.name} is not Ready`);
        if (compareVersions(node.kubelet, target) !== 0) out.push(`Node ${node.name} reports kubelet ${node.kubelet || "(none)"}, not ${target}`);
        if (node.unschedulable) out.push(`Node ${node.name} is still cordoned`);
    }
    return out;
}

/**
 * Waits until the gate holds for `instanceId`; `withEtcd` adds the etcd members (masters).
 * @returns the status that passed
 * @throws Error listing what did not hold at the last look
 */
export async function waitForGate(access: ClusterAccess, instanceId: string, target: string, withEtcd: boolean, opts: GateOptions = {}): Promise<ClusterStatus> {
    return gateWait(opts, async () => {
        let s: ClusterStatus;
        try {
            s = await readClusterStatus(access);
            const findings = gateFindings(s, access.region, instanceId, target, access.masterInstanceIds.length, withEtcd ? await readEtcd(access, s) : undefined);
            if (findings.length > 0) return { done: false, state: findings.join("; ") };
        } catch (err) {
            return { done: false, state: `the cluster could not be read: ${(err as Error).message.split("\n")[0]}` };
        }
        return { done: true, value: s };
    }, (state, seconds) => `not healthy after ${seconds} s: ${state}`);
}

/**
 * Waits until the master whose Node is `node` runs the control-plane static pods its running kubelet runs, Ready
 * ({@link staticPodFindings}): after a master's kubelet step the new kubelet may restart them a while later (a kubelet of
 * another minor hashes the manifests differently), and `kubeadm upgrade apply/node` waits for a rewritten pod to run, not
 * to be Ready. Until then that master's etcd and API server may go down again under the gate that just passed; so the
 * gate waits for this first. Hashes, not times: no clock of this machine is compared with the master's, and a kubelet
 * that keeps the pods (a patch release) is not waited for.
 * @throws Error listing what did not hold at the last look; at once when the saved command static-pods is missing
 */
export async function waitForStaticPods(access: ClusterAccess, node: string, opts: GateOptions = {}): Promise<void> {
    // Missing, every look would fail alike: say so at once, not after the gate's time.
    if (!access.commands["static-pods"]) {
        throw new Error("the saved command static-pods is missing from this resource's commands (commands[\"static-pods\"]): they are an earlier " +
            "alicloud-kubeadm's. Pass the commands of this version's NodeCommands (the Cluster component does) and run `pulumi up` again; nothing was changed by this step");
    }
    return gateWait({ ...opts, log: opts.log && ((state) => opts.log!(`${node}: waiting for its static pods: ${state}`)) }, async () => {
        try {
            const findings = staticPodFindings(await readStaticPods(access, node), node);
            return findings.length === 0 ? { done: true, value: undefined } : { done: false, state: findings.join("; ") };
        } catch (err) {
            return { done: false, state: `its static pods could not be read: ${(err as Error).message.split("\n")[0]}` };
        }
    }, (state, seconds) => `the static pods of ${node} not restarted and Ready after ${seconds} s: ${state}`);
}

/**
 * Looks at the gate's pace until `look` is done or the gate's time is up.
 * @param timedOut the error's message from the last look's state and the gate's time in seconds
 */
export function gateWait<T>(opts: GateOptions, look: () => Promise<{ done: true; value: T } | { done: false; state: string }>, timedOut: (state: string, seconds: number) => string): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? 600_000;
    const intervalMs = opts.intervalMs ?? 10_000;
    return waitFor(look, { timeoutMs, firstDelayMs: intervalMs, maxDelayMs: intervalMs, factor: 1, clock: opts.clock, log: opts.log },
        (state) => new Error(timedOut(state, Math.round(timeoutMs / 1000))));
}
