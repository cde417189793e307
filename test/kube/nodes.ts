/**
 * Real nodes for the real control plane (test/kube/cluster.ts with `vpc`): each node is a kubelet, containerd and runc
 * built from source (`npm run kube:build`), in network, mount, UTS, IPC and PID namespaces of its own, with its own
 * cgroup root, plugged into the cluster's VPC bridge with the private IP of its emulator instance. Its file system is a
 * copy-on-write view of this machine's (what it writes stays in its folder), with the harness's binaries installed where
 * the packages put them (a baked image) and the packages' systemd units, which a `systemctl` stand-in runs. Nothing is
 * pulled: the images are imported from OCI archives when containerd first starts. docs/real-cluster.md describes the
 * node, its stand-ins and overlays, and what one costs.
 *
 *   const nodes = realNodes(c, { images: [...], overlay: {...} });
 *   const node = await nodes.boot({ instanceId: "i-1", ip: "10.0.0.5" });
 *   await node.sh("bash /path/to/userdata.sh");          // as root, inside the node, with the node's PATH
 *   node.log("kubelet.service");                          // what a unit printed
 *   await node.stop();                                    // every process of the node ends with its PID 1
 *
 * Reusable: `boot`/`stop` per node (an instance launched or released), `reset` is the project's own path (run its
 * reset operation with `node.sh`), images per node (`images`), the VPC's route table applied to the bridge (`setRoutes`).
 */
import { ChildProcess, execFileSync, spawn } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as path from "path";
import { gatewayOf, isExecutable, type Cluster, type RunOptions, type RunResult, VPC_BRIDGE } from "./cluster";

/** The node's own files (test/kube/node/): its PID 1, the packages' units, the stand-ins. */
const NODE_FILES = path.join(__dirname, "node");
const STAND_INS = ["systemctl", "modprobe", "sysctl", "import-baked-images"];

/** The PATH of every command run inside a node: the stand-ins first, then the system's. */
export const NODE_PATH = "/opt/ak-standins:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Binaries (in the harness's bin folder) a real node needs. */
export const NODE_BINARIES = [
    "kubelet", "kubeadm", "kubectl", "containerd", "ctr", "containerd-shim-runc-v2", "runc",
    "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap", "images/pause",
] as const;

/** Image archives (bin/images/<name>.tar) and the name each is imported under. */
export const IMAGE_ARCHIVES = ["pause", "workload", "kube-proxy", "flannel", "flannel-cni-plugin"] as const;
/**
 * Image archives of a real-node master's static pods (bin/images/<name>.tar): etcd under the tag kubeadm names, and
 * `<component>-<version>` for kube-apiserver, kube-controller-manager and kube-scheduler of this version and the
 * previous minor (test/kube/build.sh), named `registry.k8s.io/<component>:<version>`.
 */
export type ControlPlaneArchive = "etcd" | `${"kube-apiserver" | "kube-controller-manager" | "kube-scheduler"}-v${string}`;
export type ImageArchive = typeof IMAGE_ARCHIVES[number] | ControlPlaneArchive;

/** The workload image's name (test/kube/go/images/workload: an HTTP server on 8080). */
export const WORKLOAD_IMAGE = "alicloud-kubeadm.test/workload:1";

/** Missing binaries and image archives, by name; empty when a node can be made. */
export function missingNodeBinaries(bin: string): string[] {
    return [
        ...NODE_BINARIES.filter((b) => !isExecutable(path.join(bin, b))),
        ...IMAGE_ARCHIVES.filter((i) => !fs.existsSync(path.join(bin, "images", `${i}.tar`))).map((i) => `images/${i}.tar`),
    ];
}

