/**
 * A saved command's parameters are never code, whatever an invoker sends (docs/security.md#saved-command-parameters).
 * World: the emulator's Cloud Assistant (testing/emulator: CreateCommand with the exact content the program saves,
 * InvokeCommand with raw Parameters — called directly, as an attacker with ecs:InvokeCommand would, bypassing the
 * project's client and its checks — and the emulator's `{{name}}` substitution) and real bash running the substituted
 * script from a file, as the agent runs it, in the script sandbox (testing/sandbox: stub kubeadm, kubectl, iptables…).
 * Every payload would write a canary file if any shell evaluated it; each run checks the canary is absent, and that a
 * value its pattern refuses stops the command before anything runs (no stub called).
 */
import * as assert from "node:assert/strict";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { callApi } from "../src/cloud/openapi";
import { newRecipient, seal } from "../src/cloud/channel";
import { nodeCommandSpecs } from "../src/components/nodeCommands";
import { OPERATION_PARAMETERS, OPERATIONS, type ParameterName } from "../src/rules";
import { PARAMETER_MARKER, renderAttachCommand, renderControlPlaneJoinCommand, renderUpgradeCommand } from "../src/shell/render";
import { renderAdmissionBootstrap } from "../src/shell/renderAdmission";
import { useEmulator } from "../testing/emulator/fixture";
import { makeSandbox, type RunResult, type Sandbox } from "../testing/sandbox";
import { createCommand } from "../testing/savedCommands";

