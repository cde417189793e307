/**
 * A sandbox for running node scripts as an ordinary process: the scripts see `AK_ROOT=<tmp>/root` as their
 * filesystem root and a PATH of stub executables (kubeadm, kubelet, kubectl, containerd, systemctl, curl, apt-get,
 * dnf, gpg, ip, modprobe, sysctl, swapoff, iptables, apt-mark) plus a short list of real coreutils. Nothing else
 * from this machine is on PATH, so a missing stub fails loudly instead of running the real tool.
 *
 * Stubs record every call (argv, and the `--config` file kubeadm was given) and write what the real tool would
 * (kubeadm init writes admin.conf and pki/ca.crt, join writes kubelet.conf, apt-get/dnf install put kubeadm etc.
 * on PATH). See testing/sandbox/stubs/* for the environment variables that make them fail or take time:
 * AK_STUB_FAIL_INIT, AK_STUB_FAIL_JOIN, AK_STUB_API_DOWN, AK_STUB_FAIL_INSTALL, AK_STUB_IMDS, AK_STUB_REGION,
 * AK_STUB_INSTANCE_ID, AK_STUB_DOWNLOAD_MS, AK_STUB_INSTALL_MS, AK_STUB_JOIN_MS, AK_STUB_PULL_MS, AK_STUB_FAIL_PULL, AK_STUB_CONTAINERD_MAJOR, AK_STUB_CONTAINERD_NO_SYSTEMD,
 * AK_STUB_KUBECTL_OUTPUT, AK_STUB_KUBECTL_RC (most have a typed option in {@link SandboxOptions}).
 *
 * Usage:
 *   const sb = makeSandbox({ os: "ubuntu", prebaked: true, fail: { join: 1 } });
 *   const r = await sb.run(renderAttachNode(params));
 *   callsOf(r.calls, "kubeadm", "join")[0].config;   // the JoinConfiguration kubeadm was given
 *   sb.read("/var/lib/alicloud-kubeadm/join.done");  // files under the sandbox root
 *   sb.cleanup();
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

/** One recorded stub call. */
export interface StubCall {
    /** Call order across the sandbox's lifetime (1-based). */
    seq: number;
    /** Command name, e.g. `kubeadm`. */
    cmd: string;
    /** Arguments after the command name. */
    args: string[];
    /** Content of the file passed as `--config` (kubeadm init/join), when there was one. */
    config?: string;
}

/** Result of {@link Sandbox.run}. */
export interface RunResult {
    /** Exit code of the script. */
    code: number;
    /** What the script printed on stdout (the node scripts send it to their log instead). */
    stdout: string;
    /** What the script printed on stderr (the node scripts' progress and error lines). */
    stderr: string;
    /** Stub calls made during this run, in order. */
    calls: StubCall[];
    /** Wall time of the run in milliseconds. */
    wallMs: number;
    /** Milliseconds the stubs spent sleeping, by category (`download`, `install`, `join`). */
    stubMs: Record<string, number>;
}

