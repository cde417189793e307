/**
 * The operations that print a compressed payload (gzip + Base64: list-nodes, pod-owners and doctor's doctor-nodes,
 * doctor-join, doctor-certs, doctor-autoscaler) run in the script sandbox as Cloud Assistant runs them: stdout and
 * stderr in one output. A kubectl that warns on stderr (a deprecation, a throttled request) must not corrupt what the
 * reader (src/cloud/operations.ts `decompress`) gets back: the payload is framed on a line of its own.
 */
import * as assert from "assert";
import * as zlib from "zlib";
import { decompress, parseNodeLines } from "../src/cloud/operations";
import { parseSections } from "../src/doctor/context";
import { renderOperation } from "../src/shell/render";
import { makeSandbox, type Sandbox } from "../testing/sandbox";
import { fill } from "../testing/savedCommands";

const NODE_LINE = "cn-hangzhou.i-a\tcn-hangzhou.i-a\tTrue\t\t172.16.0.0/25\tgeneral\t2026-12-01T10:00:00Z\t";

describe("compressed operation output survives what kubectl prints on stderr", () => {
    let sb: Sandbox;
    beforeEach(() => {
        sb = makeSandbox({
            os: "ubuntu",
            stubs: {
                // kubectl warns on stderr before and after its answer, without a final newline, as client-go's warning handler may
                kubectl: `. "$AK_STUB_SRC/_lib.sh"
[ "$AK_KUBECTL_WARNS" = 0 ] || printf 'Warning: v1 ComponentStatus is deprecated in v1.19+' >&2
printf '%s\\n' "$AK_STUB_KUBECTL_OUTPUT"
[ "$AK_KUBECTL_WARNS" = 0 ] || printf 'I1201 10:00:00.000000 1 request.go:700] Waited for 1.1s due to client-side throttling' >&2`,
            },
        });
        sb.write("/etc/kubernetes/admin.conf", "apiVersion: v1\nkind: Config\n");
    });
    afterEach(() => sb.cleanup());

    /** Runs a saved operation as the agent does: its parameters filled in, stdout and stderr in one output. */
    async function asCloudAssistant(op: "list-nodes" | "pod-owners" | "doctor-nodes", values: Record<string, string>, kubectlOutput: string, warn = true): Promise<string> {
        sb.write("/op.sh", fill(renderOperation(op), values));
        const r = await sb.run('bash "$AK_ROOT/op.sh" 2>&1', { AK_STUB_KUBECTL_OUTPUT: kubectlOutput, AK_KUBECTL_WARNS: warn ? "1" : "0" });
        assert.strictEqual(r.code, 0, r.stdout + r.stderr);
        return r.stdout;
    }

    it("list-nodes: the Nodes parse exactly", async () => {
        const out = await asCloudAssistant("list-nodes", { selector: "" }, NODE_LINE);
        const quiet = await asCloudAssistant("list-nodes", { selector: "" }, NODE_LINE, false);
        // A provider deleting with its last deployment's code (the reader from before the frame) reads the framed output too.
        const bare = zlib.gunzipSync(Buffer.from(quiet.trim(), "base64")).toString("utf8");
        assert.match(bare, /^@now\t[0-9]+\n/, "the master's clock first");
        assert.strictEqual(bare.replace(/^@now\t[0-9]+\n/, "").trim(), NODE_LINE.trim());
        assert.match(out, /Warning: v1 ComponentStatus/, "the warning is in the output, as Cloud Assistant would keep it");
        assert.deepStrictEqual(parseNodeLines(decompress(out)).map((n) => [n.name, n.providerId, n.ready, n.podCidr, n.pool]),
            [["cn-hangzhou.i-a", "cn-hangzhou.i-a", true, "172.16.0.0/25", "general"]]);
    });

    it("pod-owners: every pod line comes back", async () => {
        const out = await asCloudAssistant("pod-owners", {}, "node-a\tReplicaSet\nnode-a\tDaemonSet");
        assert.deepStrictEqual(decompress(out).trim().split("\n"), ["node-a\tReplicaSet", "node-a\tDaemonSet"]);
    });

    it("doctor-nodes: its sections come back (kubectl's stderr inside them, where ak_section folds it)", async () => {
        const out = await asCloudAssistant("doctor-nodes", {}, "node-a Ready");
        const sections = parseSections(decompress(out));
        assert.deepStrictEqual(Object.keys(sections).sort(), ["apiservers", "conditions", "control-plane", "kubelets", "nodes"]);
        assert.match(sections.nodes.output, /node-a Ready/);
        assert.strictEqual(sections.nodes.rc, 0);
    });

    it("output of a saved command from before the frame (bare Base64) still reads, and one with no payload names what it printed", () => {
        assert.strictEqual(decompress(`${zlib.gzipSync("a\tb\n").toString("base64")}\n`), "a\tb\n");
        assert.throws(() => decompress("error: You must be logged in to the server (Unauthorized)\n"),
            /printed no compressed payload.*You must be logged in to the server/);
    });
});
