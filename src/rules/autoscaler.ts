// Cluster Autoscaler rules: which release goes with which Kubernetes minor, which releases are broken on
// Alibaba Cloud, the expanders and their chains, the scale-down defaults, and the scale-from-zero limits of
// the alicloud provider. Sources: docs/upstream.md#cluster-autoscaler-alicloud-provider.
import { durationProblem, parseVersion } from "./formats";
import type { Report } from "./problems";

/** Latest cluster-autoscaler patch seen per Kubernetes minor (the autoscaler's minor must match the control plane's). */
export const AUTOSCALER_LATEST_PATCH: Readonly<Record<number, string>> = {
    28: "1.28.7", 29: "1.29.5", 30: "1.30.7", 31: "1.31.5", 32: "1.32.7", 33: "1.33.6", 34: "1.34.5", 35: "1.35.2", 36: "1.36.1",
};

/** The day the autoscaler's release tags above were read (kubernetes/autoscaler `cluster-autoscaler-<version>` tags). */
export const AUTOSCALER_RELEASES_AS_OF = "2026-08-22";

/**
 * The newest minor whose latest patch above is its last: its Kubernetes minor had ended (1.32: 2026-02-28) and no
 * release followed in the months before {@link AUTOSCALER_RELEASES_AS_OF}. Later minors were still being patched.
 */
export const AUTOSCALER_NEWEST_FINAL_MINOR = 32;

/**
 * Why an explicit autoscaler version names a release that does not exist, or undefined: a patch above the last
 * release of a minor the autoscaler no longer patches. The image `…/cluster-autoscaler:v<version>` then does not
 * exist, the autoscaler never starts, and `pulumi up` fails waiting for its Deployment, after everything else
 * (docs/upstream.md#autoscaler-versions).
 */
export function autoscalerPatchProblem(version: string): string | undefined {
    const v = parseVersion(version);
    const latest = v && v[0] === 1 && v[1] <= AUTOSCALER_NEWEST_FINAL_MINOR ? AUTOSCALER_LATEST_PATCH[v[1]] : undefined;
    if (!v || latest === undefined || v[2] <= parseVersion(latest)![2]) {
        return undefined;
    }
    return `cluster-autoscaler ${version.replace(/^v/, "")} does not exist: the last 1.${v[1]} release is ${latest}; use ${latest}, or the release of the control plane's minor`;
}

/**
 * The warning for an explicit autoscaler version above the newest known patch of a minor still patched, or
 * undefined: it may have been released after {@link AUTOSCALER_RELEASES_AS_OF}, or not at all.
 */
export function autoscalerPatchWarning(version: string): string | undefined {
    const v = parseVersion(version);
    const latest = v && v[0] === 1 && v[1] > AUTOSCALER_NEWEST_FINAL_MINOR ? AUTOSCALER_LATEST_PATCH[v[1]] : undefined;
    if (!v || latest === undefined || v[2] <= parseVersion(latest)![2]) {
        return undefined;
    }
    return `cluster-autoscaler ${version.replace(/^v/, "")} is newer than the newest 1.${v[1]} release this project knows (${latest}, as of ${AUTOSCALER_RELEASES_AS_OF}): ` +
        "check that the image tag exists before `pulumi up`; without it the autoscaler never starts and `pulumi up` fails waiting for it";
}

/** Expanders usable with alicloud (`price` is GCE/Equinix only, `grpc` needs an external server). */
export const AUTOSCALER_EXPANDERS: readonly string[] = ["random", "most-pods", "least-waste", "least-nodes", "priority"];