/** Options of {@link makeSandbox}. */
export interface SandboxOptions {
    /** Operating system in `/etc/os-release`: Ubuntu (apt) or Alibaba Cloud Linux 3 (dnf). */
    os: "ubuntu" | "alinux";
    /** Ubuntu release. Default `22.04`. */
    ubuntuRelease?: "22.04" | "24.04";
    /** containerd and kubeadm/kubelet/kubectl already installed (a pre-baked image). Default false. */
    prebaked?: boolean;
    /** Kubernetes version of a pre-baked image. Default `1.34.2`. */
    prebakedVersion?: string;
    /** A pre-baked image has the standard CNI plugins in /opt/cni/bin (the kubernetes-cni package). Default true. */
    prebakedCni?: boolean;
    /** Images already in containerd's store (a baked image). Default none. */
    prebakedImages?: string[];
    /** Metadata service: region id. Default `cn-hangzhou`. */
    region?: string;
    /** Metadata service: instance id. Default `i-bp1stubinstance0001`. */
    instanceId?: string;
    /** Metadata service mode (see stubs/curl). Default `v2`. */
    imds?: "v2" | "v1" | "v2-required";
    /** Failure injection, applied to every run unless the run's env overrides it. */
    fail?: {
        /** `kubeadm init` fails. */
        init?: boolean;
        /** The first N `kubeadm join`s fail (counted across runs). */
        join?: number;
        /** The first N API endpoint probes fail to connect (counted across runs). */
        apiDown?: number;
    };
    /** Stub timings in milliseconds (for benchmarks). Default 0. */
    delays?: { downloadMs?: number; installMs?: number; joinMs?: number; pullMs?: number };
    /** Extra environment for every run. */
    env?: Record<string, string>;
    /**
     * Extra or replacement stubs on PATH: command name → bash script body (the `#!/bin/bash` line is added).
     * Start the body with `. "$AK_STUB_SRC/_lib.sh"` to have the call recorded like the built-in stubs.
     */
    stubs?: Record<string, string>;
}

/** A sandbox; remove it with {@link Sandbox.cleanup}. */
export interface Sandbox {
    /** The scripts' root (`AK_ROOT`). */
    root: string;
    /** The environment every run starts from (PATH of stubs and real tools, AK_ROOT, the stub settings), for
     *  running a script some other way than {@link Sandbox.run} (e.g. inside another network namespace). */
    env: Readonly<Record<string, string>>;
    /** Absolute path of a path inside the sandbox root, e.g. `at("/etc/kubernetes/admin.conf")`. */
    at(p: string): string;
    /** Reads a file inside the sandbox root (undefined when absent). */
    read(p: string): string | undefined;
    /** Writes a file inside the sandbox root (creating directories). */
    write(p: string, content: string | Buffer): void;
    /** Creates (or deletes) a network link the `ip` stub reports, e.g. `cni0`. */
    setLink(name: string, present: boolean): void;
    /** Runs a script with bash; `env` is added to (and overrides) the sandbox environment. */
    run(script: string, env?: Record<string, string>): Promise<RunResult>;
    /** Every stub call since the sandbox was made. */
    allCalls(): StubCall[];
    /** The images in containerd's store (the crictl stub's), in the order they arrived. */
    images(): string[];
    /** Deletes the sandbox directory. */
    cleanup(): void;
}

const STUB_SRC = path.join(__dirname, "stubs");
const STUBS = ["kubeadm", "kubelet", "kubectl", "containerd", "crictl", "curl", "apt-get", "dnf", "gpg", "ip", "iptables"];
const INSTALLABLE = new Set(["kubeadm", "kubelet", "kubectl", "containerd", "crictl"]);
const RECORD_ONLY = ["systemctl", "modprobe", "sysctl", "swapoff", "apt-mark"];
const REAL_TOOLS = ["awk", "find", "base64", "gzip", "bash", "cat", "chmod", "cmp", "cp", "cut", "date", "dirname", "basename", "grep", "head", "ln",
    "ls", "mkdir", "mktemp", "mv", "rm", "rmdir", "sed", "sleep", "sort", "tail", "tee", "touch", "tr", "wc", "env", "printf",
    // the secret channel (src/shell/channel.sh) seals and opens with the real openssl
    "openssl", "sha256sum"];
const OS_RELEASE = {
    ubuntu: (release: string) => `NAME="Ubuntu"\nVERSION_ID="${release}"\nID=ubuntu\nID_LIKE=debian\n`,
    alinux: () => `NAME="Alibaba Cloud Linux"\nVERSION="3 (OpenAnolis Edition)"\nID="alinux"\nID_LIKE="rhel fedora centos anolis"\nVERSION_ID="3"\n`,
};

/**
 * Makes a sandbox under the OS temp directory.
 * @param options Image flavour, metadata and failure injection; see {@link SandboxOptions}.
 */
