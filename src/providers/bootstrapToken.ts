/**
 * BootstrapToken: a kubeadm bootstrap token that nodes join with. Its id (`[a-z0-9]{6}`, public) is chosen
 * here with `crypto`; its secret half is made on the master by the token-create operation (`kubeadm token
 * create`), run once with RunCommand — never a saved command, which anyone allowed to invoke it could point at a
 * key of their own — and answered sealed to a key made for that one call (src/cloud/channel.ts), so it appears
 * in no Cloud Assistant record; the token is deleted with its owner (the saved token-delete). The token is a
 * secret output (declared by the resource itself); it never appears in an error message or in the Pulumi log.
 *
 * One per node pool and one for the existing nodes. ESS userdata is static, so a pool token must live
 * as long as the pool's scaling configuration: the default ttl is `0` (never expires). Rotate a token by
 * replacing the resource (`pulumi up --replace <urn>`): the scaling configuration that embeds it is
 * replaced with it, and the old token is deleted from the cluster.
 */
import * as pulumi from "@pulumi/pulumi";
import { CommandError } from "../cloud/cloudAssistant";
import { classify } from "../cloud/errors";
import { createToken, deleteToken, type ClusterAccess } from "../cloud/operations";
import { clusterAccess, dynamicResourceProps, type ClusterAccessInputs, type ResourceArgs } from "./access";
import { alwaysAnswered } from "./answered";
import { diffInputs, inputDiff } from "./diff";
import { pulumiLog } from "./log";
import { withPacingLog } from "./pacing";
import { TOKEN_ID_PATTERN, TOKEN_PATTERN } from "../rules";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
/** 3: token-create runs once with RunCommand (`tokenCreateScript`), no longer as a saved command. */
export const BOOTSTRAP_TOKEN_PROVIDER_VERSION = "3";

/** The outputs of a BootstrapToken that are secrets: the token (its id is public). */
export const BOOTSTRAP_TOKEN_SECRET_OUTPUTS = ["token"] as const;

export { TOKEN_PATTERN };


export interface BootstrapTokenInputs extends ClusterAccessInputs {
    /** The token-create operation, `renderOperation("token-create")` (its parameters filled in at run time). Required. */
    tokenCreateScript: string;
    /**
     * Token lifetime as `kubeadm token create --ttl` takes it (`0` = never expires, `24h`). Default `0` (ESS
     * userdata is static). Changing it replaces the token.
     */
    ttl?: string;
    /** `--description` of the token, e.g. `alicloud-kubeadm pool general`. Default `alicloud-kubeadm`. Changing it replaces the token. */
    description?: string;
    /** Changes when the provider's code changes. */
    providerVersion?: string;
}

/** The arguments of a BootstrapToken (documented in {@link BootstrapTokenInputs}). */
export type BootstrapTokenArgs = ResourceArgs<BootstrapTokenInputs>;

/** A new master, lifetime or description is a new token; new command ids, masters or token-create script are an update: the token itself stays. */
const BOOTSTRAP_TOKEN_DIFF = inputDiff<BootstrapTokenInputs>()({
    replace: ["masterInstanceId", "ttl", "description", "region"],
    update: ["providerVersion", "pollIntervalMs", "commands", "masterInstanceIds", "tokenCreateScript"],
    ignore: [],
});

export interface BootstrapTokenOutputs {
    /** The full token `id.secret` (secret). */
    token: string;
    /** The public part, `[a-z0-9]{6}` (not secret: it names the token's Secret `bootstrap-token-<id>`). */
    tokenId: string;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A fresh random bootstrap token `[a-z0-9]{6}.[a-z0-9]{16}` (crypto.randomInt, uniform over the alphabet). */
export function generateToken(): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const crypto = require("crypto") as typeof import("crypto");
    const pick = (n: number) => Array.from({ length: n }, () => ALPHABET[crypto.randomInt(ALPHABET.length)]).join("");
    return `${pick(6)}.${pick(16)}`;
}

function accessOf(inputs: BootstrapTokenInputs): ClusterAccess {
    return clusterAccess(inputs);
}

/**
 * Creates a fresh token on master 0.
 * @throws Error naming the master and the fix; never containing the token.
 */
