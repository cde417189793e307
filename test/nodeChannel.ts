/**
 * The node side of the secret channel (src/cloud/channel.ts) for emulator tests: what src/shell/channel.sh does
 * on a real node, done with the TypeScript half (test/channel.test.ts shows both halves interoperate with the
 * real openssl). Handlers read the parameters from the script the emulator hands them (already substituted).
 */
import type { Emulator } from "../testing/emulator";
import { newRecipient, seal, type Recipient } from "../src/cloud/channel";
import { operation } from "../testing/savedCommands";
import { headerValue } from "./tools";

/** A header parameter of the script Cloud Assistant ran ("" when absent). */
function parameter(script: string, name: string): string {
    return headerValue(script, name) ?? "";
}

/** Seals `plaintext` to the AK_RECIPIENT of the script, as `ak_seal` does on the node. */
export function sealReply(script: string, plaintext: string): string {
    return `${seal(parameter(script, "AK_RECIPIENT"), plaintext)}\n`;
}

/** Channel keys the fake nodes made and secrets they received (instance id → channel id → …). */
export interface NodeChannels {
    /**
     * What a join script on `instanceId` reads for its AK_CHANNEL (and deletes), as attach_node.sh does.
     * @throws when nothing was received on that channel there
     */
    take(instanceId: string, script: string): string;
    /** Channel keys made and not used yet. */
    keys: Map<string, Map<string, Recipient>>;
    /** Secrets received and not read yet. */
    received: Map<string, Map<string, string>>;
}

function slot<T>(m: Map<string, Map<string, T>>, id: string): Map<string, T> {
    const inner = m.get(id) ?? new Map<string, T>();
    m.set(id, inner);
    return inner;
}

/** Answers `channel-open` and `channel-receive` on every instance of the emulator like a node does. */
export function installNodeChannels(emu: Emulator): NodeChannels {
    const keys = new Map<string, Map<string, Recipient>>();
    const received = new Map<string, Map<string, string>>();
    emu.onCommand(operation("channel-open"), (c) => {
        const key = newRecipient();
        slot(keys, c.instanceId).set(parameter(c.script, "AK_CHANNEL"), key);
        return { output: `${key.publicKey}\n` };
    });
    emu.onCommand(operation("channel-receive"), (c) => {
        const channel = parameter(c.script, "AK_CHANNEL");
        const key = slot(keys, c.instanceId).get(channel);
        if (!key) return { exitCode: 1, output: `error: channel ${channel} is not open on this instance\n` };
        slot(keys, c.instanceId).delete(channel);
        slot(received, c.instanceId).set(channel, key.open(parameter(c.script, "AK_SEALED")));
        return { output: "received\n" };
    });
    return {
        keys, received,
        take(instanceId: string, script: string): string {
            const channel = parameter(script, "AK_CHANNEL");
            const secret = slot(received, instanceId).get(channel);
            if (secret === undefined) throw new Error(`nothing received on channel ${channel} on ${instanceId}`);
            slot(received, instanceId).delete(channel);
            return secret;
        },
    };
}
