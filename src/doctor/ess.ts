/**
 * ESS check: per pool, the scaling group's state (missing, inactive, at min/max, desired vs in
 * service) and its recent scaling activities, with failure codes explained in plain words.
 */
import { DoctorContext, GroupView } from "./context";
import { ExistingNodeInfo, Finding, PoolInfo } from "./types";
import { AUTOSCALED_SPEC_LABEL, EXISTING_NODE_REMOVED as REMOVED, isOutdated, SPEC_TAG } from "../rules";

/** Plain words and the fix for an ESS/ECS error code of a failed scaling activity. */
export interface ErrorExplanation { meaning: string; fix: string }

/**
 * Known causes of failed scaling activities. Sources: `OperationDenied.NoStock` and the activity fields
 * in docs/upstream.md#ess-activities; `InvalidSystemDiskCategory.ValueNotSupported` in
 * docs/upstream.md#pitfall-ess-disk-category (terraform-provider-alicloud#3301). The others are widely known ECS
 * instance-creation error codes that ESS passes through; they are not confirmed by a source, so each is
 * also matched by message keywords, and an unknown code falls back to the raw message.
 */
export const ESS_ERROR_CODES: { match: RegExp; meaning: string; fix: string }[] = [
    { match: /NoStock|out of stock|InstanceType\.NotAvailable|Zone\.NotOnSale|InvalidResourceType\.NotSupported|ResourceNotAvailable|not available in the zone/i,
        meaning: "no stock: the instance type is sold out (or not sold) in the pool's zones",
        fix: "add zones (vSwitches) to the pool, or allow more instance types in the pool config, then `pulumi up`; retry later if the shortage is temporary" },
    { match: /InvalidSystemDiskCategory|InvalidDataDiskCategory|DiskCategory.*NotSupported|disk category/i,
        meaning: "invalid disk category: the system/data disk category does not fit the instance type (e.g. cloud_essd needed)",
        fix: "set a disk category the instance type supports (cloud_essd for most current families) in the pool config, then `pulumi up`" },
    { match: /QuotaExceed|Quota\.|exceeds? (the )?quota|vcpu quota/i,
        meaning: "quota: the account's ECS quota (vCPUs or instances per region) is used up",
        fix: "raise the quota in the Quota Center (ECS, pay-as-you-go vCPUs) or lower the pool's max" },
    { match: /NotEnoughBalance|Arrearage|InsufficientBalance|insufficient balance|overdue/i,
        meaning: "insufficient balance: the account is in arrears or has too little balance for pay-as-you-go instances",
        fix: "top up the account (Billing Management), then wait for the next scaling attempt" },
    { match: /IpNotEnough|IpAddress.*(NotEnough|Insufficient)|no (available|free) ip|VSwitch.*Ip/i,
        meaning: "vSwitch out of IPs: the pool's vSwitch has no free private addresses",
        fix: "add another zone/vSwitch with free addresses, or release unused ENIs/instances in that vSwitch" },
    { match: /InvalidVSwitchId|IncorrectVSwitchStatus|VSwitch.*NotFound/i,
        meaning: "the pool's vSwitch is missing or not available",
        fix: "run `pulumi up` to restore the network, or fix the vSwitch ids of the scaling group" },
    { match: /InvalidSecurityGroupId|SecurityGroup.*NotFound/i,
        meaning: "the scaling configuration's security group is missing",
        fix: "run `pulumi up` to restore the security group and the scaling configuration" },
    { match: /InvalidImageId|Image.*NotFound|InvalidImage/i,
        meaning: "the scaling configuration's image is missing or not usable in this region",
        fix: "pick an existing image id in the pool config (or the default image), then `pulumi up`" },
    { match: /InvalidInstanceType|InstanceType\.(ValueNotSupported|ValueUnauthorized)/i,
        meaning: "the instance type is not valid or not allowed for this account/region",
        fix: "choose an instance type available in the region (`aliyun ecs DescribeAvailableResource`), then `pulumi up`" },
    { match: /Forbidden|NoPermission|Unauthorized|ServiceLinkedRole/i,
        meaning: "permission: ESS is not allowed to create instances (service-linked role or RAM policy)",
        fix: "make sure the AliyunServiceRoleForAutoScaling service-linked role exists and the RAM policies allow ESS to use ECS" },
];