/** Scale-down behaviour, passed to the autoscaler as flags. */
export interface AutoscalerSettings {
    /**
     * `--scale-down-utilization-threshold`: a node whose max(cpu, memory) *requests* / allocatable
     * (the "reservation rate") stays below this is a scale-down candidate. In (0, 1]. Default 0.5.
     */
    scaleDownUtilizationThreshold: number;
    /** `--scale-down-unneeded-time`: how long a node must be unneeded before removal (Go duration). Default `10m`. */
    scaleDownUnneededTime: string;
    /** `--scale-down-delay-after-add`: pause of scale-down evaluation after a scale-up (Go duration). Default `10m`. */
    scaleDownDelayAfterAdd: string;
    /** `--expander`: one of {@link AUTOSCALER_EXPANDERS}, or a comma-separated chain. Default `least-waste`. */
    expander: string;
    /** `--balance-similar-node-groups`. Default false. */
    balanceSimilarNodeGroups: boolean;
    /** `--skip-nodes-with-local-storage`: never remove nodes whose pods use emptyDir/hostPath. Default true. */
    skipNodesWithLocalStorage: boolean;
}

/**
 * The defaults of every setting, for the stack config and the ClusterAutoscaler component alike: the
 * autoscaler's own flag defaults. The expander is always passed: `least-waste` (the autoscaler's own default
 * from 1.33; `random` before) keeps the fewest idle resources when several pools fit.
 */
export const DEFAULT_AUTOSCALER_SETTINGS: Readonly<AutoscalerSettings> = {
    scaleDownUtilizationThreshold: 0.5,
    scaleDownUnneededTime: "10m",
    scaleDownDelayAfterAdd: "10m",
    expander: "least-waste",
    balanceSimilarNodeGroups: false,
    skipNodesWithLocalStorage: true,
};

/**
 * The autoscaler version for a Kubernetes version: the latest known patch of the same minor
 * (`1.36.3` → `1.36.1`), or undefined when no release of that minor is known (set one explicitly then).
 */
export function autoscalerVersionFor(kubernetesVersion: string): string | undefined {
    const v = parseVersion(kubernetesVersion);
    return v && v[0] === 1 ? AUTOSCALER_LATEST_PATCH[v[1]] : undefined;
}

/**
 * Why an autoscaler version must not be used, or undefined when it may. 1.32.0–1.32.2 and 1.33.0
 * fail on every call: they cannot parse Alibaba's Location `DescribeEndpoints` response.
 */
export function refusedAutoscalerVersion(version: string): string | undefined {
    const v = parseVersion(version);
    if (!v || v[0] !== 1) {
        return `"${version}" is not a cluster-autoscaler release (expected a full x.y.z version, e.g. ${AUTOSCALER_LATEST_PATCH[36]})`;
    }
    const [, minor, patch] = v;
    if ((minor === 32 && patch <= 2) || (minor === 33 && patch === 0)) {
        const fixed = minor === 32 ? "1.32.3" : "1.33.1";
        return `cluster-autoscaler ${version} cannot parse the Location DescribeEndpoints response on Alibaba Cloud ` +
            `("failed to unmarshal endpoint response … Protocols", kubernetes/autoscaler#8168) and never scales; ` +
            `use ${fixed} or later (latest ${AUTOSCALER_LATEST_PATCH[minor]})`;
    }
    return undefined;
}

/** The version the autoscaler runs at, or the reason there is none (reported at `version`). */
export function resolveAutoscalerVersion(version: string | undefined, kubernetesVersion: string): { version?: string; problem?: string } {
    if (version !== undefined) {
        const problem = refusedAutoscalerVersion(version);
        return problem ? { problem } : { version: version.replace(/^v/, "") };
    }
    const picked = autoscalerVersionFor(kubernetesVersion);
    return picked ? { version: picked } : { problem: noAutoscalerReleaseProblem(kubernetesVersion) };
}

/** The newest Kubernetes minor with a known Cluster Autoscaler release. */
export function newestAutoscalerMinor(): number {
    return Math.max(...Object.keys(AUTOSCALER_LATEST_PATCH).map(Number));
}

/**
 * Why autoscaled pools cannot run with a Kubernetes version whose minor has no Cluster Autoscaler release
 * (the autoscaler is released per Kubernetes minor, usually weeks after it, and supports only its own minor).
 */
