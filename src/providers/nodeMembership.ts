/**
 * NodeMembership: an existing ECS instance joined to the cluster (DESIGN.md §1).
 *
 * - `manual`: runs the rendered attach script on the running instance with Cloud Assistant, then waits
 *   (bounded) until the Node with provider id `<region>.<instance-id>` is Ready.
 * - `ssh`: the script was run over SSH by a `@pulumi/command` `remote.Command` that this resource depends
 *   on (see ExistingNode); this resource only waits for Ready.
 * - `auto` (destructive, needs `replaceSystemDisk: true`): ModifyInstanceAttribute(UserData = the attach
 *   script) → StopInstance (StoppedMode KeepCharging, the standard stop for pay-as-you-go) → wait Stopped →
 *   ReplaceSystemDisk(ImageId) → wait for the disk operation → StartInstance → wait Running → wait Ready.
 *   cloud-init runs the new userdata on the fresh system disk. An instance that already is a Ready node
 *   is left alone.
 *
 * delete hands the node to the removal flow (`removeNode`, kind `existing`): drain, clear userdata,
 * kubeadm reset, delete the Node, delete a left-over pod route. The instance itself stays.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError, MAX_CONTENT_BASE64_BYTES, runOnInstance } from "../cloud/cloudAssistant";
import { getNodes, providerIdOf } from "../cloud/kubectl";
import { callApi } from "../cloud/openapi";
import { removeNode, type RemovalOptions } from "../removal";
import { pulumiLog } from "./log";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const NODE_MEMBERSHIP_PROVIDER_VERSION = "1";

/** Where the attach script logs on the node. */
export const ATTACH_LOG = "/var/log/alicloud-kubeadm/attach-node.log";

export type MembershipMode = "manual" | "auto" | "ssh";

