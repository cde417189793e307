/**
 * The seed's world on one machine, for a checked-in stack: what `pulumi up` leaves running, with the cloud emulated and
 * everything on the nodes real. For the mocha file that calls {@link useSeedCluster}:
 *
 * 1. a cluster CA, then the stack synthesized with that CA's pin (scripts/synth.ts under mocks; the userdata it renders
 *    is what the instances boot, byte for byte);
 * 2. the emulator (testing/emulator) with what the stack creates: master 0's instance, the route table, each pool's
 *    scaling group with its scaling configuration (the synthesized userdata, instance type, tags);
 * 3. a real control plane (test/kube/cluster.ts) on a VPC bridge at the addresses synth gave master 0 (its private IP,
 *    the API endpoint), with kubeadm's kube-proxy add-on;
 * 4. the instance metadata service at 100.100.100.200 inside the VPC (test/kube/metadata.ts: each instance's identity,
 *    signed by the admission tests' test PKI), and the cloud proxy the master's add-ons use;
 * 5. the stack's admission service, as its manifest renders it (the compiled service from its ConfigMap, its config with
 *    the run's file paths), as a process on master 0's addresses with its ServiceAccount's token;
 * 6. the stack's pod network manifest applied (flannel's DaemonSet runs on the real nodes) and the real CCM run with its
 *    DaemonSet's command line and cloud config, against the emulator's VPC and ECS, with its ServiceAccount's token;
 * 7. real nodes (test/kube/nodes.ts): an instance ESS (or a test) launches boots a node that runs the instance's userdata;
 *    a released or stopped instance's node stops; the emulator's route table is applied to the VPC bridge (a route to an
 *    instance whose ENI still checks source and destination forwards nothing, as in a VPC).
 *
 * Skipped with one line when the binaries are missing or this machine cannot run real nodes; under CI=true that fails.
 * Counts of real nodes, CCM and autoscaler runs are printed at the end of the whole run.
 */
import * as assert from "assert";
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { makePki, type TestPki } from "../../testing/admission/pki";
import { startEmulator, TEST_CREDENTIALS, type Emulator, type EmuInstance } from "../../testing/emulator";
import { primaryEni } from "../../testing/emulator/ecs";
import { binDir, caCertHashOf, isExecutable, KUBERNETES_VERSION, missingBinaries, startCluster, type Cluster, type RunResult } from "./cluster";
import { startCloudProxy, type CloudProxy } from "./cloudProxy";
import { metadataService, type Metadata } from "./metadata";
import { machineOverlays, missingNodeBinaries, realNodes, realNodesUnavailable, cgroupLayout, type RealNode, type RealNodes } from "./nodes";
import { headerOf, synthesizeAt, type RenderedStack } from "./stacks";
import { newAdmissionKey, publicKeyPin, signAdmissionCertificate } from "../../src/providers/admissionCertificate";
import { forwardFromVpc, serveInVpc } from "./vpcService";

/** What ran for real over the whole test run (printed once at the end). */
export const REAL_RUNS = { nodes: 0, ccm: 0, autoscaler: 0 };
let reported = false;
after(function () {
    if (reported || REAL_RUNS.nodes + REAL_RUNS.ccm + REAL_RUNS.autoscaler === 0) return;
    reported = true;
    console.log(`\n  real world: ${REAL_RUNS.nodes} real node(s) booted, ${REAL_RUNS.ccm} real CCM run(s), ${REAL_RUNS.autoscaler} real Cluster Autoscaler run(s)` +
        ` (cgroup ${cgroupLayout() ?? "none"})`);
});

/** A pool of the stack as synthesized: its scaling group in the emulator and its userdata. */
export interface SeedPool {
    name: string;
    scalingGroupId: string;
    instanceType: string;
    /** The userdata its scaling configuration carries, as synth rendered it (packed, secrets and all). */
    userdata: string;
    /** Its scaling configuration's resource name (the file under out/<stack>/userdata). */
    configName: string;
}

