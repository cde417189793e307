/**
 * `npm run bench -- attach`: boots a pool node in the sandbox (testing/sandbox) from a stock image and from a baked
 * one, on Ubuntu and Alibaba Cloud Linux, with stubbed downloads, package installs, image pulls and `kubeadm join`
 * that take a fixed time. The baked image is made the way NodeImage makes it: the bake script (renderBakeNode) runs
 * in a fresh sandbox, which then boots as the node.
 *
 * Per boot it prints the downloads, package installs and image pulls the script made, the image pulls left for
 * the kubelet after the join (the node images containerd does not have; kubeadm join itself pulls nothing on a
 * worker), the script's own overhead (wall time minus the stubbed work) and the phases the sandbox can time.
 * Target on a baked image: 0 downloads / 0 installs / 0 pulls (script + kubelet), overhead <= 2 s. Throws (exit 1)
 * when a target is missed.
 */
import { nodeImages, defaultMirrors } from "../src/rules";
import { renderAttachNode, renderBakeNode } from "../src/shell/render";
import { downloadCalls, installCalls, makeSandbox, pullCalls, type Sandbox } from "../testing/sandbox";

const DOWNLOAD_MS = 300;
const INSTALL_MS = 1500;
const PULL_MS = 800;
const JOIN_MS = 500;
const RUNS = 3;
const BAKED_OVERHEAD_TARGET_MS = 2000;

const REGION = "cn-hangzhou";
const VERSION = "1.34.2";
const IMAGES = Object.values(nodeImages({ kubernetesVersion: VERSION, imageRepository: defaultMirrors(REGION).imageRepository }));
const JOIN = {
    region: REGION, kubernetesVersion: VERSION, apiEndpoint: "192.168.0.10:6443", poolName: "general",
    labels: { workload_type: "cpu" }, token: "abcdef.0123456789abcdef", caCertHash: `sha256:${"0".repeat(64)}`,
};
/** A stock cluster: no node images in the userdata (the kubelet pulls after the join). */
const STOCK = renderAttachNode(JOIN);
/** A baked cluster: the userdata lists the node images (checked, pre-pulled when missing). */
const BAKED = renderAttachNode({ ...JOIN, nodeImages: IMAGES });
const BAKE = renderBakeNode({ region: REGION, kubernetesVersion: VERSION, nodeImages: IMAGES });

interface Measurement {
    image: string;
    overheadMs: number;
    wallMs: number;
    downloads: number;
    installs: number;
    scriptPulls: number;
    kubeletPulls: number;
    phases: Record<string, number>;
}

/** Median (by overhead) of RUNS fresh sandboxes of one image flavour. */
async function measure(os: "ubuntu" | "alinux", baked: boolean): Promise<Measurement> {
    const samples: Measurement[] = [];
    const delays = { downloadMs: DOWNLOAD_MS, installMs: INSTALL_MS, pullMs: PULL_MS, joinMs: JOIN_MS };
    for (let i = 0; i < RUNS; i++) {
        const sb: Sandbox = makeSandbox({ os, delays });
        try {
            if (baked) {
                const b = await sb.run(BAKE, { AK_STUB_DOWNLOAD_MS: "0", AK_STUB_INSTALL_MS: "0", AK_STUB_PULL_MS: "0" });
                if (b.code !== 0) throw new Error(`bake failed on ${os}:\n${b.stderr}`);
            }
            const r = await sb.run(baked ? BAKED : STOCK);
            if (r.code !== 0) throw new Error(`attach script failed on ${os} (${baked ? "baked" : "stock"}):\n${r.stderr}`);
            // Parallel pulls overlap: the wall time they took is at most one pull's, not their sum.
            const stubbedWall = (r.stubMs.download ?? 0) + (r.stubMs.install ?? 0) + (r.stubMs.join ?? 0) + (r.stubMs.pull ? PULL_MS : 0);
            const store = sb.images();
            samples.push({
                image: `${os} ${baked ? "baked" : "stock"}`,
                overheadMs: r.wallMs - stubbedWall,
                wallMs: r.wallMs,
                downloads: downloadCalls(r.calls).length,
                installs: installCalls(r.calls).length,
                scriptPulls: pullCalls(r.calls).length,
                kubeletPulls: IMAGES.filter((img) => !store.includes(img)).length,
                phases: { download: r.stubMs.download ?? 0, install: r.stubMs.install ?? 0, "pull (parallel)": r.stubMs.pull ? PULL_MS : 0, "kubeadm join": r.stubMs.join ?? 0 },
            });
        } finally {
            sb.cleanup();
        }
    }
    samples.sort((a, b) => a.overheadMs - b.overheadMs);
    return samples[Math.floor(samples.length / 2)];
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Runs the benchmark and prints the tables; throws when the baked target is missed. */
export async function main(): Promise<void> {
    console.log(`attach benchmark (pool node boot): stubbed download ${DOWNLOAD_MS} ms, package install ${INSTALL_MS} ms, ` +
        `image pull ${PULL_MS} ms, kubeadm join ${JOIN_MS} ms; median of ${RUNS}; node images: ${IMAGES.length}`);
    const results: Measurement[] = [];
    for (const os of ["ubuntu", "alinux"] as const) {
        for (const baked of [false, true]) results.push(await measure(os, baked));
    }
    console.log("image           downloads  installs  pulls(script)  pulls(kubelet)  overhead  wall (incl. stubs)");
    for (const m of results) {
        console.log(`${m.image.padEnd(15)} ${String(m.downloads).padStart(9)} ${String(m.installs).padStart(9)} ${String(m.scriptPulls).padStart(14)} ` +
            `${String(m.kubeletPulls).padStart(15)} ${s(m.overheadMs).padStart(9)} ${s(m.wallMs).padStart(19)}`);
    }
    console.log("\nphases the sandbox times (stubbed work, then the script's own overhead):");
    const phases = Object.keys(results[0].phases);
    console.log(`phase             ${results.map((m) => m.image.padStart(14)).join(" ")}`);
    for (const p of phases) console.log(`${p.padEnd(17)} ${results.map((m) => s(m.phases[p]).padStart(14)).join(" ")}`);
    console.log(`${"script overhead".padEnd(17)} ${results.map((m) => s(m.overheadMs).padStart(14)).join(" ")}`);
    const misses = results.filter((m) => m.image.endsWith("baked"))
        .filter((m) => m.downloads + m.installs + m.scriptPulls + m.kubeletPulls > 0 || m.overheadMs > BAKED_OVERHEAD_TARGET_MS);
    console.log(`\ntarget (baked: 0 downloads / 0 installs / 0 pulls by script and kubelet, overhead <= ${BAKED_OVERHEAD_TARGET_MS / 1000} s): ${misses.length === 0 ? "PASS" : "FAIL"}`);
    if (misses.length > 0) throw new Error(`attach benchmark target missed: ${misses.map((m) => m.image).join(", ")}`);
}

if (require.main === module) {
    main().then(() => process.exit(0), (err) => {
        console.error(err);
        process.exit(1);
    });
}
