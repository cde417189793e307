/**
 * Only a parser makes a validated value (src/validated.ts): no `as` cast to a validated type and no call of
 * markValidated outside the parser modules, anywhere in src/ or test/ (a program that needs a validated config
 * calls parseClusterConfig; a test that needs a bad one builds it, and the component parses it). And the mark is
 * checked where it matters: a copy of a validated config is parsed again by the component it is given to.
 * World: the source files, and mocks.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { isValidated, parseClusterConfig, parseNodePool, validateClusterConfig } from "../src/config";

const ROOT = path.join(__dirname, "..");
/** The modules that parse, and so may mark. */
const PARSERS = ["src/validated.ts", "src/config.ts", "src/configSlices.ts"];
/** The validated types (src/configTypes.ts, src/validated.ts). */
const VALIDATED = "ClusterConfig|NodePoolConfig|ExistingNodeConfig|NodeJoinConfig|Validated";

function files(dir: string): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
    });
}

/** Casts to a validated type and calls of markValidated in `text`. */
function markings(text: string): string[] {
    const patterns = [
        new RegExp(`\\bas\\s+(?:unknown\\s+as\\s+)?(?:${VALIDATED})\\b`, "g"),
        new RegExp(`(?:[=(,:?]|\\breturn)\\s*<(?:${VALIDATED})\\b[^>]*>`, "g"),
        /\bmarkValidated\s*\(/g,
    ];
    return patterns.flatMap((p) => [...text.matchAll(p)].map((m) => m[0]));
}

describe("the validated type", () => {
    it("the check finds casts and marks: `as ClusterConfig`, `as unknown as NodePoolConfig`, `<Validated<X>>`, markValidated(…)", () => {
        assert.deepEqual(markings("const a = b as ClusterConfig; const c = d as unknown as NodePoolConfig;").length, 2);
        assert.deepEqual(markings("const a = <Validated<Pool>>b; f(markValidated(x));").length, 2);
        assert.deepEqual(markings("const a: ClusterConfig = parseClusterConfig(raw, region); type T = Array<ClusterConfig>;"), []);
    });

    it("no module outside the parsers casts to a validated type or marks a value (src/ and test/)", () => {
        const hits = [...files(path.join(ROOT, "src")), ...files(path.join(ROOT, "test"))]
            .filter((f) => !PARSERS.includes(path.relative(ROOT, f).split(path.sep).join("/")) && f !== __filename)
            .flatMap((f) => markings(fs.readFileSync(f, "utf8")).map((m) => `${path.relative(ROOT, f)}: ${m}`));
        assert.deepEqual(hits, []);
    });

    it("a parser's result is marked; a copy, or an edited copy, is not (the component parses it again)", () => {
        const raw = { name: "dev", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"], nodePools: [{ name: "general", instanceType: "ecs.g7.xlarge", size: 2 }] };
        const config = parseClusterConfig(raw, "cn-hangzhou");
        assert.ok(isValidated(config) && isValidated(config.nodePools[0]));
        assert.equal(isValidated({ ...config }), false);
        assert.equal(isValidated({ ...config.nodePools[0], size: 3 }), false);
        assert.equal(validateClusterConfig({ ...raw, zones: [] }, "cn-hangzhou").config, undefined);
        const paths: string[] = [];
        assert.equal(parseNodePool({ name: "x", labels: {}, taints: [], size: 1 }, "dev", {}, (p) => paths.push(p)), undefined, "no instance type: not validated");
        assert.deepEqual(paths, ["instanceType"]);
        assert.ok(isValidated(parseNodePool({ name: "x", labels: {}, taints: [], size: 1, instanceType: "ecs.g7.xlarge" }, "dev", {}, () => assert.fail())));
    });
});