/** One instance's boot: its node, and how its userdata run went. */
export interface Boot {
    instance: EmuInstance;
    node: RealNode;
    /** When ESS (or the test) launched it, when its node was up, when its userdata ended (ms since the epoch). */
    launchedAt: number;
    bootedAt: number;
    doneAt?: number;
    /** Resolves with the userdata's exit (never rejects). */
    done: Promise<RunResult>;
}

export interface Seed {
    c: Cluster;
    emu: Emulator;
    stack: RenderedStack;
    region: string;
    caCertHash: string;
    masterInstanceId: string;
    masterIp: string;
    apiEndpoint: string;
    routeTableId: string;
    pools: Record<string, SeedPool>;
    nodes: RealNodes;
    metadata: Metadata;
    proxy: CloudProxy;
    pki: TestPki;
    /** Boots by instance id (one per userdata run). */
    boots: Map<string, Boot>;
    /** The manifest objects of a rendered file (e.g. `dev-pod-network.yaml`). */
    objects(file: string): Array<Record<string, any>>;
    /** A kubeconfig of a ServiceAccount's token (what its pod would use), written into the run folder. */
    serviceAccountKubeconfig(namespace: string, name: string): Promise<string>;
    /**
     * Starts the real CCM as its DaemonSet runs it; resolves once it holds its lease. `extraArgs` (`--flag=value`) are for
     * test timing only: one the rendered command line has replaces its value there, any other is added.
     */
    startCcm(extraArgs?: string[]): Promise<{ stop(): Promise<void> }>;
    /**
     * Another stack file synthesized with this world's pins (cluster CA, admission key): what `pulumi up` of a changed
     * stack would give the same cluster (e.g. a pool's new scaling configuration).
     */
    synthesize(stackFile: string): Promise<RenderedStack>;
    /** Adds an instance to the emulator and boots a node for it (an existing ECS instance, its agent online), without userdata. */
    existingInstance(init: Partial<EmuInstance>): Promise<{ instance: EmuInstance; node: RealNode }>;
    /** A Node's object, or undefined. */
    node(name: string): Promise<any | undefined>;
    /** Waits until a Node is Ready (its kubelet reports it). */
    ready(name: string, timeoutMs?: number): Promise<any>;
}

const SEED_IMAGES = ["pause", "workload", "kube-proxy", "flannel", "flannel-cni-plugin"] as const;
const ENV = ["ALICLOUD_KUBEADM_ENDPOINT", "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_ECS_METADATA_DISABLED", "ALIBABA_CLOUD_CLI_PROFILE_DISABLED"];

function docs(text: string): Array<Record<string, any>> {
    return parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
}

