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
    if (env.ALIBABA_CLOUD_CLI_PROFILE_DISABLED?.toLowerCase() !== "true" && fs.existsSync(cli)) return cli;
    const profile = env.ALIBABA_CLOUD_CREDENTIALS_FILE || path.join(home, ".alibabacloud", "credentials");
    if (fs.existsSync(profile)) return profile;
    if (env.ALIBABA_CLOUD_ECS_METADATA && env.ALIBABA_CLOUD_ECS_METADATA_DISABLED?.toLowerCase() !== "true") return `ECS RAM role ${env.ALIBABA_CLOUD_ECS_METADATA}`;
    if (env.ALIBABA_CLOUD_CREDENTIALS_URI) return "ALIBABA_CLOUD_CREDENTIALS_URI";
    return undefined;
}

/** The environment doctor runs the SDK with: the metadata service only when a RAM role is named. */
export function offlineChainEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return env.ALIBABA_CLOUD_ECS_METADATA ? env : { ...env, ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true" };
}