export function noAutoscalerReleaseProblem(kubernetesVersion: string): string {
    const v = parseVersion(kubernetesVersion);
    const minor = v ? `1.${v[1]}` : kubernetesVersion;
    const newest = newestAutoscalerMinor();
    return `there is no Cluster Autoscaler release for Kubernetes ${minor} (this project knows releases up to 1.${newest}, ` +
        `${AUTOSCALER_LATEST_PATCH[newest]}), and upstream supports an autoscaler only with its own minor: for autoscaled pools use ` +
        `Kubernetes 1.${newest}, or make the pools fixed (size), or set autoscaler.version to a ${minor}.x release once one is published`;
}

/** Checks scale-down settings; reports at the setting's name. */
export function autoscalerSettingsProblems(s: AutoscalerSettings, report: Report): void {
    if (!(s.scaleDownUtilizationThreshold > 0 && s.scaleDownUtilizationThreshold <= 1)) {
        report("scaleDownUtilizationThreshold", `must be in (0, 1], got ${s.scaleDownUtilizationThreshold}`);
    }
    for (const key of ["scaleDownUnneededTime", "scaleDownDelayAfterAdd"] as const) {
        const reason = durationProblem(s[key]);
        if (reason) {
            report(key, reason);
        }
    }
    const chain = s.expander.split(",");
    chain.forEach((e, i) => {
        if (!AUTOSCALER_EXPANDERS.includes(e)) {
            report("expander", `"${e}" is not one of ${AUTOSCALER_EXPANDERS.join(", ")} (comma-separated to chain)`);
        } else if (chain.indexOf(e) < i) {
            report("expander", `"${e}" is listed twice in "${s.expander}"; the autoscaler refuses a repeated expander and exits at start-up`);
        }
    });
    const random = chain.indexOf("random");
    if (random >= 0 && random < chain.length - 1) {
        report("expander", `"random" must come last in "${s.expander}": it always picks one option, so the autoscaler refuses any expander after it and exits at start-up`);
    }
}

/**
 * The warning for an explicit autoscaler version whose minor differs from the control plane's (upstream
 * supports only the matching minor), or undefined.
 */
export function autoscalerMinorWarning(version: string, kubernetesVersion: string): string | undefined {
    const a = parseVersion(version);
    const k = parseVersion(kubernetesVersion);
    if (!a || !k || a[1] === k[1]) {
        return undefined;
    }
    const match = AUTOSCALER_LATEST_PATCH[k[1]];
    return `cluster-autoscaler ${version.replace(/^v/, "")} is for Kubernetes 1.${a[1]}, the control plane runs 1.${k[1]}: upstream supports only the matching minor` +
        (match ? ` (${match}, the default when version is unset)` : ` (it has no release for 1.${k[1]} this project knows of: this combination is untested)`);
}

/** What the scale-from-zero rule looks at. */
export interface ScaleFromZeroInput {
    autoscale?: { min: number; max: number };
    taints: ReadonlyArray<{ key: string; value?: string; effect: string }>;
}

/**
 * Why an autoscaled pool may not scale from zero, or undefined. The alicloud provider builds the node
 * template of an empty group without taints (and with an empty zone), so a pool whose nodes carry a
 * NoSchedule/NoExecute taint would be grown for pods that do not tolerate it, then shrunk, in a loop.
 * With `min: 1` a real node is always there and the autoscaler copies its taints. Reported at `autoscale.min`.
 */
export function scaleFromZeroProblem(pool: ScaleFromZeroInput): string | undefined {
    if (!pool.autoscale || pool.autoscale.min !== 0) {
        return undefined;
    }
    const blocking = pool.taints.filter((t) => t.effect === "NoSchedule" || t.effect === "NoExecute");
    if (blocking.length === 0) {
        return undefined;
    }
    const shown = blocking.map((t) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`).join(", ");
    return `a tainted pool cannot scale from zero: the Cluster Autoscaler's alicloud provider builds an empty pool's node template without taints ` +
        `(${shown}) and without a zone, so it would add nodes for pods that do not tolerate them and remove them again, in a loop; ` +
        `use min: 1 (a real node then serves as the template; docs/upstream.md#pitfall-template-taints-zone)`;
}
