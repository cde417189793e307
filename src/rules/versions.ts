// Kubernetes minors: when upstream released each and when it reaches its end of life, and the warning for a
// minor past or near it, and the patch releases known to exist. Sources: docs/upstream.md#kubernetes-support-window
// and #kubernetes-patch-releases.
import { AUTOSCALER_LATEST_PATCH } from "./autoscaler";
import { MIN_KUBERNETES_MINOR, parseVersion } from "./formats";

/** One Kubernetes minor's upstream support window (ISO dates, from kubernetes.io/releases) and its releases. */
export interface KubernetesMinor {
    released: string;
    endOfLife: string;
    /** The newest patch release of the minor known to exist (kubernetes/kubernetes tags, as of {@link KUBERNETES_SUPPORT_AS_OF}). */
    newestPatch: number;
    /** True when {@link newestPatch} is the minor's last release: it came out at or after the end of life, and none follows. */
    final: boolean;
}

/**
 * Every minor this project supports (≥ 1.{@link MIN_KUBERNETES_MINOR}), by minor number. Patch releases are
 * numbered without gaps, so 1.x.0 … 1.x.newestPatch exist; a patch above a final minor's last one never will.
 */
export const KUBERNETES_MINORS: Readonly<Record<number, KubernetesMinor>> = {
    31: { released: "2024-08-13", endOfLife: "2025-10-28", newestPatch: 14, final: true },
    32: { released: "2024-12-11", endOfLife: "2026-02-28", newestPatch: 13, final: true },
    33: { released: "2025-04-23", endOfLife: "2026-06-28", newestPatch: 13, final: true },
    34: { released: "2025-08-27", endOfLife: "2026-10-27", newestPatch: 4, final: false },
    35: { released: "2025-12-17", endOfLife: "2027-02-28", newestPatch: 4, final: false },
    36: { released: "2026-04-22", endOfLife: "2027-06-28", newestPatch: 3, final: false },
    37: { released: "2026-08-26", endOfLife: "2027-10-28", newestPatch: 2, final: false },
};

/**
 * Why a Kubernetes version names a patch release that does not exist, or undefined: a patch above the last
 * release of a minor that has ended. (A patch above the newest known one of a minor still patched is a warning:
 * {@link kubernetesPatchWarning}.) Nodes install the packages and images of exactly this version, so a release that
 * does not exist fails every master's and node's install, after the VPC and the masters were created.
 */
export function kubernetesPatchProblem(version: string): string | undefined {
    const v = parseVersion(version);
    const entry = v && v[0] === 1 ? KUBERNETES_MINORS[v[1]] : undefined;
    if (!v || !entry || !entry.final || v[2] <= entry.newestPatch) {
        return undefined;
    }
    return `Kubernetes ${version} does not exist: 1.${v[1]} reached its end of life on ${entry.endOfLife} and its last release is 1.${v[1]}.${entry.newestPatch}; ` +
        `nodes would fail to install it. Use 1.${v[1]}.${entry.newestPatch}, or a supported minor`;
}

/**
 * The warning for a patch above the newest this project knows of a minor still patched, or undefined: it may have
 * been released after {@link KUBERNETES_SUPPORT_AS_OF}, or not at all (then the nodes' install fails at `pulumi up`).
 */
export function kubernetesPatchWarning(version: string): string | undefined {
    const v = parseVersion(version);
    const entry = v && v[0] === 1 ? KUBERNETES_MINORS[v[1]] : undefined;
    if (!v || !entry || entry.final || v[2] <= entry.newestPatch) {
        return undefined;
    }
    return `Kubernetes ${version} is newer than the newest 1.${v[1]} release this project knows (1.${v[1]}.${entry.newestPatch}, as of ${KUBERNETES_SUPPORT_AS_OF}): ` +
        "check that it is released (kubernetes.io/releases) before `pulumi up`; a version that does not exist fails the masters' install after they are created";
}

/**
 * The day the table above was last checked, which is the "today" of the end-of-life warning. Validation
 * compares against this date, never against the clock: the same config then gives the same warnings (and
 * synth the same output) on every machine and every day, and a warning appears or changes only in a
 * reviewed commit that refreshes the table and moves this date.
 */
export const KUBERNETES_SUPPORT_AS_OF = "2026-12-02";

/** A minor whose end of life is at most this many days after {@link KUBERNETES_SUPPORT_AS_OF} gets the "near" warning. */
export const END_OF_LIFE_WARNING_DAYS = 90;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Whole days from `from` to `to` (ISO dates). */
function daysBetween(from: string, to: string): number {
    return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** The newest minor with an upstream release in the table. */
export function newestKubernetesMinor(): number {
    return Math.max(...Object.keys(KUBERNETES_MINORS).map(Number));
}

/** The minors still supported as of {@link KUBERNETES_SUPPORT_AS_OF}, oldest first. */
export function supportedKubernetesMinors(): number[] {
    return Object.entries(KUBERNETES_MINORS)
        .filter(([, m]) => daysBetween(KUBERNETES_SUPPORT_AS_OF, m.endOfLife) > 0)
        .map(([minor]) => Number(minor));
}

/**
 * The warning for a Kubernetes version whose minor is past its upstream end of life, within
 * {@link END_OF_LIFE_WARNING_DAYS} of it, or newer than the table (add-on versions unverified); else undefined.
 * A version that is not a supported `x.y.z` gets none (kubernetesVersionProblem reports it).
 */
export function kubernetesSupportWarning(version: string): string | undefined {
    const v = parseVersion(version);
    if (!v || v[0] !== 1 || v[1] < MIN_KUBERNETES_MINOR) {
        return undefined;
    }
    const minor = v[1];
    // A minor without a Cluster Autoscaler release is named as such: autoscaled pools cannot move there yet.
    const minors = supportedKubernetesMinors().map((m) => `1.${m}${AUTOSCALER_LATEST_PATCH[m] ? "" : " (no Cluster Autoscaler release yet: not with autoscaled pools)"}`);
    const upgrade = `move to a supported minor (${minors.join(", ")}; see README "Changing a running cluster" for upgrades)`;
    const entry = KUBERNETES_MINORS[minor];
    if (!entry) {
        return minor > newestKubernetesMinor()
            ? `Kubernetes 1.${minor} is newer than this project's version table (newest 1.${newestKubernetesMinor()}): its add-on versions (Cluster Autoscaler, CCM, flannel) and the pause image are not verified for it`
            : undefined;
    }
    const days = daysBetween(KUBERNETES_SUPPORT_AS_OF, entry.endOfLife);
    if (days <= 0) {
        return `Kubernetes 1.${minor} reached its upstream end of life on ${entry.endOfLife} and gets no security fixes; ${upgrade}`;
    }
    if (days <= END_OF_LIFE_WARNING_DAYS) {
        return `Kubernetes 1.${minor} reaches its upstream end of life on ${entry.endOfLife} (${days} days after ${KUBERNETES_SUPPORT_AS_OF}, when this table was checked); plan the move to a newer minor`;
    }
    return undefined;
}
