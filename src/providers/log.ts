/**
 * The Pulumi log for dynamic providers. `@pulumi/pulumi` is required when a provider method runs, so
 * the serialized provider uses the host's copy instead of capturing one.
 */
import type * as pulumi from "@pulumi/pulumi";
import { reportPacingTo } from "../cloud/pacer";

export function pulumiLog(): typeof pulumi.log {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require("@pulumi/pulumi") as typeof pulumi).log;
}

/** Progress callback writing to the Pulumi log. */
export function logInfo(message: string): void {
    pulumiLog().info(message);
}

/**
 * The provider with each method first pointing the process's pacer (src/cloud/pacer.ts) at the Pulumi log: a
 * cloud call that waits long for its turn, or an action slowed by throttling answers, shows up as one line there.
 */
export function withPacingLog(provider: pulumi.dynamic.ResourceProvider): pulumi.dynamic.ResourceProvider {
    const out: Record<string, unknown> = {};
    for (const [name, method] of Object.entries(provider)) {
        out[name] = typeof method !== "function" ? method : (...args: unknown[]) => {
            reportPacingTo((message) => pulumiLog().info(message));
            return (method as (...a: unknown[]) => unknown).apply(provider, args);
        };
    }
    return out as unknown as pulumi.dynamic.ResourceProvider;
}
