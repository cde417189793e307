// The providers' methods point the process's pacer (src/cloud/pacer.ts) at the Pulumi log. In a module of its own,
// apart from ./log: the wrapped methods are serialized by value and reach the log through this module's import
// of ./log, which Pulumi captures as a require of the installed package (see ./libraries.ts), not as a copy of
// `pulumiLog` with a bare require of @pulumi/pulumi in it.
import type * as pulumi from "@pulumi/pulumi";
import { reportPacingTo } from "../cloud/pacer";
import { pulumiLog } from "./log";
import { withCarriedOutputs } from "./partialUpdate";

/**
 * The provider with each method first pointing the process's pacer (src/cloud/pacer.ts) at the Pulumi log: a
 * cloud call that waits long for its turn, or an action slowed by throttling answers, shows up as one line there; and
 * with its outputs as the engine can take them ({@link withCarriedOutputs}).
 */
export function withPacingLog(provider: pulumi.dynamic.ResourceProvider): pulumi.dynamic.ResourceProvider {
    const out: Record<string, unknown> = {};
    for (const [name, method] of Object.entries(provider)) {
        out[name] = typeof method !== "function" ? method : (...args: unknown[]) => {
            reportPacingTo((message) => pulumiLog().info(message));
            return (method as (...a: unknown[]) => unknown).apply(provider, args);
        };
    }
    return withCarriedOutputs(out as unknown as pulumi.dynamic.ResourceProvider);
}
