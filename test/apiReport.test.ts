// The public API as a contract, read from the declarations with the TypeScript compiler (no build, offline): the
// checked-in report (api/alicloud-kubeadm.api.md) is what the sources declare, so an API change that is not in
// the report fails here; no exported declaration names a type the package does not export; every argument and
// input property has JSDoc naming its default (or that it is required); README's API list is the report's.
import * as assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { buildApiReport, README_LIST_BEGIN, README_LIST_END, REPORT_FILE, type ApiReport } from "../scripts/apiReport";

describe("the API report", function () {
    this.timeout(120_000);
    let report: ApiReport;
    before(() => {
        report = buildApiReport();
    });

    it("api/alicloud-kubeadm.api.md is the API the sources declare (run `npm run api:report` and review the difference)", () => {
        const checkedIn = fs.readFileSync(REPORT_FILE, "utf8");
        if (checkedIn !== report.text) {
            const a = checkedIn.split("\n");
            const b = report.text.split("\n");
            const first = a.findIndex((line, i) => line !== b[i]);
            assert.fail(`the API differs from ${path.relative(process.cwd(), REPORT_FILE)} from line ${first + 1}:\n` +
                `  report:  ${a[first] ?? "(end)"}\n  sources: ${b[first] ?? "(end)"}\nrun \`npm run api:report\`, review the change and note it in CHANGELOG.md`);
        }
    });

    it("every type an exported declaration names is exported too", () => {
        assert.deepEqual(report.unexported, []);
    });

    it("0 argument or input properties without JSDoc naming the default", () => {
        assert.ok(report.properties > 300, `${report.properties} properties looked at`);
        assert.deepEqual(report.undocumented, []);
    });

    it("README's API list is the report's", () => {
        const readme = fs.readFileSync(path.join(__dirname, "..", "README.md"), "utf8");
        const list = readme.slice(readme.indexOf(README_LIST_BEGIN) + README_LIST_BEGIN.length, readme.indexOf(README_LIST_END)).trim();
        assert.equal(list, report.readmeList);
        for (const name of ["Cluster", "NodePool", "ClusterHandle", "clusterHandleOf", "ClusterConfigInput"]) assert.ok(list.includes(`\`${name}\``), name);
    });
});
