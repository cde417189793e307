// World: the OpenAPI emulator (testing/emulator); the Kubernetes double (testing/fakeCluster.ts).
/**
 * Across a full create — JoinInfo (CA pin and the stack's credential), the pool and
 * existing-node bootstrap tokens, a control-plane join with its certificate key, an existing node attached
 * by hand — no secret appears in clear where anyone with ECS read rights finds it for weeks: in any
 * command's content (DescribeCommands, DescribeInvocations), any invocation's parameters or output
 * (DescribeInvocations, DescribeInvocationResults), nor in any request URL or body this library sent.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { useEmulator } from "../../testing/emulator/fixture";
import { callApi } from "../../src/cloud/openapi";
import { fakeCluster } from "../../testing/fakeCluster";
import { installNodeChannels, sealReply } from "../nodeChannel";
import { headerValue, unpackScript } from "../tools";
import { createCommand, operation } from "../../testing/savedCommands";
import { readJoinInfo } from "../../src/providers/joinInfo";
import { createBootstrapToken } from "../../src/providers/bootstrapToken";
import { joinControlPlaneMember } from "../../src/providers/controlPlaneMember";
import { joinExistingNode } from "../../src/providers/nodeMembership";
import { renderAttachCommand, renderControlPlaneJoinCommand, renderOperation } from "../../src/shell/render";
import { OPERATIONS } from "../../src/rules";

const REGION = "cn-hangzhou";
/** What the fake master answers: a service-account token, the control-plane join token and certificate key. */
const SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2VjcmV0LXNpZ25hdHVyZS0xMjM0NTY3ODkw";
const CP_TOKEN = "cpjoin.z9y8x7w6v5u4t3s2";
const CERT_KEY = "9f".repeat(32);

function makeCaPem(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-"));
    try {
        execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path.join(dir, "k"), "-out", path.join(dir, "c"),
            "-days", "1", "-subj", "/CN=kubernetes"], { stdio: "ignore" });
        return fs.readFileSync(path.join(dir, "c"), "utf8");
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/** Every page of a Describe* list through the API, as a reader with ECS read rights sees it. */
async function everyPage(action: string, params: Record<string, string | number | boolean>, list: (res: Record<string, unknown>) => unknown[]): Promise<unknown[]> {
    const rows: unknown[] = [];
    let next = "";
    do {
        const res = await callApi("ecs", action, { ...params, MaxResults: 50, NextToken: next || undefined }, { region: REGION });
        rows.push(...list(res));
        next = String(res.NextToken ?? (res.Invocation as { NextToken?: string } | undefined)?.NextToken ?? "");
    } while (next);
    return rows;
}

