import type { NodeCommandIds } from "../rules";

/**
 * Shared types of `doctor`: the stack output it reads ({@link ClusterInfo}) and what every check
 * returns ({@link Finding}).
 */

/** One node pool as exported in `clusterInfo.pools`. */
export interface PoolInfo {
    /** Pool name; its nodes carry the pool label (`node-restriction.kubernetes.io/alicloud-kubeadm-pool=<name>`, or on older nodes `alicloud-kubeadm/pool=<name>`). */
    name: string;
    /** `fixed` (ESS group held at `size`) or `autoscale` (the Cluster Autoscaler moves it between min and max). */
    mode: "fixed" | "autoscale";
    /** Configured size of a fixed pool. */
    size?: number;
    /** ESS MinSize. */
    min: number;
    /** ESS MaxSize. */
    max: number;
    /** ESS scaling group id, `asg-…`. */
    scalingGroupId: string;
    /** Public id (first 6 characters) of the bootstrap token the pool's user data joins with. Not secret. None when the pool joins through admission. */
    tokenId?: string;
}

/** One existing ECS instance joined by the stack, as exported in `clusterInfo.existingNodes`. */
export interface ExistingNodeInfo {
    instanceId: string;
    /** How it was joined: `manual` (Cloud Assistant) or `auto` (user data + system disk replacement). */
    mode: string;
    /** Public id of its bootstrap token; none when it joins through admission. */
    tokenId?: string;
    /** Its spec hash (docs/rotation.md#existing-nodes), as its NodeMembership's state holds it after the last `pulumi up`. None before that recorded it. */
    spec?: string;
    /** The spec hash it joined with, from the same state; differs from `spec` while it is outdated. None before that recorded it. */
    joinedSpec?: string;
}

/**
 * The non-secret stack output `clusterInfo` (`pulumi stack output --json` → `.clusterInfo`):
 * everything doctor needs to know where to look.
 */
export interface ClusterInfo {
    /** Cluster name. */
    name: string;
    /** Region id, e.g. `cn-hangzhou`; node provider ids are `<region>.<instance-id>`. */
    region: string;
    kubernetesVersion: string;
    /** Control-plane instances; the first one (master 0) holds /etc/kubernetes/admin.conf. */
    masterInstanceIds: string[];
    /** API endpoint `host:port` the nodes join. */
    apiEndpoint: string;
    /** VPC route table the CCM writes pod routes into. */
    routeTableId: string;
    /** Cluster pod CIDR (kubeadm podSubnet = CCM --cluster-cidr). */
    podCidr: string;
    pools: PoolInfo[];
    existingNodes: ExistingNodeInfo[];
    /** The cluster's saved commands (operation → Cloud Assistant command id); doctor runs its `doctor-*` ones. */
    commands?: Partial<NodeCommandIds>;
    /** Minutes between etcd backups (config `backup.intervalMinutes`); doctor warns past twice it. Absent: no backup check. */
    backupIntervalMinutes?: number;
    /** The saved control-plane join command, with 3 or 5 masters: `npm run restore` re-joins the other masters with it. */
    controlPlaneJoinCommandId?: string;
}

/** Outcome of one finding. */
export type FindingStatus = "ok" | "warning" | "problem";

/** Names of the checks, in the order they run and print. */
export type CheckName = "ess" | "autoscaler" | "nodes" | "routes" | "join" | "versions" | "certs";

/** One thing doctor found. */
export interface Finding {
    /** Which check found it. */
    check: CheckName;
    status: FindingStatus;
    /** What it is about: a pool, an instance, a node, a route, a token… */
    subject: string;
    /** What doctor saw, in plain words, with the raw evidence (error codes, log lines). Never secrets. */
    evidence: string;
    /** What to do next ("" for ok findings that need nothing). */
    next: string;
    /** Longer raw evidence for `--json` (e.g. the whole bootstrap-log tail), secrets removed. */
    details?: string;
    /** Set when the check could not look at all (API unreachable, no credentials, master unreachable). */
    couldNotLook?: boolean;
}

/** Options of `runDoctor`. */
export interface DoctorOptions {
    /** Checks to run. Default: all of them. */
    checks?: CheckName[];
    /** First Cloud Assistant poll delay in ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
    /** Largest Cloud Assistant poll delay in ms. Default 5000. */
    pollMaxIntervalMs?: number;
    /** How long a Cloud Assistant command may take before doctor gives up on it, in seconds. Default 60. */
    commandTimeoutSeconds?: number;
    /** An instance younger than this (minutes) without a Node is still joining (warning, not problem). Default 15. */
    joinGraceMinutes?: number;
    /** ESS activities and autoscaler status older than this (hours) are history, not news. Default 24. */
    lookbackHours?: number;
    /** Bootstrap-log lines quoted from an instance that did not join. Default 25. */
    logLines?: number;
    /** The current time (tests). Default `Date.now()`. */
    now?: number;
    /** Progress messages for people (stderr). Default none. */
    progress?: (message: string) => void;
}
