// A fake Kubernetes cluster behind the emulator's Cloud Assistant: master 0 answers the saved node
// operations (list-nodes, pod-owners, drain, delete-node, etcd-member-remove) from an in-memory node table,
// and nodes answer `reset`. The operations are saved in the emulator from the program's own NodeCommands
// specs, and handlers read their parameters, as the real scripts would. Every command is recorded as
// "<instance>: <verb>" for ordered assertions. Used only where a test must inject a failure, a join or a timing the
// real control plane cannot produce, with a comment at each use saying which (test/kube/operations.ts answers the
// same operations from the real one).
import * as zlib from "zlib";
import type { Emulator } from "./emulator";
import type { ClusterAccess } from "../src/cloud/operations";
import type { NodeCommandIds } from "../src/rules";
import { operation, saveNodeCommands } from "./savedCommands";

export interface FakeNode {
    name: string;
    instanceId: string;
    ready: boolean;
    pool: string;
    podCidr: string;
    /** Owner kinds of the pods on the node (e.g. ["ReplicaSet", "DaemonSet"]). */
    pods: string[];
    createdAt: string;
}

export interface FakeCluster {
    master: string;
    region: string;
    nodes: Map<string, FakeNode>;
    /** The saved operations' command ids. */
    commands: NodeCommandIds;
    /** Where the providers and the removal core reach the cluster. */
    access: ClusterAccess;
    /** `<instanceId>: <verb>` per command, in order: get-nodes, get-pods, drain <node>, delete-node <node>, reset. */
    log: string[];
    addNode(instanceId: string, init?: Partial<FakeNode>): FakeNode;
}

/**
 * @param opts.commandDelayMs how long drain and reset take (benchmarks). Default 0.
 */
export async function fakeCluster(emu: Emulator, region = "cn-hangzhou", opts: { commandDelayMs?: number } = {}): Promise<FakeCluster> {
    const delayMs = opts.commandDelayMs ?? 0;
    const master = emu.addInstance({ instanceName: "master-0", regionId: region }).instanceId;
    const commands = await saveNodeCommands(region);
    const c: FakeCluster = {
        master, region, commands,
        access: { region, masterInstanceId: master, commands, pollIntervalMs: 10 },
        nodes: new Map(),
        log: [],
        addNode(instanceId, init = {}) {
            const node: FakeNode = { name: `node-${instanceId}`, instanceId, ready: true, pool: "", podCidr: `172.16.${c.nodes.size}.0/25`, pods: [], createdAt: new Date().toISOString(), ...init };
            c.nodes.set(node.name, node);
            return node;
        },
    };
    const gz = (text: string) => zlib.gzipSync(text).toString("base64");
    emu.onCommand(operation("list-nodes"), (ctx) => {
        c.log.push(`${ctx.instanceId}: get-nodes`);
        const selector = /^alicloud-kubeadm\/pool=(\S+)$/.exec(ctx.parameters.selector ?? "")?.[1];
        const lines = [...c.nodes.values()].filter((n) => !selector || n.pool === selector)
            .map((n) => [n.name, `${region}.${n.instanceId}`, n.ready ? "True" : "False", "", n.podCidr, n.pool, n.createdAt].join("\t"));
        return { output: gz(lines.join("\n")) };
    });
    emu.onCommand(operation("pod-owners"), (ctx) => {
        c.log.push(`${ctx.instanceId}: get-pods`);
        return { output: gz([...c.nodes.values()].flatMap((n) => n.pods.map((kind) => `${n.name}\t${kind}`)).join("\n")) };
    });
    emu.onCommand(operation("drain"), (ctx) => {
        const name = ctx.parameters.node;
        c.log.push(`${ctx.instanceId}: drain ${name}`);
        const node = c.nodes.get(name);
        if (!node) {
            return { exitCode: 1, output: `Error from server (NotFound): nodes "${name}" not found\n` };
        }
        node.pods = node.pods.filter((k) => k === "DaemonSet");
        return { output: `node/${name} cordoned\nnode/${name} drained\n`, delayMs };
    });
    emu.onCommand(operation("delete-node"), (ctx) => {
        const name = ctx.parameters.node;
        c.log.push(`${ctx.instanceId}: delete-node ${name}`);
        c.nodes.delete(name);
        return { output: `node "${name}" deleted\n` };
    });
    emu.onCommand(operation("etcd-member-remove"), (ctx) => {
        c.log.push(`${ctx.instanceId}: etcd-member-remove ${ctx.parameters.member} via ${ctx.parameters.etcdnode ?? ctx.parameters.etcdNode}`);
        return { output: "member-removed\n" };
    });
    emu.onCommand(operation("reset"), (ctx) => {
        c.log.push(`${ctx.instanceId}: reset`);
        return { output: "reset-complete\n", delayMs };
    });
    return c;
}