export async function createBootstrapToken(inputs: BootstrapTokenInputs): Promise<BootstrapTokenOutputs> {
    const tokenId = generateToken().slice(0, 6);
    const ttl = inputs.ttl ?? "0";
    try {
        const { token } = await createToken(accessOf(inputs), inputs.tokenCreateScript, tokenId, ttl, inputs.description ?? "alicloud-kubeadm");
        return { token, tokenId };
    } catch (err) {
        // The command may have run even though its result was lost: nothing would own that token, so
        // delete it (best effort) before failing.
        await deleteBootstrapToken(inputs, tokenId).catch(() => undefined);
        const code = err instanceof CommandError ? ` (${err.errorCode})` : "";
        throw new Error(`creating a bootstrap token on master 0 (${inputs.masterInstanceId}) failed${code}: ` +
            `${(err as Error).message.replace(/[a-z0-9]{6}\.[a-z0-9]{16}/g, "<token>")}\n  fix: check that kubeadm init finished on ${inputs.masterInstanceId} ` +
            "(`npm run doctor`) and that its Cloud Assistant agent is online, then run `pulumi up` again.");
    }
}

/**
 * Deletes the token from the cluster. A token already gone, or a master that no longer exists, is fine.
 * @param warn called when there was nothing to delete
 */
export async function deleteBootstrapToken(inputs: BootstrapTokenInputs, tokenId: string, warn: (m: string) => void = () => undefined): Promise<void> {
    if (!TOKEN_ID_PATTERN.test(tokenId)) throw new Error(`"${tokenId}" is not a bootstrap token id`);
    try {
        if ((await deleteToken(accessOf(inputs), tokenId)) === "already gone") warn(`bootstrap token ${tokenId} was already gone from the cluster`);
    } catch (err) {
        if (err instanceof CommandError && classify(err.errorCode) === "not-found") {
            warn(`master 0 (${inputs.masterInstanceId}) no longer exists; bootstrap token ${tokenId} went with it`);
            return;
        }
        throw new Error(`deleting bootstrap token ${tokenId} on master 0 (${inputs.masterInstanceId}) failed: ${(err as Error).message}\n` +
            `  fix: start ${inputs.masterInstanceId} or bring its Cloud Assistant agent online and run the same command again; ` +
            `or delete it by hand (\`kubeadm token delete ${tokenId}\`) and \`pulumi state delete\` this resource.`);
    }
}

export const bootstrapTokenProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async create(inputs: BootstrapTokenInputs) {
        const outs = await createBootstrapToken(inputs);
        return { id: `${inputs.masterInstanceId}/token/${outs.tokenId}`, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: BootstrapTokenInputs & BootstrapTokenOutputs, news: BootstrapTokenInputs) {
        // Create the new token before deleting the old one: nodes joining meanwhile keep working.
        return { ...diffInputs(BOOTSTRAP_TOKEN_DIFF, olds, news), deleteBeforeReplace: false };
    },
    async update(_id: string, olds: BootstrapTokenInputs & BootstrapTokenOutputs, news: BootstrapTokenInputs) {
        return { outs: { ...news, token: olds.token, tokenId: olds.tokenId } };
    },
    async delete(_id: string, props: BootstrapTokenInputs & BootstrapTokenOutputs) {
        await deleteBootstrapToken(props, props.tokenId, (m) => pulumiLog().warn(m));
    },
});

/** A kubeadm bootstrap token on master 0; `token` is a secret. */
export class BootstrapToken extends pulumi.dynamic.Resource {
    /** `id.secret` (secret). */
    declare readonly token: pulumi.Output<string>;
    /** The public token id. */
    declare readonly tokenId: pulumi.Output<string>;

    constructor(name: string, args: BootstrapTokenArgs, opts?: pulumi.CustomResourceOptions) {
        super(bootstrapTokenProvider, name, ...dynamicResourceProps(["token", "tokenId"], BOOTSTRAP_TOKEN_PROVIDER_VERSION, args, BOOTSTRAP_TOKEN_SECRET_OUTPUTS, opts));
        alwaysAnswered(this, ["token", "tokenId"]);
    }
}
