/**
 * JoinInfo: the join material every node needs, read back from master 0 over Cloud Assistant once
 * `kubeadm init` has finished: the CA certificate hash (`sha256:` of the CA's SubjectPublicKeyInfo,
 * computed here with crypto.X509Certificate, right for RSA and ECDSA) and the admin kubeconfig with
 * its server set to the API endpoint. Both outputs are Pulumi secrets.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError, runOnInstance } from "../cloud/cloudAssistant";
import { cannotRunCommands } from "../cloud/errors";
import { logInfo } from "./log";
import { yamlLibrary } from "./libraries";

/** Where src/shell/master_init.sh leaves its markers and log, and kubeadm its files (init-status.sh reads them). */
export const MASTER_PATHS = {
    failed: "/var/lib/alicloud-kubeadm/init.failed",
    log: "/var/log/alicloud-kubeadm/master-init.log",
    caCert: "/etc/kubernetes/pki/ca.crt",
} as const;

export interface JoinInfoInputs {
    /** Region id, e.g. `cn-hangzhou`. */
    region: string;
    /** Master 0, which ran `kubeadm init`. */
    masterInstanceId: string;
    /** `https://host:6443` written into the returned kubeconfig. */
    kubeconfigServer: string;
    /**
     * The init-status and read-kubeconfig operations, rendered at program time (src/shell/ops): run once per
     * cluster with RunCommand while master 0 comes up, so not saved as commands.
     */
    scripts: { initStatus: string; readKubeconfig: string };
    /** Bound on the wait for `kubeadm init`, seconds. Default 1800 (package installs on a fresh image take minutes). */
    waitTimeoutSeconds?: number;
    /** Pause between checks, seconds. Default 15. */
    pollSeconds?: number;
    /** Changes when the provider's code changes, so Pulumi re-runs it. */
    providerVersion?: string;
}

export interface JoinInfoOutputs {
    /** `sha256:<hex>` for `caCertHashes`. */
    caCertHash: string;
    /** Admin kubeconfig, server = kubeconfigServer. */
    kubeconfig: string;
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits (bounded) for kubeadm init on master 0, then reads the CA hash and the admin kubeconfig.
 * @param log progress messages for the Pulumi log
 * @throws when init failed (with the tail of the init log) or the wait ran out
 */
export async function readJoinInfo(inputs: JoinInfoInputs, log: (msg: string) => void = () => undefined): Promise<JoinInfoOutputs> {
    const { region, masterInstanceId: instanceId } = inputs;
    const timeoutMs = (inputs.waitTimeoutSeconds ?? 1800) * 1000;
    const pollMs = (inputs.pollSeconds ?? 15) * 1000;
    const pollIntervalMs = Math.min(1000, pollMs);
    const start = Date.now();
    let caPem: string | undefined;
    for (let attempt = 0; caPem === undefined; attempt++) {
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
        if (status === "done") {
            caPem = Buffer.from(body.trim(), "base64").toString("utf8");
            break;
        }
        if (status === "failed") {
            throw new Error(`kubeadm init failed on master 0 (${instanceId}):\n${body.trim()}\n` +
                `Fix the cause, then on ${instanceId} run 'kubeadm reset -f', delete ${MASTER_PATHS.failed} and re-run the userdata ` +
                "(or replace the instance with `pulumi up --replace <master-0 urn>`), then `pulumi up` again.");
        }
        const elapsed = Date.now() - start;
        if (elapsed + pollMs > timeoutMs) {
            throw new Error(`kubeadm init on master 0 (${instanceId}) did not finish within ${Math.round(timeoutMs / 1000)} s (last status: ${status}). ` +
                `Look at ${MASTER_PATHS.log} on the instance (or run \`npm run doctor\`); \`pulumi up\` again resumes the wait.`);
        }
        if (attempt % 4 === 0) {
            log(`waiting for kubeadm init on ${instanceId}: ${status}, ${Math.round(elapsed / 1000)} s elapsed`);
        }
        await sleep(pollMs);
    }
    let hash: string;
    try {
        hash = caCertHash(caPem);
    } catch (err) {
        throw new Error(`${MASTER_PATHS.caCert} on ${instanceId} is not a PEM certificate: ${(err as Error).message}`);
    }
    const adminConf = await runOnInstance({
        region, instanceId, name: "alicloud-kubeadm read-kubeconfig", timeoutSeconds: 30, sensitiveOutput: true, pollIntervalMs, script: inputs.scripts.readKubeconfig,
    });
    log(`kubeadm init finished on ${instanceId}; read the CA hash and the admin kubeconfig`);
    return { caCertHash: hash, kubeconfig: rewriteKubeconfigServer(adminConf, inputs.kubeconfigServer) };
}

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const JOIN_INFO_PROVIDER_VERSION = "1";

export const joinInfoProvider: pulumi.dynamic.ResourceProvider = {
    async create(inputs: JoinInfoInputs) {
        const outs = await readJoinInfo(inputs, logInfo);
        return { id: `${inputs.masterInstanceId}/join-info`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: JoinInfoInputs & JoinInfoOutputs, news: JoinInfoInputs) {
        const replaces = olds.masterInstanceId !== news.masterInstanceId ? ["masterInstanceId"] : [];
        const changed = olds.kubeconfigServer !== news.kubeconfigServer || olds.providerVersion !== news.providerVersion ||
            JSON.stringify(olds.scripts) !== JSON.stringify(news.scripts);
        return { changes: replaces.length > 0 || changed, replaces, deleteBeforeReplace: false };
    },
    async update(_id: string, _olds: JoinInfoInputs & JoinInfoOutputs, news: JoinInfoInputs) {
        return { outs: { ...news, ...(await readJoinInfo(news, logInfo)) } };
    },
    async delete() {
        // Nothing to undo: the material lives on master 0 and goes with it.
    },
};

export interface JoinInfoArgs {
    region: pulumi.Input<string>;
    masterInstanceId: pulumi.Input<string>;
    kubeconfigServer: pulumi.Input<string>;
    /** The init-status and read-kubeconfig scripts (`renderOperation`). */
    scripts: pulumi.Input<{ initStatus: string; readKubeconfig: string }>;
    /** Default 1800 s. */
    waitTimeoutSeconds?: pulumi.Input<number>;
    /** Default 15 s. */
    pollSeconds?: pulumi.Input<number>;
}

/** Reads the CA hash and the admin kubeconfig from master 0 once kubeadm init has finished. */
export class JoinInfo extends pulumi.dynamic.Resource {
    /** `sha256:<hex>` of the cluster CA's public key (secret). */
    declare readonly caCertHash: pulumi.Output<string>;
    /** Admin kubeconfig pointing at the API endpoint (secret). */
    declare readonly kubeconfig: pulumi.Output<string>;

    constructor(name: string, args: JoinInfoArgs, opts?: pulumi.CustomResourceOptions) {
        super(joinInfoProvider, name, { caCertHash: undefined, kubeconfig: undefined, providerVersion: JOIN_INFO_PROVIDER_VERSION, ...args },
            { ...opts, additionalSecretOutputs: ["caCertHash", "kubeconfig"] });
    }
}
