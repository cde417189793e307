// npm run bench -- <name>: runs bench/<name>.ts's main(). With no name, lists the benchmarks.
import * as fs from "fs";
import * as path from "path";

const benches = fs.readdirSync(__dirname).filter((f) => f.endsWith(".ts") && f !== "run.ts").map((f) => f.replace(/\.ts$/, ""));
const name = process.argv.slice(2).find((a) => a !== "--");
if (!name || !benches.includes(name)) {
    console.error(`usage: npm run bench -- <${benches.join(" | ")}>`);
    process.exit(name ? 1 : 0);
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bench = require(path.join(__dirname, name)) as { main(): Promise<void> };
bench.main().then(() => process.exit(0), (err) => {
    console.error(err);
    process.exit(1);
});
