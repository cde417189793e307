/**
 * JoinInfo: the join material every node needs, and the stack's own credential, read from master 0 over
 * Cloud Assistant once `kubeadm init` has finished: the CA certificate hash (`sha256:` of the CA's
 * SubjectPublicKeyInfo, computed here with crypto.X509Certificate, right for RSA and ECDSA) and a kubeconfig
 * for the API endpoint that authenticates as the ServiceAccount kube-system/alicloud-kubeadm-stack (bound to
 * cluster-admin) with the token of its own Secret (`credential`, made by the stack-credential operation and
 * answered sealed to a key made for that one call, src/cloud/channel.ts). The stack never holds admin.conf.
 * The token does not expire; deleting its Secret revokes it; replacing this resource rotates it (a new Secret,
 * then the old one deleted): docs/security.md#the-stacks-kubeconfig. Both outputs are Pulumi secrets.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError, runOnInstance } from "../cloud/cloudAssistant";
import { newRecipient } from "../cloud/channel";
import { cannotRunCommands, classify } from "../cloud/errors";
import { waitFor } from "../cloud/wait";
import { fillOperation, STACK_CREDENTIAL_PATTERN } from "../rules";
import { logInfo, pulumiLog } from "./log";
import { withPacingLog } from "./pacing";
import { yamlLibrary } from "./libraries";
import { dynamicResourceProps, type ResourceArgs } from "./access";
import { alwaysAnswered } from "./answered";
import { diffInputs, inputDiff } from "./diff";

/** Where src/shell/master_init.sh leaves its markers and log, and kubeadm its files (init-status.sh reads them). */
export const MASTER_PATHS = {
    failed: "/var/lib/alicloud-kubeadm/init.failed",
    log: "/var/log/alicloud-kubeadm/master-init.log",
    caCert: "/etc/kubernetes/pki/ca.crt",
} as const;

export interface JoinInfoInputs {
    /** Region id, e.g. `cn-hangzhou`. Required. */
    region: string;
    /** Master 0, which ran `kubeadm init`. Required. */
    masterInstanceId: string;
    /** `https://host:6443` written into the returned kubeconfig. Required. */
    kubeconfigServer: string;
    /**
     * The init-status, stack-credential and stack-credential-revoke operations, rendered at program time
     * (src/shell/ops; the last two with `{{credential}}` and `{{recipient}}` filled in here): run once per
     * cluster with RunCommand while master 0 comes up, so not saved as commands. Required.
     */
    scripts: JoinInfoScripts;
    /** Bound on the wait for `kubeadm init`, seconds. Default 1800 (package installs on a fresh image take minutes). */
    waitTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 15. */
    pollSeconds?: number;
    /** Changes when the provider's code changes, so Pulumi re-runs it. */
    providerVersion?: string;
}

/** The arguments of a JoinInfo (documented in {@link JoinInfoInputs}). */
export type JoinInfoArgs = ResourceArgs<JoinInfoInputs>;

/** The one-off operations JoinInfo runs on master 0. */
export interface JoinInfoScripts {
    initStatus: string;
    stackCredential: string;
    stackCredentialRevoke: string;
}

export interface JoinInfoOutputs {
    /** `sha256:<hex>` for `caCertHashes`. */
    caCertHash: string;
    /** The stack's kubeconfig (service-account token of `credential`), server = kubeconfigServer. */
    kubeconfig: string;
    /** Name of the token Secret in kube-system that backs the kubeconfig (not secret). */
    credential: string;
}

/** The outputs of a JoinInfo that are secrets. */
export const JOIN_INFO_SECRET_OUTPUTS = ["caCertHash", "kubeconfig"] as const;

/** A fresh stack credential name `alicloud-kubeadm-stack-<8 of [a-z0-9]>`. */
export function newCredentialName(): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
    return `alicloud-kubeadm-stack-${Array.from({ length: 8 }, () => alphabet[crypto.randomInt(alphabet.length)]).join("")}`;
}

/** The stack's kubeconfig: the cluster CA, the API endpoint, and the service-account token. */
export function stackKubeconfig(server: string, caPem: string, token: string): string {
    const YAML = yamlLibrary();
    return YAML.stringify({
        apiVersion: "v1", kind: "Config",
        clusters: [{ name: "kubernetes", cluster: { server, "certificate-authority-data": Buffer.from(caPem, "utf8").toString("base64") } }],
        users: [{ name: "alicloud-kubeadm-stack", user: { token } }],
        contexts: [{ name: "alicloud-kubeadm-stack@kubernetes", context: { cluster: "kubernetes", user: "alicloud-kubeadm-stack" } }],
        "current-context": "alicloud-kubeadm-stack@kubernetes",
    });
}

/** `sha256:<hex>` of the certificate's SubjectPublicKeyInfo, as kubeadm's `caCertHashes` expects. */
export function caCertHash(pem: string): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const cert = new crypto.X509Certificate(pem);
    const spki = cert.publicKey.export({ type: "spki", format: "der" });
    return `sha256:${crypto.createHash("sha256").update(spki).digest("hex")}`;
}

