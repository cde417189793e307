// A fake Kubernetes cluster behind the emulator's Cloud Assistant: master 0 answers kubectl
// (node listing, pod owners, drain, delete node) from an in-memory node table, and nodes answer the
// reset script. Every command is recorded as "<instance>: <verb>" for ordered assertions.
import * as zlib from "zlib";
import type { Emulator } from "./emulator";

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
    nodes: Map<string, FakeNode>;
    /** `<instanceId>: <verb>` per command, in order: get-nodes, get-pods, drain <node>, delete-node <node>, reset. */
    commands: string[];
    /** Make the next drains fail (e.g. a PDB) until reset to 0. */
    failDrains: number;
    addNode(instanceId: string, init?: Partial<FakeNode>): FakeNode;
}

/**
 * @param opts.commandDelayMs how long drain and reset take (benchmarks). Default 0.
 */
export function fakeCluster(emu: Emulator, region = "cn-hangzhou", opts: { commandDelayMs?: number } = {}): FakeCluster {
    const delayMs = opts.commandDelayMs ?? 0;
    const master = emu.addInstance({ instanceName: "master-0" }).instanceId;
    const c: FakeCluster = {
        master,
        nodes: new Map(),
        commands: [],
        failDrains: 0,
        addNode(instanceId, init = {}) {
            const node: FakeNode = { name: `node-${instanceId}`, instanceId, ready: true, pool: "", podCidr: `172.16.${c.nodes.size}.0/25`, pods: [], createdAt: new Date().toISOString(), ...init };
            c.nodes.set(node.name, node);
            return node;
        },
    };
    const gz = (text: string) => zlib.gzipSync(text).toString("base64");
    emu.onCommand(/kubectl .* get nodes/, (ctx) => {
        c.commands.push(`${ctx.instanceId}: get-nodes`);
        const selector = /-l alicloud-kubeadm\/pool=(\S+)/.exec(ctx.script)?.[1];
        const lines = [...c.nodes.values()].filter((n) => !selector || n.pool === selector)
            .map((n) => [n.name, `${region}.${n.instanceId}`, n.ready ? "True" : "False", "", n.podCidr, n.pool, n.createdAt].join("\t"));
        return { output: gz(lines.join("\n")) };
    });
    emu.onCommand(/kubectl .* get pods/, (ctx) => {
        c.commands.push(`${ctx.instanceId}: get-pods`);
        return { output: gz([...c.nodes.values()].flatMap((n) => n.pods.map((kind) => `${n.name}\t${kind}`)).join("\n")) };
    });
    emu.onCommand(/kubectl .* drain /, (ctx) => {
        const name = /drain (\S+)/.exec(ctx.script)![1];
        c.commands.push(`${ctx.instanceId}: drain ${name}`);
        if (c.failDrains > 0) {
            c.failDrains--;
            return { exitCode: 1, output: `evicting pod default/web-1\nerror when evicting pods/"web-1" -n "default" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.\nerror: unable to drain node "${name}" due to error: global timeout reached: 10s` };
        }
        const node = c.nodes.get(name);
        if (!node) {
            return { exitCode: 1, output: `Error from server (NotFound): nodes "${name}" not found\n` };
        }
        node.pods = node.pods.filter((k) => k === "DaemonSet");
        return { output: `node/${name} cordoned\nnode/${name} drained\n`, delayMs };
    });
    emu.onCommand(/kubectl .* delete node /, (ctx) => {
        const name = /delete node (\S+)/.exec(ctx.script)![1];
        c.commands.push(`${ctx.instanceId}: delete-node ${name}`);
        c.nodes.delete(name);
        return { output: `node "${name}" deleted\n` };
    });
    emu.onCommand(/etcdctl .*member list/, (ctx) => {
        const member = /-v n='?([^' ]+)'? /.exec(ctx.script)?.[1];
        c.commands.push(`${ctx.instanceId}: etcd-member-remove ${member}`);
        return { output: "member-removed\n" };
    });
    emu.onCommand(/kubeadm reset -f/, (ctx) => {
        c.commands.push(`${ctx.instanceId}: reset`);
        return { output: "reset-complete\n", delayMs };
    });
    return c;
}
