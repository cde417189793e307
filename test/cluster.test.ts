import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";

/** Writes a copy of the dev stack with `edit` applied to its cluster object. */
function devVariant(dir: string, name: string, edit: (cluster: Record<string, unknown>) => void): string {
    const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
    edit(doc.config["alicloud-kubeadm:cluster"]);
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
}

describe("Cluster (whole stack under mocks)", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "cluster-"));
    after(() => fs.rmSync(out, { recursive: true, force: true }));

    it("one podCidr everywhere: kubeadm podSubnet, flannel Network and CCM --cluster-cidr follow the config", async () => {
        for (const podCidr of ["172.16.0.0/16", "10.244.0.0/16"]) {
            const file = devVariant(out, `pods-${podCidr.split(".")[0]}`, (c) => { (c.network as Record<string, unknown>).podCidr = podCidr; });
            const result = await synthesize(file, out);
            assert.deepStrictEqual(result.problems, []);
            const master = result.resources.find((r) => r.type === "alicloud:ecs/instance:Instance")!;
            assert.match(master.rawInputs.userData as string, new RegExp(`^readonly AK_POD_CIDR='${podCidr.replace(/\./g, "\\.")}'$`, "m"), "kubeadm podSubnet");
            const configMaps = result.resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMap");
            const flannel = configMaps.find((r) => (r.inputs.data as Record<string, string>)?.["net-conf.json"])!;
            assert.strictEqual(JSON.parse((flannel.inputs.data as Record<string, string>)["net-conf.json"]).Network, podCidr, "flannel Network");
            const ccm = result.resources.find((r) => r.type === "kubernetes:apps/v1:DaemonSet" && JSON.stringify(r.inputs).includes("cloud-controller-manager"))!;
            const args = JSON.stringify(ccm.inputs);
            assert.ok(args.includes(`--cluster-cidr=${podCidr}`), "CCM --cluster-cidr");
        }
    });

    it("add-ons go through a Kubernetes provider built from the API-ready kubeconfig, which stays secret", async () => {
        const result = await synthesize("dev", out);
        const provider = result.resources.find((r) => r.type === "pulumi:providers:kubernetes")!;
        assert.ok(provider.secretInputs.includes("kubeconfig"));
        const manifests = fs.readdirSync(path.join(out, "dev", "manifests"));
        assert.ok(manifests.includes("dev-pod-network.yaml"));
        const rows = fs.readFileSync(path.join(out, "dev", "resources.json"), "utf8");
        assert.ok(!rows.includes("placeholder: the real admin kubeconfig"), "the kubeconfig never reaches resources.json");
    });
});
