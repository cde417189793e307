// What a dynamic resource's class does with its outputs after registering (not part of any provider: the providers
// are serialized without @pulumi/pulumi).
import * as pulumi from "@pulumi/pulumi";

/**
 * Makes outputs that a resource's provider answers on every create and update unknown, as in a preview, when an
 * answer lacks them, instead of undefined. Only a double answers without them (Pulumi's generic mocks return the
 * inputs as the state): what is rendered from them (the CA pin, a token) is then left unrendered, as in a preview,
 * instead of failing the program.
 */
export function alwaysAnswered<R extends pulumi.CustomResource>(resource: R, outputs: ReadonlyArray<keyof R & string>): void {
    for (const name of outputs) {
        const output = resource[name] as unknown as pulumi.Output<unknown>;
        Object.assign(resource, { [name]: output.apply((value) => (value === undefined ? pulumi.unknown : value)) });
    }
}