const REGION = "cn-hangzhou";
const HASH = `sha256:${"ab".repeat(32)}`;
const join = { region: REGION, kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", caCertHash: HASH };

/** What each saved command is, by name, with the operation whose parameters it declares. */
const COMMANDS: Array<{ name: string; parameters: readonly ParameterName[]; script: string }> = [
    ...nodeCommandSpecs("t").map(({ op, args }) => ({ name: op, parameters: OPERATIONS[op].parameters as readonly ParameterName[], script: args.script })),
    { name: "attach", parameters: OPERATIONS.attach.parameters, script: renderAttachCommand({ ...join, poolName: "existing" }) },
    { name: "control-plane-join", parameters: OPERATIONS["control-plane-join"].parameters, script: renderControlPlaneJoinCommand(join) },
    { name: "upgrade", parameters: OPERATIONS.upgrade.parameters, script: renderUpgradeCommand({ region: "cn-hangzhou", kubernetesVersion: "1.36.4" }) },
    { name: "attach (through admission)", parameters: OPERATIONS.attach.parameters, script: renderAdmissionBootstrap(["192.168.0.10:10443"], HASH) },
];

/** A value each parameter may take (the other parameters of an invocation get these). */
const VALID: Record<ParameterName, string> = {
    node: "n1", nodes: "n1 n2", selector: "", timeout: "30", force: "false", skipWait: "0", mark: "removing", member: "", peerIp: "", etcdNode: "m0", tokenId: "abcdef", ttl: "15m",
    description: "d", recipient: newRecipient().publicKey, channel: "0123456789abcdef0123456789abcdef",
    sealed: seal(newRecipient().publicKey, "x"), credential: "alicloud-kubeadm-stack-abcd1234", labels: "", taints: "", lines: "10", upgradeStep: "status", step: "status", restoreId: "0123456789abcdef", discardCa: "", pool: "general", taintMode: "clear", outdated: "",
};

/** Values that would run `echo >canary` if any shell parsed them: quotes, line breaks, `$()`, backticks, heredoc ends, NUL, 4 KB. */
function corpus(canary: string): Array<[string, string]> {
    const run = `echo injected >${canary}`;
    return [
        ["single quote", `'; ${run}; '`],
        ["double quote", `"; ${run}; "`],
        ["command substitution", `$(${run})`],
        ["backticks", `\`${run}\``],
        ["semicolon", `x; ${run}`],
        ["line break", `x\n${run}\n`],
        ["carriage return", `x\r\n${run}`],
        ["the packed part's heredoc delimiter", `x\nAK_PACKED\n${run}\n`],
        ["a script heredoc delimiter", `x\nEOF\n${run}\nEOF\n`],
        ["the parameter marker and a forged line", `x\n${PARAMETER_MARKER}\n# AK_NODE=$(${run})\n`],
        ["exit then code", `x\nexit\n${run}`],
        ["NUL", `a\u0000$(${run})`],
        ["NUL alone", "\u0000"],
        ["another placeholder", "{{channel}}"],
        ["an option", "--kubeconfig=/etc/passwd"],
        ["4 KB", "a".repeat(4096)],
        ["4 KB then a quote", `${"a".repeat(4090)}'; ${run}; '`],
    ];
}

describe("saved command parameters are data: the injection corpus, substituted as Cloud Assistant does and run with bash, executes nothing", function () {
    this.timeout(180_000);
    const ctx = useEmulator();
    const sandboxes: Sandbox[] = [];
    after(() => sandboxes.forEach((sb) => sb.cleanup()));

    for (const command of COMMANDS) {
        it(`${command.name}: every parameter, every value`, async () => {
            if (command.parameters.length === 0) {
                assert.ok(!/\{\{/.test(command.script), "a command without parameters holds no placeholder");
                return;
            }
            const { emu } = ctx;
            const sb = makeSandbox({ os: "ubuntu", prebaked: true });
            sandboxes.push(sb);
            const canary = path.join(sb.at("/"), "..", `canary-${process.pid}`);
            const instance = emu.addInstance({ regionId: REGION }).instanceId;
            const commandId = await createCommand(REGION, {
                commandName: `t-${command.name.replace(/\W+/g, "-")}`, script: command.script, parameters: true, timeoutSeconds: 60, description: "injection test",
            });
            let settle: (r: RunResult) => void = () => undefined;
            emu.onCommand(/[\s\S]/, async (c) => {
                const r = await sb.run(c.script, { AK_RETRY_DELAY: "0", AK_API_WAIT_ATTEMPTS: "1", AK_JOIN_ATTEMPTS: "1" });
                settle(r);
                return { exitCode: r.code, output: r.stdout + r.stderr };
            });
            let runs = 0;
            for (const name of command.parameters) {
                for (const [what, value] of corpus(canary)) {
                    const parameters = { ...Object.fromEntries(command.parameters.map((n) => [n, VALID[n]])), [name]: value };
                    const done = new Promise<RunResult>((resolve) => { settle = resolve; });
                    // InvokeCommand as an attacker calls it: the raw values, no check of the project's.
                    await callApi("ecs", "InvokeCommand", { CommandId: commandId, InstanceId: [instance], Parameters: JSON.stringify(parameters) }, { region: REGION });
                    const r = await done;
                    runs++;
                    const label = `${command.name}, parameter ${name}, ${what}`;
                    assert.ok(!fs.existsSync(canary), `${label}: the payload ran (exit ${r.code})\n${r.stderr.slice(-600)}`);
                    if (!OPERATION_PARAMETERS[name].pattern.test(value)) {
                        assert.notEqual(r.code, 0, `${label}: refused`);
                        assert.deepEqual(r.calls.map((x) => x.cmd), [], `${label}: nothing ran before the refusal`);
                        assert.match(r.stderr, /^error: (parameter \S+ must be|expected \d+ parameter lines|a parameter holds a NUL byte)/m, label);
                        assert.ok(!r.stderr.includes("injected"), `${label}: the value is not echoed`);
                    }
                }
            }
            assert.equal(runs, command.parameters.length * corpus(canary).length);
        });
    }

    it("a command run without its file (as `bash -c`, which Cloud Assistant does only when it cannot save the script) refuses to read parameters", () => {
        const script = COMMANDS.find((c) => c.name === "delete-node")!.script.replace("{{nodes}}", "n1");
        const sb = makeSandbox({ os: "ubuntu", prebaked: true });
        sandboxes.push(sb);
        const r = spawnSync("bash", ["-c", script], { encoding: "utf8", env: { ...sb.env, AK_ROOT: sb.at("/") } });
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /cannot read this command's parameters: it must run from its script file/);
    });
});

describe("saved command parameters: what the program saves", () => {
    it("every saved command's placeholders are its last lines, after its final exit, and nothing else in it is one", () => {
        for (const command of COMMANDS) {
            const placeholders = [...command.script.matchAll(/\{\{\s*([^{}]*?)\s*\}\}/g)].map((m) => m[1]);
            assert.deepEqual(placeholders, [...command.parameters], command.name);
            if (command.parameters.length === 0) continue;
            const tail = `\nexit\n${PARAMETER_MARKER}\n${command.parameters.map((n) => `# ${OPERATION_PARAMETERS[n].variable}={{${n}}}`).join("\n")}\n`;
            assert.ok(command.script.endsWith(tail), `${command.name}: ends with its parameter lines`);
        }
    });
});
