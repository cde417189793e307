/**
 * The layout keeps its promises: each folder of src/ has one role, and a module imports only modules of
 * its own layer or below; the library never imports scripts/ or test/; comments point only into the repo,
 * and every docs/upstream.md anchor they name exists.
 */
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";

const ROOT = path.join(__dirname, "..");

/** src/ folders (and files) by layer, bottom first: a module may import its own layer and those below. */
const LAYERS: string[][] = [
    ["rules", "validated.ts"],
    ["cloud", "config.ts", "configTypes.ts", "configSlices.ts", "admission"],
    ["shell", "removal", "doctor", "recovery", "upgrade"],
    ["providers"],
    ["components"],
    ["index.ts"],
];

function files(dir: string, ext: RegExp): string[] {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name);
        return e.isDirectory() ? files(p, ext) : ext.test(e.name) ? [p] : [];
    });
}

function layerOf(file: string): number {
    const top = path.relative(path.join(ROOT, "src"), file).split(path.sep)[0];
    return LAYERS.findIndex((l) => l.includes(top));
}

function imports(file: string): string[] {
    const text = fs.readFileSync(file, "utf8");
    return [...text.matchAll(/(?:from|import|require)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => path.resolve(path.dirname(file), m[1]));
}

describe("layout", () => {
    const src = files(path.join(ROOT, "src"), /\.ts$/);

    it("every src/ module sits in a layer and imports nothing above it", () => {
        const wrong: string[] = [];
        for (const f of src) {
            const mine = layerOf(f);
            assert.ok(mine >= 0, `${path.relative(ROOT, f)} is in no layer: add its folder to LAYERS`);
            for (const target of imports(f)) {
                const rel = path.relative(ROOT, target);
                if (!rel.startsWith("src")) {
                    wrong.push(`${path.relative(ROOT, f)} imports ${rel} (outside the library)`);
                } else if (layerOf(target + (fs.existsSync(target) && fs.statSync(target).isDirectory() ? "/index.ts" : ".ts")) > mine) {
                    wrong.push(`${path.relative(ROOT, f)} imports ${rel}, which sits above it`);
                }
            }
        }
        assert.deepEqual(wrong, []);
    });

    it("scripts/, bench/ and testing/ import nothing from test/ (their tooling lives in testing/, outside the package)", () => {
        const tooling = ["scripts", "bench", "testing"].flatMap((d) => files(path.join(ROOT, d), /\.ts$/));
        const wrong = tooling.flatMap((f) => imports(f).filter((t) => path.relative(ROOT, t).split(path.sep)[0] === "test")
            .map((t) => `${path.relative(ROOT, f)} imports ${path.relative(ROOT, t)}`));
        assert.deepEqual(wrong, []);
    });

    it("comments and messages point only into the repository", () => {
        const code = [...src, ...files(path.join(ROOT, "scripts"), /\.ts$/), ...files(path.join(ROOT, "bench"), /\.ts$/), path.join(ROOT, "index.ts"),
            ...files(path.join(ROOT, "src"), /\.sh$/)];
        const outside = /DESIGN\.md|\.\.\/shared|shared\/reference|\/work\/|reference\/[a-z-]+\.md|\breference [A-Z][0-9]\b|\breference §/;
        const hits = code.flatMap((f) => fs.readFileSync(f, "utf8").split("\n").map((l, i) => [f, i + 1, l] as const)).filter(([, , l]) => outside.test(l));
        assert.deepEqual(hits.map(([f, n, l]) => `${path.relative(ROOT, f)}:${n}: ${l.trim()}`), []);
    });

    it("every docs/upstream.md anchor the code names exists", () => {
        const doc = fs.readFileSync(path.join(ROOT, "docs", "upstream.md"), "utf8");
        const anchors = new Set([
            ...[...doc.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]),
            ...[...doc.matchAll(/^#+ (.+)$/gm)].map((m) => m[1].toLowerCase().replace(/[^a-z0-9 -]/g, "").trim().replace(/ /g, "-")),
        ]);
        const code = [...src, ...files(path.join(ROOT, "src"), /\.sh$/), ...files(path.join(ROOT, "test"), /\.ts$/)];
        const missing: string[] = [];
        for (const f of code) {
            for (const m of fs.readFileSync(f, "utf8").matchAll(/docs\/upstream\.md((?:#[a-z0-9-]+(?:,? (?:and )?)?)+)/g)) {
                for (const a of m[1].match(/#[a-z0-9-]+/g) ?? []) {
                    if (!anchors.has(a.slice(1))) missing.push(`${path.relative(ROOT, f)}: ${a}`);
                }
            }
        }
        assert.deepEqual(missing, []);
    });
});