/** Sets every cluster's `server` in a kubeconfig to `server`. */
export function rewriteKubeconfigServer(kubeconfig: string, server: string): string {
    const YAML = yamlLibrary();
    const doc = YAML.parse(kubeconfig) as { clusters?: Array<{ cluster?: { server?: string } }> };
    if (!doc || !Array.isArray(doc.clusters) || doc.clusters.length === 0) {
        throw new Error("the admin kubeconfig on master 0 has no clusters section");
    }
    for (const c of doc.clusters) {
        if (c.cluster) {
            c.cluster.server = server;
        }
    }
    return YAML.stringify(doc);
}

/**
 * Waits (bounded) for kubeadm init on master 0, then reads the CA hash and makes (or reads back) the stack's
 * credential `inputs.credential` (a fresh name when unset).
 * @param log progress messages for the Pulumi log
 * @throws when init failed (with the tail of the init log) or the wait ran out
 */
export async function readJoinInfo(inputs: JoinInfoInputs & { credential?: string }, log: (msg: string) => void = () => undefined): Promise<JoinInfoOutputs> {
    const { region, masterInstanceId: instanceId } = inputs;
    const timeoutMs = (inputs.waitTimeoutSeconds ?? 1800) * 1000;
    const pollMs = (inputs.pollSeconds ?? 15) * 1000;
    const pollIntervalMs = Math.min(1000, pollMs);
    const caPem = await waitFor<string>(async () => {
        let status = "waiting";
        let body = "";
        try {
            const out = await runOnInstance({ region, instanceId, script: inputs.scripts.initStatus, name: "alicloud-kubeadm init-status", timeoutSeconds: 30, pollIntervalMs });
            const newline = out.indexOf("\n");
            status = (newline < 0 ? out : out.slice(0, newline)).trim().replace(/^status=/, "");
            body = newline < 0 ? "" : out.slice(newline + 1);
        } catch (err) {
            // The agent or the instance not ready yet: master 0 is still booting, keep waiting.
            if (!(err instanceof CommandError && cannotRunCommands(err.errorCode))) {
                throw err;
            }
            status = `waiting (Cloud Assistant: ${err.errorCode})`;
        }
        if (status === "done") return { done: true, value: Buffer.from(body.trim(), "base64").toString("utf8") };
        if (status === "failed") {
            throw new Error(`kubeadm init failed on master 0 (${instanceId}):\n${body.trim()}\n` +
                `Fix the cause, then on ${instanceId} run 'kubeadm reset -f', delete ${MASTER_PATHS.failed} and re-run the userdata ` +
                "(or replace the instance with `pulumi up --replace <master-0 urn>`), then `pulumi up` again.");
        }
        return { done: false, state: status };
    }, { timeoutMs, firstDelayMs: pollMs, maxDelayMs: pollMs, factor: 1, log: (status) => log(`waiting for kubeadm init on ${instanceId}: ${status}`), logEveryMs: 4 * pollMs - 1 },
    (status) => new Error(`kubeadm init on master 0 (${instanceId}) did not finish within ${Math.round(timeoutMs / 1000)} s (last status: ${status}). ` +
        `Look at ${MASTER_PATHS.log} on the instance (or run \`npm run doctor\`); \`pulumi up\` again resumes the wait.`));
    let hash: string;
    try {
        hash = caCertHash(caPem);
    } catch (err) {
        throw new Error(`${MASTER_PATHS.caCert} on ${instanceId} is not a PEM certificate: ${(err as Error).message}`);
    }
    const credential = inputs.credential ?? newCredentialName();
    if (!STACK_CREDENTIAL_PATTERN.test(credential)) throw new Error(`credential "${credential}" is not a stack credential name`);
    const recipient = newRecipient();
    const sealed = await runOnInstance({
        region, instanceId, name: "alicloud-kubeadm stack-credential", timeoutSeconds: 120, sensitiveOutput: true, pollIntervalMs,
        script: fillOperation(inputs.scripts.stackCredential, "stack-credential", { credential, recipient: recipient.publicKey }),
    });
    const token = recipient.open(sealed);
    if (!/^[A-Za-z0-9._-]+$/.test(token)) throw new Error(`master 0 (${instanceId}) answered stack-credential with something that is not a service-account token`);
    log(`kubeadm init finished on ${instanceId}; read the CA hash and the stack's credential (kube-system/${credential})`);
    return { caCertHash: hash, kubeconfig: stackKubeconfig(inputs.kubeconfigServer, caPem, token), credential };
}

/**
 * Deletes a stack credential's Secret on master 0 (revokes its token); the Secret already gone is fine. When it
 * cannot (master gone, agent offline, API server down) it warns with the command to run by hand, never throws.
 */
