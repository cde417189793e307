/**
 * Saved commands in the emulator, made from exactly what the program saves: the NodeCommands component's
 * specs (nodeCommandSpecs) go through CreateCommand as the `alicloud.ecs.Command` resource would send them.
 */
import { callApi } from "../src/cloud/openapi";
import { nodeCommandSpecs, type SavedCommandArgs } from "../src/components/nodeCommands";
import type { NodeCommandIds } from "../src/rules";

/** CreateCommand with the inputs of an `alicloud.ecs.Command` made by saveCommand. */
export async function createCommand(region: string, args: SavedCommandArgs & { script: string }): Promise<string> {
    const res = await callApi("ecs", "CreateCommand", {
        Name: args.commandName, Type: "RunShellScript", CommandContent: Buffer.from(args.script, "utf8").toString("base64"),
        EnableParameter: args.parameters, Timeout: args.timeoutSeconds, Description: `alicloud-kubeadm: ${args.description}`,
    }, { region });
    return String(res.CommandId);
}

/** Every operation NodeCommands saves, created in the emulator; returns their ids. */
export async function saveNodeCommands(region = "cn-hangzhou", clusterName = "test"): Promise<NodeCommandIds> {
    const ids: Record<string, string> = {};
    for (const { op, args } of nodeCommandSpecs(clusterName)) {
        ids[op] = await createCommand(region, args);
    }
    return ids as NodeCommandIds;
}

/** Matches the script of one node operation (its first comment line). */
export function operation(op: string): RegExp {
    return new RegExp(`^# alicloud-kubeadm operation: ${op} \\(`, "m");
}

/** A saved script with its `{{name}}` parameters filled in, as Cloud Assistant does before it runs it. */
export function fill(script: string, values: Record<string, string>): string {
    return script.replace(/\{\{\s*([A-Za-z0-9_-]+)\s*\}\}/g, (m, name: string) => {
        const key = Object.keys(values).find((k) => k.toLowerCase() === name.toLowerCase());
        return key === undefined ? m : values[key];
    });
}