/** The control-plane archives of `versions` (and etcd's) missing in `bin`. */
export function missingControlPlaneArchives(bin: string, versions: string[]): string[] {
    const archives: ControlPlaneArchive[] = ["etcd", ...versions.flatMap((v) =>
        (["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const).map((c) => `${c}-v${v.replace(/^v/, "")}` as const))];
    return archives.filter((a) => !fs.existsSync(path.join(bin, "images", `${a}.tar`))).map((a) => `images/${a}.tar`);
}

/** The cgroup layout of this machine: v1 (a hierarchy per controller), v2 (unified), or undefined (neither usable). */
export function cgroupLayout(): "v1" | "v2" | undefined {
    if (fs.existsSync("/sys/fs/cgroup/cgroup.controllers")) return "v2";
    if (fs.existsSync("/sys/fs/cgroup/memory/cgroup.procs") && fs.existsSync("/sys/fs/cgroup/cpu/cgroup.procs")) return "v1";
    return undefined;
}

/** Why this machine cannot run real nodes, or undefined when it can (root, namespaces, overlayfs, a cgroup layout). */
export function realNodesUnavailable(): string | undefined {
    if (process.getuid?.() !== 0) return "real nodes need root";
    if (!fs.readFileSync("/proc/filesystems", "utf8").split("\n").some((l) => l.trim().endsWith("overlay"))) return "real nodes need overlayfs";
    if (!cgroupLayout()) return "real nodes need cgroup v1 or v2 mounted at /sys/fs/cgroup";
    try {
        execFileSync("unshare", ["--net", "--mount", "--uts", "--ipc", "--pid", "--fork", "--mount-proc", "true"], { stdio: "ignore", timeout: 10_000 });
    } catch {
        return "real nodes need network, mount, UTS, IPC and PID namespaces (`unshare` with CAP_SYS_ADMIN)";
    }
    return undefined;
}

export interface BootSpec {
    /** The emulator instance the node is: its id (the node's name is `<region>.<id>`), private IP, host name. */
    instanceId: string;
    ip: string;
    /** Default: the instance id (ECS names hosts after the instance). */
    hostname?: string;
    /**
     * A folder holding kubeadm and kubelet (and kubectl, else the harness's) of another version, installed where the
     * packages put them instead of the harness's: a node made with an older release (e.g. cluster.ts `previousKubernetes().bin`)
     * Default: the harness's bin folder.
     */
    kubeBin?: string;
}

export interface RealNode {
    instanceId: string;
    ip: string;
    hostname: string;
    /** The node's folder (its files: `upper/`, containerd's and the kubelet's state, `logs/`). */
    dir: string;
    /** Host PID of the node's PID 1. */
    pid: number;
    /** The node's cgroup root (the kubelet's `cgroupRoot`), e.g. `/ak-4242-3f2c-i-emu1-1` (process id, run, instance, boot). */
    cgroupRoot: string;
    /** Runs a program inside the node as root, with {@link NODE_PATH}; throws on a non-zero exit unless allowFail. */
    run(cmd: string, args: string[], opts?: RunOptions): Promise<RunResult>;
    /** `bash -c script` inside the node. */
    sh(script: string, opts?: RunOptions): Promise<RunResult>;
    /** What a unit printed (`/var/log/units/<unit>.log`), or "" before it ran. */
    log(unit: string): string;
    /** A file of the node's file system, read from outside (undefined when absent). */
    read(file: string): string | undefined;
    /** Ends every process of the node (its PID 1 first: the kernel ends the rest), removes its cgroups. */
    stop(): Promise<void>;
    readonly stopped: boolean;
}

export interface RealNodesOptions {
    /** Image archives every node has baked in, each with the names it is imported under (the first is the archive's own). */
    images?: Array<{ archive: ImageArchive; names?: string[] }>;
    /**
     * Files of the node image (absolute path → content) written before anything runs: the node image overlays the product
     * reads (docs/architecture.md#node-image-overlays). `{{cgroupRoot}}` in a content is the node's cgroup root.
     */
    overlay?: Record<string, string>;
}

export interface RealNodes {
    /** Starts a node for an instance (resolves once its network is up). */
    boot(spec: BootSpec): Promise<RealNode>;
    get(instanceId: string): RealNode | undefined;
    /** Nodes booted and not stopped. */
    running(): RealNode[];
    /** How many nodes were booted in all. */
    readonly booted: number;
    /** Makes the VPC bridge route exactly these CIDRs, each to an instance's IP (the emulator's route table, applied). */
    setRoutes(routes: Array<{ cidr: string; via: string }>): Promise<void>;
    stopAll(): Promise<void>;
}

/** The overlays this machine kind needs (docs/real-cluster.md): what a node image for it would carry. */
export function machineOverlays(): Record<string, string> {
    const v1 = cgroupLayout() === "v1";
    const capEff = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync("/proc/self/status", "utf8"))?.[1] ?? "0"}`);
    const sysResource = (capEff >> 24n) & 1n; // CAP_SYS_RESOURCE
    return {
        // no systemd: the kubelet's cgroups through cgroupfs (matching containerd's, below); every node of this machine
        // shares one kernel, so each has its own cgroup root; images come from archives, so none is ever collected; and
        // no eviction for the disk, which every node shares with this whole machine (and its neighbours): with the
        // kubelet's default `imagefs.available<15%` a disk 85 % full evicts every pod of every node
        "/etc/alicloud-kubeadm/kubeadm-patches/kubeletconfiguration+merge.yaml": [
            "cgroupDriver: cgroupfs",
            "cgroupRoot: {{cgroupRoot}}",
            ...(v1 ? ["failCgroupV1: false"] : []),
            "imageGCHighThresholdPercent: 100",
            "imageGCLowThresholdPercent: 99",
            "evictionHard:",
            '  nodefs.available: "0%"',
            '  nodefs.inodesFree: "0%"',
            '  imagefs.available: "0%"',
            "",
        ].join("\n"),
        // cgroup v1: kubeadm's SystemVerification fails on it for kubelet >= 1.35
        ...(v1 ? { "/etc/alicloud-kubeadm/ignore-preflight-errors": "SystemVerification\n" } : {}),
        "/etc/containerd/conf.d/50-this-machine.toml": [
            "version = 3",
            "[plugins.'io.containerd.cri.v1.runtime']",
            // without CAP_SYS_RESOURCE runc cannot raise a process's oom_score_adj
            ...(sysResource ? [] : ["  restrict_oom_score_adj = true"]),
            "  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
            "    SystemdCgroup = false",
            "",
        ].join("\n"),
    };
}

function cidrContains(cidr: string, ip: string): boolean {
    const n = (a: string) => a.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
    const [base, bits] = cidr.split("/");
    const size = 2 ** (32 - Number(bits));
    return Math.floor(n(ip) / size) === Math.floor(n(base) / size);
}

/** Creates (and removes) a node's cgroup root in every hierarchy. */
function cgroupRoots(root: string): { make(): void; remove(): void } {
    const hierarchies = (): string[] => cgroupLayout() === "v2" ? ["/sys/fs/cgroup"]
        : fs.readdirSync("/sys/fs/cgroup").map((d) => path.join("/sys/fs/cgroup", d)).filter((d) => fs.existsSync(path.join(d, "cgroup.procs")));
    const removeTree = (dir: string): void => {
        if (!fs.existsSync(dir)) return;
        for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeTree(path.join(dir, e.name));
        try {
            fs.rmdirSync(dir);
        } catch {
            // still busy: the kernel frees it once its last process is gone; nothing of ours is left in it
        }
    };
    return {
        make() {
            for (const h of hierarchies()) {
                const dir = path.join(h, root);
                fs.mkdirSync(dir, { recursive: true });
                if (path.basename(h) === "cpuset") {
                    for (const f of ["cpuset.cpus", "cpuset.mems"]) fs.writeFileSync(path.join(dir, f), fs.readFileSync(path.join(h, f), "utf8").trim() || "0");
                }
                if (h === "/sys/fs/cgroup" && cgroupLayout() === "v2") {
                    const wanted = fs.readFileSync(path.join(h, "cgroup.subtree_control"), "utf8").trim().split(/\s+/).filter(Boolean).map((c) => `+${c}`).join(" ");
                    if (wanted) fs.writeFileSync(path.join(dir, "cgroup.subtree_control"), wanted);
                }
            }
        },
        remove() {
            for (const h of hierarchies()) removeTree(path.join(h, root));
        },
    };
}

/**
 * Real nodes on `c`'s VPC (startCluster({ vpc })). The nodes stop with the cluster (their folders are in its run folder;
 * their PID 1 has a parent-death signal, so even a killed test takes them down).
 */
export function realNodes(c: Cluster, opts: RealNodesOptions = {}): RealNodes {
    if (!c.vpc || !c.netnsPath) throw new Error("realNodes: the cluster needs a VPC (startCluster({ vpc }))");
    const vpc = c.vpc;
    const nodes = new Map<string, RealNode>();
    const runId = crypto.randomBytes(2).toString("hex");
    let booted = 0;
    let routes = new Map<string, string>();

    const inVpc = (script: string) => c.run("sh", ["-c", script]);

    const boot = async (spec: BootSpec): Promise<RealNode> => {
        if (nodes.get(spec.instanceId) && !nodes.get(spec.instanceId)!.stopped) throw new Error(`node ${spec.instanceId} is running already`);
        const cidr = vpc.cidrs.find((x) => cidrContains(x, spec.ip));
        if (!cidr) throw new Error(`node ${spec.instanceId}: ${spec.ip} is in none of the VPC's vSwitches ${vpc.cidrs.join(", ")}`);
        const hostname = spec.hostname ?? spec.instanceId;
        const n = ++booted;
        const dir = c.path(`nodes/${spec.instanceId}-${n}`);
        // The cgroup hierarchy is the host's, shared with every other test process (test/ci.sh runs files side by
        // side): the process id keeps two processes' roots apart, whatever instance ids their emulators hand out.
        const cgroupRoot = `/ak-${process.pid}-${runId}-${spec.instanceId}-${n}`;
        const files = path.join(dir, "files");
        const write = (rel: string, content: string, mode = 0o644) => {
            const p = path.join(files, rel);
            fs.mkdirSync(path.dirname(p), { recursive: true });
            fs.writeFileSync(p, content, { mode });
        };
        for (const f of fs.readdirSync(NODE_FILES)) {
            const text = fs.readFileSync(path.join(NODE_FILES, f), "utf8");
            if (STAND_INS.includes(f)) write(`overlay/opt/ak-standins/${f}`, text, 0o755);
            else write(f, text, f.endsWith(".sh") ? 0o755 : 0o644);
        }
        write("overlay/opt/ak-standins/images.list", (opts.images ?? []).map((i) =>
            [path.join(c.bin, "images", `${i.archive}.tar`), ...(i.names ?? [])].join(" ")).join("\n") + "\n");
        for (const [file, content] of Object.entries(opts.overlay ?? {})) {
            if (!path.isAbsolute(file)) throw new Error(`realNodes overlay: ${file} is not an absolute path`);
            write(`overlay${file}`, content.split("{{cgroupRoot}}").join(cgroupRoot));
        }
        fs.mkdirSync(path.join(dir, "logs"), { recursive: true });

        const cgroups = cgroupRoots(cgroupRoot);
        cgroups.make();
        const initLog = fs.openSync(path.join(dir, "logs", "init.log"), "a");
        const holder: ChildProcess = spawn("setpriv", ["--pdeathsig", "KILL", "unshare", "--net", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child",
            "--mount-proc", "--propagation", "private", "bash", path.join(files, "init.sh"), dir, hostname, c.bin, spec.kubeBin ?? c.bin], { stdio: ["ignore", "pipe", initLog] });
        fs.closeSync(initLog);
        let exited = false;
        holder.once("exit", () => { exited = true; });
        await new Promise<void>((resolve, reject) => {
            let out = "";
            holder.once("error", reject);
            // (once ready, a later exit is the node's stop, perhaps after its run folder is gone: not this boot's failure)
            const early = (code: number | null) => reject(new Error(`node ${spec.instanceId}: its PID 1 exited with ${code} before it was ready:\n${fs.readFileSync(path.join(dir, "logs", "init.log"), "utf8")}`));
            holder.once("exit", early);
            holder.stdout!.on("data", (d) => {
                out += d;
                if (out.includes("ready")) {
                    holder.off("exit", early);
                    resolve();
                }
            });
        });
        // The node's PID 1 is the unshare process's only child.
        const pid = Number(fs.readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, "utf8").trim().split(/\s+/)[0]);
        if (!pid) throw new Error(`node ${spec.instanceId}: no PID 1 under ${holder.pid}`);

        const nsenter = (argv: string[]): [string, string[]] =>
            ["setpriv", ["--pdeathsig", "KILL", "nsenter", "-t", String(pid), "-m", "-u", "-i", "-n", "-p", "--wd=/",
                "env", "-i", `PATH=${NODE_PATH}`, "HOME=/root", "LANG=C.UTF-8", ...argv]];
        const run = (cmd: string, args: string[], o: RunOptions = {}): Promise<RunResult> => {
            const [c0, a] = nsenter([cmd, ...args]);
            return new Promise((resolve, reject) => {
                const child = spawn(c0, a, { stdio: ["pipe", "pipe", "pipe"], env: { ...o.env } });
                let stdout = "", stderr = "";
                child.stdout.on("data", (d) => (stdout += d));
                child.stderr.on("data", (d) => (stderr += d));
                const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 120_000);
                child.on("error", (e) => { clearTimeout(timer); reject(e); });
                child.on("close", (code, signal) => {
                    clearTimeout(timer);
                    const r = { code: code ?? 128, stdout, stderr };
                    if (r.code !== 0 && !o.allowFail) reject(new Error(`node ${spec.instanceId}: ${cmd} ${args.join(" ").slice(0, 200)} exited ${code ?? signal}:\n${stderr.slice(-3000)}${stdout.slice(-2000)}`));
                    else resolve(r);
                });
                // a program that exits without reading its input closes the pipe first: not an error of the run
            child.stdin.on("error", () => undefined);
            child.stdin.end(o.input ?? "");
            });
        };

        // Its network: a veth pair, one end on the VPC bridge, the other the node's eth0 with the instance's address.
        const veth = `akv${runId}${n}`.slice(0, 15);
        await inVpc(`ip link add ${veth} type veth peer name eth0 netns ${pid} && ip link set ${veth} master ${VPC_BRIDGE} up`);
        await run("sh", ["-c", `ip link set lo up && ip addr add ${spec.ip}/${cidr.split("/")[1]} dev eth0 && ip link set eth0 up && ip route add default via ${gatewayOf(cidr)}`]);

        let stopped = false;
        const node: RealNode = {
            instanceId: spec.instanceId, ip: spec.ip, hostname, dir, pid, cgroupRoot,
            run,
            sh: (script, o) => run("bash", ["-c", script], o),
            log: (unit) => {
                try {
                    return fs.readFileSync(path.join(dir, "logs", `${unit}.log`), "utf8");
                } catch {
                    return "";
                }
            },
            read: (file) => {
                try {
                    return fs.readFileSync(`/proc/${pid}/root${file}`, "utf8");
                } catch {
                    return undefined;
                }
            },
            get stopped() { return stopped; },
            stop: async () => {
                if (stopped) return;
                stopped = true;
                if (!exited) {
                    const gone = new Promise<void>((r) => holder.once("exit", () => r()));
                    try {
                        process.kill(pid, "SIGKILL");
                    } catch {
                        // already gone
                    }
                    await gone;
                }
                // the kernel takes a moment to empty the cgroups of the killed processes
                for (let k = 0; k < 40; k++) {
                    cgroups.remove();
                    if (!fs.existsSync(path.join(cgroupLayout() === "v2" ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", cgroupRoot))) break;
                    await new Promise((r) => setTimeout(r, 250));
                }
            },
        };
        nodes.set(spec.instanceId, node);
        return node;
    };

    return {
        boot,
        get: (id) => nodes.get(id),
        running: () => [...nodes.values()].filter((x) => !x.stopped),
        get booted() { return booted; },
        setRoutes: async (wanted) => {
            const next = new Map(wanted.map((r) => [r.cidr, r.via]));
            const script: string[] = [];
            for (const [cidr, via] of next) if (routes.get(cidr) !== via) script.push(`ip route replace ${cidr} via ${via} dev ${VPC_BRIDGE}`);
            for (const cidr of routes.keys()) if (!next.has(cidr)) script.push(`ip route del ${cidr} || true`);
            if (script.length) await inVpc(script.join(" && "));
            routes = next;
        },
        stopAll: async () => {
            for (const node of nodes.values()) await node.stop();
        },
    };
}