/**
 * Explains an activity's failure.
 * @param code `ErrorCode` of the activity ("" when absent).
 * @param message `ErrorMessage`/`StatusMessage` of the activity.
 * @returns The first known explanation matching the code or the message, or undefined.
 */
export function explainActivityError(code: string, message: string): ErrorExplanation | undefined {
    const hit = ESS_ERROR_CODES.find((e) => (code && e.match.test(code))) ?? ESS_ERROR_CODES.find((e) => e.match.test(message));
    return hit ? { meaning: hit.meaning, fix: hit.fix } : undefined;
}

interface Activity { id: string; status: string; start: string; code: string; message: string; description: string }

function capacityFindings(pool: PoolInfo, g: GroupView, inProgress: boolean): Finding[] {
    const subject = `pool ${pool.name} (${g.scalingGroupId})`;
    const counts = `desired ${g.desiredCapacity}, in service ${g.activeCapacity}, total ${g.totalCapacity} (min ${g.minSize}, max ${g.maxSize})`;
    const out: Finding[] = [];
    const f = (status: Finding["status"], evidence: string, next: string) => out.push({ check: "ess", status, subject, evidence, next });
    if (g.lifecycleState !== "Active") {
        f("problem", `scaling group is ${g.lifecycleState}: ESS launches and removes nothing. ${counts}`, "enable it (`pulumi up`, or EnableScalingGroup in the ESS console) once it has an active scaling configuration");
        return out;
    }
    if (g.activeCapacity < g.desiredCapacity) {
        if (inProgress || g.pendingCapacity > 0) f("warning", `scaling in progress: ${counts}, pending ${g.pendingCapacity}`, "wait a few minutes and run doctor again");
        else f("problem", `only ${g.activeCapacity} of ${g.desiredCapacity} desired instances are in service and nothing is in progress: ${counts}`, "see the failed scaling activities of this pool below (or in the ESS console)");
    }
    if (pool.mode === "fixed" && pool.size !== undefined && g.desiredCapacity !== pool.size) {
        f("warning", `ESS desired capacity ${g.desiredCapacity} differs from the configured size ${pool.size} (changed outside Pulumi?)`, "run `pulumi up` to bring the pool back to its configured size, or change `size` in the stack config");
    }
    if (pool.mode === "autoscale" && g.totalCapacity >= g.maxSize) {
        f("warning", `pool is at its max (${g.maxSize}): the autoscaler cannot add nodes here. ${counts}`, `raise autoscale.max of pool ${pool.name} in the stack config and \`pulumi up\`, if pods are pending`);
    }
    if (out.length === 0) f("ok", `${counts}${pool.mode === "autoscale" && g.totalCapacity <= g.minSize ? "; at min" : ""}`, "");
    return out;
}

/**
 * A pool's outdated nodes: members whose spec tag (put on by ESS at creation, read from the instance) is not the active
 * configuration's ({@link SPEC_TAG}; an autoscaled pool's {@link AUTOSCALED_SPEC_LABEL}). None reported for a
 * configuration without the tag (written before it existed).
 */
async function outdatedFindings(ctx: DoctorContext, pool: PoolInfo): Promise<Finding[]> {
    const key = pool.mode === "fixed" ? SPEC_TAG : AUTOSCALED_SPEC_LABEL;
    const current = (await ctx.configurationTags(pool.scalingGroupId))?.[key];
    if (!current) return [];
    const ids = await ctx.members(pool.scalingGroupId);
    const instances = await ctx.instances(ids);
    const outdated = ids.filter((id) => isOutdated(instances.get(id)?.tags, current));
    const subject = `pool ${pool.name} (${pool.scalingGroupId})`;
    if (outdated.length === 0) return [{ check: "ess", status: "ok", subject, evidence: `all ${ids.length} node(s) from the current spec ${current}`, next: "" }];
    const list = outdated.map((id) => `${id} (spec ${instances.get(id)?.tags[key] || "none"})`).join(", ");
    return [{
        check: "ess", status: "warning", subject, evidence: `${outdated.length} of ${ids.length} node(s) outdated (current spec ${current}): ${list}`,
        next: `replace them: give pool ${pool.name} a \`rollout\` (docs/rotation.md) and run \`pulumi up\``,
    }];
}

/**
 * The existing nodes' outdated ones: those whose spec hash is not the one they joined with, as the last `pulumi up`
 * recorded both (an existing node's instance was not made from a configuration: no tag says what it became, so the
 * Pulumi state, exported in `clusterInfo`, is the record). None reported for state written before it was recorded.
 */
