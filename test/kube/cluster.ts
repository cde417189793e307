/**
 * A real Kubernetes control plane for tests, on 127.0.0.1, from the upstream binaries that
 * test/kube/build.sh (`npm run kube:build`) builds: etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler, and KWOK for fake nodes and pods. Nothing here imports the library.
 *
 * How it is made, the way `kubeadm init` makes a master (so the flags are kubeadm v1.36.3's own):
 *   1. a kubeadm v1beta4 InitConfiguration + ClusterConfiguration in the shape the project renders
 *      (src/shell/master_init.sh `ak_init_config`: podSubnet, serviceSubnet, controllerManager
 *      allocate-node-cidrs / node-cidr-mask-size / configure-cloud-routes=false, certSANs, node named by
 *      its provider id with kubelet cloud-provider=external + provider-id), plus the run's own ports
 *      and folders as extraArgs;
 *   2. `kubeadm init phase certs all` and `kubeadm init phase kubeconfig all --kubeconfig-dir <run dir>`;
 *   3. `kubeadm init phase etcd local --dry-run` and `kubeadm init phase control-plane all --dry-run`
 *      render the static pod manifests into the run dir; each process runs the manifest's command;
 *   4. after /readyz: the `kubeadm:cluster-admins` binding (what kubeadm init does with super-admin.conf),
 *      `kubeadm init phase upload-config all` and `kubeadm init phase bootstrap-token`.
 *
 * Isolation: every file is in one per-run temp folder; ports are picked at random; everything listens on
 * 127.0.0.1 only. Where the machine allows it (root, `unshare -n`), every process of the run, and every
 * command run through {@link Cluster.run} / {@link Cluster.kubectl}, lives in a network namespace of its
 * own that has only a loopback interface: nothing can reach beyond it, and two runs never share a port.
 *
 * kubeadm refuses 127.0.0.1 as `localAPIEndpoint.advertiseAddress` (it looks for a global address on
 * `lo`), so the config given to kubeadm advertises {@link PLACEHOLDER_IP} (TEST-NET-1, never routed) and
 * every place that address lands is overridden to 127.0.0.1 (apiserver --advertise-address, etcd URLs,
 * the server of controller-manager.conf and scheduler.conf); startCluster fails if any is left.
 *
 * Usage (see test/realCluster.test.ts):
 *   const c = await startCluster({ apiserverArgs: { "audit-log-path": "{dir}/audit.log" } });
 *   await c.addNode({ name: "cn-hangzhou.i-1", providerID: "cn-hangzhou.i-1" });
 *   await c.kubectl(["get", "nodes", "-o", "json"]);
 *   await c.stop();
 */
import { ChildProcess, execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml, parseAllDocuments, stringify } from "yaml";

export const KUBERNETES_VERSION = "v1.36.3";
/** The address kubeadm is told to advertise; overridden everywhere to 127.0.0.1 (see the file comment). */
export const PLACEHOLDER_IP = "192.0.2.1";

/** Extra command-line flags: name (without --) to value; values may use `{dir}` for the run folder. */
export type Flags = Record<string, string>;

export interface ClusterOptions {
    /** Pod CIDR (kubeadm podSubnet, controller-manager --cluster-cidr). Default: the project's 172.16.0.0/16. */
    podCidr?: string;
    /** Service CIDR (kubeadm serviceSubnet, apiserver --service-cluster-ip-range). Default: 10.96.0.0/12. */
    serviceCidr?: string;
    /** Node CIDR mask size (controller-manager --node-cidr-mask-size). Default 24. */
    nodeCidrMaskSize?: number;
    /** Region and instance id of the (process-only) master; its node name is `<region>.<instance>`. */
    region?: string;
    masterInstanceId?: string;
    /** Extra apiserver certificate SANs (127.0.0.1 and localhost are always there). */
    certSans?: string[];
    /** Extra flags, given to kubeadm as ClusterConfiguration extraArgs (so kubeadm merges them as on a master). */
    apiserverArgs?: Flags;
    controllerManagerArgs?: Flags;
    schedulerArgs?: Flags;
    etcdArgs?: Flags;
    /** Extra files written into the run folder before anything starts: relative path -> content (mode 0600). */
    files?: Record<string, string>;
    /** KWOK extra flags. */
    kwokArgs?: Flags;
    /** Bound for the control plane to become ready. Default 90 s. */
    readyTimeoutMs?: number;
    /** "auto" (default): a private network namespace when the machine allows it; false: never (the default when
     *  KUBE_NETNS=0); true: required. */
    netns?: boolean | "auto";
    /** Keep the run folder after stop() (for debugging). Default: KUBE_KEEP_RUN_DIR=1 in the environment. */
    keepDir?: boolean;
    /**
     * A VPC for real nodes (test/kube/nodes.ts): a bridge ({@link VPC_BRIDGE}) in the run's network namespace (needed)
     * holds each vSwitch's gateway and the master's addresses, and routes between them (the VPC router). The API
     * server listens on every address of the namespace at `apiPort` and advertises `masterIp` (the endpoint of the
     * `kubernetes` Service, which pods reach through kube-proxy); controlPlaneEndpoint is `apiEndpoint`. kubeadm's
     * kube-proxy add-on is installed. Default: none (everything on 127.0.0.1).
     */
    vpc?: VpcOptions;
    /**
     * The control plane of another Kubernetes version ({@link previousKubernetes}): kube-apiserver,
     * kube-controller-manager and kube-scheduler run from `bin`, and kubeadm's ClusterConfiguration names `version`
     * (so the manifests and the kubeadm-config ConfigMap are what kubeadm makes for that version). etcd, kubeadm, kubectl
     * and KWOK stay this version's. Default: this version's binaries ({@link KUBERNETES_VERSION}).
     */
    controlPlane?: { version: string; bin: string };
}

