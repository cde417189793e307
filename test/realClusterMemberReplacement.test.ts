// World: a real control plane built from source (test/kube: etcd, kube-apiserver, controller-manager, scheduler,
// kubeadm, kubectl; KWOK for nodes); the OpenAPI emulator (testing/emulator).
/**
 * Replacing a dead master 1..n through the project's member replacement (the ControlPlaneMember provider: its delete,
 * then its create for the new instance, as `pulumi up --replace` runs them with deleteBeforeReplace) against a real
 * three-member etcd: three etcd processes on loopback (free ports, the fixture's etcd PKI, TLS), Nodes of the masters on
 * the fixture's real API server (KWOK). The emulator's Cloud Assistant runs the saved operation scripts it is given in
 * the sandbox (test/kube/operations.ts) with the real kubectl, and a `kubectl exec etcd-<node> -- etcdctl` shim that runs
 * the real etcdctl against that master's member: the removal core's etcd-member-remove and the quorum checks'
 * etcd-health. The control-plane join is played as kubeadm's `control-plane-join etcd` phase does it (kubeadm v1.36
 * cmd/kubeadm/app/phases/etcd/local.go CreateStackedEtcdStaticPodManifestFile): `member add --learner`, the new etcd
 * started with the member list and `--initial-cluster-state=existing`, then `member promote` once it caught up.
 * Everything asserted is read from etcd (member list, endpoint health) and the API server.
 *
 * Needs `npm run kube:build` (skipped with one line without it; CI=true fails instead).
 */
import * as assert from "assert";
import * as fs from "fs";
import { useRealCluster } from "./kube/fixture";
import { freePorts, type Cluster } from "./kube/cluster";
import { answerWithRealCluster, type RealOperations } from "./kube/operations";
import { etcdExecShim } from "./kube/restore";
import { useEmulator } from "../testing/emulator/fixture";
import { createCommand, operation, saveNodeCommands } from "../testing/savedCommands";
import { installNodeChannels, sealReply } from "./nodeChannel";
import { controlPlaneMemberProvider } from "../src/providers/controlPlaneMember";
import { renderControlPlaneJoinCommand, renderOperation } from "../src/shell/render";
import { OPERATIONS, type NodeCommandIds } from "../src/rules";

const REGION = "cn-hangzhou";
const TOKEN = "k8sabc.0123456789abcdef";
const KEY = "f".repeat(64);

interface Member { node: string; client: number; peer: number; stop(): Promise<void> }

