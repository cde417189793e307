import type * as pulumi from "@pulumi/pulumi";

/**
 * An update that failed after it changed what its state must remember. Pulumi's dynamic provider server turns an
 * error carrying `id` and `properties` into a partial failure: the engine stores `properties` as the resource's new
 * outputs (its inputs stay the old ones, so the next `pulumi up` is an update again), shows `reasons` as the error,
 * and keeps the secrets of the inputs and the resource's secret outputs secret (docs/upstream.md#pulumi-partial-update).
 * `properties` must therefore be complete state (the provider's serialized code, `__provider`, included: a dynamic
 * provider's update gets it with its new inputs); they are {@link carried} (a protobuf Struct carries them to the engine).
 */
export class PartialUpdateError extends Error {
    /** What the engine shows as the update's error, and stores in the state (`initErrors`, not secret). */
    readonly reasons: string[];

    readonly properties: Record<string, unknown>;

    /**
     * @param reason the update's error as stored in the state: our own words only (the cause may quote what a node
     *   wrote, such as its bootstrap log; log the cause instead)
     */
    constructor(cause: Error, readonly id: string, properties: object, reason: string) {
        super(reason);
        this.properties = carried(properties as Record<string, unknown>);
        this.reasons = [reason];
        this.stack = cause.stack;
    }
}

/**
 * A provider's outputs as they can reach the engine: the dynamic provider server sends them as a protobuf Struct, which
 * has no `undefined` (`Struct.fromJavaScript` throws "Unexpected struct type" on one at any depth, failing the create or
 * update), so they are left out as the SDK leaves them out of a resource's inputs: a property that is `undefined` is
 * dropped, an array element that is `undefined` (or a hole) becomes `null` (docs/upstream.md#pulumi-partial-update).
 * Only plain objects and arrays are walked; anything else is returned as it is.
 */
export function carried<T>(value: T): T {
    if (Array.isArray(value)) return Array.from(value, (v: unknown) => (v === undefined ? null : carried(v))) as T;
    if (value === null || typeof value !== "object" || ![Object.prototype, null].includes(Object.getPrototypeOf(value))) return value;
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, carried(v)])) as T;
}

/**
 * The provider with what its methods answer to the engine {@link carried}: create's and update's `outs`, read's `props`
 * and `inputs`, check's `inputs`. Every dynamic provider of this package is built with it ({@link withPacingLog} applies
 * it), so none can fail a `pulumi up` with an `undefined` among its outputs; a {@link PartialUpdateError} carries its own.
 */
export function withCarriedOutputs(provider: pulumi.dynamic.ResourceProvider): pulumi.dynamic.ResourceProvider {
    const answers = { check: ["inputs"], create: ["outs"], update: ["outs"], read: ["props", "inputs"] };
    const out: Record<string, unknown> = { ...provider };
    for (const [name, fields] of Object.entries(answers)) {
        const method = (provider as unknown as Record<string, unknown>)[name] as ((...args: unknown[]) => Promise<Record<string, unknown> | undefined>) | undefined;
        if (!method) continue;
        out[name] = async (...args: unknown[]) => {
            const result = await method.apply(provider, args);
            return result && { ...result, ...Object.fromEntries(fields.filter((f) => f in result).map((f) => [f, carried(result[f])])) };
        };
    }
    return out as unknown as pulumi.dynamic.ResourceProvider;
}
