// World: the OpenAPI emulator (testing/emulator); Pulumi mocks (testing/mockRuntime.ts).
/**
 * The etcd backup resources of a stack, under Pulumi mocks (`npm run synth`): the bucket (versioned, private, lifecycle by
 * prefix and age), the masters' policy (PutObject under the cluster's two prefixes, nothing else: evaluated with the
 * emulator's RAM policy matching, testing/emulator/oss.ts), the maintenance command that installs the backup timer on
 * every master, and the config rules of `backup`.
 */
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as zlib from "zlib";
import { synthesize } from "../scripts/synth";
import { policyAllows, type OssPolicy } from "../testing/emulator";
import { validateClusterConfig } from "../src/config";

describe("etcd backup resources (synth)", function () {
    this.timeout(120_000);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "synth-backup-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("prod: a versioned private bucket whose lifecycle expires hourly/ after 7 days and daily/ after 365; the masters may only put under those prefixes", async () => {
        const result = await synthesize("prod", out);
        assert.deepStrictEqual(result.problems, []);
        const of = (type: string) => result.resources.filter((r) => r.type === type);
        const [bucket] = of("alicloud:oss/bucket:Bucket");
        const name = "prod";
        const bucketName = String(bucket.inputs.bucket);
        assert.match(bucketName, /^prod-etcd-[0-9a-f]{8}$/);
        assert.deepStrictEqual(bucket.inputs.versioning, { status: "Enabled" });
        assert.strictEqual(bucket.inputs.acl, "private");
        assert.deepStrictEqual((bucket.inputs.lifecycleRules as Array<Record<string, unknown>>).map((r) => [r.prefix, r.enabled, r.expirations, r.noncurrentVersionExpirations]), [
            [`${name}/hourly/`, true, [{ days: 7 }], [{ days: 7 }]],
            [`${name}/daily/`, true, [{ days: 365 }], [{ days: 365 }]],
        ]);

        const policyRow = of("alicloud:ram/policy:Policy").find((p) => p.inputs.policyName === `${name}-backup`)!;
        const policy = JSON.parse(String(policyRow.inputs.policyDocument)) as OssPolicy;
        const attach = of("alicloud:ram/rolePolicyAttachment:RolePolicyAttachment").filter((a) => a.inputs.policyName === `${name}-backup`);
        assert.strictEqual(attach.length, 1);
        assert.strictEqual(attach[0].inputs.roleName, `${name}-control-plane`, "attached to the masters' role");
        // Allowed: a new object under either prefix of this cluster in this bucket. Nothing else.
        for (const key of [`${name}/hourly/2026-01-01T000000Z-abc.etcd.enc`, `${name}/daily/x`]) assert.ok(policyAllows(policy, "oss:PutObject", `${bucketName}/${key}`), key);
        for (const [action, resource] of [
            ["oss:PutObject", `${bucketName}/${name}/x`], ["oss:PutObject", `${bucketName}/other/hourly/x`], ["oss:PutObject", `${bucketName}/${name}x/hourly/x`],
            ["oss:PutObject", `other-bucket/${name}/hourly/x`], ["oss:GetObject", `${bucketName}/${name}/hourly/x`], ["oss:DeleteObject", `${bucketName}/${name}/hourly/x`],
            ["oss:ListObjects", bucketName], ["oss:PutBucketLifecycle", bucketName], ["oss:PutBucketVersioning", bucketName],
        ]) assert.ok(!policyAllows(policy, action, resource), `${action} ${resource} must be denied`);
        assert.deepStrictEqual(policy.Statement.map((s) => s.Action), [["oss:PutObject"]]);

        // The maintenance command installs the backup timer (hourly) with the bucket, the role, the public key; no private key.
        const command = of("alicloud:ecs/command:Command").find((c) => c.name.endsWith("-master-maintenance"))!;
        const packed = Buffer.from(String(command.inputs.commandContent), "base64").toString();
        const body = zlib.gunzipSync(Buffer.from(/<<'AK_PACKED' \| gzip -dc\n([\s\S]*?)\nAK_PACKED/.exec(packed)![1].replace(/\n/g, ""), "base64")).toString();
        assert.match(body, /OnUnitActiveSec=60min/);
        assert.ok(body.includes(`readonly AK_BACKUP_BUCKET='${bucketName}'`) && body.includes(`readonly AK_BACKUP_ROLE='${name}-control-plane'`));
        assert.ok(!/PRIVATE KEY/.test(body));
        // The backup key's private half is a secret output of its resource, nowhere in an input.
        const key = result.resources.find((r) => r.name.endsWith("-backup-key"))!;
        assert.ok(key.secretOutputs.includes("privateKey") && key.secretOutputs.includes("retired"));
        assert.ok(result.resources.every((r) => !JSON.stringify(r.inputs).includes("PRIVATE KEY")));
    });

    it("backup settings are checked before anything is registered", () => {
        const base = { name: "c", kubernetesVersion: "1.36.3", zones: ["cn-hangzhou-h"] };
        const errors = (backup: unknown) => validateClusterConfig({ ...base, backup }, "cn-hangzhou").errors;
        assert.deepStrictEqual(errors({ hourlyRetentionDays: 3, dailyRetentionDays: 30 }), []);
        assert.ok(errors({ intervalMinutes: 2 }).some((e) => e.startsWith("backup.intervalMinutes: must be a whole number in 5..1440")));
        assert.ok(errors({ hourlyRetentionDays: 10, dailyRetentionDays: 5 }).some((e) => e.startsWith("backup.dailyRetentionDays: is 5, shorter than backup.hourlyRetentionDays")));
        assert.ok(errors({ keyGeneration: 0 }).some((e) => e.startsWith("backup.keyGeneration:")));
        assert.ok(errors({ retention: 3 }).some((e) => e.startsWith("backup: unknown key \"retention\"")), "unknown keys are errors");
    });
});
