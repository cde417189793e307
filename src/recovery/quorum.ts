/**
 * etcd quorum checks before each step of a control-plane member change (docs/disaster-recovery.md#lost-member): observe
 * the members and their health through a healthy master (the etcd-health operation), then decide. A removal must leave a
 * quorum of healthy members; a join must start from every member healthy, no learner pending, and fewer members than
 * masters (3 stays 3: never a fourth member while a third is replaced). Pure decisions over what was read, and the read.
 */
import { invokeOnMaster, type ClusterAccess } from "../cloud/operations";

/** One etcd member as etcd reports it, with its health. */
export interface EtcdMember {
    /** Member id, hex. */
    id: string;
    /** Its name: kubeadm names members after the master's Node. */
    name: string;
    peerUrls: string[];
    clientUrls: string[];
    isLearner: boolean;
    /** Whether its client URL answered `endpoint health`. */
    healthy: boolean;
}

/** The quorum of `n` voting members. */
export const quorumOf = (n: number): number => Math.floor(n / 2) + 1;

/** Parses the etcd-health operation's output (src/shell/ops/etcd-health.sh). */
export function parseEtcdHealth(output: string): EtcdMember[] {
    const section = (name: string) => new RegExp(`@@${name}\\n([\\s\\S]*?)(?=\\n@@|\\s*$)`).exec(output)?.[1] ?? "";
    // Member ids are uint64: read them as strings, not as JSON numbers (which would round them).
    const exact = (text: string) => text.replace(/"(ID|member_id|cluster_id|leader)":\s*(\d+)/g, '"$1":"$2"');
    const list = JSON.parse(exact(section("members") || "{}")) as { members?: Array<{ ID: number | string; name?: string; peerURLs?: string[]; clientURLs?: string[]; isLearner?: boolean }> };
    const health = JSON.parse(exact(section("health") || "[]")) as Array<{ endpoint: string; health: boolean }>;
    const healthy = new Set(health.filter((h) => h.health).map((h) => h.endpoint));
    return (list.members ?? []).map((m) => ({
        id: BigInt(m.ID).toString(16),
        name: m.name ?? "",
        peerUrls: m.peerURLs ?? [],
        clientUrls: m.clientURLs ?? [],
        isLearner: !!m.isLearner,
        healthy: (m.clientURLs ?? []).some((u) => healthy.has(u)),
    }));
}

/** The members and their health, read through the etcd of master Node `etcdNode`. */
export async function readEtcdMembers(access: ClusterAccess, etcdNode: string): Promise<EtcdMember[]> {
    return parseEtcdHealth(await invokeOnMaster(access, "etcd-health", { etcdNode }));
}

const describe = (members: readonly EtcdMember[]) =>
    members.map((m) => `${m.name || "(unstarted)"} ${m.healthy ? "healthy" : "unhealthy"}${m.isLearner ? " learner" : ""}`).join(", ");

/**
 * Why removing the member matched by `which` (its name, or a peer URL holding `peerIp`) would lose quorum, or undefined
 * when it keeps a healthy quorum. A member that is not there is no problem (the removal finds it absent).
 */
export function removalProblem(members: readonly EtcdMember[], which: { name?: string; peerIp?: string }): string | undefined {
    const target = members.find((m) => (which.name && m.name === which.name) || (which.peerIp && m.peerUrls.some((u) => u.includes(`//${which.peerIp}:`))));
    if (!target) return undefined;
    const voters = members.filter((m) => !m.isLearner);
    const remaining = voters.filter((m) => m !== target);
    const healthyRemaining = remaining.filter((m) => m.healthy).length;
    const healthyNow = voters.filter((m) => m.healthy).length;
    if (healthyNow < quorumOf(voters.length)) {
        return `etcd has lost quorum (${healthyNow} of ${voters.length} members healthy: ${describe(members)}): no member can be removed. ` +
            "Bring the unhealthy masters back, or restore the control plane from a backup (docs/disaster-recovery.md#lost-whole-control-plane)";
    }
    if (healthyRemaining < quorumOf(remaining.length)) {
        return `removing ${target.name || target.id} would leave ${healthyRemaining} healthy of ${remaining.length} members, under quorum (${describe(members)}). ` +
            "Replace the unhealthy members first, one at a time";
    }
    return undefined;
}

/**
 * The members whose master vanished (released outside Pulumi, no refresh since): named after an instance
 * (`<region>.<instanceId>`, as kubeadm names a member after the master's Node) that `exists` does not hold, and not
 * healthy. A healthy member is never one, whatever its name; nor is an unstarted one (no name yet: a join under way).
 */
export function staleMembers(members: readonly EtcdMember[], region: string, exists: (instanceId: string) => boolean): EtcdMember[] {
    return members.filter((m) => !m.healthy && m.name.startsWith(`${region}.`) && !exists(m.name.slice(region.length + 1)));
}

/**
 * Why a new member must not join now, or undefined: every member healthy, no learner still catching up, and fewer members
 * than `masters` (a join never makes more members than masters).
 */
export function joinProblem(members: readonly EtcdMember[], masters: number, joining: { name?: string; peerIp?: string } = {}): string | undefined {
    const already = members.find((m) => (joining.name && m.name === joining.name) || (joining.peerIp && m.peerUrls.some((u) => u.includes(`//${joining.peerIp}:`))));
    if (already) return undefined; // a re-run after the member was added: the join resumes
    if (members.length >= masters) {
        return `etcd has ${members.length} members for ${masters} masters (${describe(members)}): a join would make ${members.length + 1}. ` +
            "Remove the stale member first (`pulumi up --replace` of its master removes it)";
    }
    const unhealthy = members.filter((m) => !m.healthy || m.isLearner);
    if (unhealthy.length > 0) {
        return `not every etcd member is healthy and voting (${describe(members)}): a new member would join a cluster that could lose quorum while it catches up. ` +
            "Fix or replace those members first";
    }
    return undefined;
}