describe("control-plane member replacement against a real three-member etcd", function () {
    this.timeout(240_000);
    const rc = useRealCluster();
    const ctx = useEmulator();
    let ops: RealOperations | undefined;
    const started: Member[] = [];
    afterEach(async () => {
        ops?.cleanup();
        for (const m of started.splice(0)) await m.stop();
    });

    const nodeName = (id: string) => `${REGION}.${id}`;

    /** etcdctl against one member's client URL, with the fixture's etcd PKI. */
    const etcdctl = (c: Cluster, client: number, args: string[], allowFail = false) => c.run("etcdctl", [`--endpoints=https://127.0.0.1:${client}`,
        `--cacert=${c.path("pki/etcd/ca.crt")}`, `--cert=${c.path("pki/etcd/healthcheck-client.crt")}`, `--key=${c.path("pki/etcd/healthcheck-client.key")}`, ...args], { allowFail });

    /** Starts one etcd member the way kubeadm's etcd static pod runs it (its TLS flags), on the given ports (its data under `tag`). */
    function startMember(c: Cluster, node: string, client: number, peer: number, initialCluster: string, state: "new" | "existing", tag: string): Member {
        const pki = c.path("pki/etcd");
        const h = c.start(`etcd-${tag}-${node}`, "etcd", [
            `--name=${node}`, `--data-dir=${c.path(`etcd-${tag}-${node}`)}`,
            `--listen-client-urls=https://127.0.0.1:${client}`, `--advertise-client-urls=https://127.0.0.1:${client}`,
            `--listen-peer-urls=https://127.0.0.1:${peer}`, `--initial-advertise-peer-urls=https://127.0.0.1:${peer}`,
            `--initial-cluster=${initialCluster}`, `--initial-cluster-state=${state}`, `--initial-cluster-token=ak-replacement-test-${tag}`,
            `--cert-file=${pki}/server.crt`, `--key-file=${pki}/server.key`, `--trusted-ca-file=${pki}/ca.crt`, "--client-cert-auth=true",
            `--peer-cert-file=${pki}/peer.crt`, `--peer-key-file=${pki}/peer.key`, `--peer-trusted-ca-file=${pki}/ca.crt`, "--peer-client-cert-auth=true",
            "--listen-metrics-urls=http://127.0.0.1:0", "--unsafe-no-fsync=true",
        ]);
        const m = { node, client, peer, stop: h.stop };
        started.push(m);
        return m;
    }

    /** Member names, learners and health as etcd itself reports them (through `via`'s client URL). */
    async function members(c: Cluster, via: number): Promise<Array<{ name: string; learner: boolean; healthy: boolean; id: string }>> {
        const list = JSON.parse((await etcdctl(c, via, ["member", "list", "-w", "json"])).stdout.replace(/"ID":(\d+)/g, '"ID":"$1"'));
        const health = JSON.parse((await etcdctl(c, via, ["endpoint", "health", "--cluster", "-w", "json", "--command-timeout=3s"], true)).stdout || "[]") as Array<{ endpoint: string; health: boolean }>;
        return list.members.map((m: { ID: string; name: string; isLearner?: boolean; clientURLs?: string[] }) => ({
            id: m.ID, name: m.name, learner: !!m.isLearner, healthy: health.some((h) => h.health && (m.clientURLs ?? []).includes(h.endpoint)),
        }));
    }

    /**
     * Three masters (instances in the emulator, Nodes on the API server) with three healthy etcd members, the saved
     * operations answered with the real kubectl and etcdctl, the control-plane join played as kubeadm's etcd phase (the
     * new member on the fourth pair of ports), and the ControlPlaneMember inputs. `tag` keeps each test's etcd data apart.
     */
    async function world(tag: string) {
        const c = rc.c;
        const emu = ctx.emu;
        const [c0, p0, c1, p1, c2, p2, c3, p3] = await freePorts(8);
        const ids = ["i-master0", "i-master1", "i-master2"];
        for (const [i, id] of ids.entries()) emu.addInstance({ instanceId: id, regionId: REGION, privateIp: `192.168.0.${10 + i}` });
        const initial = ids.map((id, i) => `${nodeName(id)}=https://127.0.0.1:${[p0, p1, p2][i]}`).join(",");
        const live: Member[] = ids.map((id, i) => startMember(c, nodeName(id), [c0, c1, c2][i], [p0, p1, p2][i], initial, "new", tag));
        await c.waitFor("three healthy members", async () => (await members(c, c0)).filter((m) => m.healthy).length === 3, 60_000);
        for (const id of ids) {
            const exists = (await c.run("kubectl", ["get", "node", nodeName(id)], { allowFail: true })).code === 0;
            if (!exists) await c.addNode({ name: nodeName(id), providerID: nodeName(id), labels: { "alicloud-kubeadm/pool": "control-plane" } });
        }

        // `kubectl exec etcd-<node> -- etcdctl ...` on a master runs the real etcdctl against that master's member.
        const portsFile = c.path("etcd-client-ports");
        const writePorts = () => fs.writeFileSync(portsFile, live.map((m) => `${m.node} ${m.client}\n`).join(""));
        writePorts();
        const realOps = answerWithRealCluster(emu, c, { master: ids[0], stubs: { kubectl: etcdExecShim(c, portsFile) } });
        ops = realOps;
        const commands: NodeCommandIds = await saveNodeCommands(REGION);
        const joinCommandId = await createCommand(REGION, {
            commandName: "test-control-plane-join", parameters: true, timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds,
            description: OPERATIONS["control-plane-join"].description,
            script: renderControlPlaneJoinCommand({ region: REGION, kubernetesVersion: "1.36.3", apiEndpoint: "127.0.0.1:6443", caCertHash: c.caCertHash }),
        });
        const channels = installNodeChannels(emu);
        emu.onCommand(operation("join-secrets"), (x) => ({ output: sealReply(x.script, `${TOKEN} ${KEY} -`) }));
        // kubeadm join --control-plane's etcd phase, on the new instance: add as learner, start with the list, promote.
        // kubeadm retries the add with a backoff on any error (cmd/kubeadm/app/util/etcd/etcd.go AddMember: etcd refuses an
        // add while the member it asks has not been connected to every voter for 5 s, which a removal just before can
        // cause); so does this play. What it did is that instance's join log, which the provider reads when a join fails.
        const countsBeforeAdd: number[] = [];
        const joinLog = new Map<string, string[]>();
        emu.onCommand(operation("doctor-bootstrap-log"), (x) => ({ output: (joinLog.get(x.instanceId) ?? []).join("\n") + "\n" }));
        emu.onCommand(/kubeadm join --config/, async (x) => {
            const logged = joinLog.set(x.instanceId, []).get(x.instanceId)!;
            try {
                channels.take(x.instanceId, x.script);
                const name = nodeName(x.instanceId);
                countsBeforeAdd.push((await members(c, c0)).length);
                let added = "";
                await c.waitFor(`member add ${name}`, async () => {
                    const r = await etcdctl(c, c0, ["member", "add", name, `--peer-urls=https://127.0.0.1:${p3}`, "--learner"], true);
                    logged.push(`member add: exit ${r.code} ${r.stdout.trim()} ${r.stderr.trim()}`);
                    added = r.code === 0 ? r.stdout : "";
                    return r.code === 0;
                }, 60_000);
                const list = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(added)![1];
                live.push(startMember(c, name, c3, p3, list, "existing", tag));
                writePorts();
                // etcdctl prints the new ID with %16x (etcdctl/ctlv3/command/printer_simple.go): space-padded, so an ID below 2^60
                // (1 in 16) has leading spaces.
                const id = /Member +([0-9a-f]+) added/.exec(added)![1];
                await c.waitFor(`learner ${name} promoted`, async () => (await etcdctl(c, c0, ["member", "promote", id], true)).code === 0, 60_000);
                await c.addNode({ name, providerID: name, labels: { "alicloud-kubeadm/pool": "control-plane" } });
                return { output: "" };
            } catch (e) {
                logged.push(`join failed: ${String(e)}`);
                throw e;
            }
        });
        const base = { region: REGION, masterInstanceId: ids[0], joinCommandId, joinSecretsScript: renderOperation("join-secrets"), commands, pollSeconds: 0.05, joinTimeoutSeconds: 120, readyTimeoutSeconds: 60 };

        return { c, emu, ids, live, c0, base, countsBeforeAdd, realOps };
    }

    it("kills master 2's member, replaces it (member removed through a healthy master, then added as kubeadm adds it): three healthy members, never four; a fourth join and a removal without quorum are refused", async () => {
        const { c, emu, ids, live, c0, base, countsBeforeAdd, realOps } = await world("replace");
        // Master 2's machine dies: its etcd is gone, its Cloud Assistant agent offline.
        const dead = live.splice(2, 1)[0];
        await dead.stop();
        emu.setAgentOffline(ids[2]);
        await c.waitFor("master 2's member unhealthy", async () => {
            const ms = await members(c, c0);
            return ms.length === 3 && ms.filter((m) => m.healthy).length === 2 && !ms.find((m) => m.name === dead.node)!.healthy;
        }, 30_000);

        // pulumi up --replace <master 2>: delete first (its member leaves through master 0's etcd) ...
        await controlPlaneMemberProvider.delete!(ids[2], { ...base, masterInstanceIds: ids, memberInstanceId: ids[2], nodeName: nodeName(ids[2]) } as never);
        const afterRemoval = await members(c, c0);
        assert.deepStrictEqual(afterRemoval.map((m) => m.name).sort(), [nodeName(ids[0]), nodeName(ids[1])]);
        assert.ok(afterRemoval.every((m) => m.healthy));
        assert.strictEqual((await c.run("kubectl", ["get", "node", nodeName(ids[2])], { allowFail: true })).code, 1, "the dead master's Node is gone");

        // ... then the new instance (same fixed address) is created and joins.
        emu.releaseInstance(ids[2]);
        const replacement = emu.addInstance({ instanceId: "i-master2b", regionId: REGION, privateIp: "192.168.0.12" }).instanceId;
        const masters = [ids[0], ids[1], replacement];
        const created = await controlPlaneMemberProvider.create!({ ...base, masterInstanceIds: masters, memberInstanceId: replacement } as never);
        assert.strictEqual(created.outs.nodeName, nodeName(replacement));
        assert.deepStrictEqual(countsBeforeAdd, [2], "the new member was added to two members: never a fourth");
        const after = await members(c, c0);
        assert.deepStrictEqual(after.map((m) => m.name).sort(), [nodeName(ids[0]), nodeName(ids[1]), nodeName(replacement)]);
        assert.ok(after.every((m) => m.healthy && !m.learner), JSON.stringify(after));

        // A join that would make a fourth member is refused before anything is asked of a master: master 2 re-created once
        // more (another instance) while the member of the one before is still in etcd.
        const extra = emu.addInstance({ instanceId: "i-master2c", regionId: REGION, privateIp: "192.168.0.13" }).instanceId;
        await assert.rejects(controlPlaneMemberProvider.create!({ ...base, masterInstanceIds: [ids[0], ids[1], extra], memberInstanceId: extra } as never),
            /3 members for 3 masters.*a join would make 4/);
        assert.strictEqual((await members(c, c0)).length, 3);
        assert.deepStrictEqual(countsBeforeAdd, [2], "no member add was attempted");

        // Two of three members die: etcd has no quorum (no member passes a health check, etcd's own answer), so removing
        // one of them is refused before any step: nothing touched.
        const [m1, m2b] = [live.find((m) => m.node === nodeName(ids[1]))!, live.find((m) => m.node === nodeName(replacement))!];
        await m1.stop();
        await m2b.stop();
        emu.setAgentOffline(ids[1]);
        const logged = realOps.log.length;
        await assert.rejects(controlPlaneMemberProvider.delete!(ids[1], { ...base, masterInstanceIds: masters, memberInstanceId: ids[1], nodeName: nodeName(ids[1]) } as never),
            /etcd has lost quorum \(0 of 3 members healthy[\s\S]*docs\/disaster-recovery\.md/);
        assert.strictEqual((await c.run("kubectl", ["get", "node", nodeName(ids[1])], { allowFail: true })).code, 0, "its Node is untouched");
        assert.deepStrictEqual(realOps.log.slice(logged).map((l) => l.split(": ")[1]), ["list-nodes", "etcd-health"], "it only looked: no drain, no member removal");
    });

    it("a master that vanished outside Pulumi (released, no refresh): its unhealthy member is removed before the next join, never a healthy one, never without quorum", async () => {
        const { c, emu, ids, live, c0, base, countsBeforeAdd, realOps } = await world("vanished");
        const names = async () => (await members(c, c0)).map((m) => m.name).sort();

        // Master 2's instance is released outside Pulumi: its etcd dies with it, and no ControlPlaneMember delete runs.
        const gone = live.splice(2, 1)[0];
        await gone.stop();
        emu.releaseInstance(ids[2]);
        await c.waitFor("master 2's member unhealthy", async () => (await members(c, c0)).filter((m) => m.healthy).length === 2, 30_000);

        // `pulumi up --refresh` re-creates it (a new instance, the same address) and its ControlPlaneMember joins it: the
        // member of the released instance is removed first (through master 0's healthy etcd), then the new one is added.
        const renewed = emu.addInstance({ instanceId: "i-master2v", regionId: REGION, privateIp: "192.168.0.12" }).instanceId;
        const masters = [ids[0], ids[1], renewed];
        await controlPlaneMemberProvider.create!({ ...base, masterInstanceIds: masters, memberInstanceId: renewed } as never);
        assert.deepStrictEqual(countsBeforeAdd, [2], "the stale member left before the new one was added: never a fourth");
        assert.deepStrictEqual(await names(), [nodeName(ids[0]), nodeName(ids[1]), nodeName(renewed)]);
        assert.ok((await members(c, c0)).every((m) => m.healthy && !m.learner));
        assert.strictEqual(realOps.log.filter((l) => l.endsWith(": etcd-member-remove")).length, 1);

        // Master 1's instance is released too, but its etcd still answers: a healthy member is never swept. A join for
        // another instance finds three members for three masters and is refused; nothing removed.
        emu.releaseInstance(ids[1]);
        const extra = emu.addInstance({ instanceId: "i-master1v", regionId: REGION, privateIp: "192.168.0.11" }).instanceId;
        await assert.rejects(controlPlaneMemberProvider.create!({ ...base, masterInstanceIds: [ids[0], extra, renewed], memberInstanceId: extra } as never),
            /3 members for 3 masters.*a join would make 4/);
        assert.deepStrictEqual(await names(), [nodeName(ids[0]), nodeName(ids[1]), nodeName(renewed)], "the healthy member of a released instance stays");

        // Then master 1's and the renewed master 2's members die, both instances gone: etcd has no quorum, so the stale
        // members are not removed (that would take etcd's last voters away) and the join is refused.
        await live.find((m) => m.node === nodeName(ids[1]))!.stop();
        await live.find((m) => m.node === nodeName(renewed))!.stop();
        emu.releaseInstance(renewed);
        const logged = realOps.log.length;
        await assert.rejects(controlPlaneMemberProvider.create!({ ...base, masterInstanceIds: [ids[0], extra, "i-master2w"], memberInstanceId: extra } as never),
            /members for 3 masters|not every etcd member is healthy/);
        assert.ok(!realOps.log.slice(logged).some((l) => l.endsWith(": etcd-member-remove")), realOps.log.slice(logged).join("\n"));
        assert.deepStrictEqual(countsBeforeAdd, [2], "no member add was attempted");
    });
});
