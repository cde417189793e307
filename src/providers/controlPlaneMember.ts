/**
 * ControlPlaneMember: joins master 1..n-1 with `kubeadm join --control-plane` over Cloud Assistant.
 * On create it asks master 0 for a fresh certificate key (`kubeadm init phase upload-certs
 * --upload-certs`, valid 2 h) and a short-lived token (30 min), puts both into the rendered join
 * script, runs it on the member, and waits for its Node to be Ready. On delete it runs the removal
 * core for a control-plane node: drain, `kubeadm reset` (which removes its etcd member), delete Node.
 * Joins are serialised by the caller (each member depends on the previous one): etcd grows one
 * member at a time.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError, runOnInstance } from "../cloud/cloudAssistant";
import { getNodes, providerIdOf } from "../cloud/kubectl";
import { removeNode } from "../removal";
import { pulumiLog } from "./log";
import { CERTIFICATE_KEY_PATTERN, TOKEN_PATTERN } from "../rules";

/** Secrets from master 0 for one join. */
export interface JoinSecrets {
    token: string;
    certificateKey: string;
}

/** Script run on master 0: prints `<token> <certificate key>`. */
export function joinSecretsScript(): string {
    return [
        "#!/bin/bash",
        "set -euo pipefail",
        "key=$(kubeadm init phase upload-certs --upload-certs 2>/dev/null | tail -n 1)",
        "token=$(kubeadm token create --ttl 30m --description 'alicloud-kubeadm control-plane join')",
        "printf '%s %s\\n' \"$token\" \"$key\"",
    ].join("\n");
}

/** Parses the output of {@link joinSecretsScript}; never echoes it in an error. */
export function parseJoinSecrets(output: string): JoinSecrets {
    const [token, certificateKey] = output.trim().split(/\s+/);
    if (!TOKEN_PATTERN.test(token ?? "") || !CERTIFICATE_KEY_PATTERN.test(certificateKey ?? "")) {
        throw new Error("master 0 did not print a bootstrap token and a certificate key (kubeadm upload-certs / token create failed); " +
            "check /etc/kubernetes/admin.conf and kubeadm on master 0");
    }
    return { token, certificateKey };
}

/** Replaces one `readonly NAME='…'` header line of a rendered script. */
export function setHeader(script: string, name: string, value: string): string {
    const line = new RegExp(`^readonly ${name}='(?:[^']|'\\\\'')*'$`, "m");
    if (!line.test(script)) {
        throw new Error(`the join script template has no ${name} parameter`);
    }
    return script.replace(line, () => `readonly ${name}='${value.replace(/'/g, `'\\''`)}'`);
}

export interface ControlPlaneMemberInputs {
    region: string;
    /** Master 0 (issues the token and certificate key; runs kubectl). */
    masterInstanceId: string;
    /** The master to join. */
    memberInstanceId: string;
    /**
     * The rendered control-plane join script (userdata/render.ts renderControlPlaneJoin) with placeholder
     * token and certificate key; the real ones are put in at create time and never stored.
     */
    joinScript: string;
    /** Route table, for the pod-route clean-up on delete. */
    routeTableId?: string;
    /** Bound on the join (package install + join), seconds. Default 1800. */
    joinTimeoutSeconds?: number;
    /** Bound on the wait for Ready after the join, seconds. Default 600. */
    readyTimeoutSeconds?: number;
    /** Pause between Ready checks, seconds. Default 10. */
    pollSeconds?: number;
    providerVersion?: string;
}

/** Joins the member; returns its Node name once Ready. */
export async function joinControlPlaneMember(inputs: ControlPlaneMemberInputs, log: (m: string) => void = () => undefined): Promise<string> {
    const { region, masterInstanceId, memberInstanceId } = inputs;
    const pollMs = (inputs.pollSeconds ?? 10) * 1000;
    const pollIntervalMs = Math.min(1000, pollMs);
    const master = { region, masterInstanceId, pollIntervalMs };
    const providerId = providerIdOf(region, memberInstanceId);

    const existing = (await getNodes(master)).find((n) => n.providerId === providerId);
    if (!existing) {
        log(`asking master 0 (${masterInstanceId}) for a certificate key and a join token`);
        const secrets = parseJoinSecrets(await runOnInstance({
            region, instanceId: masterInstanceId, script: joinSecretsScript(), name: "alicloud-kubeadm-control-plane-join-secrets",
            timeoutSeconds: 120, sensitiveOutput: true, pollIntervalMs,
        }));
        const script = setHeader(setHeader(inputs.joinScript, "AK_BOOTSTRAP_TOKEN", secrets.token), "AK_CERTIFICATE_KEY", secrets.certificateKey);
        log(`joining ${memberInstanceId} to the control plane (installs packages, then kubeadm join --control-plane)`);
        try {
            await runOnInstance({
                region, instanceId: memberInstanceId, script, name: "alicloud-kubeadm-control-plane-join",
                timeoutSeconds: inputs.joinTimeoutSeconds ?? 1800, sensitiveOutput: true, pollIntervalMs, pollMaxIntervalMs: 10_000,
            });
        } catch (err) {
            const tail = await runOnInstance({
                region, instanceId: memberInstanceId, name: "alicloud-kubeadm-join-log", timeoutSeconds: 30, pollIntervalMs,
                script: "tail -c 2000 /var/log/alicloud-kubeadm/attach-node.log 2>/dev/null || echo '(no join log)'",
            }).catch(() => "(could not read the join log)");
            const code = err instanceof CommandError ? ` (${err.errorCode || `exit ${err.exitCode}`})` : "";
            throw new Error(`kubeadm join --control-plane failed on ${memberInstanceId}${code}. Last lines of /var/log/alicloud-kubeadm/attach-node.log:\n${tail}\n` +
                "Fix the cause and run `pulumi up` again: the join script cleans up a failed join before retrying.");
        }
    } else {
        log(`${memberInstanceId} is already a node (${existing.name}); waiting for Ready`);
    }

    const deadline = Date.now() + (inputs.readyTimeoutSeconds ?? 600) * 1000;
    for (;;) {
        const node = (await getNodes(master)).find((n) => n.providerId === providerId);
        if (node?.ready) {
            log(`control-plane member ${memberInstanceId} is Ready as ${node.name}`);
            return node.name;
        }
        if (Date.now() + pollMs > deadline) {
            throw new Error(`control-plane member ${memberInstanceId} joined but is not Ready after ${inputs.readyTimeoutSeconds ?? 600} s ` +
                `(${node ? `node ${node.name} NotReady` : `no Node with provider id ${providerId}`}); check the pod network and \`npm run doctor\``);
        }
        await new Promise((r) => setTimeout(r, pollMs));
    }
}

