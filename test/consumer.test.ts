/**
 * The package as a consumer gets it: `npm pack` (which builds dist/ on prepack), the tarball installed into a
 * fresh project offline from the npm cache `npm ci` filled, README's "Using the components in your own
 * program" compiled with the tsconfig `pulumi new typescript` writes (no skipLibCheck), run in plain node under
 * Pulumi mocks, and every dynamic provider it registered loaded the way Pulumi's dynamic-provider host loads
 * it (require-from-string in plain node, from the project's directory). No ts-node anywhere in the consumer.
 */
import * as assert from "node:assert/strict";
import { execFileSync } from "child_process";
import * as fs from "fs";
import { builtinModules } from "module";
import * as os from "os";
import * as path from "path";
import { DYNAMIC_PLACEHOLDERS } from "../testing/mockRuntime";

const ROOT = path.join(__dirname, "..");

/** The tsconfig.json of `pulumi new typescript`. */
export const PULUMI_NEW_TSCONFIG = {
    compilerOptions: {
        strict: true,
        outDir: "bin",
        target: "es2020",
        module: "commonjs",
        moduleResolution: "node",
        sourceMap: true,
        experimentalDecorators: true,
        pretty: true,
        noFallthroughCasesInSwitch: true,
        noImplicitReturns: true,
        forceConsistentCasingInFileNames: true,
    },
    files: ["index.ts"],
};

/** The first ```ts block under README's section `heading`. */
function readmeBlock(heading: string): string {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const at = readme.indexOf(heading);
    assert.ok(at >= 0, `README has the section ${heading}`);
    const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
    assert.ok(block, "the section has a ts block");
    return block[1];
}

/** README's program under "Using the components in your own program". */
export const readmeProgram = (): string => readmeBlock("### Using the components in your own program");

/** README's program under "Testing your program with Pulumi's mocks" (Pulumi's generic mocks, nothing of this project). */
export const readmeTestingProgram = (): string => readmeBlock("### Testing your program with Pulumi's mocks");

/** The example programs (examples/<name>/index.ts), compiled and run like README's program. */
const EXAMPLES = ["two-pools", "attached-pool", "components"];

/** Plain node with nothing preloaded (the mocha process runs ts-node; a consumer's node does not). */
function plainNode(cwd: string, args: string[]): string {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: "" };
    for (const k of Object.keys(env)) {
        if (k.startsWith("TS_NODE")) delete env[k];
    }
    return execFileSync(process.execPath, args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
}

function npm(cwd: string, args: string[]): string {
    return execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: "false" } });
}

/**
 * The consumer's package.json and package-lock.json: the tarball, the Pulumi SDKs (the package's peers),
 * TypeScript and @types/node at this repository's versions, every other entry taken from this repository's
 * lockfile, so that `npm install --offline` needs no registry metadata, only the cached tarballs.
 */
function writeConsumerProject(dir: string, tarball: string): void {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));
    const dependencies: Record<string, string> = { [pkg.name]: `file:${tarball}` };
    for (const name of [...Object.keys(pkg.peerDependencies), "typescript", "@types/node"]) {
        dependencies[name] = pkg.devDependencies[name];
    }
    const packages: Record<string, unknown> = { "": { name: "consumer", version: "1.0.0", dependencies } };
    // This repository's lockfile may omit `resolved` (npm's omit-lockfile-registry-resolved); npm would then
    // look each tarball up in the registry's metadata, which `npm ci` need not have cached. Spell it out.
    const registry = (process.env.npm_config_registry || "https://registry.npmjs.org/").replace(/\/?$/, "/");
    for (const [key, entry] of Object.entries(lock.packages as Record<string, Record<string, unknown>>)) {
        if (key === "") continue;
        const { dev: _dev, devOptional: _devOptional, peer: _peer, ...rest } = entry;
        const name = key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length);
        if (rest.resolved === undefined && !rest.link && typeof rest.version === "string") {
            rest.resolved = `${registry}${name}/-/${name.split("/").pop()}-${rest.version}.tgz`;
        }
        packages[key] = rest;
    }
    packages[`node_modules/${pkg.name}`] = {
        version: pkg.version, resolved: `file:${tarball}`, license: pkg.license,
        dependencies: pkg.dependencies, peerDependencies: pkg.peerDependencies, engines: pkg.engines,
    };
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", private: true, dependencies }, null, 2));
    fs.writeFileSync(path.join(dir, "package-lock.json"), JSON.stringify({ name: "consumer", version: "1.0.0", lockfileVersion: 3, requires: true, packages }, null, 2));
}

