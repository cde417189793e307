// World: the OpenAPI emulator (testing/emulator).
import * as assert from "assert";
import * as zlib from "zlib";
import { useEmulator } from "../testing/emulator/fixture";
import { deleteNodes, drainNode, listNodes, nodeOfInstance, parseNodeLines, parseNodeListing, type ClusterAccess, type NodeInfo } from "../src/cloud/operations";
import { operationParameters, OPERATIONS, OPERATION_PARAMETERS, SAVED_OPERATIONS, type ParameterName } from "../src/rules";
import { PARAMETER_MARKER, renderOperation } from "../src/shell/render";
import { createCommand, operation, saveNodeCommands } from "../testing/savedCommands";

describe("node operations: saved commands invoked on a master", () => {
    const ctx = useEmulator();
    let access: ClusterAccess;
    beforeEach(async () => {
        access = { region: "cn-hangzhou", masterInstanceIds: [ctx.emu.addInstance().instanceId], commands: await saveNodeCommands(), pollIntervalMs: 10 };
    });

    it("parses the compact node listing", () => {
        const nodes = parseNodeLines("n1\tcn-hangzhou.i-a\tTrue\t\t172.16.0.0/25\tgeneral\t2026-12-01T10:00:00Z\t\t\t192.168.0.7 fd00::7\t2026-12-01T10:01:02Z\t2026-12-01T10:30:00Z\t\nn2\t\tFalse\ttrue\t\t\t2026-12-01T11:00:00Z\t2026-12-01T12:00:00Z\n");
        assert.deepStrictEqual(nodes, [
            { name: "n1", providerId: "cn-hangzhou.i-a", ready: true, unschedulable: false, podCidr: "172.16.0.0/25", pool: "general", createdAt: "2026-12-01T10:00:00Z", removing: "", internalIp: "192.168.0.7", readySince: "2026-12-01T10:01:02Z", heldBy: "upgrading since 2026-12-01T10:30:00Z" },
            { name: "n2", providerId: "", ready: false, unschedulable: true, podCidr: "", pool: "", createdAt: "2026-12-01T11:00:00Z", removing: "2026-12-01T12:00:00Z", internalIp: "", readySince: "", heldBy: "marks not listed (a list-nodes from before the drain-mark columns)" },
        ]);
    });

    it("a listing of the earlier released list-nodes (10 columns: no Ready time, no drain marks) parses, its Nodes held as marks not known", () => {
        const [n] = parseNodeLines("n1\tcn-hangzhou.i-a\tFalse\t\t172.16.0.0/25\t\t2026-12-01T10:00:00Z\t\tgeneral\t192.168.0.7\n");
        assert.deepStrictEqual([n.pool, n.internalIp, n.readySince, n.heldBy], ["general", "192.168.0.7", "", "marks not listed (a list-nodes from before the drain-mark columns)"]);
    });

    it("a raw listing (an earlier release's jsonpath) whose annotation value holds tabs is refused, never read with its columns shifted", () => {
        // The node writes its own Node's annotations: a removal mark of "x<TAB>…" would move the pool, IP and Ready time.
        const hostile = ["x", "elastic", "10.0.0.9", "2026-01-01T00:00:00Z", "", ""].join("\t");
        const line = ["evil", "cn-hangzhou.i-evil", "False", "", "", "", "2026-12-01T10:00:00Z", hostile, "general", "192.168.0.8", "2026-12-01T10:01:02Z", "", ""].join("\t");
        assert.throws(() => parseNodeLines(`${line}\n`), /Node "evil" is listed with 18 columns, not 13/);
        const oneTab = ["evil", "cn-hangzhou.i-evil", "False", "", "", "", "2026-12-01T10:00:00Z", "x\ty", "general", "192.168.0.8"].join("\t");
        assert.throws(() => parseNodeLines(oneTab), /Node "evil" is listed with 11 columns/, "an earlier release's line widened by one tab");
    });

    it("escaped values read back exactly, and the master's clock line gives the listing's time", () => {
        // What kubectl's go-template `js` prints for an annotation "x<LF>evil<TAB>cn-hangzhou.i-b<TAB>True 'q' \"d\" \\ <=>&".
        const escaped = "x\\u000Aevil\\u0009cn-hangzhou.i-b\\u0009True \\'q\\' \\\"d\\\" \\\\ \\u003C\\u003D\\u003E\\u0026";
        const line = ["n1", "cn-hangzhou.i-a", "False", "", "", "", "2026-12-01T10:00:00Z", escaped, "general", "192.168.0.7", "2026-12-01T10:01:02Z", "", ""].join("\t");
        const { nodes, masterNow } = parseNodeListing(`@now\t1796122800\n${line}\n`);
        assert.deepStrictEqual(nodes.map((n) => [n.name, n.providerId, n.removing]), [["n1", "cn-hangzhou.i-a", "x\nevil\tcn-hangzhou.i-b\tTrue 'q' \"d\" \\ <=>&"]]);
        assert.strictEqual(masterNow, 1796122800_000);
        assert.strictEqual(parseNodeListing(`${line}\n`).masterNow, undefined, "an earlier release's listing: no time");
        assert.throws(() => parseNodeListing("@now\tsoon\n"), /the master's time line "@now\\tsoon" is not/);
    });

    it("a node's pool is the label the admission service set, else (a node joined before) the one it set itself", () => {
        const line = (legacy: string, pool: string) => `n	cn-hangzhou.i-a	True			${legacy}	2026-12-01T10:00:00Z		${pool}`;
        assert.deepStrictEqual(parseNodeLines([line("", "general"), line("general", ""), line("general", "elastic"), line("", "")].join("\n")).map((n) => n.pool),
            ["general", "general", "elastic", ""]);
    });

    const node = (name: string, providerId: string, internalIp: string): NodeInfo => ({ name, providerId, internalIp, ready: true, unschedulable: false, podCidr: "", pool: "", createdAt: "", removing: "", readySince: "", heldBy: "" });

    it("an instance's Node is found by provider id, by a provider id in another form, or by its private IP when no other instance is named", () => {
        const region = "cn-hangzhou";
        const nodes = [node("exact", "cn-hangzhou.i-exact", "10.0.0.1"), node("prefixed", "alicloud://cn-hangzhou.i-prefixed", "10.0.0.2"),
            node("elsewhere", "cn-beijing.i-elsewhere", "10.0.0.3"), node("bare", "", "10.0.0.4"), node("other", "cn-hangzhou.i-other", "10.0.0.5")];
        const of = (instanceId: string, privateIp?: string) => nodeOfInstance(nodes, region, { instanceId, privateIp })?.name;
        assert.deepStrictEqual([of("i-exact"), of("i-prefixed"), of("i-elsewhere"), of("i-bare", "10.0.0.4"), of("i-bare")], ["exact", "prefixed", "elsewhere", "bare", undefined]);
        assert.strictEqual(of("i-new", "10.0.0.5"), undefined, "a Node naming another instance is that instance's, whatever its IP");
    });

    it("a Node named after one instance is never another instance's, whatever provider id or IP its kubelet registered", () => {
        // A kubelet's credential fixes its Node's name (`system:node:<region>.<instance>`, NodeRestriction); it writes
        // spec.providerID and its addresses itself. An impostor claims the master's provider id and IP.
        const region = "cn-hangzhou";
        const impostor = node("cn-hangzhou.i-impostor", "cn-hangzhou.i-master", "10.0.0.9");
        const real = node("cn-hangzhou.i-master", "cn-hangzhou.i-master", "10.0.0.9");
        const handSet = node("worker-7", "cn-hangzhou.i-hand", "10.0.0.7");
        const of = (nodes: NodeInfo[], instanceId: string, privateIp?: string) => nodeOfInstance(nodes, region, { instanceId, privateIp })?.name;
        assert.strictEqual(of([impostor, real], "i-master", "10.0.0.9"), "cn-hangzhou.i-master", "the Node of the instance's own name, listed after the impostor");
        assert.strictEqual(of([impostor], "i-master", "10.0.0.9"), undefined, "without its own Node, the instance has none");
        assert.strictEqual(of([node("cn-hangzhou.i-impostor", "", "10.0.0.9")], "i-master", "10.0.0.9"), undefined, "nor by IP");
        assert.strictEqual(of([impostor], "i-impostor"), "cn-hangzhou.i-impostor", "the impostor's Node is its own instance's");
        assert.strictEqual(of([handSet], "i-hand"), "worker-7", "a Node named by hand is still found by its provider id");
    });

    it("listNodes invokes the saved list-nodes command with the selector as its parameter and decodes gzip+Base64 output", async () => {
        const lines = Array.from({ length: 300 }, (_, i) => `node-${i}\tcn-hangzhou.i-${i}\tTrue\t\t172.16.${i}.0/24\tgeneral\t2026-12-01T10:00:00Z`).join("\n");
        let script = "";
        ctx.emu.onCommand(operation("list-nodes"), (c) => {
            script = c.script;
            return { output: zlib.gzipSync(lines).toString("base64") };
        });
        const nodes = await listNodes(access, "alicloud-kubeadm/pool=general");
        assert.strictEqual(nodes.length, 300, "300 nodes fit under the 24 KB output limit");
        assert.strictEqual(nodes[299].providerId, "cn-hangzhou.i-299");
        const [call] = ctx.emu.callsOf("InvokeCommand");
        assert.deepStrictEqual([call.params.CommandId, call.params["InstanceId.1"], JSON.parse(call.params.Parameters)],
            [access.commands["list-nodes"], access.masterInstanceIds[0], { selector: "alicloud-kubeadm/pool=general" }]);
        assert.match(script, /^# AK_SELECTOR=alicloud-kubeadm\/pool=general$/m, "Cloud Assistant filled in the parameter (a line after the final exit)");
        assert.match(script, /^#!\/bin\/bash\n/, "bash, whatever shell the agent would pick: pipefail is not POSIX sh");
        assert.strictEqual(ctx.emu.callsOf("RunCommand").length, 0);
    });

    it("a value that could break out of the script's quoting never reaches a shell", async () => {
        const before = ctx.emu.calls.length;
        await assert.rejects(deleteNodes(access, ["x'; reboot; '"]), /operation delete-node: parameter nodes must be Node names separated by single spaces/);
        await assert.rejects(deleteNodes(access, ["n1", "--all"]), /parameter nodes must be Node names/, "no name that kubectl would read as a flag");
        await assert.rejects(listNodes(access, "a=$(reboot)"), /parameter selector must be a label selector/);
        await assert.rejects(drainNode(access, "n1", { timeoutSeconds: -1, force: false, skipWaitSeconds: 0 }), /parameter timeout must be a number of seconds/);
        assert.strictEqual(ctx.emu.calls.length, before, "refused before any call");
        assert.throws(() => operationParameters("drain", { node: "n1" }), /parameter timeout is missing/);
        assert.throws(() => operationParameters("delete-node", { nodes: "n1", force: "true" }), /takes no parameter force/);
    });

    it("a failing operation surfaces its output", async () => {
        ctx.emu.onCommand(operation("delete-node"), { exitCode: 1, output: 'Error from server (Forbidden): nodes "x" is forbidden' });
        await assert.rejects(deleteNodes(access, ["x"]), /nodes "x" is forbidden/);
    });

    it("a resource whose state still names an earlier version's saved command (other parameters) fails naming the way out, and runs nothing", async () => {
        // The drain as an earlier version saved it: the same name, without the `mark` parameter. Another command of
        // that name is never run in its place: whoever may create commands in the account could have made it.
        const script = renderOperation("drain").split("\n").filter((l) => !l.includes("{{mark}}")).join("\n");
        const earlier = await createCommand("cn-hangzhou", { commandName: "test-drain", script, parameters: true, timeoutSeconds: 660, description: "drain" });
        const ran: Array<Record<string, string>> = [];
        ctx.emu.onCommand(operation("drain"), (c) => { ran.push(c.parameters); return { output: "drain-status=0" }; });
        await assert.rejects(drainNode({ ...access, commands: { ...access.commands, drain: earlier } }, "n1", { timeoutSeconds: 60, force: false, skipWaitSeconds: 0 }),
            /operation drain: the saved command .* is an earlier version's .*\[force, mark, node, skipWait, timeout\].*Put the resource back in the program, run `pulumi up`/s);
        assert.deepStrictEqual(ctx.emu.callsOf("InvokeCommand").map((c) => c.params.CommandId), [earlier], "the state's command only, refused");
        assert.strictEqual(ran.length, 0, "nothing ran");
    });

    it("Node deletions go in one command per 4 KB of names", async () => {
        const deleted: string[][] = [];
        ctx.emu.onCommand(operation("delete-node"), (c) => { deleted.push(c.parameters.nodes.split(" ")); return { output: "" }; });
        const names = Array.from({ length: 150 }, (_, k) => `cn-hangzhou.i-bp1${String(k).padStart(17, "0")}`);
        await deleteNodes(access, names);
        assert.deepStrictEqual(deleted.flat(), names, "every name once, in order");
        assert.strictEqual(deleted.length, 2);
        assert.ok(deleted.every((chunk) => chunk.join(" ").length <= 4096));
    });

    it("every saved operation renders exactly its parameters as {{name}} placeholders, only after its final exit, read and checked by the script first", () => {
        for (const op of SAVED_OPERATIONS) {
            const script = renderOperation(op);
            const placeholders = [...script.matchAll(/\{\{([A-Za-z0-9_-]+)\}\}/g)].map((m) => m[1]);
            assert.deepStrictEqual(placeholders, [...OPERATIONS[op].parameters], op);
            const names = OPERATIONS[op].parameters as readonly ParameterName[];
            if (names.length === 0) continue;
            const tail = script.slice(script.indexOf(`\nexit\n${PARAMETER_MARKER}\n`) + 1).split("\n");
            assert.deepStrictEqual(tail, ["exit", PARAMETER_MARKER, ...names.map((n) => `# ${OPERATION_PARAMETERS[n].variable}={{${n}}}`), ""], `${op}: the placeholders are the last lines`);
            const call = script.split("\n").findIndex((l) => l.startsWith("ak_parameters "));
            const firstUse = script.split("\n").findIndex((l, i) => i > call && names.some((n) => l.includes(OPERATION_PARAMETERS[n].variable)));
            assert.ok(call > 0 && call < firstUse, `${op}: read and checked before first use`);
            for (const name of names) {
                const p = OPERATION_PARAMETERS[name];
                assert.ok(script.split("\n")[call].includes(`${p.variable} '${p.pattern.source.replace(/'/g, "'\\''")}'`), `${op}: ${name} checked against its pattern on the machine`);
            }
        }
    });
});