export const CONTROL_PLANE_MEMBER_PROVIDER_VERSION = "1";

export const controlPlaneMemberProvider: pulumi.dynamic.ResourceProvider = {
    async create(inputs: ControlPlaneMemberInputs) {
        const nodeName = await joinControlPlaneMember(inputs, (m) => pulumiLog().info(m));
        return { id: inputs.memberInstanceId, outs: { ...inputs, nodeName } };
    },
    async diff(_id: string, olds: ControlPlaneMemberInputs, news: ControlPlaneMemberInputs) {
        const replaces = ["memberInstanceId", "masterInstanceId"].filter((k) => olds[k as keyof ControlPlaneMemberInputs] !== news[k as keyof ControlPlaneMemberInputs]);
        // A changed join script matters only for the next join; no update needed.
        return { changes: replaces.length > 0 || olds.providerVersion !== news.providerVersion, replaces, deleteBeforeReplace: true };
    },
    async update(_id: string, olds: ControlPlaneMemberInputs & { nodeName: string }, news: ControlPlaneMemberInputs) {
        return { outs: { ...news, nodeName: olds.nodeName } };
    },
    async delete(_id: string, props: ControlPlaneMemberInputs) {
        const log = pulumiLog();
        await removeNode({ instanceId: props.memberInstanceId, kind: "control-plane" }, {
            region: props.region, masterInstanceId: props.masterInstanceId, routeTableId: props.routeTableId,
            pollIntervalMs: Math.min(1000, (props.pollSeconds ?? 10) * 1000), log: (m) => log.info(m), warn: (m) => log.warn(m),
        });
    },
};

export interface ControlPlaneMemberArgs {
    region: pulumi.Input<string>;
    masterInstanceId: pulumi.Input<string>;
    memberInstanceId: pulumi.Input<string>;
    /** Rendered join script with placeholder secrets (see ControlPlaneMemberInputs.joinScript). */
    joinScript: pulumi.Input<string>;
    routeTableId?: pulumi.Input<string>;
    joinTimeoutSeconds?: pulumi.Input<number>;
    readyTimeoutSeconds?: pulumi.Input<number>;
    pollSeconds?: pulumi.Input<number>;
}

/** A master 1..n-1 joined with `kubeadm join --control-plane` (see the module comment). */
export class ControlPlaneMember extends pulumi.dynamic.Resource {
    declare readonly nodeName: pulumi.Output<string>;

    constructor(name: string, args: ControlPlaneMemberArgs, opts?: pulumi.CustomResourceOptions) {
        super(controlPlaneMemberProvider, name, { nodeName: undefined, providerVersion: CONTROL_PLANE_MEMBER_PROVIDER_VERSION, ...args }, opts);
    }
}
