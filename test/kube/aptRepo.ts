/**
 * A Kubernetes package repository for real nodes, made on this machine: `.deb`s of kubeadm, kubelet and kubectl that
 * wrap binaries `npm run kube:build` built (the binary at `/usr/bin/<name>`, where the upstream packages put it, version
 * `<x.y.z>-1.1` as pkgs.k8s.io numbers them), in a flat repository (`Packages`, a `Release` with their SHA-256, and
 * `InRelease` clear-signed by a key made for this run) with the key beside it as `Release.key`, laid out as a package
 * mirror's `<base>/kubernetes-new/core/stable/v<minor>/deb/` (src/shell/render.ts `kubernetesRepoUrl`). Served over
 * HTTP inside the cluster's VPC, it is what the node's real `apt-get` and `dpkg` install from through prepare_node.sh's
 * install path (`curl …Release.key | gpg --dearmor`, `deb [signed-by=…] <repo>/deb/ /`, `apt-get install kubelet=<v>-*`).
 *
 *   const repo = await aptRepo(c, { dir: c.path("mirror"), packages: [{ name: "kubelet", version: "1.36.3", binary: "/…/kubelet" }] });
 *   repo.mirror;          // http://<ip>:<port>: the packageMirror the node scripts are rendered with
 *   await repo.stop();
 *
 * Needs dpkg-deb, dpkg-scanpackages (Debian `dpkg-dev`) and gpg on this machine ({@link aptRepoMissing}).
 */
import { execFileSync } from "child_process";
import * as crypto from "crypto";
import * as fs from "fs";
import * as http from "http";
import * as path from "path";
import type { Cluster } from "./cluster";
import { serveInVpc } from "./vpcService";

/** One package: its name, the version it holds (`x.y.z`), the binary it installs as `/usr/bin/<name>`. */
export interface AptPackage { name: "kubeadm" | "kubelet" | "kubectl"; version: string; binary: string }

/** The tools this machine lacks to make the repository (empty when it can). */
export function aptRepoMissing(): string[] {
    const has = (tool: string) => ["/usr/bin", "/bin", "/usr/local/bin"].some((d) => fs.existsSync(path.join(d, tool)));
    return ["dpkg-deb", "dpkg-scanpackages", "gpg"].filter((t) => !has(t)).map((t) => `${t} (Debian: dpkg-dev, gpg)`);
}

export interface AptRepo {
    /** The package mirror's base URL inside the VPC. */
    mirror: string;
    stop(): Promise<void>;
}

/** Builds the repository of `packages` under `dir` and serves `dir` at `at` (default: the master's IP, port 8080) in the VPC. */
export async function aptRepo(c: Cluster, opts: { dir: string; packages: AptPackage[]; at?: { ip: string; port: number } }): Promise<AptRepo> {
    if (!c.vpc) throw new Error("aptRepo: the cluster needs a VPC");
    const minors = new Set(opts.packages.map((p) => p.version.split(".").slice(0, 2).join(".")));
    for (const minor of minors) {
        const deb = path.join(opts.dir, "kubernetes-new", "core", "stable", `v${minor}`, "deb");
        fs.mkdirSync(deb, { recursive: true });
        for (const p of opts.packages.filter((x) => x.version.startsWith(`${minor}.`))) buildDeb(deb, p);
        signRepo(deb);
    }
    const at = opts.at ?? { ip: c.vpc.masterIp, port: 8080 };
    const root = path.resolve(opts.dir);
    const server = http.createServer((req, res) => {
        const file = path.resolve(root, "." + decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
        if (!file.startsWith(root + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
            res.writeHead(404).end();
            return;
        }
        res.writeHead(200, { "content-length": fs.statSync(file).size });
        if (req.method === "HEAD") res.end();
        else fs.createReadStream(file).pipe(res);
    });
    const service = await serveInVpc(c, "apt", at, server);
    return { mirror: `http://${at.ip}:${at.port}`, stop: () => service.stop() };
}

/** `<name>_<version>-1.1_amd64.deb` in `dir`: the binary as /usr/bin/<name>, no maintainer scripts, no dependencies. */
function buildDeb(dir: string, p: AptPackage): void {
    const version = `${p.version}-1.1`;
    const tree = path.join(dir, `.${p.name}_${version}`);
    fs.rmSync(tree, { recursive: true, force: true });
    fs.mkdirSync(path.join(tree, "DEBIAN"), { recursive: true });
    fs.mkdirSync(path.join(tree, "usr", "bin"), { recursive: true });
    fs.copyFileSync(p.binary, path.join(tree, "usr", "bin", p.name));
    fs.chmodSync(path.join(tree, "usr", "bin", p.name), 0o755);
    fs.writeFileSync(path.join(tree, "DEBIAN", "control"), [
        `Package: ${p.name}`, `Version: ${version}`, "Architecture: amd64", "Section: admin", "Priority: optional",
        "Maintainer: alicloud-kubeadm tests <tests@alicloud-kubeadm.invalid>",
        `Description: ${p.name} v${p.version}, built from source by npm run kube:build (a test repository's package)`, "",
    ].join("\n"));
    // uncompressed: the binaries barely shrink and gzip of 80 MB costs seconds of a shared CPU
    execFileSync("dpkg-deb", ["--root-owner-group", "-Znone", "-b", tree, path.join(dir, `${p.name}_${version}_amd64.deb`)], { stdio: "ignore" });
    fs.rmSync(tree, { recursive: true, force: true });
}

/** Packages, Release (with their sizes and SHA-256), InRelease signed by a key made here, Release.key (armored). */
function signRepo(dir: string): void {
    const packages = execFileSync("dpkg-scanpackages", ["--multiversion", "."], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    fs.writeFileSync(path.join(dir, "Packages"), packages);
    const sum = crypto.createHash("sha256").update(packages).digest("hex");
    fs.writeFileSync(path.join(dir, "Release"), [
        "Origin: alicloud-kubeadm tests", "Label: kubernetes", "Architectures: amd64", `Date: ${new Date().toUTCString()}`,
        "SHA256:", ` ${sum} ${Buffer.byteLength(packages)} Packages`, "",
    ].join("\n"));
    const home = fs.mkdtempSync(path.join(path.dirname(dir), ".gnupg-"));
    const gpg = (args: string[]) => execFileSync("gpg", ["--homedir", home, "--batch", "--quiet", "--pinentry-mode", "loopback", "--passphrase", "", ...args], { stdio: ["ignore", "pipe", "ignore"] });
    try {
        gpg(["--quick-gen-key", "alicloud-kubeadm test repository <tests@alicloud-kubeadm.invalid>", "ed25519", "sign", "1d"]);
        fs.writeFileSync(path.join(dir, "Release.key"), gpg(["--armor", "--export"]));
        gpg(["--yes", "--clearsign", "-o", path.join(dir, "InRelease"), path.join(dir, "Release")]);
    } finally {
        try {
            execFileSync("gpgconf", ["--homedir", home, "--kill", "gpg-agent"], { stdio: "ignore" });
        } catch {
            // no agent was started
        }
        fs.rmSync(home, { recursive: true, force: true });
    }
}
