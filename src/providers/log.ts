/**
 * The Pulumi log for dynamic providers. `@pulumi/pulumi` is required when a provider method runs, so
 * the serialized provider uses the host's copy instead of capturing one.
 */
import type * as pulumi from "@pulumi/pulumi";

export function pulumiLog(): typeof pulumi.log {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require("@pulumi/pulumi") as typeof pulumi).log;
}

/** Progress callback writing to the Pulumi log. */
export function logInfo(message: string): void {
    pulumiLog().info(message);
}
