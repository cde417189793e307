/**
 * Saved commands in the emulator, made from exactly what the program saves: the NodeCommands component's
 * specs (nodeCommandSpecs) go through CreateCommand as the `alicloud.ecs.Command` resource would send them.
 */
import { spawnSync, type SpawnSyncReturns } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
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

/**
 * Runs a script with bash from a file of its own, as the Cloud Assistant agent runs a command (it saves the content
 * to a file and executes it): a saved command reads its parameter lines from that file (src/shell/parameters.sh).
 */
export function bashFromFile(script: string, opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): SpawnSyncReturns<string> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-command-"));
    try {
        const file = path.join(dir, "command.sh");
        fs.writeFileSync(file, script, { mode: 0o700 });
        return spawnSync("bash", [file], { encoding: "utf8", env: opts.env ?? process.env, input: opts.input });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
