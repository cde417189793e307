#!/usr/bin/env node
// npm run build (and prepack): compiles src/ to dist/ (JavaScript + .d.ts, tsconfig.build.json) and copies
// the node scripts the library reads at run time (src/shell/*.sh, src/shell/ops/*.sh) next to the compiled
// renderer, where it looks for them. Plain node, so that a git install can build with no extra tooling.
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const root = path.resolve(__dirname, "..");
const dist = path.join(root, "dist");
fs.rmSync(dist, { recursive: true, force: true });
execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", path.join(root, "tsconfig.build.json")], { stdio: "inherit", cwd: root });

function copyScripts(from, to) {
    for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
        const src = path.join(from, entry.name);
        if (entry.isDirectory()) {
            copyScripts(src, path.join(to, entry.name));
        } else if (entry.name.endsWith(".sh")) {
            fs.mkdirSync(to, { recursive: true });
            fs.copyFileSync(src, path.join(to, entry.name));
        }
    }
}
copyScripts(path.join(root, "src", "shell"), path.join(dist, "shell"));