describe("no secret in any Cloud Assistant record or request (full create)", () => {
    const ctx = useEmulator();

    it("JoinInfo, two bootstrap tokens, a control-plane join and a manual existing-node attach leave no token, certificate key or kubeconfig in clear", async () => {
        const { emu } = ctx;
        const c = await fakeCluster(emu, REGION);
        const caPem = makeCaPem();
        const channels = installNodeChannels(emu);

        // master 0: kubeadm init done; the stack credential; tokens made on the master; control-plane join secrets
        emu.onCommand(operation("init-status"), { output: `status=done\n${Buffer.from(caPem).toString("base64")}\n` });
        emu.onCommand(operation("stack-credential"), (x) => ({ output: sealReply(x.script, SA_TOKEN) }));
        const made: string[] = [];
        emu.onCommand(operation("token-create"), (x) => {
            const token = `${headerValue(x.script, "AK_TOKEN_ID")}.${Math.random().toString(36).slice(2, 10).padEnd(8, "q")}${"abcdefgh"}`;
            made.push(token);
            return { output: `created\n${sealReply(x.script, token)}` };
        });
        emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${CP_TOKEN} ${CERT_KEY}`) }));

        // the saved join commands, exactly as the program renders them
        const join = { region: REGION, kubernetesVersion: "1.34.2", apiEndpoint: "192.168.0.10:6443", caCertHash: `sha256:${"ab".repeat(32)}` };
        const cpJoinCommandId = await createCommand(REGION, {
            commandName: "t-control-plane-join", script: renderControlPlaneJoinCommand(join), parameters: true,
            timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds, description: OPERATIONS["control-plane-join"].description,
        });
        const attachCommandId = await createCommand(REGION, {
            commandName: "t-attach", script: renderAttachCommand({ ...join, poolName: "existing" }), parameters: true,
            timeoutSeconds: OPERATIONS.attach.timeoutSeconds, description: OPERATIONS.attach.description,
        });
        const member = emu.addInstance({ regionId: REGION }).instanceId;
        const existing = emu.addInstance({ regionId: REGION }).instanceId;
        const received: Record<string, string> = {};
        emu.onCommand(/kubeadm join --config/, (x) => {
            received[x.instanceId] = channels.take(x.instanceId, x.script);
            c.addNode(x.instanceId, { name: `node-${x.instanceId}`, pool: x.instanceId === member ? "control-plane" : "existing" });
            return { output: "joined\n" };
        });

        const info = await readJoinInfo({
            region: REGION, masterInstanceId: c.master, kubeconfigServer: "https://203.0.113.10:6443", pollSeconds: 0.02, waitTimeoutSeconds: 5,
            scripts: { initStatus: renderOperation("init-status"), stackCredential: renderOperation("stack-credential"), stackCredentialRevoke: renderOperation("stack-credential-revoke") },
        });
        const access = { region: REGION, masterInstanceId: c.master, commands: c.commands, pollIntervalMs: 10 };
        const tokenCreateScript = renderOperation("token-create");
        const poolToken = await createBootstrapToken({ ...access, tokenCreateScript, ttl: "0", description: "alicloud-kubeadm t pool general" });
        const existingToken = await createBootstrapToken({ ...access, tokenCreateScript, ttl: "0", description: "alicloud-kubeadm t existing nodes" });
        await joinControlPlaneMember({ ...access, memberInstanceId: member, joinCommandId: cpJoinCommandId, joinSecretsScript: renderOperation("join-secrets"), pollSeconds: 0.02 });
        await joinExistingNode({
            ...access, instanceId: existing, mode: "manual", attachCommandId, token: existingToken.token, labels: "", taints: "", pollSeconds: 0.02, readyTimeoutSeconds: 5,
        });

        // The secrets did arrive where they belong (so the scan below is not vacuous).
        assert.deepStrictEqual(YAML.parse(info.kubeconfig).users[0].user, { token: SA_TOKEN });
        assert.deepStrictEqual([poolToken.token, existingToken.token], made);
        assert.strictEqual(received[member], `${CP_TOKEN} ${CERT_KEY} -`, "token, certificate key, no encryption config (`-`)");
        assert.strictEqual(received[existing], existingToken.token);

        const secrets: Record<string, string> = {
            "stack token": SA_TOKEN, "stack token signature": SA_TOKEN.split(".")[2], "kubeconfig": info.kubeconfig,
            "pool token secret": poolToken.token.slice(7), "existing-node token secret": existingToken.token.slice(7),
            "control-plane token secret": CP_TOKEN.slice(7), "certificate key": CERT_KEY,
        };
        const records: Array<[string, string]> = [];
        for (const call of emu.calls) {
            records.push([`${call.action} URL`, decodeURIComponent(call.url)], [`${call.action} body`, decodeURIComponent(call.body.replace(/\+/g, " "))]);
            if (call.params.CommandContent) records.push([`${call.action} CommandContent`, unpackScript(Buffer.from(call.params.CommandContent, "base64").toString("utf8"))]);
        }
        const invocations = await everyPage("DescribeInvocations", { IncludeOutput: true, ContentEncoding: "PlainText" },
            (r) => ((r.Invocations as { Invocation?: unknown[] } | undefined)?.Invocation ?? []));
        assert.ok(invocations.length >= 12, `every invocation is listed (${invocations.length})`);
        records.push(["DescribeInvocations", JSON.stringify(invocations)]);
        for (const inv of invocations as Array<{ InvokeId: string; CommandContent: string }>) records.push([`DescribeInvocations ${inv.InvokeId} content`, unpackScript(inv.CommandContent)]);
        for (const inv of invocations as Array<{ InvokeId: string }>) {
            const results = await everyPage("DescribeInvocationResults", { InvokeId: inv.InvokeId, ContentEncoding: "PlainText" },
                (r) => ((r.Invocation as { InvocationResults?: { InvocationResult?: unknown[] } }).InvocationResults?.InvocationResult ?? []));
            records.push([`DescribeInvocationResults ${inv.InvokeId}`, JSON.stringify(results)]);
        }
        const commands = await everyPage("DescribeCommands", { ContentEncoding: "PlainText" }, (r) => ((r.Commands as { Command?: unknown[] } | undefined)?.Command ?? []));
        records.push(["DescribeCommands", JSON.stringify(commands)]);
        for (const cmd of commands as Array<{ Name: string; CommandContent: string }>) records.push([`DescribeCommands ${cmd.Name} content`, unpackScript(cmd.CommandContent)]);
        assert.ok(records.some(([, text]) => text.includes("ak_join_config")), "the packed join scripts were read unpacked");
        for (const [what, value] of Object.entries(secrets)) {
            for (const [where, text] of records) assert.ok(!text.includes(value), `${what} found in ${where}`);
        }
        assert.ok(records.every(([where, text]) => !where.endsWith("URL") || !text.includes("?")), "no request parameter in any URL");
    });
});
