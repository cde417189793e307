// Where doctor's Alibaba Cloud credentials come from, decided from this machine alone. The SDK's default
// chain ends with the ECS metadata service and a credentials URI: without any local source it asks
// 100.100.100.200 and resolves the host "undefined", then reports every provider's failure glued together.
// doctor checks first and says once what to set; it only reaches the instance metadata service when
// ALIBABA_CLOUD_ECS_METADATA names the instance's RAM role.
import * as fs from "fs";
import * as path from "path";

/** The fix printed when there is no credential source. */
export const NO_CREDENTIALS_FIX = [
    "set ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (and ALIBABA_CLOUD_SECURITY_TOKEN for STS),",
    "or a profile (`aliyun configure`, or ~/.alibabacloud/credentials), or on an ECS instance with a RAM role",
    "ALIBABA_CLOUD_ECS_METADATA=<role name>; then run doctor again",
].join(" ");

/**
 * The first credential source of the default chain present here, described; undefined when there is none.
 * Looks only at the environment and files: no network.
 */
export function localCredentialSource(env: NodeJS.ProcessEnv, home: string): string | undefined {
    if (env.ALIBABA_CLOUD_ACCESS_KEY_ID && env.ALIBABA_CLOUD_ACCESS_KEY_SECRET) return "environment (ALIBABA_CLOUD_ACCESS_KEY_ID)";
    if (env.ALIBABA_CLOUD_ROLE_ARN && env.ALIBABA_CLOUD_OIDC_PROVIDER_ARN && env.ALIBABA_CLOUD_OIDC_TOKEN_FILE) return "OIDC role (ALIBABA_CLOUD_ROLE_ARN)";
    const cli = path.join(home, ".aliyun", "config.json");
    if (env.ALIBABA_CLOUD_CLI_PROFILE_DISABLED?.toLowerCase() !== "true" && holds(cli, /"(access_key_id|mode)"\s*:\s*"[^"]+"/)) return cli;
    const profile = env.ALIBABA_CLOUD_CREDENTIALS_FILE || path.join(home, ".alibabacloud", "credentials");
    if (holds(profile, /^\s*(access_key_id|type)\s*=\s*\S/m)) return profile;
    if (env.ALIBABA_CLOUD_ECS_METADATA && env.ALIBABA_CLOUD_ECS_METADATA_DISABLED?.toLowerCase() !== "true") return `ECS RAM role ${env.ALIBABA_CLOUD_ECS_METADATA}`;
    if (env.ALIBABA_CLOUD_CREDENTIALS_URI) return "ALIBABA_CLOUD_CREDENTIALS_URI";
    return undefined;
}

/** Whether the file exists and has a line that can hold credentials (an empty or unrelated file is no source). */
function holds(file: string, pattern: RegExp): boolean {
    try {
        return pattern.test(fs.readFileSync(file, "utf8"));
    } catch {
        return false;
    }
}

/**
 * The environment doctor runs the SDK with: the metadata service only when a RAM role is named; and, when no
 * credentials URI is set, one on a closed loopback port — the SDK's chain builds its URI step even without a
 * URI and then looks up the host "undefined" (DNS), so a source that turns out unusable would reach the
 * network. This way that last step fails at once, on this machine.
 */
export function offlineChainEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return {
        ...env,
        ...(env.ALIBABA_CLOUD_ECS_METADATA ? {} : { ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true" }),
        ...(env.ALIBABA_CLOUD_CREDENTIALS_URI ? {} : { ALIBABA_CLOUD_CREDENTIALS_URI: "http://127.0.0.1:9/no-credentials-uri" }),
    };
}

/** Resolves the credential once, before any check: undefined when it works, else why not (one line). */
export async function credentialProblem(): Promise<string | undefined> {
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const Credential = require("@alicloud/credentials").default;
        const c = await new Credential().getCredential();
        return c?.accessKeyId ? undefined : "the credential chain gave no access key";
    } catch (e) {
        return String((e as Error).message ?? e).split("\n")[0].slice(0, 300);
    }
}