/** A cluster CA as kubeadm wants one (kubeadm reuses pki/ca.crt and ca.key when they exist). */
function clusterCa(): { crt: string; key: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-seed-ca-"));
    try {
        execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path.join(dir, "ca.key"), "-out", path.join(dir, "ca.crt"),
            "-days", "2", "-subj", "/CN=kubernetes", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign"], { stdio: "pipe" });
        return { crt: fs.readFileSync(path.join(dir, "ca.crt"), "utf8"), key: fs.readFileSync(path.join(dir, "ca.key"), "utf8") };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

/** Why the seed's world cannot run here (missing binaries, a machine without namespaces…), or undefined. */
export function seedUnavailable(): string | undefined {
    const bin = binDir();
    const missing = [...new Set([...missingBinaries(bin), ...missingNodeBinaries(bin), ...["cloud-controller-manager", "cluster-autoscaler"].filter((b) => !isExecutable(path.join(bin, b)))])];
    if (missing.length) return `real nodes need ${missing.join(", ")} in ${bin}: run \`npm run kube:build\``;
    return realNodesUnavailable();
}

/**
 * Registers before/after hooks that make the seed's world for `stack` (a name under stacks/ or a path), and returns it
 * (read `.s` inside tests). The nodes boot only when ESS launches instances (or a test boots one).
 */
export function useSeedCluster(stackFile: string): { readonly s: Seed } {
    const box: { s?: Seed } = {};
    const stops: Array<() => Promise<void> | void> = [];
    before(async function () {
        this.timeout(300_000);
        const why = seedUnavailable();
        if (why) {
            if (process.env.CI === "true") throw new Error(`CI=true: ${why}`);
            console.log(`    skipped: ${why}`);
            this.skip();
        }
        const t0 = Date.now();
        // the cluster CA and the admission service's key first: synth renders their pins into what the nodes boot
        const ca = clusterCa();
        const caCertHash = caCertHashOf(ca.crt);
        const admissionKey = newAdmissionKey();
        const version = KUBERNETES_VERSION.replace(/^v/, "");
        const dynamicOutputs = { caCertHash, pin: publicKeyPin(admissionKey), keyPem: admissionKey };
        const stack = await synthesizeAt(stackFile, version, { dynamicOutputs });
        const config = parseYaml(fs.readFileSync(stackFile.includes("/") ? path.resolve(__dirname, "..", "..", stackFile) : path.join(__dirname, "..", "..", "stacks", `Pulumi.${stackFile}.yaml`), "utf8"))
            .config["alicloud-kubeadm:cluster"];
        const byType = (t: string) => stack.resources.filter((r) => r.type === t);
        const master = byType("alicloud:ecs/instance:Instance").find((r) => /-master-0$/.test(r.name));
        assert.ok(master?.id, "synth made master 0");
        const configs = byType("alicloud:ess/scalingConfiguration:ScalingConfiguration");
        const anyPool = configs[0];
        assert.ok(anyPool, "the stack has a pool");
        const header = headerOf(anyPool.rawInputs.userData as string);
        const apiEndpoint = header.AK_API_ENDPOINT;
        const masterIp = header.AK_ADMISSION_ENDPOINTS.split(",")[0].replace(/:\d+$/, "");
        const podNetwork = Object.keys(stack.manifests).find((f) => f.endsWith("-pod-network.yaml"))!;
        const cloudConfig = docs(stack.manifests[podNetwork]).find((o) => o.kind === "ConfigMap" && o.metadata.name === "cloud-config")!;
        const routeTableId: string = JSON.parse(cloudConfig.data["cloud-config.conf"]).Global.routeTableIDs;
        const roleName = String(byType("alicloud:ram/role:Role").find((r) => /-control-plane-role$/.test(r.name))?.inputs.roleName);

        const emu = await startEmulator();
        stops.push(() => emu.close());
        // the library's own calls (removal, operations) go to the emulator, as useEmulator points them
        const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
        stops.push(() => { for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v; });
        Object.assign(process.env, {
            ALICLOUD_KUBEADM_ENDPOINT: emu.endpoint, ALIBABA_CLOUD_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, ALIBABA_CLOUD_ACCESS_KEY_SECRET: TEST_CREDENTIALS.accessKeySecret,
            ALIBABA_CLOUD_ECS_METADATA_DISABLED: "true", ALIBABA_CLOUD_CLI_PROFILE_DISABLED: "true",
        });
        const region = stack.region;
        const vpcId = "vpc-emu";
        emu.addInstance({ instanceId: master.id!, instanceName: String(master.inputs.instanceName), privateIp: masterIp, regionId: region, vpcId, instanceType: String(master.inputs.instanceType) });
        emu.addRouteTable({ routeTableId, vpcId });
        const pools: Record<string, SeedPool> = {};
        for (const cfg of configs) {
            const pool = cfg.name.replace(/^.*-pool-/, "").replace(/-config$/, "");
            const groupId = String(cfg.inputs.scalingGroupId);
            const group = byType("alicloud:ess/scalingGroup:ScalingGroup").find((g) => g.id === groupId)!;
            pools[pool] = { name: pool, scalingGroupId: groupId, instanceType: String(cfg.inputs.instanceType), userdata: cfg.rawInputs.userData as string, configName: cfg.name };
            emu.addScalingGroup({
                scalingGroupId: groupId, scalingGroupName: String(group.inputs.scalingGroupName), regionId: region, vpcId,
                minSize: Number(group.inputs.minSize), maxSize: Number(group.inputs.maxSize), desiredCapacity: 0, instanceType: String(cfg.inputs.instanceType),
                userData: Buffer.from(cfg.rawInputs.userData as string, "utf8").toString("base64"), configurationTags: cfg.inputs.tags as Record<string, string>,
            });
        }

        const c = await startCluster({
            region, masterInstanceId: master.id, podCidr: config.network.podCidr, serviceCidr: config.network.serviceCidr,
            nodeCidrMaskSize: config.network.nodeCidrMaskSize, files: { "pki/ca.crt": ca.crt, "pki/ca.key": ca.key },
            // the VPC: the stack's, plus where the emulator's ESS puts the instances it launches (10.0.0.0/16)
            vpc: { masterIp, apiEndpoint, addresses: ["100.100.100.200"], cidrs: [config.network.vpcCidr, "10.0.0.0/16"] }, 
            // KUBE_SEED_VERBOSITY=4: the scheduler and the controller-manager say why (for a look into a slow run)
            ...(process.env.KUBE_SEED_VERBOSITY ? { schedulerArgs: { v: process.env.KUBE_SEED_VERBOSITY }, controllerManagerArgs: { v: process.env.KUBE_SEED_VERBOSITY } } : {}),
        });
        stops.push(() => c.stop());
        assert.strictEqual(c.caCertHash, caCertHash, "the control plane runs on the CA synth pinned");

        const pki = makePki();
        stops.push(() => pki.cleanup());
        const metadata = metadataService({ emu, pki, accountId: "1234567890123456", roles: { [master.id!]: roleName },
            aliases: { [masterIp]: master.id!, [apiEndpoint.replace(/:\d+$/, "")]: master.id!, "100.100.100.200": master.id! } });
        const md = await serveInVpc(c, "metadata", { ip: "100.100.100.200", port: 80 }, metadata.server);
        stops.push(() => md.stop());
        const cloudProxy = await startCloudProxy(c, emu, { region, metadata: (req, res) => metadata.answerFor(master.id!, req, res) });
        stops.push(() => cloudProxy.stop());
        // the API server's addresses are not the cloud's: the add-ons reach them directly
        const noProxy = [cloudProxy.env.NO_PROXY, masterIp, apiEndpoint.replace(/:\d+$/, "")].join(",");
        const proxy: CloudProxy = { ...cloudProxy, env: { ...cloudProxy.env, NO_PROXY: noProxy, no_proxy: noProxy } };

        const objects = (file: string) => docs(stack.manifests[file] ?? "");
        const serviceAccountKubeconfig = async (namespace: string, name: string): Promise<string> => {
            const token = (await c.kubectl(["create", "token", name, "-n", namespace, "--duration=2h"])).trim();
            return c.writeFile(`sa-${namespace}-${name}.conf`, JSON.stringify({
                apiVersion: "v1", kind: "Config", clusters: [{ name: "c", cluster: { server: c.server, "certificate-authority": c.caFile } }],
                users: [{ name: "sa", user: { token } }], contexts: [{ name: "c", context: { cluster: "c", user: "sa" } }], "current-context": "c",
            }));
        };

        // The admission service as its manifest renders it: the compiled code and config of its ConfigMap, run on master 0
        // with its own key (the one synth pinned) and a certificate for master 0's address, as AdmissionCertificate makes it.
        // Everything else of the manifest is applied (its RBAC, policies, the pools' registrations).
        const admissionFile = Object.keys(stack.manifests).find((f) => f.endsWith("-admission.yaml"))!;
        const admissionObjects = objects(admissionFile);
        const isCode = (o: Record<string, any>) => o.kind === "ConfigMap" && o.data?.["server.js"] !== undefined;
        await c.apply(admissionObjects.filter((o) => o.kind !== "DaemonSet" && o.kind !== "Secret" && !isCode(o)));
        const cm = admissionObjects.find(isCode)!;
        const dir = c.path("admission");
        fs.mkdirSync(dir, { recursive: true });
        for (const [f, text] of Object.entries(cm.data as Record<string, string>)) fs.writeFileSync(path.join(dir, f), text);
        const emuForward = await forwardFromVpc(c, "emulator", { ip: "127.0.0.1", port: 18081 }, { port: Number(new URL(emu.endpoint).port) });
        stops.push(() => emuForward.stop());
        const serviceConfig = JSON.parse(cm.data["config.json"]);
        fs.writeFileSync(path.join(dir, "identity-signer.pem"), pki.signerPem); // the test key the admission tests sign with
        fs.writeFileSync(path.join(dir, "tls.key"), admissionKey, { mode: 0o600 });
        fs.writeFileSync(path.join(dir, "tls.crt"), signAdmissionCertificate(admissionKey, [masterIp]).certPem);
        fs.writeFileSync(path.join(dir, "config.json"), JSON.stringify({
            ...serviceConfig, tlsCertFile: path.join(dir, "tls.crt"), tlsKeyFile: path.join(dir, "tls.key"),
            signerFile: path.join(dir, "identity-signer.pem"), attachScriptFile: serviceConfig.attachScriptFile ? path.join(dir, "attach.sh") : undefined,
            cloudEndpoint: "http://127.0.0.1:18081",
        }));
        const saDir = path.join(dir, "serviceaccount");
        fs.mkdirSync(saDir);
        fs.writeFileSync(path.join(saDir, "token"), (await c.kubectl(["create", "token", "alicloud-kubeadm-admission", "-n", "kube-system", "--duration=2h"])).trim());
        fs.copyFileSync(c.caFile, path.join(saDir, "ca.crt"));
        const admission = c.start("admission", process.execPath, [path.join(dir, "server.js"), path.join(dir, "config.json")], {
            env: { AK_ADMISSION_SA_DIR: saDir, KUBERNETES_SERVICE_HOST: masterIp, KUBERNETES_SERVICE_PORT: apiEndpoint.replace(/^.*:/, "") },
        });
        stops.push(() => admission.stop());
        await c.waitFor("the admission service", async () => fs.readFileSync(c.path("logs/admission.log"), "utf8").includes('"event":"started"'), 30_000);

        // The pod network: flannel's DaemonSet and the CCM's RBAC and config as the stack applies them; the CCM itself runs
        // as a process (startCcm), with its DaemonSet's command line.
        const pn = objects(podNetwork);
        await c.apply(pn.filter((o) => !(o.kind === "DaemonSet" && o.metadata.name === "cloud-controller-manager")));
        const ccmSet = pn.find((o) => o.kind === "DaemonSet" && o.metadata.name === "cloud-controller-manager")!;
        const ccmContainer = ccmSet.spec.template.spec.containers[0];
        const cloudConfigFile = c.writeFile("ccm/cloud-config.conf", cloudConfig.data["cloud-config.conf"]);
        const startCcm = async (extraArgs: string[] = []) => {
            const kubeconfig = await serviceAccountKubeconfig("kube-system", ccmSet.spec.template.spec.serviceAccountName);
            const flag = (a: string) => a.replace(/=.*$/, "");
            const args = (ccmContainer.args as string[]).map((a) => a.startsWith("--cloud-config=") ? `--cloud-config=${cloudConfigFile}` : a)
                .map((a) => extraArgs.find((x) => flag(x) === flag(a)) ?? a);
            REAL_RUNS.ccm++;
            const p = c.start(`cloud-controller-manager-${REAL_RUNS.ccm}`, path.join(c.bin, "cloud-controller-manager"), [...args, ...extraArgs.filter((x) => !args.includes(x))],
                { env: { ...proxy.env, KUBECONFIG: kubeconfig } });
            await c.waitFor("the CCM's lease", async () => {
                const r = await c.run("kubectl", ["get", "lease", "ccm", "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}"], { allowFail: true });
                return r.code === 0 && r.stdout.trim() !== "";
            }, 90_000);
            return p;
        };

        // The nodes: the images a baked node image of this stack carries (by the names its manifests use), this machine's
        // overlays, and the instances' lifecycle.
        const names: Record<string, string[]> = { pause: [header.AK_SANDBOX_IMAGE] };
        for (const o of pn.filter((x) => x.kind === "DaemonSet" && x.metadata.name !== "cloud-controller-manager")) {
            for (const ct of [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers]) {
                const repo = String(ct.image).replace(/:[^/]+$/, "").split("/").pop()!;
                if ((SEED_IMAGES as readonly string[]).includes(repo)) (names[repo] ??= []).push(ct.image);
            }
        }
        const nodes = realNodes(c, { images: SEED_IMAGES.map((archive) => ({ archive, names: names[archive] ?? [] })), overlay: machineOverlays() });
        stops.push(() => nodes.stopAll());
        const boots = new Map<string, Boot>();
        emu.state.onUserDataRun = (inst) => {
            const launchedAt = Date.now();
            REAL_RUNS.nodes++;
            const started = nodes.boot({ instanceId: inst.instanceId, ip: inst.privateIp, hostname: inst.hostName }).then(async (node) => {
                const b: Boot = { instance: inst, node, launchedAt, bootedAt: Date.now(), done: undefined as unknown as Promise<RunResult> };
                // cloud-init runs user data once, as root, as an executable file
                const file = path.join(node.dir, "user-data");
                fs.writeFileSync(file, Buffer.from(inst.userData, "base64"), { mode: 0o700 });
                b.done = node.run(file, [], { allowFail: true, timeoutMs: 600_000 }).then((r) => { b.doneAt = Date.now(); return r; });
                boots.set(inst.instanceId, b);
                return b;
            });
            started.catch((e) => console.log(`    boot of ${inst.instanceId} failed: ${e}`));
        };
        // The machines follow their instances (released or stopped: powered off), and the VPC router the route table.
        let syncing = false;
        const sync = async () => {
            if (syncing) return;
            syncing = true;
            try {
                for (const n of nodes.running()) {
                    const inst = emu.instances.get(n.instanceId);
                    if (!inst || inst.status === "Stopped") await n.stop();
                }
                // a route works when its next hop forwards for others: the instance's ENI has source/destination checking off
                // (testing/emulator/ecs.ts; the CCM turns it off for every new node)
                const table = emu.routeTables.get(routeTableId)!;
                await nodes.setRoutes(table.entries.filter((e) => e.nextHopType === "Instance" && emu.instances.get(e.nextHopId)
                    && emu.state.sourceDestCheckOff.has(primaryEni(emu.instances.get(e.nextHopId)!)))
                    .map((e) => ({ cidr: e.destinationCidrBlock, via: emu.instances.get(e.nextHopId)!.privateIp })));
            } catch (e) {
                console.log(`    VPC sync: ${(e as Error).message}`);
            } finally {
                syncing = false;
            }
        };
        const timer = setInterval(() => void sync(), 300);
        stops.push(() => clearInterval(timer));

        const node = async (name: string) => {
            const r = await c.run("kubectl", ["get", "node", name, "-o", "json"], { allowFail: true });
            return r.code === 0 ? JSON.parse(r.stdout) : undefined;
        };
        box.s = {
            c, emu, stack, region, caCertHash, masterInstanceId: master.id!, masterIp, apiEndpoint, routeTableId, pools, nodes, metadata, proxy, pki, boots,
            objects, serviceAccountKubeconfig, startCcm, node,
            synthesize: (file) => synthesizeAt(file, version, { dynamicOutputs }),
            existingInstance: async (init) => {
                const instance = emu.addInstance({ regionId: region, vpcId, ...init });
                REAL_RUNS.nodes++;
                const n = await nodes.boot({ instanceId: instance.instanceId, ip: instance.privateIp, hostname: instance.hostName });
                return { instance, node: n };
            },
            ready: (name, timeoutMs = 180_000) => c.waitFor(`node ${name} Ready`, async () => {
                const n = await node(name);
                return (n?.status?.conditions ?? []).some((x: { type: string; status: string }) => x.type === "Ready" && x.status === "True") ? n : undefined;
            }, timeoutMs),
        };
        console.log(`    seed world up in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${stackFile} at ${c.server}, run folder ${c.dir}`);
    });
    after(async function () {
        this.timeout(120_000);
        for (const stop of stops.reverse()) {
            try {
                await stop();
            } catch (e) {
                console.log(`    stop: ${(e as Error).message}`);
            }
        }
    });
    return { get s(): Seed { if (!box.s) throw new Error("seed world not started"); return box.s; } };
}
