/**
 * Pulumi's engine around a dynamic provider's create and update, as far as the state is concerned (docs/upstream.md#pulumi-partial-update):
 * an update that returns stores its outputs; one that throws an error carrying a truthy `id` (the dynamic provider
 * server's `grpcResponseFromError`) stores the error's `properties` (or nothing: `{}`) as the outputs; any other error
 * leaves the old state. The old state and the new inputs reach the update, and the outputs the engine, as a protobuf
 * Struct, with the same `google-protobuf` code the server uses: an input that is `undefined` is not sent (the SDK leaves
 * it out), an output the Struct cannot carry (`undefined`) throws as it does in the server. The error is thrown on, as
 * `pulumi up` fails.
 */
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

/** Outputs as the engine gets them from the dynamic provider server (a value a Struct cannot carry throws, as there). */
export const overGrpc = <S>(outs: unknown): S => Struct.fromJavaScript(outs as Record<string, never>).toJavaScript() as S;
const sent = <S>(props: S): S => overGrpc(Object.fromEntries(Object.entries(props as object).filter(([, v]) => v !== undefined)));

export async function engineUpdate<S, I>(olds: S, news: I, update: (olds: S, news: I) => Promise<S>, store: (state: S) => void): Promise<void> {
    let outs: S;
    try {
        outs = await update(sent(olds), sent(news));
    } catch (err) {
        const e = err as { id?: string; properties?: S };
        if (e.id) store(overGrpc(e.properties ?? {}));
        throw err;
    }
    store(overGrpc(outs));
}

/** The engine around a create: the inputs sent as a Struct, and the outputs as the engine stores them (or the Struct's error). */
export async function engineCreate<S, I>(inputs: I, create: (inputs: I) => Promise<{ outs?: S }>): Promise<S> {
    return overGrpc((await create(sent(inputs))).outs);
}

/**
 * Pulumi's refresh of a dynamic provider's resource (`pulumi refresh`, `pulumi up --refresh`), as far as the state is
 * concerned: the server's `read` calls the provider's `read` with the state's outputs and returns its `props` (the
 * provider's code, `__provider`, put back), or, for a provider without `read`, the state as it was; across a protobuf
 * Struct both ways (docs/upstream.md#pulumi-dynamic-read).
 */
export async function engineRead<S extends object>(provider: { read?: (id: string, props: S) => Promise<{ id?: string; props?: S }> }, id: string, state: S): Promise<S> {
    if (!provider.read) return overGrpc(state);
    const result = await provider.read(id, overGrpc(state));
    return overGrpc({ ...(result.props ?? {}), ...("__provider" in state ? { __provider: (state as Record<string, unknown>).__provider } : {}) });
}