export async function revokeStackCredential(inputs: JoinInfoInputs, credential: string, warn: (m: string) => void = () => undefined): Promise<void> {
    if (!STACK_CREDENTIAL_PATTERN.test(credential)) return;
    try {
        await runOnInstance({
            region: inputs.region, instanceId: inputs.masterInstanceId, name: "alicloud-kubeadm stack-credential-revoke", timeoutSeconds: 60,
            pollIntervalMs: Math.min(1000, (inputs.pollSeconds ?? 15) * 1000),
            script: fillOperation(inputs.scripts.stackCredentialRevoke, "stack-credential-revoke", { credential }),
        });
    } catch (err) {
        // Never blocks a destroy or a replacement (the API server may be down): says what to run instead.
        const why = err instanceof CommandError ? err.errorCode || `exit ${err.exitCode}` : (err as Error).message;
        const gone = err instanceof CommandError && (classify(err.errorCode) === "not-found" || cannotRunCommands(err.errorCode));
        warn(`could not revoke the stack credential kube-system/${credential} on master 0 (${inputs.masterInstanceId}: ${why}); ` +
            `${gone ? "if the cluster still runs, " : ""}delete it by hand: kubectl -n kube-system delete secret ${credential}`);
    }
}

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
/** 3: a new master 0 (`masterInstanceId`) is an update that keeps the join material (docs/disaster-recovery.md). */
export const JOIN_INFO_PROVIDER_VERSION = "3";

/**
 * A new master 0 is not a new cluster: it re-joins the members (or is restored from a backup) with the same CA, and the
 * stack's credential lives in etcd. So it updates, keeping the join material (docs/disaster-recovery.md); a replacement
 * would wait for a `kubeadm init` that the new master 0 never runs (src/shell/master_guard.sh) and revoke the credential.
 * A new kubeconfig server or new scripts are read again in place. The waits are read only while master 0 comes up, and
 * the region never changes under master 0: neither is a change.
 */
const JOIN_INFO_DIFF = inputDiff<JoinInfoInputs>()({
    replace: [],
    update: ["masterInstanceId", "kubeconfigServer", "providerVersion", "scripts"],
    ignore: ["region", "waitTimeoutSeconds", "pollSeconds"],
});

export const joinInfoProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async create(inputs: JoinInfoInputs) {
        const outs = await readJoinInfo(inputs, logInfo);
        return { id: `${inputs.masterInstanceId}/join-info`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: JoinInfoInputs & JoinInfoOutputs, news: JoinInfoInputs) {
        return { ...diffInputs(JOIN_INFO_DIFF, olds, news), deleteBeforeReplace: false };
    },
    async update(_id: string, olds: JoinInfoInputs & Partial<JoinInfoOutputs>, news: JoinInfoInputs) {
        if (olds.masterInstanceId !== news.masterInstanceId && olds.caCertHash && olds.kubeconfig && olds.credential) {
            pulumiLog().info(`master 0 is now ${news.masterInstanceId}: the cluster's CA pin and the stack's credential are kept`);
            const kubeconfig = olds.kubeconfigServer === news.kubeconfigServer ? olds.kubeconfig : olds.kubeconfig.split(olds.kubeconfigServer).join(news.kubeconfigServer);
            return { outs: { ...news, caCertHash: olds.caCertHash, kubeconfig, credential: olds.credential } };
        }
        // The same credential is read back (a state from before version 2 gets its first one; its admin.conf copy is dropped).
        return { outs: { ...news, ...(await readJoinInfo({ ...news, credential: olds.credential }, logInfo)) } };
    },
    async delete(_id: string, props: JoinInfoInputs & Partial<JoinInfoOutputs>) {
        // The join material lives on master 0 and goes with it; the stack credential is revoked (a replacement rotates it).
        if (props.credential && props.scripts?.stackCredentialRevoke) await revokeStackCredential(props, props.credential, (m) => pulumiLog().warn(m));
    },
});

/** Reads the CA hash and the stack's credential from master 0 once kubeadm init has finished. */
export class JoinInfo extends pulumi.dynamic.Resource {
    /** `sha256:<hex>` of the cluster CA's public key (secret). */
    declare readonly caCertHash: pulumi.Output<string>;
    /** The stack's kubeconfig (service-account token bound to cluster-admin) for the API endpoint (secret). */
    declare readonly kubeconfig: pulumi.Output<string>;
    /** The token Secret in kube-system behind the kubeconfig: delete it to revoke. */
    declare readonly credential: pulumi.Output<string>;

    constructor(name: string, args: JoinInfoArgs, opts?: pulumi.CustomResourceOptions) {
        super(joinInfoProvider, name, ...dynamicResourceProps(["caCertHash", "kubeconfig", "credential"], JOIN_INFO_PROVIDER_VERSION, args, JOIN_INFO_SECRET_OUTPUTS, opts));
        alwaysAnswered(this, ["caCertHash", "kubeconfig", "credential"]);
    }
}
