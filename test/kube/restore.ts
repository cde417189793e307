/**
 * A master to restore onto, for the real-cluster restore tests (test/realClusterRestore*.test.ts): its sandbox
 * (testing/sandbox) with kubeadm's files, the real kubectl, etcdutl through a `ctr run` shim and curl pointed at the
 * emulator's OSS; Cloud Assistant's restore steps and secret channel answered there; a kubelet played by the test (a
 * control-plane process runs while its static pod manifest is in the sandbox); and a backup of the fixture's etcd (a real
 * `etcdctl snapshot save`, with the CA material and the EncryptionConfiguration, sealed as the backup script seals it).
 */
import * as fs from "fs";
import * as path from "path";
import type { Emulator } from "../../testing/emulator";
import { sealedBackup } from "../../testing/backup";
import { makeSandbox, type Sandbox } from "../../testing/sandbox";
import { backupPrefixes } from "../../src/rules";
import type { Cluster } from "./cluster";

export const ENC_PATH = "/etc/kubernetes/pki/alicloud-kubeadm-encryption.yaml";
/** The control plane's static pods, in the order the kubelet starts them. */
export const STATIC_PODS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/** A `ctr` stub for a master's sandbox: `ctr run ... IMAGE NAME etcdutl|etcdctl ARGS` (the etcd image's tool) runs the real binary, /var/lib mapped into the sandbox. */
export function etcdImageShim(c: Cluster): string {
    return `. "$AK_STUB_SRC/_lib.sh"
[ "$3" = run ] || exit 0
while [ $# -gt 0 ] && [ "$1" != etcdutl ] && [ "$1" != etcdctl ]; do shift; done
tool=$1
shift
args=()
for a in "$@"; do args+=("\${a//\\/var\\/lib/$AK_ROOT/var/lib}"); done
exec "${c.bin}/$tool" "\${args[@]}"`;
}

/**
 * A `kubectl` stub for a master's sandbox: `kubectl exec etcd-<node> -- etcdctl ARGS` runs the real etcdctl against that
 * master's member, whose client port is on the line `<node> <port>` of `portsFile` (read at each call, so members that
 * start later are found); the etcd PKI paths and the default client URL are mapped; any other kubectl is the real one.
 */
export function etcdExecShim(c: Cluster, portsFile: string): string {
    return `for a in "$@"; do [ "$a" = exec ] && is_exec=1; done
if [ -z "\${is_exec:-}" ]; then exec ${JSON.stringify(`${c.bin}/kubectl`)} "$@"; fi
pod="" args=()
while [ $# -gt 0 ]; do case "$1" in etcd-*) pod=$1 ;; --) shift; break ;; esac; shift; done
[ "$1" = etcdctl ] || { echo "kubectl shim: only etcdctl runs in etcd pods" >&2; exit 1; }
shift
port=$(awk -v n="\${pod#etcd-}" '$1 == n { print $2 }' ${JSON.stringify(portsFile)})
[ -n "$port" ] || { echo "Error from server (NotFound): pods \\"$pod\\" not found" >&2; exit 1; }
for a in "$@"; do
  a=\${a//https:\\/\\/127.0.0.1:2379/https://127.0.0.1:$port}
  a=\${a//\\/etc\\/kubernetes\\/pki/${c.path("pki").replace(/\//g, "\\/")}}
  args+=("$a")
done
exec ${JSON.stringify(`${c.bin}/etcdctl`)} "\${args[@]}"`;
}

/** An EncryptionConfiguration sealing Secrets with secretbox under `key` (Base64 of 32 bytes). */
export function encryptionConfig(key: string): string {
    return `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: ["secrets"]
    providers:
      - secretbox:
          keys:
            - name: alicloud-kubeadm-1
              secret: ${key}
      - identity: {}
`;
}

