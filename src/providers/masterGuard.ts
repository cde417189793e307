/**
 * MasterReplacementGuard: refuses, at preview, a change that would replace more than one master at once
 * (docs/disaster-recovery.md#one-master-at-a-time). A master is replaced when its zone or its system disk category
 * changes (both force a new ECS instance: docs/upstream.md#ecs-force-new); replacing two of three masters together loses
 * the etcd quorum. Its check reads what the masters are now (zone, system disk category, by their instance names) and
 * compares with what the config wants: more than one master to re-create is a failure that names them and the safe
 * way. Masters that do not exist yet (a new cluster) are not counted. Nothing is changed by this resource.
 */
import * as pulumi from "@pulumi/pulumi";
import { placementByName } from "../cloud/ecs";
import { pulumiLog } from "./log";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";

/** What one master should be. */
export interface MasterSpec { name: string; zone: string; systemDiskCategory: string }

export interface MasterGuardInputs {
    region: string;
    masters: MasterSpec[];
    providerVersion?: string;
}

/** The masters that exist and differ from `wanted`, with what differs. */
export async function mastersToReplace(region: string, wanted: readonly MasterSpec[]): Promise<string[]> {
    const out: string[] = [];
    for (const m of wanted) {
        const now = await placementByName(region, m.name);
        if (!now) continue;
        const diffs = [now.zone !== m.zone ? `zone ${now.zone} → ${m.zone}` : "", now.systemDiskCategory && now.systemDiskCategory !== m.systemDiskCategory
            ? `system disk ${now.systemDiskCategory} → ${m.systemDiskCategory}` : ""].filter(Boolean);
        if (diffs.length > 0) out.push(`${m.name} (${now.instanceId}: ${diffs.join(", ")})`);
    }
    return out;
}

/** The failure message for `replaced` masters, or undefined when at most one is replaced. */
export function replacementProblem(replaced: readonly string[]): string | undefined {
    if (replaced.length <= 1) return undefined;
    return `this change would re-create ${replaced.length} masters at once: ${replaced.join("; ")}. Replacing more than one master together ` +
        "loses the etcd quorum. The safe way: one master per `pulumi up`: `pulumi up --target '<urn of one master>' --target-dependents`, " +
        "wait until it has joined, then the next (docs/disaster-recovery.md#one-master-at-a-time); this check then passes, as only the masters not yet re-created differ";
}

export const MASTER_GUARD_PROVIDER_VERSION = "1";

/** It holds no state of its own: a new spec is recorded in place. */
const MASTER_GUARD_DIFF = inputDiff<MasterGuardInputs>()({ replace: [], update: ["masters", "providerVersion", "region"], ignore: [] });

export const masterGuardProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async check(_olds: MasterGuardInputs, news: MasterGuardInputs) {
        let replaced: string[];
        try {
            replaced = await mastersToReplace(news.region, news.masters);
        } catch (err) {
            // Could not look (no DescribeInstances/DescribeDisks right, API down): say so, do not block.
            pulumiLog().warn(`could not check how many masters this change re-creates: ${(err as Error).message.split("\n")[0]}`);
            return { inputs: news };
        }
        const problem = replacementProblem(replaced);
        return problem ? { inputs: news, failures: [{ property: "masters", reason: problem }] } : { inputs: news };
    },
    async create(inputs: MasterGuardInputs) {
        return { id: `master-guard-${inputs.masters[0]?.name ?? "none"}`, outs: inputs };
    },
    async diff(_id: string, olds: MasterGuardInputs, news: MasterGuardInputs) {
        return diffInputs(MASTER_GUARD_DIFF, olds, news);
    },
    async update(_id: string, _olds: MasterGuardInputs, news: MasterGuardInputs) {
        return { outs: news };
    },
});

export class MasterReplacementGuard extends pulumi.dynamic.Resource {
    constructor(name: string, args: { region: string; masters: MasterSpec[] }, opts?: pulumi.CustomResourceOptions) {
        super(masterGuardProvider, name, { providerVersion: MASTER_GUARD_PROVIDER_VERSION, ...args }, opts);
    }
}