export function existingNodeFindings(nodes: readonly ExistingNodeInfo[]): Finding[] {
    const subject = "existing nodes";
    // A replacement stopped after its removal (docs/rotation.md#existing-nodes): out, not joined with anything.
    const out: Finding[] = nodes.filter((n) => n.joinedSpec === REMOVED).map((n) => ({
        check: "ess", status: "warning", subject: `${n.instanceId} (existing node)`,
        evidence: `${n.instanceId} is out of the cluster (a replacement stopped after its removal${n.mode === "auto" ? "; its instance may be Stopped" : ""})`,
        next: "`pulumi up` attaches it again, whatever its spec and rollout",
    }));
    const recorded = nodes.filter((n) => n.spec && n.joinedSpec && n.joinedSpec !== REMOVED);
    if (recorded.length === 0) return out;
    const outdated = recorded.filter((n) => n.joinedSpec !== n.spec);
    if (outdated.length === 0) return [...out, { check: "ess", status: "ok", subject, evidence: `all ${recorded.length} joined with their current spec`, next: "" }];
    return [...out, {
        check: "ess", status: "warning", subject,
        evidence: `${outdated.length} of ${recorded.length} outdated: ${outdated.map((n) => `${n.instanceId} (joined with ${n.joinedSpec}, spec now ${n.spec})`).join(", ")}`,
        next: "replace them in place: set existingNodes[].rollout: replace (docs/rotation.md#existing-nodes) and run `pulumi up`",
    }];
}

/**
 * Runs the ESS check for every pool, and lists the outdated existing nodes.
 * @param ctx Shared reads of this doctor run.
 * @returns Findings; throws only when ESS cannot be read at all.
 */
export async function checkEss(ctx: DoctorContext): Promise<Finding[]> {
    const { pools } = ctx.info;
    const existing = existingNodeFindings(ctx.info.existingNodes);
    if (pools.length === 0) return [{ check: "ess", status: "ok", subject: "pools", evidence: "the stack has no node pools", next: "" }, ...existing];
    const groups = await ctx.groups();
    const out: Finding[] = [];
    const lookbackMin = ctx.opts.lookbackHours * 60;
    for (const pool of pools) {
        const g = groups.get(pool.scalingGroupId);
        const subject = `pool ${pool.name} (${pool.scalingGroupId})`;
        if (!g) {
            out.push({ check: "ess", status: "problem", subject, evidence: `scaling group ${pool.scalingGroupId} does not exist in ${ctx.info.region}`, next: "run `pulumi refresh` then `pulumi up` to recreate it; check that the stack's region is right" });
            continue;
        }
        const acts: Activity[] = (await ctx.activities(pool.scalingGroupId)).map((a) => ({
            id: a.scalingActivityId, status: a.statusCode, start: a.startTime, code: a.errorCode, message: a.message, description: a.description,
        }));
        const inProgress = acts.some((a) => a.status === "InProgress");
        out.push(...capacityFindings(pool, g, inProgress), ...await outdatedFindings(ctx, pool));
        const lastSuccess = acts.find((a) => a.status === "Successful");
        const failures = acts.filter((a) => ["Failed", "Rejected", "Warning"].includes(a.status) && ctx.ageMinutes(a.start) <= lookbackMin);
        for (const a of failures.slice(0, 3)) {
            const recovered = lastSuccess !== undefined && Date.parse(lastSuccess.start) > Date.parse(a.start);
            const why = explainActivityError(a.code, a.message);
            const codeText = a.code ? `${a.code}: ` : "";
            out.push({
                check: "ess", status: recovered || a.status === "Warning" ? "warning" : "problem", subject,
                evidence: `scaling activity ${a.id} at ${a.start} ${a.status}${a.description ? ` (${a.description})` : ""}: ${codeText}${a.message || "(no message)"}` +
                    (why ? ` — ${why.meaning}` : "") + (recovered ? `; a later activity (${lastSuccess?.id}) succeeded` : ""),
                next: why ? why.fix : "read the activity in the ESS console (Scaling Activities) and fix the cause it names; ESS retries on the next scaling request",
            });
        }
        if (failures.length > 3) out.push({ check: "ess", status: "warning", subject, evidence: `${failures.length - 3} more failed activities in the last ${ctx.opts.lookbackHours} h`, next: "see the ESS console, Scaling Activities" });
    }
    return [...out, ...existing];
}