/** etcdctl against the fixture's etcd (its client port, the healthcheck client certificate). */
export function etcdctl(c: Cluster, args: string[], allowFail = false) {
    return c.run("etcdctl", [`--endpoints=https://127.0.0.1:${c.ports.etcdClient}`, `--cacert=${c.path("pki/etcd/ca.crt")}`,
        `--cert=${c.path("pki/etcd/healthcheck-client.crt")}`, `--key=${c.path("pki/etcd/healthcheck-client.key")}`, ...args], { allowFail });
}

/** etcd's cluster id, as the fixture's etcd reports it. */
export async function clusterId(c: Cluster): Promise<string> {
    return /^"ClusterID" : (.*)$/m.exec((await etcdctl(c, ["endpoint", "status", "-w", "fields"])).stdout)?.[1] ?? "";
}

/** A backup of the fixture's etcd as it is now, sealed to `recipient`, put in `bucket` under the cluster's hourly prefix. */
export async function putBackup(c: Cluster, emu: Emulator, bucket: string, cluster: string, recipient: string, encryption: string): Promise<string> {
    const file = c.path("snapshot.db");
    await etcdctl(c, ["snapshot", "save", file]);
    const status = JSON.parse((await c.run(path.join(c.bin, "etcdutl"), ["snapshot", "status", file, "-w", "json"])).stdout) as { revision: number };
    const pki: Record<string, Buffer> = {};
    for (const f of ["ca.crt", "ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-ca.key", "etcd/ca.crt", "etcd/ca.key"]) pki[`pki/${f}`] = fs.readFileSync(c.path(`pki/${f}`));
    if (!emu.oss.buckets.has(bucket)) emu.oss.addBucket(bucket, "Enabled");
    const key = `${backupPrefixes(cluster).hourly}2026-01-01T010000Z-a.etcd.enc`;
    emu.oss.buckets.get(bucket)!.objects.set(key, [{
        body: sealedBackup(cluster, recipient, status.revision, { "snapshot.db": fs.readFileSync(file), "encryption-config.yaml": encryption, ...pki }),
        versionId: "v1", lastModified: new Date().toISOString(), etag: "\"B\"",
    }]);
    fs.rmSync(file);
    return key;
}

/**
 * The sandbox of a master with a control plane as kubeadm made it (its etcd member named `node`, kubeadm's PKI, admin.conf,
 * the encryption config); Cloud Assistant's etcd-restore steps and secret channel run in the sandbox of the instance
 * they are sent to (`boxes`: this master's, or a plain one made on first use).
 */
export function restoreMaster(c: Cluster, emu: Emulator, instanceId: string, node: string, encryption: string, boxes: Map<string, Sandbox>): Sandbox {
    const port = new URL(emu.endpoint).port;
    const box = makeSandbox({
        os: "ubuntu", prebaked: true, instanceId,
        stubs: {
            // crictl ps: the static pods the kubelet (the test) runs now
            crictl: `. "$AK_STUB_SRC/_lib.sh"
[ "$1" = ps ] || exit 1
grep -E '^(etcd|kube-apiserver)$' "$AK_ROOT/run/test-kubelet-running" || true`,
            ctr: etcdImageShim(c),
            curl: `exec /usr/bin/curl --connect-to "::127.0.0.1:${port}" "$@"`,
            kubectl: `exec "${c.bin}/kubectl" "$@"`,
            hostname: 'exec /usr/bin/hostname "$@"',
            tar: 'exec /usr/bin/tar "$@"',
            install: 'exec /usr/bin/install "$@"',
        },
    });
    box.write("/etc/kubernetes/admin.conf", fs.readFileSync(c.kubeconfig, "utf8"));
    box.write("/etc/kubernetes/manifests/etcd.yaml", `spec:\n  containers:\n  - command:\n    - etcd\n    - --name=${node}\n    image: registry.k8s.io/etcd:3.6.8-0\n`);
    for (const p of STATIC_PODS.slice(1)) box.write(`/etc/kubernetes/manifests/${p}.yaml`, `image: registry.k8s.io/${p}\n`);
    box.write(ENC_PATH, encryption);
    copyTree(c.path("pki"), box.at("/etc/kubernetes/pki"));
    box.write("/var/lib/alicloud-kubeadm/init.done", "status=ok\n");
    fs.mkdirSync(box.at("/run"), { recursive: true });
    fs.mkdirSync(box.at("/var/lib/etcd"), { recursive: true, mode: 0o700 });
    boxes.set(instanceId, box);
    emu.onCommand(/^# alicloud-kubeadm operation: (etcd-restore|channel-open|channel-receive) \(/m, async (x) => {
        let sb = boxes.get(x.instanceId);
        if (!sb) {
            sb = makeSandbox({ os: "ubuntu", prebaked: true, instanceId: x.instanceId });
            boxes.set(x.instanceId, sb);
        }
        sb.write("/command.sh", x.script);
        const r = await sb.run('bash "$AK_ROOT/command.sh" 2>&1');
        return { exitCode: r.code, output: r.stdout };
    });
    return box;
}

