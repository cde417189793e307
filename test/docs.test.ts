// World: the functions and files themselves: no cluster, no cloud.
/**
 * README's "Configuration" table documents every key of the cluster config, and only keys that exist.
 * `FULL` must name every key of ClusterConfigInput (the compiler refuses a missing one), and config.ts checks
 * at compile time that ClusterConfigInput is exactly what the schema parses; so a key added to the schema
 * fails here until README documents it.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { validateClusterConfig, type ClusterConfigInput } from "../src/config";
import { DEFAULT_ADMISSION_IMAGE, DEFAULT_CCM_IMAGE, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, DEFAULT_FLANNEL_IMAGE } from "../src/rules";
import { opensshKeyText } from "./tools";

type DeepRequired<T> = T extends string | number | boolean ? T
    : T extends Array<infer U> ? Array<DeepRequired<U>>
        : T extends object ? { [K in keyof T]-?: DeepRequired<T[K]> } : T;

/** Every key, each with a valid value. */
/** A throw-away self-signed certificate (openssl, EC P-256): admission.identityCertificate must parse. */
const DOCS_TEST_CERTIFICATE = [
    "-----BEGIN CERTIFICATE-----",
    "MIIBkTCCATegAwIBAgIUFyLMLgM6mTnGC3Uv3pV33LYdZWMwCgYIKoZIzj0EAwIw",
    "HTEbMBkGA1UEAwwSZG9jcy10ZXN0LWlkZW50aXR5MCAXDTI2MTIwMzA3MDEzM1oY",
    "DzIxMjYxMTA5MDcwMTMzWjAdMRswGQYDVQQDDBJkb2NzLXRlc3QtaWRlbnRpdHkw",
    "WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASqwUm64W9wMV6UlpzZtv8yyfSG5cqH",
    "/rDQr/BzKlpkh4vUYWN6j63b24ql8w255DPbJODyfOSl8zoP8e08XJpoo1MwUTAd",
    "BgNVHQ4EFgQUxRXjUF3CESXiiR0ypOjJxlxdltcwHwYDVR0jBBgwFoAUxRXjUF3C",
    "ESXiiR0ypOjJxlxdltcwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF",
    "AiBtovHtcaYVrphK0p2JKQbgWqo63V9PLXVm3R39/jUHGAIhAKmfA5IqLlk1su2j",
    "0uU6tZpcKS1rz0BBAf19pFf7I1Ml",
    "-----END CERTIFICATE-----",
].join("\n");

const FULL: DeepRequired<ClusterConfigInput> = {
    name: "docs",
    kubernetesVersion: "1.36.3",
    zones: ["cn-hangzhou-h"],
    network: {
        vpcCidr: "192.168.0.0/16", podCidr: "172.16.0.0/16", serviceCidr: "10.96.0.0/12", nodeCidrMaskSize: 24, vswitchCidrs: ["192.168.0.0/20"],
        natGateway: true, apiAllowedCidrs: ["47.96.0.0/16"], routeEntryQuota: 200,
    },
    controlPlane: { count: 1, instanceType: "ecs.g7.large", publicEndpoint: true, systemDisk: { category: "cloud_essd", size: 40 }, deletionProtection: false },
    image: { id: "m-docs", nameRegex: "^ubuntu_24_04_x64", bake: true, bakeInstanceType: "ecs.g7.large" },
    backup: { intervalMinutes: 60, hourlyRetentionDays: 7, dailyRetentionDays: 365, keyGeneration: 1 },
    nodePools: [{
        name: "pool", instanceType: "ecs.g7.large", instanceTypes: ["ecs.g7.large"], size: 1, autoscale: { min: 0, max: 1 }, systemDisk: { category: "cloud_essd", size: 40 },
        imageId: "m-docs", tokenTtl: "0", labels: { team: "a" }, taints: ["a:PreferNoSchedule"],
        rollout: { maxSurge: 1, maxUnavailable: 0, drainTimeout: "10m", onDrainTimeout: "pause", canary: true, soak: "30s", validate: true },
        healthRepair: { notReadyTimeout: "10m", maxUnhealthy: 1 },
    }],
    existingNodes: [{
        instanceId: "i-bp1exampleexample01", mode: "manual", replaceSystemDisk: false, removeWithoutReset: false, rollout: "report", labels: { team: "a" }, taints: ["a:PreferNoSchedule"],
        connection: { host: "192.168.0.20", port: 22, user: "root", privateKey: opensshKeyText("aes256-ctr"), privateKeyPassword: "p", password: "p", agentSocketPath: "/tmp/agent" },
    }],
    autoscaler: {
        scaleDownUtilizationThreshold: 0.5, scaleDownUnneededTime: "10m", scaleDownDelayAfterAdd: "10m", expander: "least-waste",
        balanceSimilarNodeGroups: false, skipNodesWithLocalStorage: true, version: "1.36.1",
    },
    images: {
        flannel: "ghcr.io/flannel-io/flannel:v0.28.9", flannelCniPlugin: "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3",
        cloudControllerManager: "registry.cn-hangzhou.aliyuncs.com/acs/cloud-controller-manager-amd64:v2.14.0",
        clusterAutoscalerRepository: "registry.k8s.io/autoscaling/cluster-autoscaler", kubernetesRepository: "registry.k8s.io", packageMirror: "https://pkgs.k8s.io",
        admission: "docker.io/library/node:22.12.0-alpine3.20",
    },
    admission: { identityCertificate: DOCS_TEST_CERTIFICATE, joinTag: "alicloud-kubeadm/join=dev", readmitAfterSeconds: 300, allowSha1: true },
    podSecurity: { exemptNamespaces: ["monitoring"] },
    upgrade: { nodeBatchSize: 2 },
    tags: { team: "a" },
};