/** The network the real nodes join: see {@link ClusterOptions.vpc}. */
export interface VpcOptions {
    /** The master's private IP: the API server's advertise address. */
    masterIp: string;
    /** `host:port` the nodes are given (the stack's API endpoint); its host is added to the bridge too. Default `<masterIp>:6443`. */
    apiEndpoint?: string;
    /** More addresses of the master on the bridge (e.g. another master's admission endpoint). */
    addresses?: string[];
    /** vSwitch CIDRs: each gets its gateway (its last usable address) on the bridge. */
    cidrs: string[];
}

/** The bridge of {@link ClusterOptions.vpc} in the cluster's network namespace. */
export const VPC_BRIDGE = "akvpc0";
/** The VPC router's MAC address (locally administered; each run's bridge is in a network namespace of its own). */
export const VPC_BRIDGE_MAC = "02:ac:00:00:00:01";

/** The gateway of a vSwitch CIDR on {@link VPC_BRIDGE}: its last usable address. */
export function gatewayOf(cidr: string): string {
    const [a, bits] = cidr.split("/");
    const start = a.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
    const last = start + 2 ** (32 - Number(bits)) - 2;
    return [24, 16, 8, 0].map((sh) => Math.floor(last / 2 ** sh) % 256).join(".");
}

export interface NodeSpec {
    name: string;
    /** spec.providerID, e.g. `cn-hangzhou.i-xxx` (the project's provider id format). */
    providerID?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    taints?: Array<{ key: string; value?: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }>;
    /** Node allocatable/capacity; default 32 cpu, 256Gi, 110 pods. */
    allocatable?: Record<string, string>;
}

export interface PodSpec {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    /** Bind to this node directly (no scheduler); otherwise the scheduler places it. */
    nodeName?: string;
    nodeSelector?: Record<string, string>;
    tolerations?: object[];
}

export interface RunResult {
    code: number;
    stdout: string;
    stderr: string;
}

export interface RunOptions {
    input?: string;
    env?: Record<string, string>;
    /** Resolve with a non-zero code instead of throwing. */
    allowFail?: boolean;
    timeoutMs?: number;
}

export interface Cluster {
    /** The run folder (certificates in pki/, kubeconfigs, logs in logs/, component manifests, extra files). */
    dir: string;
    /** https://127.0.0.1:<port> */
    server: string;
    /** Admin kubeconfig (kubeadm's admin.conf, group kubeadm:cluster-admins bound to cluster-admin). */
    kubeconfig: string;
    /** super-admin.conf (system:masters), as kubeadm writes it. */
    superAdminKubeconfig: string;
    /** The kubeadm config the control plane was rendered from. */
    kubeadmConfig: string;
    caPem: string;
    caFile: string;
    /** sha256:<hex> of the CA's public key, as kubeadm join's caCertHashes wants it. */
    caCertHash: string;
    /** The bin folder of the upstream binaries. */
    bin: string;
    ports: { apiserver: number; etcdClient: number; etcdPeer: number; controllerManager: number; scheduler: number };
    /** Whether the processes run in a network namespace of their own. */
    netns: boolean;
    /** The network namespace's file (`/proc/<pid>/ns/net` of its holder), when {@link Cluster.netns}. */
    netnsPath?: string;
    /** The VPC of {@link ClusterOptions.vpc}, when asked for. */
    vpc?: VpcOptions & { bridge: string; apiEndpoint: string };
    /** The argv (after the binary) each component was started with: kubeadm's manifest command for the
     *  control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), and kwok's flags. */
    commands: Record<string, string[]>;
    /** Absolute path of a file in the run folder. */
    path(rel: string): string;
    /** Write a file into the run folder (mode 0600) and return its absolute path. */
    writeFile(rel: string, content: string): string;
    /** Run a program (an upstream binary by name, or any program on PATH) in the cluster's network, with
     *  KUBECONFIG = the admin kubeconfig. Throws on a non-zero exit unless allowFail. */
    run(cmd: string, args: string[], opts?: RunOptions): Promise<RunResult>;
    /** kubectl with the admin kubeconfig; resolves with stdout. */
    kubectl(args: string[], opts?: RunOptions): Promise<string>;
    /** `kubectl apply -f -` of objects (YAML/JSON documents or objects). */
    apply(objects: string | object | object[]): Promise<string>;
    /** A KWOK-managed fake node; resolves once it is Ready. */
    addNode(spec: NodeSpec): Promise<void>;
    /** A pod (one container, image never pulled) on KWOK nodes; resolves with the pod once it is Running. */
    createPod(spec: PodSpec): Promise<{ metadata: { name: string; namespace: string }; spec: { nodeName: string }; status: { phase: string; podIP?: string } }>;
    /**
     * A node's credentials the way `kubeadm join` gets them for its kubelet (TLS bootstrap): with a bootstrap
     * token (a new one from `kubeadm token create` unless given), a node-client CSR (O=system:nodes,
     * CN=system:node:<name>, key made by openssl), which the controller-manager auto-approves and signs with the
     * cluster CA. Resolves with a kubeconfig for that node (user system:node:<name>, subject to NodeRestriction).
     */
    nodeCredentials(nodeName: string, token?: string): Promise<{ kubeconfig: string; certPem: string; csrName: string; token: string }>;
    /**
     * A long-running process of the test's own (an add-on's binary, a bridge) in the cluster's network, logging to
     * `logs/<name>.log` (see {@link Cluster.logTail}); killed by `stop()` of the handle or of the cluster. While it
     * runs, {@link Cluster.waitFor} fails fast if it exits. `cmd` is an upstream binary's name or a path.
     */
    start(name: string, cmd: string, args: string[], opts?: { env?: Record<string, string> }): { pid: number; stop(): Promise<void> };
    /** Poll until fn returns a truthy value (bounded); the error names what was awaited. */
    waitFor<T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs?: number): Promise<T>;
    /** The last lines of a component's log (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok). */
    logTail(component: string, lines?: number): string;
    /** Stop one control-plane component (etcd, kube-apiserver, ...) without failing waits: it is expected to be down. */
    stopComponent(component: string): Promise<void>;
    /**
     * Start a stopped control-plane component again with the command it was started with, from the binary it ran
     * before, or from the folder `bin` (another version's: an upgrade in place).
     */
    startComponent(component: string, bin?: string): void;
    /** Kill every process, remove the run folder. Idempotent. */
    stop(): Promise<void>;
}

const COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"] as const;
const BINARIES = [...COMPONENTS, "kubeadm", "kubectl", "etcdctl", "etcdutl"] as const;
const BUILD_SCRIPT = path.join(__dirname, "build.sh");

/** The components {@link ClusterOptions.controlPlane} runs from another version's folder. */
export const VERSIONED_COMPONENTS = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/**
 * The previous minor's control plane, which test/kube/build.sh builds (module test/kube/go/kubernetes-previous) into
 * `bin/<version>/`: its version (the k8s.io/kubernetes that go.mod requires), its folder, and what of it is missing.
 */
export function previousKubernetes(bin = binDir()): { version: string; bin: string; missing: string[] } {
    const gomod = fs.readFileSync(path.join(__dirname, "go", "kubernetes-previous", "go.mod"), "utf8");
    const version = /^(?:require)?\s*k8s\.io\/kubernetes (v\S+)/m.exec(gomod)?.[1];
    if (!version) throw new Error("test/kube/go/kubernetes-previous/go.mod: requires no k8s.io/kubernetes version");
    const dir = path.join(bin, version);
    return { version, bin: dir, missing: VERSIONED_COMPONENTS.filter((b) => !isExecutable(path.join(dir, b))).map((b) => `${version}/${b}`) };
}

/** The folder test/kube/build.sh puts the binaries in (it need not exist). */
export function binDir(): string {
    return execFileSync("bash", [BUILD_SCRIPT, "--print-bin-dir"], { encoding: "utf8" }).trim();
}

/** Names of the binaries (and KWOK stages) missing from {@link binDir}; empty when everything is there. */
export function missingBinaries(bin = binDir()): string[] {
    const missing: string[] = BINARIES.filter((b) => !isExecutable(path.join(bin, b)));
    if (!fs.existsSync(path.join(bin, "kwok-stages", ".stamp"))) missing.push("kwok-stages");
    return missing;
}

/** Whether `p` is a file this process may execute. */
export function isExecutable(p: string): boolean {
    try {
        fs.accessSync(p, fs.constants.X_OK);
        return true;
    } catch {
        return false;
    }
}

/** Whether this machine lets us make a network namespace (root and unshare -n permitted). */
export function netnsAvailable(): boolean {
    try {
        execFileSync("unshare", ["--net", "ip", "link", "set", "lo", "up"], { stdio: "ignore", timeout: 10_000 });
        return true;
    } catch {
        return false;
    }
}

/**
 * `n` distinct ports free on 127.0.0.1 right now, for servers started a moment later (a cluster on the host's network).
 * Alone, the kernel picks them. Under test/ci.sh, whose lanes run files side by side on the host's network, each lane
 * (`TEST_LANE`, 1…) takes them from a block of its own below the kernel's ephemeral range: between the check here and
 * the server's bind, no other lane's `freePorts` and no `listen(0)` anywhere can be handed the same port.
 */
export async function freePorts(n: number): Promise<number[]> {
    const lane = Number(process.env.TEST_LANE);
    if (!Number.isInteger(lane) || lane < 1) return kernelPorts(n);
    const block = laneBlock(lane);
    const out: number[] = [];
    for (let tried = 0; out.length < n; tried++) {
        if (tried >= block.size) throw new Error(`freePorts: fewer than ${n} ports free in lane ${lane}'s block ${block.first}–${block.first + block.size - 1}`);
        const port = block.first + (laneCursor++ % block.size);
        if (await bindable(port)) out.push(port);
    }
    return out;
}

/**
 * Each lane's ports: 1000 of them from 20000 up (clear of the Kubernetes components' default ports), below the kernel's
 * ephemeral range (read; default 32768).
 */
function laneBlock(lane: number): { first: number; size: number } {
    let ephemeral = 32768;
    try {
        ephemeral = Number(fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || ephemeral;
    } catch { /* not Linux: the default */ }
    const first = 20000 + (lane - 1) * 1000;
    if (first + 1000 > ephemeral) throw new Error(`freePorts: lane ${lane} has no block of ports below the ephemeral range (${ephemeral}); run fewer lanes`);
    return { first, size: 1000 };
}

// Where this process's lane block is taken from next: a random start, then on, so one process never hands a port twice
// in a row and two processes of one lane (one after the other) do not start alike.
let laneCursor = crypto.randomInt(1000);

function bindable(port: number): Promise<boolean> {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.once("error", () => resolve(false));
        s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
    });
}