/**
 * The kubelet of the master, for its static pods: a component runs while its manifest is in the sandbox's manifest
 * folder (started when it appears, stopped when it goes), checked every 200 ms; what runs is written for `crictl ps`.
 * `alsoWithApiServer` (e.g. kwok, the other nodes' kubelets) runs while the API server's manifest is there.
 */
export function playKubelet(c: Cluster, sb: Sandbox, alsoWithApiServer: string[] = []): { stop(): Promise<void>; errors: string[] } {
    const running = new Set<string>();
    const errors: string[] = [];
    let stopping = false;
    const loop = (async () => {
        while (!stopping) {
            for (const p of [...STATIC_PODS, ...alsoWithApiServer]) {
                const manifest = (STATIC_PODS as readonly string[]).includes(p) ? p : "kube-apiserver";
                const wanted = fs.existsSync(sb.at(`/etc/kubernetes/manifests/${manifest}.yaml`));
                try {
                    if (wanted && !running.has(p)) {
                        c.startComponent(p);
                        running.add(p);
                    } else if (!wanted && running.has(p)) {
                        await c.stopComponent(p);
                        running.delete(p);
                    }
                } catch (e) {
                    errors.push(`${p}: ${(e as Error).message}`);
                }
            }
            fs.writeFileSync(sb.at("/run/test-kubelet-running"), [...running].map((p) => `${p}\n`).join(""));
            await new Promise((r) => setTimeout(r, 200));
        }
    })();
    return { errors, stop: async () => { stopping = true; await loop; } };
}

/** The test objects (namespace dr: Secret db, ConfigMap app) as the API server serves them: what a restore must keep. */
export async function readObjects(c: Cluster): Promise<unknown> {
    const secret = JSON.parse(await c.kubectl(["-n", "dr", "get", "secret", "db", "-o", "json"]));
    const cm = JSON.parse(await c.kubectl(["-n", "dr", "get", "configmap", "app", "-o", "json"]));
    const ns = JSON.parse(await c.kubectl(["get", "namespace", "dr", "-o", "json"]));
    return {
        secret: { uid: secret.metadata.uid, data: secret.data, password: Buffer.from(secret.data.password, "base64").toString() },
        configMap: { uid: cm.metadata.uid, data: cm.data },
        namespace: { uid: ns.metadata.uid },
    };
}

/** Writes the test objects {@link readObjects} reads; the Secret holds `secretValue`. */
export async function writeObjects(c: Cluster, secretValue: string): Promise<void> {
    await c.kubectl(["create", "namespace", "dr"]);
    await c.kubectl(["-n", "dr", "create", "secret", "generic", "db", `--from-literal=password=${secretValue}`]);
    await c.kubectl(["-n", "dr", "create", "configmap", "app", "--from-literal=mode=prod"]);
}

/** Copies a folder tree (kubeadm's PKI into a sandbox). */
export function copyTree(from: string, to: string): void {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
        if (e.isDirectory()) copyTree(path.join(from, e.name), path.join(to, e.name));
        else fs.copyFileSync(path.join(from, e.name), path.join(to, e.name));
    }
}