/** Values whose keys are the user's (labels, tags) or whose fields a row lists in its notes. */
const LEAVES = new Set(["labels", "tags", "taints", "autoscale", "systemDisk", "connection"]);

/** `a.b`, `nodePools[].name`, … for every key of `value`. */
function keyPaths(value: unknown, prefix = ""): string[] {
    if (Array.isArray(value)) return typeof value[0] === "object" ? keyPaths(value[0], `${prefix}[]`) : [prefix];
    if (typeof value !== "object" || value === null) return [prefix];
    return Object.entries(value).flatMap(([k, v]) => {
        const p = prefix ? `${prefix}.${k}` : k;
        return LEAVES.has(k) ? [p] : keyPaths(v, p);
    });
}

describe("README documents the config", () => {
    const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Configuration"), readme.indexOf("**Limits that come from Alibaba Cloud and kubeadm.**"));
    const rows = section.split("\n").filter((l) => l.startsWith("| `")).map((l) => l.split(" | ")[0].slice(2));

    it("FULL is a valid config (every key exists and takes the value given)", () => {
        const r = validateClusterConfig({ ...FULL, nodePools: [{ ...FULL.nodePools[0], instanceTypes: undefined, autoscale: undefined }] }, "cn-hangzhou");
        assert.deepEqual(r.errors, []);
    });

    it("every key of the cluster config has a row in the Configuration table", () => {
        const documented = (p: string) => rows.some((cell) => {
            if (cell.includes(`\`${p}\``)) return true;
            // `nodePools[].instanceType` / `instanceTypes`, `nodePools[].size` / `autoscale: {min, max}`
            const parent = p.slice(0, p.lastIndexOf(".") + 1);
            const leaf = p.slice(p.lastIndexOf(".") + 1);
            return parent !== "" && cell.startsWith(`\`${parent}`) && new RegExp(`\`${leaf}[\`:]`).test(cell);
        });
        assert.deepEqual(keyPaths(FULL).filter((p) => !documented(p)), []);
    });

    it("the connection row names every connection field, and no row names a key that does not exist", () => {
        const row = section.split("\n").find((l) => l.startsWith("| `existingNodes[].connection`"))!;
        for (const k of Object.keys(FULL.existingNodes[0].connection)) assert.match(row, new RegExp(`\\b${k}\\b`), k);
        const known = new Set(keyPaths(FULL));
        // A row's first name is a full path; a later one without a dot is its sibling (`image.id` / `nameRegex`).
        const named = rows.flatMap((cell) => {
            const names = [...cell.matchAll(/`([A-Za-z0-9[\].]+)/g)].map((m) => m[1]);
            const parent = names[0].slice(0, names[0].lastIndexOf(".") + 1);
            return names.map((n, i) => (i === 0 || n.includes(".") ? n : `${parent}${n}`));
        });
        assert.deepEqual(named.filter((k) => !known.has(k) && ![...known].some((p) => p.startsWith(`${k}.`))), []);
    });
});

describe("numbers and defaults README states are the code's", function () {
    this.timeout(300_000);
    const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");
    const rowOf = (key: string) => readme.split("\n").find((l) => l.startsWith(`| \`${key}\``)) ?? "";

    it("the image defaults in the Configuration table are the code's (src/rules/images.ts)", () => {
        const defaults = { flannel: DEFAULT_FLANNEL_IMAGE, flannelCniPlugin: DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, cloudControllerManager: DEFAULT_CCM_IMAGE, admission: DEFAULT_ADMISSION_IMAGE };
        for (const [key, value] of Object.entries(defaults)) {
            const cells = rowOf(`images.${key}`).split(" | ");
            assert.ok(cells[1]?.includes(`\`${value}\``), `images.${key}: README says ${cells[1]}, the default is ${value}`);
        }
    });

    it("the synth-scale row's resource count is what synth registers for 100 pools and 200 existing nodes", async () => {
        // Each fixed pool, each autoscaled pool and each existing node adds its own resources to a fixed rest: three
        // small syntheses give each share, and the count at the bench's largest size follows (the bench prints it too).
        const { scaleConfig } = await import("../bench/synth-scale");
        const { synthesize } = await import("../scripts/synth");
        const os = await import("os");
        const YAML = await import("yaml");
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "docs-scale-"));
        const count = async (pools: number, nodes: number) => {
            const file = path.join(dir, `Pulumi.scale-${pools}-${nodes}.yaml`);
            fs.writeFileSync(file, YAML.stringify({ config: scaleConfig(pools, nodes) }));
            const result = await synthesize(file, path.join(dir, "out"));
            assert.deepEqual(result.problems, []);
            return result.resources.length;
        };
        try {
            const base = await count(2, 2);
            const twoPools = (await count(4, 2)) - base; // one fixed and one autoscaled pool
            const node = ((await count(2, 4)) - base) / 2;
            // Linear, as the check of a middle size shows.
            assert.equal(await count(10, 20), base + 4 * twoPools + 18 * node, "10 pools + 20 nodes");
            const expected = base + 48 * twoPools + 198 * node;
            const stated = /100 pools \+ 200 nodes \((\d+) resources/.exec(rowOf("synth-scale"))?.[1];
            assert.equal(Number(stated), expected, `README states ${stated} resources; synth registers ${expected}`);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
