// NodeCommands: the cluster's node operations as saved Cloud Assistant commands (`alicloud.ecs.Command`,
// one per operation of src/rules/operations.ts, rendered from src/shell/ops). The dynamic providers, the
// removal core and doctor run them with InvokeCommand by id, passing only per-node parameters; operators
// see named, versioned commands in the ECS console, and invocations carry no script. A changed script is
// a new command (Alibaba cannot edit a command's content in place); the resources using it take the new
// id as an in-place update.
import * as alicloud from "@pulumi/alicloud";
import * as pulumi from "@pulumi/pulumi";
import { renderOperation } from "../shell/render";
import { dnsLabelProblem, OPERATIONS, SAVED_OPERATIONS, type NodeCommandIds, type Operation, type SavedOperation } from "../rules";
import { checkArgs } from "./args";

export interface NodeCommandsArgs {
    /** Cluster name; every command is named `<clusterName>-<operation>`. Required. */
    clusterName: string;
}

/** What one saved command holds. */
export interface SavedCommandArgs {
    /** Command name in the ECS console (≤ 128 characters). Required. */
    commandName: string;
    /** The rendered script. Required. */
    script: pulumi.Input<string>;
    /** Whether the script declares `{{name}}` parameters. Required. */
    parameters: boolean;
    /** Default Timeout, seconds. */
    timeoutSeconds: number;
    /** Description in the ECS console. Required. */
    description: string;
}

/** Saves one script as a Cloud Assistant command (content Base64, as the API stores it). */
export function saveCommand(name: string, args: SavedCommandArgs, opts: pulumi.CustomResourceOptions): alicloud.ecs.Command {
    return new alicloud.ecs.Command(name, {
        name: args.commandName,
        type: "RunShellScript",
        commandContent: pulumi.output(args.script).apply((s) => Buffer.from(s, "utf8").toString("base64")),
        enableParameter: args.parameters,
        timeout: args.timeoutSeconds,
        description: `alicloud-kubeadm: ${args.description}`,
    }, opts);
}

/** What the NodeCommands component saves for a cluster: one command per saved operation, in table order. */
export function nodeCommandSpecs(clusterName: string): Array<{ op: SavedOperation; args: SavedCommandArgs & { script: string } }> {
    return SAVED_OPERATIONS.map((op) => {
        const spec: Operation = OPERATIONS[op];
        return {
            op,
            args: {
                commandName: `${clusterName}-${op}`, script: renderOperation(op), parameters: spec.parameters.length > 0,
                timeoutSeconds: spec.timeoutSeconds, description: spec.description,
            },
        };
    });
}

/** The saved node operations of one cluster. */
export class NodeCommands extends pulumi.ComponentResource {
    /** Operation → command id, for the dynamic providers (`commands` input) and doctor (`clusterInfo.commands`). */
    public readonly ids: pulumi.Output<NodeCommandIds>;
    /** The `alicloud.ecs.Command` resources by operation. */
    public readonly commands: Record<keyof NodeCommandIds, alicloud.ecs.Command>;

    constructor(name: string, args: NodeCommandsArgs, opts?: pulumi.ComponentResourceOptions) {
        checkArgs(`NodeCommands "${name}"`, (report) => {
            const problem = dnsLabelProblem(args.clusterName, 40);
            if (problem) report("clusterName", problem);
        });
        super("alicloud-kubeadm:index:NodeCommands", name, {}, opts);
        this.commands = Object.fromEntries(nodeCommandSpecs(args.clusterName).map(({ op, args: command }) =>
            [op, saveCommand(`${name}-${op}`, command, { parent: this })])) as Record<keyof NodeCommandIds, alicloud.ecs.Command>;
        this.ids = pulumi.all(Object.fromEntries(SAVED_OPERATIONS.map((op) => [op, this.commands[op].id]))) as unknown as pulumi.Output<NodeCommandIds>;
        this.registerOutputs({ ids: this.ids });
    }
}
