/**
 * Reading the stack output `clusterInfo` doctor starts from: from `pulumi stack output --json`, or a
 * JSON file holding either that whole object or `clusterInfo` alone. Validated, with every problem named.
 */
import { z } from "zod";
import { ClusterInfo } from "./types";

const tokenId = z.string().regex(/^[a-z0-9]{6}$/, "must be the 6-character public token id");
/** An Alibaba Cloud region id (cn-hangzhou, ap-southeast-1): it goes into API and OSS host names, so nothing else may. */
export const REGION_ID = /^[a-z]{2}-[a-z0-9-]{1,30}$/;
const schema = z.object({
    name: z.string().min(1),
    region: z.string().regex(REGION_ID, "must be a region id such as cn-hangzhou"),
    kubernetesVersion: z.string(),
    masterInstanceIds: z.array(z.string().min(1)).min(1),
    apiEndpoint: z.string(),
    routeTableId: z.string().min(1),
    podCidr: z.string().min(1),
    pools: z.array(z.object({
        name: z.string().min(1), mode: z.enum(["fixed", "autoscale"]), size: z.number().int().optional(),
        min: z.number().int(), max: z.number().int(), scalingGroupId: z.string().min(1), tokenId: tokenId.optional(),
    })).default([]),
    existingNodes: z.array(z.object({
        instanceId: z.string().min(1), mode: z.string(), tokenId: tokenId.optional(), spec: z.string().optional(), joinedSpec: z.string().optional(),
    })).default([]),
    /** Saved command ids by operation (absent in outputs written before the saved commands). */
    commands: z.record(z.string(), z.string().min(1)).optional(),
    backupIntervalMinutes: z.number().int().positive().optional(),
    /** The saved control-plane join command (absent with one master, and in outputs written before the restore joined masters). */
    controlPlaneJoinCommandId: z.string().min(1).optional(),
});

/**
 * Validates stack outputs and returns `clusterInfo`.
 * @param value Parsed JSON: `{ clusterInfo: {...}, ... }` or the `clusterInfo` object itself.
 * @throws Error listing each invalid field as `clusterInfo.<path>: <reason>`.
 */
export function parseClusterInfo(value: unknown): ClusterInfo {
    const obj = value && typeof value === "object" && "clusterInfo" in value ? (value as { clusterInfo: unknown }).clusterInfo : value;
    const r = schema.safeParse(obj);
    if (!r.success) {
        const lines = r.error.issues.map((i) => `clusterInfo.${i.path.join(".") || "(root)"}: ${i.message}`);
        throw new Error(`the stack outputs have no valid clusterInfo:\n  ${lines.join("\n  ")}`);
    }
    return r.data;
}
