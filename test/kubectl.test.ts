import * as assert from "assert";
import { execFileSync } from "child_process";
import * as zlib from "zlib";
import { useEmulator } from "./emulator/fixture";
import { getNodes, kubectl, kubectlCommand, parseNodeLines, shq } from "../src/cloud/kubectl";

describe("kubectl on master 0 over Cloud Assistant", () => {
    const ctx = useEmulator();

    it("quotes words so the shell sees exactly the argv", () => {
        const words = ["get", "nodes", "-l", "a=b,c in (d)", "it's", "$(reboot)", "x\ty"];
        const line = ["printf", "%s\\n", ...words].map(shq).join(" ");
        const out = execFileSync("bash", ["-c", line], { encoding: "utf8" });
        assert.deepStrictEqual(out.split("\n").slice(0, -1), words);
        assert.match(kubectlCommand(["get", "nodes"]), /^kubectl --kubeconfig=\/etc\/kubernetes\/admin\.conf get nodes$/);
    });

    it("parses the compact node listing", () => {
        const nodes = parseNodeLines("n1\tcn-hangzhou.i-a\tTrue\t\t172.16.0.0/25\tgeneral\t2026-12-01T10:00:00Z\nn2\t\tFalse\ttrue\t\t\t2026-12-01T11:00:00Z\n");
        assert.deepStrictEqual(nodes, [
            { name: "n1", providerId: "cn-hangzhou.i-a", ready: true, unschedulable: false, podCidr: "172.16.0.0/25", pool: "general", createdAt: "2026-12-01T10:00:00Z" },
            { name: "n2", providerId: "", ready: false, unschedulable: true, podCidr: "", pool: "", createdAt: "2026-12-01T11:00:00Z" },
        ]);
    });

    it("getNodes runs one command on the master and decodes gzip+Base64 output", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        const lines = Array.from({ length: 300 }, (_, i) => `node-${i}\tcn-hangzhou.i-${i}\tTrue\t\t172.16.${i}.0/24\tgeneral\t2026-12-01T10:00:00Z`).join("\n");
        let script = "";
        emu.onCommand(/get nodes/, (c) => {
            script = c.script;
            return { output: zlib.gzipSync(lines).toString("base64") };
        });
        const nodes = await getNodes({ region: "cn-hangzhou", masterInstanceId: master, pollIntervalMs: 20 }, "alicloud-kubeadm/pool=general");
        assert.strictEqual(nodes.length, 300, "300 nodes fit under the 24 KB output limit");
        assert.strictEqual(nodes[299].providerId, "cn-hangzhou.i-299");
        assert.match(script, /-l alicloud-kubeadm\/pool=general \| gzip -c \| base64 -w0/);
        assert.match(script, /^#!\/bin\/bash\nset -o pipefail\n/, "bash, whatever shell the agent would pick: pipefail is not POSIX sh");
        assert.deepStrictEqual(emu.callsOf("RunCommand").map((c) => c.params["InstanceId.1"]), [master]);
    });

    it("a failing kubectl surfaces its output", async () => {
        const { emu } = ctx;
        const master = emu.addInstance().instanceId;
        emu.onCommand(/kubectl/, { exitCode: 1, output: 'Error from server (NotFound): nodes "x" not found' });
        await assert.rejects(kubectl({ region: "cn-hangzhou", masterInstanceId: master, pollIntervalMs: 20 }, ["get", "node", "x"]), /nodes "x" not found/);
    });
});