async function kernelPorts(n: number): Promise<number[]> {
    const servers: net.Server[] = [];
    try {
        for (let i = 0; i < n; i++) {
            const s = net.createServer();
            await new Promise<void>((resolve, reject) => {
                s.once("error", reject);
                s.listen(0, "127.0.0.1", () => resolve());
            });
            servers.push(s);
        }
        return servers.map((s) => (s.address() as net.AddressInfo).port);
    } finally {
        await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
}

function extraArgs(flags: Flags, dir: string): Array<{ name: string; value: string }> {
    return Object.entries(flags).map(([name, value]) => ({ name, value: value.split("{dir}").join(dir) }));
}

/** sha256:<hex> of a PEM certificate's SubjectPublicKeyInfo (kubeadm's --discovery-token-ca-cert-hash). */
export function caCertHashOf(caPem: string): string {
    const spki = new crypto.X509Certificate(caPem).publicKey.export({ type: "spki", format: "der" });
    return "sha256:" + crypto.createHash("sha256").update(spki).digest("hex");
}

function tail(file: string, lines: number): string {
    try {
        return fs.readFileSync(file, "utf8").split("\n").slice(-lines - 1).join("\n");
    } catch {
        return "(no log)";
    }
}

// Clean-up when this process ends: on exit and on SIGINT/SIGTERM (then the signal is raised again, unless
// someone else handles it). On a hard kill the processes still die (parent-death signal, see wrap below) and
// the next startCluster removes the run folders whose owner is gone.
const live = new Set<{ stopNow(): void }>();
process.once("exit", () => {
    for (const c of live) c.stopNow();
});
for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
        for (const c of live) c.stopNow();
        if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
}

const RUN_DIR_PREFIX = "ak-kube-";