export interface NodeMembershipInputs {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** The existing ECS instance. */
    instanceId: string;
    /** How the instance joins. */
    mode: MembershipMode;
    /** The rendered attach script (secret): run in `manual` mode, set as userdata in `auto` mode. */
    userData: string;
    /** Image for the new system disk (`auto` mode). */
    imageId?: string;
    /** Must be true for `auto` mode, which wipes the system disk. Default false. */
    replaceSystemDisk?: boolean;
    /** Master 0, where kubectl runs. */
    masterInstanceId: string;
    /** Route table of the pod routes (cleaned on removal). Default none. */
    routeTableId?: string;
    /** Cloud Assistant timeout of the attach script (`manual`), seconds. Default 1800 (package installs). */
    attachTimeoutSeconds?: number;
    /** Bound on each wait (instance status, Node Ready), seconds. Default 900. */
    readyTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 10. */
    pollSeconds?: number;
    /** First Cloud Assistant poll delay, ms (≤ 1000). Default 1000; tests lower it. */
    pollIntervalMs?: number;
    /** `kubectl drain --timeout` on removal, seconds. Default 600. */
    drainTimeoutSeconds?: number;
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

export interface NodeMembershipOutputs {
    /** The Node's name. */
    nodeName: string;
    /** `<region>.<instance-id>`. */
    providerId: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Blanks the bootstrap token and CA pins of `script` wherever they appear in `text`. */
export function scrubSecrets(text: string, script: string): string {
    let out = text;
    for (const name of ["AK_BOOTSTRAP_TOKEN", "AK_CA_CERT_HASHES"]) {
        const m = new RegExp(`^readonly ${name}='([^']*)'$`, "m").exec(script);
        for (const value of (m?.[1] ?? "").split(",").filter((v) => v.length >= 6)) out = out.split(value).join("<redacted>");
    }
    return out;
}

/** Problems that stop a membership before any call (every one listed). */
export function membershipProblems(inputs: NodeMembershipInputs): string[] {
    const problems: string[] = [];
    if (!["manual", "auto", "ssh"].includes(inputs.mode)) problems.push(`mode: must be manual, auto or ssh, got "${inputs.mode}"`);
    if (inputs.mode === "auto" && inputs.replaceSystemDisk !== true) {
        problems.push(`replaceSystemDisk: mode auto replaces the system disk of ${inputs.instanceId} (all data on it is lost); ` +
            "set replaceSystemDisk: true to confirm, or use mode: manual");
    }
    if (inputs.mode === "auto" && !inputs.imageId) problems.push("imageId: mode auto needs the image for the new system disk");
    if (inputs.mode === "manual") {
        const b64 = Buffer.from(inputs.userData ?? "", "utf8").toString("base64").length;
        if (b64 > MAX_CONTENT_BASE64_BYTES) {
            problems.push(`userData: the attach script is ${b64} bytes after Base64, above Cloud Assistant's ${MAX_CONTENT_BASE64_BYTES}; ` +
                "use mode auto (userdata takes 32 KB) or a `connection` (SSH), or shorten the script (fewer labels/taints)");
        }
    }
    if (Buffer.byteLength(inputs.userData ?? "", "utf8") > 32 * 1024) problems.push("userData: the attach script is above ECS's 32 KB userdata limit");
    return problems;
}

interface Waits { timeoutMs: number; pollMs: number }

function waitsOf(inputs: NodeMembershipInputs): Waits {
    return { timeoutMs: (inputs.readyTimeoutSeconds ?? 900) * 1000, pollMs: (inputs.pollSeconds ?? 10) * 1000 };
}

/** Instance status and whether an operation (e.g. a system disk replacement) still locks it. */
async function instanceState(region: string, instanceId: string): Promise<{ status: string; locked: boolean }> {
    const res = await callApi("ecs", "DescribeInstances", { InstanceIds: JSON.stringify([instanceId]), PageSize: 10 }, { region });
    const inst = ((res.Instances as { Instance?: Array<{ Status: string; OperationLocks?: { LockReason?: unknown[] } }> } | undefined)?.Instance ?? [])[0];
    if (!inst) throw new Error(`ECS instance ${instanceId} does not exist in ${region}; check existingNodes[].instanceId`);
    return { status: inst.Status, locked: (inst.OperationLocks?.LockReason ?? []).length > 0 };
}

async function waitForStatus(region: string, instanceId: string, want: string, w: Waits, log: (m: string) => void): Promise<void> {
    const started = Date.now();
    for (;;) {
        const s = await instanceState(region, instanceId);
        if (s.status === want && !s.locked) return;
        if (Date.now() - started + w.pollMs > w.timeoutMs) {
            throw new Error(`${instanceId} did not become ${want} within ${Math.round(w.timeoutMs / 1000)} s (status ${s.status}${s.locked ? ", operation locked" : ""}); ` +
                "look at the instance in the ECS console, then run `pulumi up` again");
        }
        log(`${instanceId}: waiting for ${want} (now ${s.status}${s.locked ? ", operation in progress" : ""})`);
        await sleep(w.pollMs);
    }
}

/** Waits (bounded) until the Node of the instance is Ready; returns its name. */
export async function waitForNodeReady(inputs: NodeMembershipInputs, log: (m: string) => void = () => undefined): Promise<NodeMembershipOutputs> {
    const providerId = providerIdOf(inputs.region, inputs.instanceId);
    const w = waitsOf(inputs);
    const started = Date.now();
    const target = { region: inputs.region, masterInstanceId: inputs.masterInstanceId, pollIntervalMs: inputs.pollIntervalMs };
    for (let attempt = 0; ; attempt++) {
        const node = (await getNodes(target)).find((n) => n.providerId === providerId);
        if (node?.ready) {
            log(`${inputs.instanceId}: node ${node.name} is Ready`);
            return { nodeName: node.name, providerId };
        }
        const state = node ? `node ${node.name} registered, not Ready yet` : "no node registered yet";
        if (Date.now() - started + w.pollMs > w.timeoutMs) {
            throw new Error(`${inputs.instanceId} did not become a Ready node (${providerId}) within ${Math.round(w.timeoutMs / 1000)} s: ${state}.\n` +
                `  fix: look at ${ATTACH_LOG} on ${inputs.instanceId} (or run \`npm run doctor\`); \`pulumi up\` again resumes the wait.`);
        }
        if (attempt % 3 === 0) log(`${inputs.instanceId}: waiting for node Ready (${state}, ${Math.round((Date.now() - started) / 1000)} s)`);
        await sleep(w.pollMs);
    }
}

/** Runs the attach script on the running instance over Cloud Assistant. */
async function attachManually(inputs: NodeMembershipInputs, log: (m: string) => void): Promise<void> {
    log(`${inputs.instanceId}: running the attach script over Cloud Assistant`);
    try {
        await runOnInstance({
            region: inputs.region, instanceId: inputs.instanceId, script: inputs.userData, name: "alicloud-kubeadm-attach-node",
            timeoutSeconds: inputs.attachTimeoutSeconds ?? 1800, pollIntervalMs: inputs.pollIntervalMs,
        });
    } catch (err) {
        const code = err instanceof CommandError ? err.errorCode : "";
        const hint = ["ClientNotRunning", "ClientNotResponse", "InstanceNotRunning"].includes(code)
            ? `start ${inputs.instanceId} and make sure its Cloud Assistant agent runs (or give a \`connection\` to use SSH)`
            : `read ${ATTACH_LOG} on ${inputs.instanceId}; the script is re-runnable`;
        throw new Error(`attaching ${inputs.instanceId} failed: ${scrubSecrets((err as Error).message, inputs.userData)}\n  fix: ${hint}, then run \`pulumi up\` again.`);
    }
}

/** userdata → stop → replace the system disk → start; cloud-init then runs the attach script. */
async function attachByReimage(inputs: NodeMembershipInputs, log: (m: string) => void): Promise<void> {
    const { region, instanceId } = inputs;
    const w = waitsOf(inputs);
    await callApi("ecs", "ModifyInstanceAttribute", { InstanceId: instanceId, UserData: Buffer.from(inputs.userData, "utf8").toString("base64") }, { region });
    log(`${instanceId}: userdata set to the attach script`);
    const { status } = await instanceState(region, instanceId);
    if (status !== "Stopped") {
        await callApi("ecs", "StopInstance", { InstanceId: instanceId, StoppedMode: "KeepCharging" }, { region, retry: { retryableCodes: ["IncorrectInstanceStatus"] } });
        await waitForStatus(region, instanceId, "Stopped", w, log);
    }
    // PasswordInherit keeps the instance's login password or key pair on the new disk.
    await callApi("ecs", "ReplaceSystemDisk", { InstanceId: instanceId, ImageId: inputs.imageId, PasswordInherit: true }, { region });
    log(`${instanceId}: replacing the system disk with ${inputs.imageId}`);
    await waitForStatus(region, instanceId, "Stopped", w, log);
    await callApi("ecs", "StartInstance", { InstanceId: instanceId }, { region, retry: { retryableCodes: ["IncorrectInstanceStatus"] } });
    await waitForStatus(region, instanceId, "Running", w, log);
    log(`${instanceId}: running on the new system disk; the attach script runs at first boot`);
}

/**
 * Joins the instance and waits for its Node to be Ready.
 * @throws before any call when the inputs are refused ({@link membershipProblems})
 */
export async function joinExistingNode(inputs: NodeMembershipInputs, log: (m: string) => void = () => undefined): Promise<NodeMembershipOutputs> {
    const problems = membershipProblems(inputs);
    if (problems.length > 0) throw new Error(`existing node ${inputs.instanceId}:\n  ${problems.join("\n  ")}`);
    if (inputs.mode === "auto") {
        const providerId = providerIdOf(inputs.region, inputs.instanceId);
        const target = { region: inputs.region, masterInstanceId: inputs.masterInstanceId, pollIntervalMs: inputs.pollIntervalMs };
        const node = (await getNodes(target)).find((n) => n.providerId === providerId);
        if (node?.ready) {
            log(`${inputs.instanceId}: already a Ready node (${node.name}); the system disk is left alone`);
            return { nodeName: node.name, providerId };
        }
        if (node) {
            // Joined but not Ready (a resumed `pulumi up` after a slow join): re-imaging would destroy it.
            log(`${inputs.instanceId}: already joined as ${node.name} (NotReady); the system disk is left alone, waiting for Ready`);
        } else {
            await attachByReimage(inputs, log);
        }
    } else if (inputs.mode === "manual") {
        await attachManually(inputs, log);
    }
    return waitForNodeReady(inputs, log);
}

type State = NodeMembershipInputs & NodeMembershipOutputs;

export const nodeMembershipProvider: pulumi.dynamic.ResourceProvider = {
    async check(_olds: NodeMembershipInputs, news: NodeMembershipInputs) {
        const failures = membershipProblems(news).map((p) => ({ property: p.slice(0, p.indexOf(":")), reason: p.slice(p.indexOf(":") + 2) }));
        return { inputs: news, failures };
    },
    async create(inputs: NodeMembershipInputs) {
        const outs = await joinExistingNode(inputs, (m) => pulumiLog().info(m));
        return { id: `${inputs.instanceId}/membership`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: State, news: NodeMembershipInputs) {
        // Another instance or another way of joining means leaving cleanly, then joining again. A new script
        // (a rotated token, more labels) or image does not: the node is already in, and re-joining would drain
        // it. Those take effect at the next join (`pulumi up --replace <urn>`).
        const replaces = (["instanceId", "region", "mode"] as const).filter((k) => (olds[k] ?? "") !== (news[k] ?? ""));
        const keys = ["userData", "imageId", "masterInstanceId", "replaceSystemDisk", "routeTableId", "attachTimeoutSeconds", "readyTimeoutSeconds", "pollSeconds",
            "pollIntervalMs", "drainTimeoutSeconds", "providerVersion"] as const;
        return { changes: replaces.length > 0 || keys.some((k) => olds[k] !== news[k]), replaces, deleteBeforeReplace: true };
    },
    async update(_id: string, olds: State, news: NodeMembershipInputs) {
        return { outs: { ...news, nodeName: olds.nodeName, providerId: olds.providerId } };
    },
    async delete(_id: string, props: State) {
        const log = pulumiLog();
        const opts: RemovalOptions = {
            region: props.region, masterInstanceId: props.masterInstanceId, routeTableId: props.routeTableId,
            drainTimeoutSeconds: props.drainTimeoutSeconds, pollIntervalMs: props.pollIntervalMs,
            log: (m) => log.info(m), warn: (m) => log.warn(m),
        };
        // Looked up by provider id, not taken from state: the Node may be gone already (a resumed delete,
        // or the CCM removed it after the instance was released).
        await removeNode({ instanceId: props.instanceId, kind: "existing" }, opts);
    },
};

export interface NodeMembershipArgs {
    /** Region id. */
    region: pulumi.Input<string>;
    /** The existing ECS instance. */
    instanceId: pulumi.Input<string>;
    /** `manual` (Cloud Assistant), `auto` (userdata + system disk replacement) or `ssh` (script run by a remote.Command). */
    mode: pulumi.Input<MembershipMode>;
    /** The rendered attach script; pass it as a secret. */
    userData: pulumi.Input<string>;
    /** Image of the new system disk (`auto`). */
    imageId?: pulumi.Input<string>;
    /** Confirms the destructive `auto` mode. Default false. */
    replaceSystemDisk?: pulumi.Input<boolean>;
    /** Master 0's instance id. */
    masterInstanceId: pulumi.Input<string>;
    /** Route table of the pod routes. Default none. */
    routeTableId?: pulumi.Input<string | undefined>;
    /** Cloud Assistant timeout of the attach script. Default 1800 s. */
    attachTimeoutSeconds?: pulumi.Input<number>;
    /** Bound on each wait. Default 900 s. */
    readyTimeoutSeconds?: pulumi.Input<number>;
    /** Pause between checks. Default 10 s. */
    pollSeconds?: pulumi.Input<number>;
    /** First Cloud Assistant poll delay. Default 1000 ms. */
    pollIntervalMs?: pulumi.Input<number>;
    /** Drain timeout on removal. Default 600 s. */
    drainTimeoutSeconds?: pulumi.Input<number>;
}

/** An existing ECS instance as a node of the cluster. */
export class NodeMembership extends pulumi.dynamic.Resource {
    /** The Node's name. */
    declare readonly nodeName: pulumi.Output<string>;
    /** `<region>.<instance-id>`. */
    declare readonly providerId: pulumi.Output<string>;

    constructor(name: string, args: NodeMembershipArgs, opts?: pulumi.CustomResourceOptions) {
        super(nodeMembershipProvider, name, { nodeName: undefined, providerId: undefined, providerVersion: NODE_MEMBERSHIP_PROVIDER_VERSION, ...args },
            { ...opts, additionalSecretOutputs: ["userData"] });
    }
}