export function makeSandbox(options: SandboxOptions): Sandbox {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ak-sandbox-"));
    const root = path.join(dir, "root");
    const bin = path.join(dir, "bin");
    const installed = path.join(dir, "installed");
    const state = path.join(dir, "state");
    for (const d of [root, bin, installed, state, path.join(state, "links")]) fs.mkdirSync(d, { recursive: true });

    for (const name of STUBS.filter((s) => !INSTALLABLE.has(s))) fs.copyFileSync(path.join(STUB_SRC, name), path.join(bin, name));
    for (const name of RECORD_ONLY) fs.copyFileSync(path.join(STUB_SRC, "record-only"), path.join(bin, name));
    for (const name of REAL_TOOLS) {
        const real = findReal(name);
        if (real) fs.symlinkSync(real, path.join(bin, name));
    }
    if (options.prebaked) {
        for (const name of INSTALLABLE) {
            fs.copyFileSync(path.join(STUB_SRC, name), path.join(installed, name));
        }
        fs.writeFileSync(path.join(state, "kube-version"), `${options.prebakedVersion ?? "1.34.2"}\n`);
        if (options.prebakedCni !== false) {
            fs.mkdirSync(path.join(root, "opt", "cni", "bin"), { recursive: true });
            for (const plugin of ["bridge", "host-local", "portmap", "loopback"]) {
                fs.writeFileSync(path.join(root, "opt", "cni", "bin", plugin), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
            }
        }
    }
    fs.writeFileSync(path.join(state, "images"), (options.prebakedImages ?? []).map((i) => `${i}\n`).join(""));
    for (const [name, text] of Object.entries(options.stubs ?? {})) {
        const target = INSTALLABLE.has(name) ? installed : bin;
        fs.rmSync(path.join(target, name), { force: true });
        fs.writeFileSync(path.join(target, name), `#!/bin/bash\n${text}\n`);
    }
    for (const d of [bin, installed]) {
        for (const f of fs.readdirSync(d)) {
            // Never chmod through the symlinks to this machine's own tools.
            if (!fs.lstatSync(path.join(d, f)).isSymbolicLink()) fs.chmodSync(path.join(d, f), 0o755);
        }
    }
    const osRelease = options.os === "ubuntu" ? OS_RELEASE.ubuntu(options.ubuntuRelease ?? "22.04") : OS_RELEASE.alinux();
    fs.mkdirSync(path.join(root, "etc"), { recursive: true });
    fs.writeFileSync(path.join(root, "etc", "os-release"), osRelease);
    fs.writeFileSync(path.join(root, "etc", "fstab"), "UUID=1234 / ext4 defaults 0 1\n");

    const baseEnv: Record<string, string> = {
        PATH: `${installed}:${bin}`,
        HOME: dir,
        LANG: "C",
        AK_ROOT: root,
        AK_STUB_STATE: state,
        AK_STUB_SRC: STUB_SRC,
        AK_STUB_INSTALLED: installed,
        AK_RETRY_DELAY: "0",
        AK_STUB_REGION: options.region ?? "cn-hangzhou",
        AK_STUB_INSTANCE_ID: options.instanceId ?? "i-bp1stubinstance0001",
        AK_STUB_IMDS: options.imds ?? "v2",
        AK_STUB_FAIL_INIT: options.fail?.init ? "1" : "0",
        AK_STUB_FAIL_JOIN: String(options.fail?.join ?? 0),
        AK_STUB_API_DOWN: String(options.fail?.apiDown ?? 0),
        AK_STUB_DOWNLOAD_MS: String(options.delays?.downloadMs ?? 0),
        AK_STUB_INSTALL_MS: String(options.delays?.installMs ?? 0),
        AK_STUB_JOIN_MS: String(options.delays?.joinMs ?? 0),
        AK_STUB_PULL_MS: String(options.delays?.pullMs ?? 0),
        ...options.env,
    };

    const at = (p: string): string => {
        const full = path.resolve(root, `.${path.posix.normalize(`/${p}`)}`);
        if (!full.startsWith(root)) throw new Error(`path ${p} escapes the sandbox`);
        return full;
    };

    return {
        root,
        env: { ...baseEnv, AK_ROOT: root, AK_STUB_STATE: state },
        at,
        read: (p) => (fs.existsSync(at(p)) ? fs.readFileSync(at(p), "utf8") : undefined),
        write: (p, content) => {
            fs.mkdirSync(path.dirname(at(p)), { recursive: true });
            fs.writeFileSync(at(p), content);
        },
        setLink: (name, present) => {
            const file = path.join(state, "links", name);
            if (present) fs.writeFileSync(file, "");
            else fs.rmSync(file, { force: true });
        },
        run: async (script, env = {}) => {
            const before = readCalls(state).length;
            fs.rmSync(path.join(state, "timing.log"), { force: true });
            const file = path.join(dir, "script.sh");
            fs.writeFileSync(file, script, { mode: 0o700 });
            const started = process.hrtime.bigint();
            const result = await spawnBash(file, { ...baseEnv, ...env, AK_ROOT: root, AK_STUB_STATE: state });
            const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
            return { ...result, wallMs, calls: readCalls(state).slice(before), stubMs: readTiming(state) };
        },
        allCalls: () => readCalls(state),
        images: () => fs.readFileSync(path.join(state, "images"), "utf8").split("\n").filter(Boolean),
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

/** The calls of one command, optionally whose first argument is `sub` (e.g. `callsOf(r.calls, "kubeadm", "join")`). */
export function callsOf(calls: StubCall[], cmd: string, sub?: string): StubCall[] {
    return calls.filter((c) => c.cmd === cmd && (sub === undefined || c.args[0] === sub));
}

/** Downloads: curl calls other than metadata lookups and API probes, plus `apt-get update`. */
export function downloadCalls(calls: StubCall[]): StubCall[] {
    return calls.filter((c) => (c.cmd === "curl" && !c.args.some((a) => a.includes("100.100.100.200") || a.endsWith("/readyz")))
        || (c.cmd === "apt-get" && c.args.includes("update")));
}

/** Image pulls: `crictl pull` calls. */
export function pullCalls(calls: StubCall[]): StubCall[] {
    return calls.filter((c) => c.cmd === "crictl" && c.args.includes("pull"));
}

/** Package installs: `apt-get install` and `dnf install` calls. */
export function installCalls(calls: StubCall[]): StubCall[] {
    return calls.filter((c) => (c.cmd === "apt-get" || c.cmd === "dnf") && c.args.includes("install"));
}

function findReal(name: string): string | undefined {
    for (const dir of ["/usr/bin", "/bin", "/usr/local/bin"]) {
        const p = path.join(dir, name);
        if (fs.existsSync(p)) return p;
    }
    return undefined;
}

function spawnBash(file: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
        const bash = findReal("bash");
        if (!bash) return reject(new Error("bash not found"));
        const child = spawn(bash, [file], { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
}

function readCalls(state: string): StubCall[] {
    const log = path.join(state, "calls.log");
    if (!fs.existsSync(log)) return [];
    return fs.readFileSync(log, "utf8").split("\x1e").filter((r) => r.length > 0).map((record) => {
        const [seq, cmd, ...args] = record.split("\x1f");
        const captured = path.join(state, "captured", seq);
        const call: StubCall = { seq: Number(seq), cmd, args };
        if (fs.existsSync(captured)) call.config = fs.readFileSync(captured, "utf8");
        return call;
    });
}

function readTiming(state: string): Record<string, number> {
    const file = path.join(state, "timing.log");
    const totals: Record<string, number> = {};
    if (!fs.existsSync(file)) return totals;
    for (const line of fs.readFileSync(file, "utf8").split("\n").filter(Boolean)) {
        const [category, ms] = line.split(" ");
        totals[category] = (totals[category] ?? 0) + Number(ms);
    }
    return totals;
}