/** Removes run folders left by processes that no longer exist (a run killed hard). */
function sweepStaleRunDirs(): void {
    const tmp = os.tmpdir();
    for (const name of fs.readdirSync(tmp)) {
        if (!name.startsWith(RUN_DIR_PREFIX)) continue;
        const dir = path.join(tmp, name);
        try {
            const pid = Number(fs.readFileSync(path.join(dir, "owner.pid"), "utf8"));
            if (pid > 0 && !fs.existsSync(`/proc/${pid}`)) fs.rmSync(dir, { recursive: true, force: true });
        } catch {
            // not ours, or being created right now: leave it
        }
    }
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
    const bin = binDir();
    const missing = missingBinaries(bin);
    if (missing.length) {
        throw new Error(`real-cluster binaries missing in ${bin}: ${missing.join(", ")}; run \`npm run kube:build\``);
    }
    const podCidr = opts.podCidr ?? "172.16.0.0/16";
    const serviceCidr = opts.serviceCidr ?? "10.96.0.0/12";
    const mask = opts.nodeCidrMaskSize ?? 24;
    const region = opts.region ?? "cn-hangzhou";
    const masterName = `${region}.${opts.masterInstanceId ?? "i-master0"}`;
    const keepDir = opts.keepDir ?? process.env.KUBE_KEEP_RUN_DIR === "1";
    const readyTimeoutMs = opts.readyTimeoutMs ?? 90_000;

    const netnsWanted = opts.vpc ? true : opts.netns ?? (process.env.KUBE_NETNS === "0" ? false : "auto");
    let useNetns = false;
    if (netnsWanted !== false) {
        useNetns = netnsAvailable();
        if (netnsWanted === true && !useNetns) throw new Error("startCluster({netns: true}): `unshare --net` is not permitted here");
    }

    sweepStaleRunDirs();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), RUN_DIR_PREFIX));
    fs.chmodSync(dir, 0o700);
    fs.writeFileSync(path.join(dir, "owner.pid"), String(process.pid));
    const logs = path.join(dir, "logs");
    fs.mkdirSync(logs);
    const procs = new Map<string, ChildProcess>();
    const commands: Record<string, string[]> = {};
    /** The binary each component last ran from (startComponent runs it again). */
    const binaries: Record<string, string> = {};
    const exited = new Map<string, string>();
    let holder: ChildProcess | undefined;
    let stopped = false;

    const stopNow = (): void => {
        for (const p of [...procs.values()].reverse()) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
        if (holder && holder.exitCode === null) holder.kill("SIGKILL");
        if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
    };
    const handle = { stopNow };
    live.add(handle);

    const stop = async (): Promise<void> => {
        if (stopped) return;
        stopped = true;
        for (const name of [...procs.keys()].reverse()) {
            const p = procs.get(name)!;
            if (p.exitCode !== null || p.signalCode !== null) continue;
            const gone = new Promise<void>((r) => p.once("exit", () => r()));
            p.kill("SIGTERM");
            const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
            await gone;
            clearTimeout(timer);
        }
        if (holder && holder.exitCode === null && holder.signalCode === null) {
            const gone = new Promise<void>((r) => holder!.once("exit", () => r()));
            holder.kill("SIGKILL");
            await gone;
        }
        live.delete(handle);
        if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
    };

    // The parent-death signal makes every process die with this one, even when it is killed hard.
    const hasSetpriv = (() => {
        try {
            return execFileSync("setpriv", ["--help"], { encoding: "utf8" }).includes("--pdeathsig");
        } catch {
            return false;
        }
    })();
    const wrap = (cmd: string, args: string[]): [string, string[]] => {
        let argv = [cmd, ...args];
        if (holder) argv = ["nsenter", `--net=/proc/${holder.pid}/ns/net`, ...argv];
        if (hasSetpriv) argv = ["setpriv", "--pdeathsig", "KILL", ...argv];
        return [argv[0], argv.slice(1)];
    };
    const resolveCmd = (cmd: string): string =>
        (BINARIES as readonly string[]).includes(cmd) ? path.join(bin, cmd) : cmd;
    const kubeconfig = path.join(dir, "admin.conf");

    const run = (cmd: string, args: string[], o: RunOptions = {}): Promise<RunResult> => {
        const [c, a] = wrap(resolveCmd(cmd), args);
        return new Promise((resolve, reject) => {
            const child = spawn(c, a, {
                cwd: dir,
                env: { ...process.env, KUBECONFIG: kubeconfig, ...o.env },
                stdio: ["pipe", "pipe", "pipe"],
            });
            let stdout = "";
            let stderr = "";
            child.stdout.on("data", (d) => (stdout += d));
            child.stderr.on("data", (d) => (stderr += d));
            const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 60_000);
            child.on("error", (e) => {
                clearTimeout(timer);
                reject(e);
            });
            child.on("close", (code, signal) => {
                clearTimeout(timer);
                const r = { code: code ?? 128, stdout, stderr };
                if (r.code !== 0 && !o.allowFail) {
                    reject(new Error(`${cmd} ${args.join(" ")} exited ${code ?? signal}:\n${stderr}${stdout}`));
                } else resolve(r);
            });
            // a program that exits without reading its input closes the pipe first: not an error of the run
            child.stdin.on("error", () => undefined);
            child.stdin.end(o.input ?? "");
        });
    };
    const kubectl = async (args: string[], o: RunOptions = {}): Promise<string> =>
        (await run("kubectl", ["--kubeconfig", kubeconfig, ...args], o)).stdout;

    const startProcess = (name: string, cmd: string, args: string[], env: Record<string, string> = {}): ChildProcess => {
        if (procs.has(name)) throw new Error(`a process named ${name} already runs`);
        const out = fs.openSync(path.join(logs, `${name}.log`), "a");
        const [c, a] = wrap(cmd, args);
        commands[name] = args;
        binaries[name] = cmd;
        const p = spawn(c, a, { cwd: dir, stdio: ["ignore", out, out], env: { ...process.env, KUBECONFIG: "", ...env } });
        fs.closeSync(out);
        p.on("exit", (code, signal) => {
            if (procs.get(name) === p) exited.set(name, `exited with ${code ?? signal}`);
        });
        procs.set(name, p);
        return p;
    };
    /** Stops the process registered as `name` (SIGTERM, then SIGKILL after 10 s); waits no longer count it as exited. */
    const stopProcess = async (name: string, p: ChildProcess): Promise<void> => {
        procs.delete(name);
        exited.delete(name);
        if (p.exitCode !== null || p.signalCode !== null) return;
        const gone = new Promise<void>((r) => p.once("exit", () => r()));
        p.kill("SIGTERM");
        const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
        await gone;
        clearTimeout(timer);
    };
    const start = (name: string, cmd: string, args: string[], o: { env?: Record<string, string> } = {}) => {
        const p = startProcess(name, resolveCmd(cmd), args, o.env);
        return { pid: p.pid ?? -1, stop: () => stopProcess(name, p) };
    };
    const stopComponent = async (component: string): Promise<void> => {
        const p = procs.get(component);
        if (!p) throw new Error(`no component ${component} runs`);
        await stopProcess(component, p);
    };
    const startComponent = (component: string, from?: string): void => {
        if (!commands[component]) throw new Error(`component ${component} never ran`);
        startProcess(component, from ? path.join(from, component) : binaries[component], commands[component]);
    };
    const logTail = (component: string, lines = 30): string => tail(path.join(logs, `${component}.log`), lines);
    const failure = (what: string, component: string): Error =>
        new Error(`${what}\n--- last lines of ${component} (${path.join(logs, component + ".log")}) ---\n${logTail(component)}`);

    const waitFor = async <T>(what: string, fn: () => Promise<T | undefined | false | null>, timeoutMs = 60_000): Promise<T> => {
        const deadline = Date.now() + timeoutMs;
        let last: unknown;
        for (;;) {
            for (const [name, why] of exited) if (!stopped) throw failure(`${name} ${why} while waiting for ${what}`, name);
            try {
                const v = await fn();
                if (v) return v;
            } catch (e) {
                last = e;
            }
            if (Date.now() > deadline) {
                throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message ?? last}` : ""}`);
            }
            await new Promise((r) => setTimeout(r, 250));
        }
    };

    try {
        if (useNetns) {
            holder = spawn(
                hasSetpriv ? "setpriv" : "unshare",
                [...(hasSetpriv ? ["--pdeathsig", "KILL", "unshare"] : []), "--net", "sh", "-c", "ip link set lo up && echo up && exec sleep 2147483647"],
                { stdio: ["ignore", "pipe", "inherit"] },
            );
            await new Promise<void>((resolve, reject) => {
                holder!.once("error", reject);
                holder!.once("exit", (code) => reject(new Error(`network namespace holder exited with ${code}`)));
                holder!.stdout!.once("data", () => resolve());
            });
        }

        for (const [rel, content] of Object.entries(opts.files ?? {})) {
            const p = path.join(dir, rel);
            if (!p.startsWith(dir + path.sep)) throw new Error(`startCluster files: ${rel} is outside the run folder`);
            fs.mkdirSync(path.dirname(p), { recursive: true });
            fs.writeFileSync(p, content, { mode: 0o600 });
        }

        const vpc = opts.vpc ? { ...opts.vpc, bridge: VPC_BRIDGE, apiEndpoint: opts.vpc.apiEndpoint ?? `${opts.vpc.masterIp}:6443` } : undefined;
        if (vpc) {
            // The VPC router: a bridge with each vSwitch's gateway and the master's addresses, forwarding between them. Its
            // MAC address is set: a bridge without one takes the lowest of its ports', so a node's veth joining or leaving
            // would change the gateway's MAC under every node's ARP cache (no VPC router does that), and the nodes' traffic
            // through the gateway stops until their ARP entries expire (seen: 2–48 s of timeouts in test/realNodesRotation.test.ts).
            const endpointHost = vpc.apiEndpoint.replace(/:\d+$/, "");
            const script = [
                `ip link add ${VPC_BRIDGE} address ${VPC_BRIDGE_MAC} type bridge`, `ip link set ${VPC_BRIDGE} up`,
                ...vpc.cidrs.map((cidr) => `ip addr add ${gatewayOf(cidr)}/${cidr.split("/")[1]} dev ${VPC_BRIDGE}`),
                ...[...new Set([vpc.masterIp, endpointHost, ...(vpc.addresses ?? [])])].map((ip) => `ip addr add ${ip}/32 dev ${VPC_BRIDGE}`),
                "echo 1 > /proc/sys/net/ipv4/ip_forward",
            ].join(" && ");
            await run("sh", ["-c", script]);
        }
        const [freeApiserver, etcdClient, etcdPeer, etcdMetrics, controllerManager, scheduler] = await freePorts(6);
        const apiserver = vpc ? Number(vpc.apiEndpoint.replace(/^.*:/, "")) : freeApiserver;
        const server = vpc ? `https://${vpc.apiEndpoint}` : `https://127.0.0.1:${apiserver}`;
        const etcdUrl = `https://127.0.0.1:${etcdClient}`;
        const peerUrl = `https://127.0.0.1:${etcdPeer}`;
        const pki = path.join(dir, "pki");
        const conf = (n: string): string => path.join(dir, n);

        // The project's shape (src/shell/master_init.sh ak_init_config), plus this run's places and ports.
        const init = {
            apiVersion: "kubeadm.k8s.io/v1beta4",
            kind: "InitConfiguration",
            localAPIEndpoint: { advertiseAddress: vpc?.masterIp ?? PLACEHOLDER_IP, bindPort: apiserver },
            nodeRegistration: {
                name: masterName,
                criSocket: "unix:///run/containerd/containerd.sock",
                kubeletExtraArgs: [
                    { name: "cloud-provider", value: "external" },
                    { name: "provider-id", value: masterName },
                ],
            },
        };
        const cluster = {
            apiVersion: "kubeadm.k8s.io/v1beta4",
            kind: "ClusterConfiguration",
            kubernetesVersion: opts.controlPlane?.version ?? KUBERNETES_VERSION,
            controlPlaneEndpoint: vpc?.apiEndpoint ?? `127.0.0.1:${apiserver}`,
            certificatesDir: pki,
            imageRepository: "registry.k8s.io",
            clusterName: "kubernetes",
            networking: { podSubnet: podCidr, serviceSubnet: serviceCidr, dnsDomain: "cluster.local" },
            etcd: {
                local: {
                    dataDir: path.join(dir, "etcd"),
                    extraArgs: extraArgs({
                        "listen-client-urls": etcdUrl,
                        "advertise-client-urls": etcdUrl,
                        "listen-peer-urls": peerUrl,
                        "initial-advertise-peer-urls": peerUrl,
                        "initial-cluster": `${masterName}=${peerUrl}`,
                        "listen-metrics-urls": `http://127.0.0.1:${etcdMetrics}`,
                        // a test cluster: no fsync makes etcd fast on a shared disk; data is thrown away
                        "unsafe-no-fsync": "true",
                        ...opts.etcdArgs,
                    }, dir),
                },
            },
            apiServer: {
                certSANs: ["127.0.0.1", "localhost", ...(vpc ? [vpc.masterIp, ...(vpc.addresses ?? [])] : []), ...(opts.certSans ?? [])],
                extraArgs: extraArgs({
                    "advertise-address": vpc?.masterIp ?? "127.0.0.1",
                    // in a VPC: every address of the namespace (the nodes reach it on the bridge, the run's own tools on 127.0.0.1)
                    "bind-address": vpc ? "0.0.0.0" : "127.0.0.1",
                    "etcd-servers": etcdUrl,
                    "kubelet-preferred-address-types": "InternalIP",
                    ...opts.apiserverArgs,
                }, dir),
            },
            controllerManager: {
                extraArgs: extraArgs({
                    "allocate-node-cidrs": "true",
                    "node-cidr-mask-size": String(mask),
                    "configure-cloud-routes": "false",
                    "secure-port": String(controllerManager),
                    "kubeconfig": conf("controller-manager.conf"),
                    "authentication-kubeconfig": conf("controller-manager.conf"),
                    "authorization-kubeconfig": conf("controller-manager.conf"),
                    ...opts.controllerManagerArgs,
                }, dir),
            },
            scheduler: {
                extraArgs: extraArgs({
                    "secure-port": String(scheduler),
                    "kubeconfig": conf("scheduler.conf"),
                    "authentication-kubeconfig": conf("scheduler.conf"),
                    "authorization-kubeconfig": conf("scheduler.conf"),
                    ...opts.schedulerArgs,
                }, dir),
            },
        };
        const kubeadmConfig = conf("kubeadm-init.yaml");
        // kube-proxy (in a VPC): the real nodes share this machine's kernel, whose conntrack table is not a node's to size
        // (its sysctls are writable only from the machine's own network namespace); kube-proxy leaves them alone, as in kind.
        const kubeProxy = { apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration",
            conntrack: { maxPerCore: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" } };
        fs.writeFileSync(kubeadmConfig, `${stringify(init)}---\n${stringify(cluster)}${vpc ? `---\n${stringify(kubeProxy)}` : ""}`, { mode: 0o600 });

        const manifests = path.join(dir, "manifests");
        fs.mkdirSync(manifests);
        const kubeadm = (args: string[]): Promise<RunResult> =>
            run("kubeadm", [...args, "--config", kubeadmConfig], { env: { KUBEADM_INIT_DRYRUN_DIR: manifests } });
        await kubeadm(["init", "phase", "certs", "all"]);
        await kubeadm(["init", "phase", "kubeconfig", "all", "--kubeconfig-dir", dir]);
        // controller-manager.conf and scheduler.conf point at the advertise address (the placeholder)
        for (const f of ["controller-manager.conf", "scheduler.conf"]) {
            await run("kubectl", ["config", "set-cluster", "kubernetes", `--server=${server}`, "--kubeconfig", conf(f)]);
        }
        await kubeadm(["init", "phase", "etcd", "local", "--dry-run"]);
        await kubeadm(["init", "phase", "control-plane", "all", "--dry-run"]);

        const commandOf = (component: string): string[] => {
            const file = path.join(manifests, `${component}.yaml`);
            const pod = parseYaml(fs.readFileSync(file, "utf8"));
            const command: string[] = pod.spec.containers[0].command;
            for (const arg of command) {
                if (arg.includes(PLACEHOLDER_IP) || arg.includes("/etc/kubernetes")) {
                    throw new Error(`${file}: ${arg} points outside this run (the fixture must override it)`);
                }
            }
            return command.slice(1);
        };
        const caFile = path.join(pki, "ca.crt");
        const caPem = fs.readFileSync(caFile, "utf8");
        for (const f of ["admin.conf", "super-admin.conf", "controller-manager.conf", "scheduler.conf"]) {
            const server0 = parseYaml(fs.readFileSync(conf(f), "utf8")).clusters[0].cluster.server;
            if (server0 !== server) throw new Error(`${f} points at ${server0}, not ${server}`);
        }

        startProcess("etcd", path.join(bin, "etcd"), commandOf("etcd"));
        const controlPlaneBin = opts.controlPlane?.bin ?? bin;
        startProcess("kube-apiserver", path.join(controlPlaneBin, "kube-apiserver"), commandOf("kube-apiserver"));
        await waitFor("kube-apiserver /readyz", async () => {
            const r = await run("kubectl", ["--kubeconfig", conf("super-admin.conf"), "get", "--raw", "/readyz"], {
                allowFail: true,
                timeoutMs: 10_000,
            });
            if (r.code !== 0) throw new Error((r.stderr || r.stdout).trim().split("\n").slice(-3).join(" | "));
            return r.stdout.trim() === "ok";
        }, readyTimeoutMs).catch((e) => {
            throw exited.size ? e : failure(String((e as Error).message), "kube-apiserver");
        });

        // What kubeadm init does with super-admin.conf so that admin.conf (group kubeadm:cluster-admins) works.
        await run("kubectl", [
            "--kubeconfig", conf("super-admin.conf"), "create", "clusterrolebinding", "kubeadm:cluster-admins",
            "--clusterrole=cluster-admin", "--group=kubeadm:cluster-admins",
        ]);
        startProcess("kube-controller-manager", path.join(controlPlaneBin, "kube-controller-manager"), commandOf("kube-controller-manager"));
        startProcess("kube-scheduler", path.join(controlPlaneBin, "kube-scheduler"), commandOf("kube-scheduler"));

        const kwokConfig = path.join(dir, "kwok.yaml");
        const stagesDir = path.join(bin, "kwok-stages");
        fs.writeFileSync(
            kwokConfig,
            fs.readdirSync(stagesDir).filter((f) => f.endsWith(".yaml")).sort()
                .map((f) => fs.readFileSync(path.join(stagesDir, f), "utf8")).join("\n---\n"),
        );
        const kwokFlags: Flags = {
            "kubeconfig": kubeconfig,
            "config": kwokConfig,
            "manage-all-nodes": "false",
            "manage-nodes-with-annotation-selector": "kwok.x-k8s.io/node=fake",
            "node-ip": "127.0.0.1",
            "node-lease-duration-seconds": "40",
            "cidr": podCidr,
            ...opts.kwokArgs,
        };
        startProcess("kwok", path.join(bin, "kwok"), Object.entries(kwokFlags).map(([k, v]) => `--${k}=${v.split("{dir}").join(dir)}`));

        // The API-side phases of kubeadm init: kubeadm-config / kubelet-config ConfigMaps, bootstrap-token RBAC,
        // the cluster-info ConfigMap in kube-public. Retried: RBAC of a fresh apiserver can lag for a moment.
        // In a VPC, kubeadm's kube-proxy add-on too (its DaemonSet and ConfigMap): the real nodes run it.
        for (const phase of [["upload-config", "all"], ["bootstrap-token", "--skip-token-print"], ...(vpc ? [["addon", "kube-proxy"]] : [])]) {
            await waitFor(`kubeadm init phase ${phase[0]}`, async () => {
                await run("kubeadm", ["init", "phase", ...phase, "--config", kubeadmConfig, "--kubeconfig", kubeconfig]);
                return true;
            }, 30_000);
        }
        await waitFor("the default ServiceAccount", async () => {
            return (await run("kubectl", ["--kubeconfig", kubeconfig, "get", "serviceaccount", "default"], { allowFail: true })).code === 0;
        }, readyTimeoutMs);

        const apply = async (objects: string | object | object[]): Promise<string> => {
            const text = typeof objects === "string"
                ? objects
                : (Array.isArray(objects) ? objects : [objects]).map((o) => JSON.stringify(o)).join("\n---\n");
            return kubectl(["apply", "-f", "-"], { input: text });
        };

        const addNode = async (spec: NodeSpec): Promise<void> => {
            const alloc = spec.allocatable ?? { cpu: "32", memory: "256Gi", pods: "110" };
            await apply({
                apiVersion: "v1",
                kind: "Node",
                metadata: {
                    name: spec.name,
                    labels: {
                        "kubernetes.io/hostname": spec.name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "type": "kwok",
                        ...spec.labels,
                    },
                    annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0", ...spec.annotations },
                },
                spec: { providerID: spec.providerID, taints: spec.taints },
                status: { allocatable: alloc, capacity: alloc },
            });
            await waitFor(`node ${spec.name} Ready`, async () => {
                const node = JSON.parse(await kubectl(["get", "node", spec.name, "-o", "json"]));
                return (node.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === "Ready" && c.status === "True");
            });
        };

        const createPod = async (spec: PodSpec) => {
            const namespace = spec.namespace ?? "default";
            await apply({
                apiVersion: "v1",
                kind: "Pod",
                metadata: { name: spec.name, namespace, labels: spec.labels },
                spec: {
                    nodeName: spec.nodeName,
                    nodeSelector: spec.nodeSelector,
                    tolerations: spec.tolerations,
                    containers: [{ name: "main", image: "registry.invalid/fake:1" }],
                },
            });
            return waitFor(`pod ${namespace}/${spec.name} Running`, async () => {
                const pod = JSON.parse(await kubectl(["get", "pod", spec.name, "-n", namespace, "-o", "json"]));
                return pod.status?.phase === "Running" ? pod : undefined;
            });
        };

        const nodeCredentials = async (nodeName: string, token?: string) => {
            const tok = token ?? (await run("kubeadm", ["token", "create", "--kubeconfig", kubeconfig, "--ttl", "10m"])).stdout.trim();
            const base = path.join(dir, "nodes", nodeName);
            fs.mkdirSync(base, { recursive: true, mode: 0o700 });
            execFileSync("openssl", [
                "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", path.join(base, "node.key"), "-subj", `/O=system:nodes/CN=system:node:${nodeName}`,
                "-out", path.join(base, "node.csr"),
            ], { stdio: "pipe" });
            const csrName = `node-csr-${crypto.randomBytes(6).toString("hex")}`;
            const anon = path.join(base, "bootstrap.conf");
            fs.writeFileSync(anon, "apiVersion: v1\nkind: Config\n", { mode: 0o600 });
            await run("kubectl", ["--kubeconfig", anon, "--server", server, "--certificate-authority", caFile, "--token", tok, "create", "-f", "-"], {
                input: JSON.stringify({
                    apiVersion: "certificates.k8s.io/v1",
                    kind: "CertificateSigningRequest",
                    metadata: { name: csrName },
                    spec: {
                        request: fs.readFileSync(path.join(base, "node.csr")).toString("base64"),
                        signerName: "kubernetes.io/kube-apiserver-client-kubelet",
                        usages: ["digital signature", "client auth"],
                    },
                }),
            });
            const certPem = await waitFor(`certificate of CSR ${csrName} (${nodeName})`, async () => {
                const csr = JSON.parse(await kubectl(["get", "csr", csrName, "-o", "json"]));
                return csr.status?.certificate ? Buffer.from(csr.status.certificate, "base64").toString("utf8") : undefined;
            });
            fs.writeFileSync(path.join(base, "node.crt"), certPem);
            const nodeConf = path.join(base, "kubelet.conf");
            fs.writeFileSync(nodeConf, stringify({
                apiVersion: "v1",
                kind: "Config",
                clusters: [{ name: "kubernetes", cluster: { server, "certificate-authority": caFile } }],
                users: [{ name: `system:node:${nodeName}`, user: { "client-certificate": path.join(base, "node.crt"), "client-key": path.join(base, "node.key") } }],
                contexts: [{ name: "node", context: { cluster: "kubernetes", user: `system:node:${nodeName}` } }],
                "current-context": "node",
            }), { mode: 0o600 });
            return { kubeconfig: nodeConf, certPem, csrName, token: tok };
        };

        return {
            dir,
            server,
            kubeconfig,
            superAdminKubeconfig: conf("super-admin.conf"),
            kubeadmConfig,
            caPem,
            caFile,
            caCertHash: caCertHashOf(caPem),
            bin,
            ports: { apiserver, etcdClient, etcdPeer, controllerManager, scheduler },
            netns: useNetns,
            netnsPath: holder ? `/proc/${holder.pid}/ns/net` : undefined,
            vpc,
            commands,
            path: (rel) => path.join(dir, rel),
            writeFile: (rel, content) => {
                const p = path.join(dir, rel);
                fs.mkdirSync(path.dirname(p), { recursive: true });
                fs.writeFileSync(p, content, { mode: 0o600 });
                return p;
            },
            run,
            kubectl,
            apply,
            addNode,
            createPod,
            nodeCredentials,
            start,
            waitFor,
            logTail,
            stopComponent,
            startComponent,
            stop,
        };
    } catch (e) {
        await stop();
        throw e;
    }
}

/** Every document of a multi-document YAML text, parsed. */
export function yamlDocuments(text: string): unknown[] {
    return parseAllDocuments(text).map((d) => d.toJS());
}