/** Runs the compiled program under Pulumi mocks in plain node; writes what it registered to registered.json. */
const RUN_UNDER_MOCKS = `"use strict";
const fs = require("fs");
const pulumi = require("@pulumi/pulumi");
const placeholders = JSON.parse(process.argv[2]);
const [program, out] = [process.argv[4] || "./bin/index.js", process.argv[6] || "registered.json"];
// The outputs of the stacks a StackReference reads, by stack name.
const stacks = JSON.parse(process.argv[5] || "{}");
const registered = [];
const KEPT = ["kubernetes:core/v1:ConfigMap", "alicloud:ram/policy:Policy", "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment", "alicloud:ram/role:Role", "alicloud:ess/scalingGroup:ScalingGroup"];
pulumi.runtime.setMocks({
    newResource(args) {
        registered.push({ type: args.type, name: args.name, provider: typeof args.inputs.__provider === "string" ? args.inputs.__provider : undefined,
            inputs: KEPT.includes(args.type) ? args.inputs : undefined });
        if (args.type === "pulumi:pulumi:StackReference") {
            const outputs = stacks[args.inputs.name];
            return { id: args.inputs.name, state: { name: args.inputs.name, outputs, secretOutputNames: Object.keys(outputs || {}) } };
        }
        const dynamic = args.type === "pulumi-nodejs:dynamic:Resource" ? placeholders : {};
        return { id: args.custom ? args.name + "-id" : "", state: { ...dynamic, ...args.inputs } };
    },
    call(args) {
        if (args.token === "alicloud:ecs/getImages:getImages") {
            const id = "ubuntu_24_04_x64_20G_alibase_20260101.vhd";
            return { ids: [id], images: [{ id, imageId: id, name: id }] };
        }
        if (args.token === "alicloud:index/getCallerIdentity:getCallerIdentity") {
            return { accountId: "1234567890123456", arn: "acs:ram::1234567890123456:root", identityType: "Account", id: "1234567890123456" };
        }
        throw new Error("no mock for " + args.token);
    },
}, "consumer", "test", false);
pulumi.runtime.setAllConfig(JSON.parse(process.argv[3]));
const failures = [];
process.on("unhandledRejection", (err) => failures.push(String((err && err.message) || err)));
(async () => {
    const exported = require(program);
    // An async program (export = async () => {...}) returns its outputs.
    const outputsOf = typeof exported === "function" ? await exported() : exported;
    if (program === "./bin/index.js") {
        // BootstrapToken is public API that a Cluster no longer uses (its pools join through admission): one directly.
        new (require("alicloud-kubeadm").BootstrapToken)("direct-token", { region: "ap-southeast-1", masterInstanceId: "i-t4nexampleexample00", commands: {} });
    }
    await require("@pulumi/pulumi/runtime/settings").waitForRPCs();
    const outputs = {};
    for (const [key, value] of Object.entries(outputsOf)) {
        outputs[key] = await new Promise((resolve) => pulumi.output(value).apply(resolve));
    }
    fs.writeFileSync(out, JSON.stringify({ registered, outputs: Object.keys(outputs), vpcId: outputs.vpcId, values: outputs, failures }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

/**
 * Loads serialized providers as Pulumi's dynamic-provider host does (its own require-from-string, file name
 * "", so module paths are those of the working directory) and reports, per provider, its methods and the
 * modules its text requires with where they resolve from the project.
 */
const LOAD_AS_HOST = `"use strict";
const fs = require("fs");
const { createRequire } = require("module");
const requireFromString = createRequire(require.resolve("@pulumi/pulumi/package.json"))("require-from-string");
const texts = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const report = {};
for (const [name, text] of Object.entries(texts)) {
    const provider = requireFromString(text).handler();
    const required = [...text.matchAll(/require\\("([^"]+)"\\)/g)].map((m) => m[1]);
    report[name] = {
        methods: Object.keys(provider).filter((k) => typeof provider[k] === "function").sort(),
        required: [...new Set(required)].map((id) => ({ id, resolved: require.resolve(id, { paths: [process.cwd()] }) })),
    };
}
console.log(JSON.stringify(report));
`;

/** [kind, the names the components give its resources]. */
const PROVIDER_KINDS: Array<[string, RegExp]> = [
    ["JoinInfo", /-join-info$/],
    ["ApiServerReady", /-api-ready$/],
    ["BootstrapToken", /-token$/],
    ["ControlPlaneMember", /-master-\d+-join$/],
    ["NodeMembership", /-membership$/],
    ["PoolCapacity", /-capacity$/],
    ["BakedImage", /-node-image-image$/],
    ["AdmissionCertificate", /-admission-tls$/],
    ["BackupKey", /-backup-key$/],
    ["MasterMaintenance", /-master-maintenance$/],
    ["MasterReplacementGuard", /-replacement-guard$/],
    ["ControlPlaneVersion", /-version$/],
    ["NodeVersions", /-node-versions$/],
];

describe("the package as a consumer installs it: npm pack → fresh project (offline) → tsc without skipLibCheck → mocks → provider host", function () {
    this.timeout(600_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "consumer-"));
    const seconds: Record<string, number> = {};
    const timed = <T>(step: string, fn: () => T): T => {
        const start = Date.now();
        try {
            return fn();
        } finally {
            seconds[step] = (Date.now() - start) / 1000;
        }
    };
    let files: string[] = [];
    after(() => {
        if (!process.env.KEEP_CONSUMER) fs.rmSync(dir, { recursive: true, force: true });
        console.log(`      consumer test, seconds: ${Object.entries(seconds).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
    });

    before(() => {
        const packed = JSON.parse(timed("pack", () => npm(ROOT, ["pack", "--json", "--pack-destination", dir]))) as Array<{ filename: string; files: Array<{ path: string }> }>;
        files = packed[0].files.map((f) => f.path);
        writeConsumerProject(dir, packed[0].filename);
        timed("install", () => npm(dir, ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"]));
    });

    it("the tarball holds the compiled entry points, declarations, node scripts, LICENSE and CHANGELOG, and no TypeScript source or test", () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(dir, "node_modules", "alicloud-kubeadm", "package.json"), "utf8"));
        for (const entry of [pkg.main, pkg.types, pkg.exports["."].default, pkg.exports["."].types]) {
            assert.ok(files.includes(path.normalize(entry)), `${entry} is in the tarball`);
        }
        const scripts = (function walk(d: string): string[] {
            return fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith(".sh") ? [path.join(d, e.name)] : []));
        })(path.join(ROOT, "src", "shell")).map((f) => path.join("dist", path.relative(path.join(ROOT, "src"), f)));
        assert.deepStrictEqual(scripts.filter((s) => !files.includes(s)), [], "every node script the renderer reads");
        assert.deepStrictEqual(files.filter((f) => /\.ts$/.test(f) && !/\.d\.ts$/.test(f)), [], "no TypeScript source");
        assert.deepStrictEqual(files.filter((f) => /^(test|scripts|bench|stacks|examples)\//.test(f) || f === "index.ts"), [], "no test, script or stack");
        for (const f of ["LICENSE", "CHANGELOG.md", "README.md"]) assert.ok(files.includes(f), `${f} is in the tarball`);
        assert.match(fs.readFileSync(path.join(dir, "node_modules", "alicloud-kubeadm", "LICENSE"), "utf8"), /Apache License\s+Version 2\.0, January 2004/);
        assert.deepStrictEqual(files.filter((f) => /(^|\/)(test|testing)\//.test(f) || /\.test\.(ts|js)$/.test(f)), [], "no test or test tooling anywhere");
    });

    it("README's programs and the examples compile with the `pulumi new typescript` tsconfig, without skipLibCheck", () => {
        const files = ["index.ts", "mocks-test.ts", ...EXAMPLES.map((e) => `examples/${e}/index.ts`)];
        fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ ...PULUMI_NEW_TSCONFIG, compilerOptions: { ...PULUMI_NEW_TSCONFIG.compilerOptions, rootDir: "." }, files }, null, 4));
        fs.writeFileSync(path.join(dir, "index.ts"), readmeProgram());
        fs.writeFileSync(path.join(dir, "mocks-test.ts"), readmeTestingProgram());
        for (const example of EXAMPLES) {
            fs.mkdirSync(path.join(dir, "examples", example), { recursive: true });
            fs.copyFileSync(path.join(ROOT, "examples", example, "index.ts"), path.join(dir, "examples", example, "index.ts"));
        }
        try {
            timed("tsc", () => plainNode(dir, [path.join(dir, "node_modules", "typescript", "bin", "tsc"), "-p", ".", "--pretty", "false"]));
        } catch (err) {
            assert.fail(`tsc failed:\n${(err as { stdout?: string }).stdout ?? ""}${(err as { stderr?: string }).stderr ?? ""}`);
        }
        assert.ok(fs.existsSync(path.join(dir, "bin", "index.js")));
    });

    it("runs in plain node under Pulumi mocks: a Cluster in ap-southeast-1 and a standalone Network, every dynamic provider kind", () => {
        const config = {
            "consumer:apiAllowedCidr": "47.96.0.0/16",
            "consumer:existingNodes": JSON.stringify([{ instanceId: "i-t4nexampleexample01" }]),
            "consumer:bake": "true",
        };
        fs.writeFileSync(path.join(dir, "run-under-mocks.js"), RUN_UNDER_MOCKS);
        timed("run", () => plainNode(dir, ["run-under-mocks.js", JSON.stringify(DYNAMIC_PLACEHOLDERS), JSON.stringify(config)]));
        const run = JSON.parse(fs.readFileSync(path.join(dir, "registered.json"), "utf8")) as {
            registered: Array<{ type: string; name: string; provider?: string }>; failures: string[]; vpcId: string;
        };
        assert.deepStrictEqual(run.failures, []);
        const names = (type: string) => run.registered.filter((r) => r.type === type).map((r) => r.name);
        assert.deepStrictEqual(names("alicloud-kubeadm:index:Cluster"), ["sg"]);
        assert.deepStrictEqual(names("alicloud-kubeadm:index:Network").sort(), ["sg-network", "shared"]);
        // Nodes join by cloud identity from the installed package too (the certificate is compiled in, not read from a file).
        assert.deepStrictEqual(names("alicloud-kubeadm:index:Admission"), ["sg-admission"]);
        assert.deepStrictEqual(names("pulumi-nodejs:dynamic:Resource").filter((n) => n.endsWith("-token")), ["direct-token"], "no bootstrap token but the one made directly");
        assert.strictEqual(run.vpcId, "shared-vpc-id", "the standalone network's VPC is exported");
        const masters = run.registered.filter((r) => r.type === "alicloud:ecs/instance:Instance");
        assert.strictEqual(masters.length, 3);
        const dynamic = run.registered.filter((r) => r.provider !== undefined);
        fs.writeFileSync(path.join(dir, "providers.json"), JSON.stringify(Object.fromEntries(dynamic.map((d) => [d.name, d.provider]))));
        const kinds = PROVIDER_KINDS.filter(([, names]) => dynamic.some((d) => names.test(d.name))).map(([kind]) => kind);
        assert.strictEqual(dynamic.filter((d) => !PROVIDER_KINDS.some(([, names]) => names.test(d.name))).length, 0, "every dynamic resource is of a known kind");
        assert.deepStrictEqual(kinds, PROVIDER_KINDS.map(([kind]) => kind), "every provider of src/providers is registered");
    });

    it("README's testing program runs under Pulumi's generic mocks (state = inputs): a Cluster with pools and an existing node, no error", () => {
        // It asserts on the registered state itself (the pools' scaling group ids, the VPC) and sets a failing exit
        // code on any error, one inside an apply included; a failing exit throws here with its output.
        const out = timed("generic mocks", () => plainNode(dir, ["bin/mocks-test.js"]));
        assert.match(out, /a Cluster with 2 pools and 1 existing node under Pulumi's generic mocks/);
    });

    it("the examples run under mocks: two pools; a pool and a node attached from a second program through a StackReference; a cluster from components", () => {
        fs.writeFileSync(path.join(dir, "run-under-mocks.js"), RUN_UNDER_MOCKS);
        const config = { "consumer:apiAllowedCidr": "47.96.0.0/16", "consumer:clusterStack": "acme/two-pools/prod", "consumer:batchInstanceId": "i-t4nbatchexample001", "consumer:buildInstanceId": "i-t4nbuildexample001" };
        const run = (example: string, stacks: Record<string, unknown> = {}) => {
            timed(example, () => plainNode(dir, ["run-under-mocks.js", JSON.stringify(DYNAMIC_PLACEHOLDERS), JSON.stringify(config), `./bin/examples/${example}/index.js`, JSON.stringify(stacks), `${example}.json`]));
            const result = JSON.parse(fs.readFileSync(path.join(dir, `${example}.json`), "utf8")) as {
                registered: Array<{ type: string; name: string; inputs?: Record<string, unknown> }>; failures: string[]; values: Record<string, unknown>;
            };
            assert.deepEqual(result.failures, [], example);
            return result;
        };
        const twoPools = run("two-pools");
        assert.deepEqual(twoPools.registered.filter((r) => r.type === "alicloud-kubeadm:index:NodePool").map((r) => r.name), ["demo-pool-general", "demo-pool-elastic"]);
        // The second program reads the first one's handle from its stack and attaches a pool and a node.
        const attached = run("attached-pool", { "acme/two-pools/prod": { handle: twoPools.values.handle } });
        const cm = attached.registered.filter((r) => r.type === "kubernetes:core/v1:ConfigMap").map((r) => r.inputs as { metadata: { name: string }; data: Record<string, string> });
        assert.deepEqual(cm.map((c) => [c.metadata.name, c.data]).sort(), [
            ["alicloud-kubeadm-admission-node-i-t4nbatchexample001", { instanceId: "i-t4nbatchexample001", pool: "existing" }],
            ["alicloud-kubeadm-admission-pool-gpu", { pool: "gpu", scalingGroupId: "gpu-group-id" }],
        ]);
        const role = twoPools.registered.find((r) => r.type === "alicloud:ram/role:Role")!;
        const attachment = attached.registered.find((r) => r.type === "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment")!;
        assert.equal(attachment.inputs!.roleName, role.inputs!.roleName, "the policy goes on the first program's masters' role");
        assert.equal(attached.values.gpuScalingGroupId, "gpu-group-id");
        const components = run("components");
        assert.deepEqual(components.registered.filter((r) => r.type === "alicloud-kubeadm:index:NodePool").map((r) => r.name), ["lab-web", "lab-data"]);
        assert.deepEqual(components.registered.filter((r) => r.type === "kubernetes:core/v1:ConfigMap" && /admission-(pool|node)-/.test((r.inputs as { metadata: { name: string } }).metadata.name)).length, 3);
    });

    it("every serialized provider loads in plain node as the dynamic-provider host loads it, requiring only built-ins and the installed package", () => {
        const texts = JSON.parse(fs.readFileSync(path.join(dir, "providers.json"), "utf8")) as Record<string, string>;
        for (const [name, text] of Object.entries(texts)) {
            assert.doesNotMatch(text, /require\("[^"]*\.ts"\)/, `${name} requires a TypeScript file`);
            assert.ok(!text.includes(ROOT), `${name} names this repository's directory`);
        }
        fs.writeFileSync(path.join(dir, "load-as-host.js"), LOAD_AS_HOST);
        const report = JSON.parse(timed("load", () => plainNode(dir, ["load-as-host.js", path.join(dir, "providers.json")]))) as
            Record<string, { methods: string[]; required: Array<{ id: string; resolved: string }> }>;
        const installed = path.join(fs.realpathSync(dir), "node_modules", "alicloud-kubeadm", "dist") + path.sep;
        for (const [name, { methods, required }] of Object.entries(report)) {
            for (const m of ["create", "diff", "update"]) {
                assert.ok(methods.includes(m), `${name}: ${m} is a function (${methods.join(", ")})`);
            }
            for (const { id, resolved } of required) {
                const builtin = builtinModules.includes(id.replace(/^node:/, ""));
                assert.ok(builtin || (id.startsWith("alicloud-kubeadm/dist/") && resolved.startsWith(installed)),
                    `${name} requires ${id} (${resolved}): only built-ins and the package's own modules, whose dependencies then resolve from the package`);
            }
        }
        assert.strictEqual(Object.keys(report).length, Object.keys(texts).length);
    });
});
