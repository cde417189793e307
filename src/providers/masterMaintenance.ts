/**
 * MasterMaintenance: runs the cluster's saved maintenance command (the etcd backup timer and the certificate renewal
 * timer, src/shell/renderBackup.ts renderMasterMaintenance) on every master, one at a time, whenever the command changes
 * or a master is new. Masters built before these timers existed get them on the first `pulumi up` with this version
 * (docs/disaster-recovery.md#clusters-built-before). A master that cannot run commands fails the step naming it.
 */
import * as pulumi from "@pulumi/pulumi";
import { runOnInstance } from "../cloud/cloudAssistant";
import { pulumiLog } from "./log";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";

export interface MasterMaintenanceInputs {
    region: string;
    /** Every master. */
    masterInstanceIds: string[];
    /** The saved maintenance command. */
    commandId: string;
    /** First Cloud Assistant poll delay, ms. Default 1000. */
    pollIntervalMs?: number;
    providerVersion?: string;
}

/** Installs on the masters in `ids`, one at a time. */
export async function installOnMasters(inputs: MasterMaintenanceInputs, ids: readonly string[], log: (m: string) => void): Promise<void> {
    for (const instanceId of ids) {
        log(`installing the etcd backup and certificate renewal timers on master ${instanceId}`);
        try {
            await runOnInstance({ region: inputs.region, instanceId, commandId: inputs.commandId, parameters: {}, name: "alicloud-kubeadm master-maintenance",
                timeoutSeconds: 300, pollIntervalMs: inputs.pollIntervalMs });
        } catch (err) {
            throw new Error(`master ${instanceId}: installing the backup and renewal timers failed: ${(err as Error).message}. ` +
                "Bring its Cloud Assistant agent online (or replace the master), then run `pulumi up` again");
        }
    }
}

export const MASTER_MAINTENANCE_PROVIDER_VERSION = "1";

/** New masters or a new command run it again in place; the poll delay is no change. */
const MASTER_MAINTENANCE_DIFF = inputDiff<MasterMaintenanceInputs>()({ replace: [], update: ["masterInstanceIds", "commandId", "providerVersion", "region"], ignore: ["pollIntervalMs"] });

export const masterMaintenanceProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: MasterMaintenanceInputs) {
        await installOnMasters(inputs, inputs.masterInstanceIds, (m) => pulumiLog().info(m));
        return { id: `maintenance-${inputs.masterInstanceIds[0] ?? "none"}`, outs: inputs };
    },
    async diff(_id: string, olds: MasterMaintenanceInputs, news: MasterMaintenanceInputs) {
        return diffInputs(MASTER_MAINTENANCE_DIFF, olds, news);
    },
    async update(_id: string, olds: MasterMaintenanceInputs, news: MasterMaintenanceInputs) {
        // A new command: every master; else only the masters that are new (a replaced master).
        const ids = olds.commandId !== news.commandId || olds.providerVersion !== news.providerVersion
            ? news.masterInstanceIds : news.masterInstanceIds.filter((id) => !olds.masterInstanceIds.includes(id));
        await installOnMasters(news, ids, (m) => pulumiLog().info(m));
        return { outs: news };
    },
});

export class MasterMaintenance extends pulumi.dynamic.Resource {
    constructor(name: string, args: { region: pulumi.Input<string>; masterInstanceIds: pulumi.Input<string[]>; commandId: pulumi.Input<string> }, opts?: pulumi.CustomResourceOptions) {
        super(masterMaintenanceProvider, name, { providerVersion: MASTER_MAINTENANCE_PROVIDER_VERSION, ...args }, opts);
    }
}
