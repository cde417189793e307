/**
 * The name under which the stack program reads its own recorded outputs (index.ts; docs/upstream.md#pulumi-self-reference):
 * pure naming, checked against what each Pulumi backend parses (read from pulumi/pulumi's source, no CLI here).
 */
import * as assert from "assert";
import { DIY_ORGANIZATION, ownStackReferenceName } from "../src/recovery/selfReference";

describe("a stack's reference to its own outputs", () => {
    it("the cloud backend gets <organization>/<project>/<stack>: a bare name would resolve to the user's default organization", () => {
        assert.strictEqual(ownStackReferenceName("acme", "alicloud-kubeadm", "prod"), "acme/alicloud-kubeadm/prod");
    });

    it("a DIY backend (organization `organization`) gets the bare stack name, which its legacy layout also parses; none offline either", () => {
        assert.strictEqual(ownStackReferenceName(DIY_ORGANIZATION, "alicloud-kubeadm", "prod"), "prod");
        assert.strictEqual(ownStackReferenceName(undefined, "alicloud-kubeadm", "dev"), "dev");
        // the legacy DIY layout parses the whole name as a stack name: [A-Za-z0-9_.-] only (tokens.ParseStackName)
        assert.match(ownStackReferenceName(DIY_ORGANIZATION, "p", "dev.2-x_y"), /^[A-Za-z0-9_.-]+$/);
    });
});
