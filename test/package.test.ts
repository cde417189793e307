// World: Pulumi mocks (testing/mockRuntime.ts).
/**
 * The repository is two things: the stack program Pulumi runs (`index.ts`) and the package others install
 * (`dist/`, built from src/). Pulumi picks the program the way its Node.js language host does
 * (@pulumi/pulumi cmd/run): `main:` of Pulumi.yaml when set, otherwise package.json's `exports["."]` or
 * `main` — which is the library, a program that registers nothing: `pulumi up` would plan to delete the
 * whole cluster.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import * as YAML from "yaml";
import { installMocks } from "../testing/mockRuntime";

const ROOT = path.join(__dirname, "..");

/** The entry point the language host runs for a project directory (cmd/run/run.js, `run`). */
function programPulumiRuns(projectDir: string, pulumiYaml: { main?: string }): string {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectDir, "package.json"), "utf8"));
    let program = path.join(projectDir, pulumiYaml.main ?? ".");
    if (pulumiYaml.main === undefined) {
        const entry = typeof pkg.exports === "string" ? pkg.exports
            : typeof pkg.exports === "object" ? (typeof pkg.exports["."] === "string" ? pkg.exports["."] : pkg.exports["."]?.default ?? pkg.exports["."]?.require)
                : pkg.main;
        if (entry) program = path.join(projectDir, entry);
    }
    return program;
}

describe("the program Pulumi runs and the package", () => {
    const project = YAML.parse(fs.readFileSync(path.join(ROOT, "Pulumi.yaml"), "utf8")) as { main?: string; stackConfigDir?: string };

    it("Pulumi.yaml's main is the stack program index.ts, and it registers a Cluster from the stack config", async () => {
        const program = programPulumiRuns(ROOT, project);
        assert.equal(require.resolve(program), path.join(ROOT, "index.ts"));
        const recorder = installMocks({ stack: "dev", config: YAML.parse(fs.readFileSync(path.join(ROOT, project.stackConfigDir ?? ".", "Pulumi.dev.yaml"), "utf8")).config });
        delete require.cache[require.resolve(program)];
        require(program);
        await recorder.settle();
        assert.equal(recorder.ofType("alicloud-kubeadm:index:Cluster").length, 1);
    });

    it("without main: Pulumi would run the library entry point (why Pulumi.yaml names index.ts)", () => {
        assert.equal(path.relative(ROOT, programPulumiRuns(ROOT, { ...project, main: undefined })), path.join("dist", "index.js"));
    });

    it("the package's entry points are the compiled library; the @pulumi SDKs are peers (ranges) and pinned for development", () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
        assert.deepEqual([pkg.main, pkg.types, pkg.exports["."]], ["dist/index.js", "dist/index.d.ts", { types: "./dist/index.d.ts", default: "./dist/index.js" }]);
        assert.equal(pkg.scripts.prepack, "npm run build");
        const build = JSON.parse(fs.readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8"));
        assert.deepEqual([build.compilerOptions.rootDir, build.compilerOptions.outDir, build.include], ["src", "dist", ["src/**/*.ts"]]);
        for (const name of ["@pulumi/pulumi", "@pulumi/alicloud", "@pulumi/command", "@pulumi/kubernetes"]) {
            assert.equal(pkg.dependencies[name], undefined, `${name} is not a dependency (a consumer would get two SDKs)`);
            assert.match(pkg.peerDependencies[name], /^\^\d+\.\d+\.\d+$/, `${name} peer range`);
            assert.equal(pkg.peerDependencies[name], `^${pkg.devDependencies[name]}`, `${name}: the range starts at the pinned development version`);
        }
    });
});
