// World: the OpenAPI emulator (testing/emulator); Pulumi mocks (testing/mockRuntime.ts).
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as YAML from "yaml";
import { synthesize } from "../scripts/synth";
import { testSshPrivateKey, unpackScript } from "./tools";

/** Writes a copy of the dev stack with `edit` applied to its cluster object. */
function devVariant(dir: string, name: string, edit: (cluster: Record<string, unknown>) => void): string {
    const doc = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "stacks", "Pulumi.dev.yaml"), "utf8"));
    edit(doc.config["alicloud-kubeadm:cluster"]);
    const file = path.join(dir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(file, YAML.stringify(doc));
    return file;
}

/** The existing-node example (cluster name `example`): outside stacks/, synthesised by path. */
const EXAMPLE = path.join(__dirname, "..", "examples", "Pulumi.existing-nodes.yaml");

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

    it("no token or kubeconfig reaches a non-secret input, resources.json, outputs.json or the written userdata; the CA pin only where admission publishes it", async () => {
        const result = await synthesize(EXAMPLE, out);
        assert.deepStrictEqual(result.problems, []);
        // Under mocks the dynamic resources answer with recognisable placeholders (testing/mockRuntime.ts).
        const secrets = ["0123456789abcdef", "placeholder: the real admin kubeconfig"];
        const caPin = "0".repeat(64);
        const dir = path.join(out, "existing-nodes");
        const files = ["resources.json", "outputs.json", ...["userdata", "commands", "manifests"].flatMap((d) => fs.readdirSync(path.join(dir, d)).map((f) => path.join(d, f)))];
        assert.ok(files.includes(path.join("commands", "example-attach.sh")) && files.includes(path.join("commands", "example-drain.sh")), files.join(", "));
        assert.ok(files.length >= 2 + 3 + 14, `expected master, two pool scripts and 14 saved commands, got ${files.join(", ")}`);
        for (const f of files) {
            const text = unpackScript(fs.readFileSync(path.join(dir, f), "utf8"));
            for (const secret of secrets) {
                assert.ok(!text.includes(secret), `${f} contains ${secret}`);
            }
        }
        // The CA pin is public through admission (docs/admission.md): the script the service serves carries it in the
        // clear, and the stack's own caCertHash output (read back when master 0 is rebuilt). The one-line attach command
        // and its saved twin carry the pin of the service's key instead.
        const withPin = files.filter((f) => fs.readFileSync(path.join(dir, f), "utf8").includes(caPin)).sort();
        assert.deepStrictEqual(withPin, [path.join("manifests", "example-admission.yaml"), "outputs.json", "resources.json"]);
        assert.deepStrictEqual(Object.entries(JSON.parse(fs.readFileSync(path.join(dir, "outputs.json"), "utf8"))).filter(([, v]) => JSON.stringify(v).includes(caPin)).map(([k]) => k),
            ["caCertHash"]);
        const plainWithPin = result.resources.filter((r) => JSON.stringify(r.inputs).includes(caPin)).map((r) => r.type);
        assert.deepStrictEqual(plainWithPin, ["kubernetes:core/v1:ConfigMap"], "only the admission service's ConfigMap (the served attach script)");
        const servicePin = `sha256:${"1".repeat(64)}`; // the mocks' AdmissionCertificate placeholder
        assert.match(JSON.parse(fs.readFileSync(path.join(dir, "outputs.json"), "utf8")).attachCommand, new RegExp(servicePin));
        assert.ok(fs.readFileSync(path.join(dir, "commands", "example-attach.sh"), "utf8").includes(servicePin));
        const userdata = result.resources.filter((r) => r.rawInputs.userData !== undefined && r.type !== "alicloud:ecs/instance:Instance");
        assert.deepStrictEqual(userdata.map((r) => r.type).sort(), ["alicloud:ess/scalingConfiguration:ScalingConfiguration", "alicloud:ess/scalingConfiguration:ScalingConfiguration"],
            "the manual existing nodes run the saved attach command or SSH: no userdata of their own");
        for (const r of userdata) {
            assert.ok(r.secretInputs.includes("userData"), `${r.name}: attach userdata must be secret`);
            const script = unpackScript(r.rawInputs.userData as string);
            // No token in the header, and no token-shaped literal anywhere (the client assigns one at run time).
            assert.ok(!/^readonly AK_BOOTSTRAP_TOKEN=/m.test(script) && !/(?<![\w\]])[a-z0-9]{6}\.[a-z0-9]{16}(?!\w)/.test(script), `${r.name}: no bootstrap token variable or value through admission`);
            assert.match(script, /^readonly AK_ADMISSION_ENDPOINTS='[0-9.]+:10443(,[0-9.]+:10443)*'$/m);
        }
        const attach = result.resources.find((r) => r.type === "alicloud:ecs/command:Command" && r.inputs.name === "example-attach")!;
        assert.ok(attach.secretInputs.includes("commandContent"), "the attach command's content (CA pin) is secret");
        const attachScript = unpackScript(Buffer.from(attach.rawInputs.commandContent as string, "base64").toString());
        assert.ok(!/[a-z0-9]{6}\.[a-z0-9]{16}/.test(attachScript), "the saved attach command holds no token");
        const membership = result.resources.find((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.rawInputs.attachCommandId !== undefined)!;
        assert.strictEqual(membership.rawInputs.token, undefined, "the manual node's membership sends no token: it joins through admission");
        assert.strictEqual(membership.rawInputs.admission, true);
        assert.strictEqual(result.resources.filter((r) => r.name.endsWith("-token")).length, 0, "no BootstrapToken anywhere");
        const outputs = JSON.parse(fs.readFileSync(path.join(dir, "outputs.json"), "utf8"));
        assert.strictEqual(outputs.kubeconfig, "[secret]");
        assert.deepStrictEqual(outputs.clusterInfo.pools.map((p: { name: string; mode: string }) => `${p.name}:${p.mode}`), ["general:fixed", "elastic:autoscale"]);
    });

    it("the existing-node example registers every public component under its type token, parented to the Cluster", async () => {
        const result = await synthesize(EXAMPLE, out);
        const api = await import("../src");
        for (const name of ["Cluster", "Network", "ControlPlane", "NodeCommands", "NodePool", "ExistingNode", "PodNetwork", "ClusterAutoscaler"]) {
            assert.strictEqual(typeof (api as Record<string, unknown>)[name], "function", `src/index.ts exports ${name}`);
            const found = result.resources.filter((r) => r.type === `alicloud-kubeadm:index:${name}`);
            assert.ok(found.length > 0, `no ${name} in the dev graph`);
            assert.ok(found.every((r) => (name === "Cluster" ? r.parent === undefined : r.parent === "example")), `${name} parent`);
        }
        assert.strictEqual(result.resources.filter((r) => r.type === "alicloud-kubeadm:index:NodePool").length, 2);
    });

    it("the example's SSH node: the attach script on stdin of a remote command, stdin and connection secret, no Cloud Assistant attach", async () => {
        const result = await synthesize(EXAMPLE, out);
        assert.deepStrictEqual(result.problems, []);
        const ssh = result.resources.filter((r) => r.type === "command:remote:Command");
        assert.deepStrictEqual(ssh.map((r) => r.name), ["example-node-i-bp1exampleexample02-attach"]);
        assert.ok(ssh[0].secretInputs.includes("stdin") && ssh[0].secretInputs.includes("connection"), ssh[0].secretInputs.join(", "));
        assert.deepStrictEqual((ssh[0].rawInputs.connection as Record<string, unknown>).host, "192.168.16.20");
        const memberships = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.rawInputs.instanceId !== undefined && String(r.name).includes("-node-"));
        assert.deepStrictEqual(memberships.map((m) => `${m.rawInputs.instanceId}:${m.rawInputs.mode}`).sort(), ["i-bp1exampleexample01:manual", "i-bp1exampleexample02:ssh"]);
    });

    it("existing nodes: a spec per membership that labels change and a version does not; only those with rollout: replace are chained, in config order", async () => {
        const variant = async (name: string, edit: (nodes: Array<Record<string, unknown>>, cluster: Record<string, unknown>) => void) => {
            const doc = YAML.parse(fs.readFileSync(EXAMPLE, "utf8"));
            const cluster = doc.config["alicloud-kubeadm:cluster"];
            cluster.existingNodes.push({ instanceId: "i-bp1exampleexample03", mode: "manual" });
            edit(cluster.existingNodes, cluster);
            const file = path.join(out, `Pulumi.${name}.yaml`);
            fs.writeFileSync(file, YAML.stringify(doc));
            const result = await synthesize(file, out);
            assert.deepStrictEqual(result.problems, []);
            last = result.outputs;
            return result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && String(r.name).endsWith("-membership") && String(r.name).includes("-node-"))
                .sort((a, b) => String(a.rawInputs.instanceId).localeCompare(String(b.rawInputs.instanceId)));
        };
        let last: Record<string, unknown> = {};
        const report = await variant("existing-report", () => undefined);
        const exported = (last.clusterInfo as { existingNodes: Array<{ instanceId: string; spec?: string }> }).existingNodes;
        assert.deepStrictEqual(exported.map((e) => e.spec), report.map((m) => m.rawInputs.spec), "clusterInfo carries each node's spec for doctor");
        assert.ok(report.every((m) => /^[0-9a-f]{16}$/.test(String(m.rawInputs.spec)) && m.rawInputs.rollout === undefined), "a spec each; no rollout by default");
        const urns = new Set(report.map((m) => m.urn));
        assert.ok(report.every((m) => !m.dependencies.some((d) => urns.has(d))), "by default no membership waits for another");
        const relabelled = await variant("existing-relabelled", (nodes, cluster) => {
            nodes[0].labels = { role: "b" };
            cluster.kubernetesVersion = "1.35.0";
        });
        assert.deepStrictEqual(relabelled.map((m, i) => m.rawInputs.spec === report[i].rawInputs.spec), [false, true, true], "the labels changed node 1's spec; the version no spec");
        const replace = await variant("existing-replace", (nodes) => { nodes[0].rollout = "replace"; nodes[2].rollout = "replace"; });
        assert.deepStrictEqual(replace.map((m) => m.rawInputs.rollout), ["replace", undefined, "replace"]);
        assert.deepStrictEqual(replace.map((m) => m.rawInputs.spec), report.map((m) => m.rawInputs.spec), "the rollout is not part of the spec");
        const chained = (m: typeof replace[number]) => replace.filter((o) => m.dependencies.includes(o.urn)).map((o) => o.rawInputs.instanceId);
        assert.deepStrictEqual(replace.map(chained), [[], [], ["i-bp1exampleexample01"]], "node 3 waits for node 1; node 2 (report) for none");
    });

    it("existing nodes attach only once the admission service serves what they join with: each waits for its DaemonSet, whose pods roll when the served script changes; a manual node's spec is the served script's", async () => {
        const { validateClusterConfig, nodeJoinConfig } = await import("../src/config");
        const { servedAttachScript } = await import("../src/components/existingNode");
        const { existingNodeSpecHash, SPEC_STAND_IN } = await import("../src/rules");
        const variant = async (name: string, edit: (cluster: Record<string, unknown>) => void) => {
            const doc = YAML.parse(fs.readFileSync(EXAMPLE, "utf8"));
            const cluster = doc.config["alicloud-kubeadm:cluster"];
            edit(cluster);
            const file = path.join(out, `Pulumi.${name}.yaml`);
            fs.writeFileSync(file, YAML.stringify(doc));
            const result = await synthesize(file, out);
            assert.deepStrictEqual(result.problems, []);
            const daemonSet = result.resources.find((r) => r.type === "kubernetes:apps/v1:DaemonSet" && String(r.name).includes("-admission-"))!;
            const configMap = result.resources.find((r) => r.type === "kubernetes:core/v1:ConfigMap" && (r.inputs.data as Record<string, string>)?.["attach.sh"] !== undefined)!;
            const memberships = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && String(r.name).endsWith("-membership") && String(r.name).includes("-node-"));
            return {
                config: nodeJoinConfig(validateClusterConfig(cluster, doc.config["alicloud:region"]).config!),
                daemonSet, served: (configMap.inputs.data as Record<string, string>)["attach.sh"],
                configMap,
                mounted: (daemonSet.inputs.spec as { template: { spec: { volumes: Array<{ name: string; configMap?: { name: string } }> } } }).template.spec.volumes.find((v) => v.name === "code")!.configMap!.name,
                ssh: result.resources.find((r) => r.type === "command:remote:Command")!,
                memberships, spec: (id: string) => memberships.find((m) => m.rawInputs.instanceId === id)!.rawInputs.spec,
            };
        };
        const manual = "i-bp1exampleexample01";
        const base = await variant("served-base", () => undefined);
        for (const r of [...base.memberships, base.ssh]) assert.ok(r.dependencies.includes(base.daemonSet.urn), `${r.name} waits for the admission DaemonSet`);
        // The served files are an immutable ConfigMap the Kubernetes provider names (the mocks model its naming), under the
        // Pulumi name the fixed-name one had (an existing stack replaces that resource); the DaemonSet mounts the name it
        // got, and is updated after it exists.
        assert.strictEqual((base.configMap.inputs.metadata as { name?: string }).name, undefined, "no fixed name: a new object on every change");
        assert.strictEqual(base.configMap.inputs.immutable, true);
        assert.match(String(base.configMap.name), /-admission-service-configmap-kube-system-alicloud-kubeadm-admission$/);
        assert.match(base.mounted, new RegExp(`^${base.configMap.name}-[0-9a-f]{8}$`), "the DaemonSet mounts the ConfigMap's own name");
        assert.ok(base.daemonSet.dependencies.includes(base.configMap.urn), "the DaemonSet waits for its ConfigMap");
        // The served script, rendered again from its own header (the mocks' join material), is servedAttachScript's; at the
        // stand-ins it is what the manual node's spec hashes.
        const header = (v: string) => new RegExp(`^readonly ${v}='([^']*)'$`, "m").exec(base.served)![1];
        const join = {
            apiEndpoint: header("AK_API_ENDPOINT"), caCertHash: header("AK_CA_CERT_HASHES"), endpoints: header("AK_ADMISSION_ENDPOINTS").split(","),
            pin: header("AK_ADMISSION_PIN"), version: header("AK_KUBERNETES_VERSION"),
        };
        assert.strictEqual(servedAttachScript(base.config, join), base.served);
        const standIn = { apiEndpoint: SPEC_STAND_IN.endpoint, caCertHash: SPEC_STAND_IN.pin, endpoints: [SPEC_STAND_IN.endpoint], pin: SPEC_STAND_IN.pin, version: SPEC_STAND_IN.version };
        assert.strictEqual(base.spec(manual), existingNodeSpecHash({ mode: "manual", imageId: "", labels: {}, taints: [], script: servedAttachScript(base.config, standIn) }));
        // A new package mirror is served (the pods roll) and is a new spec; a patch version is served (the pods roll), no new spec.
        const mirror = await variant("served-mirror", (c) => { c.images = { packageMirror: "https://mirrors.example.com" }; });
        assert.notStrictEqual(mirror.served, base.served);
        assert.notStrictEqual(mirror.mounted, base.mounted, "a new ConfigMap, which the pod template mounts: the service's pods restart on the new script");
        assert.notStrictEqual(mirror.spec(manual), base.spec(manual));
        const patch = await variant("served-patch", (c) => { c.kubernetesVersion = "1.36.4"; });
        assert.notStrictEqual(patch.served, base.served);
        assert.notStrictEqual(patch.mounted, base.mounted);
        for (const m of base.memberships) assert.strictEqual(patch.spec(String(m.rawInputs.instanceId)), m.rawInputs.spec, `${m.name}: a version is no new spec`);
        // Nothing but what is served rolls the pods: the same config renders the same pod template.
        const again = await variant("served-again", () => undefined);
        assert.strictEqual(again.mounted, base.mounted);
    });

    it("a connection's private key from the stack config stays secret: in no plain input, resources.json or output", async () => {
        const doc = YAML.parse(fs.readFileSync(EXAMPLE, "utf8"));
        const KEY = testSshPrivateKey();
        const distinctive = KEY.split("\n")[1]; // a line of the key's own Base64
        doc.config["alicloud-kubeadm:cluster"].existingNodes[1].connection.privateKey = KEY;
        const file = path.join(out, "Pulumi.ssh-key.yaml");
        fs.writeFileSync(file, YAML.stringify(doc));
        const result = await synthesize(file, out);
        assert.deepStrictEqual(result.problems, []);
        const ssh = result.resources.find((r) => r.type === "command:remote:Command")!;
        assert.strictEqual((ssh.rawInputs.connection as Record<string, unknown>).privateKey, KEY, "the key reaches the remote command");
        assert.ok(!JSON.stringify(result.resources.map((r) => r.inputs)).includes(distinctive), "no plain input carries the key");
        for (const f of ["resources.json", "outputs.json"]) {
            assert.ok(!fs.readFileSync(path.join(out, "ssh-key", f), "utf8").includes(distinctive), f);
        }
    });

    it("the stacks in stacks/ hold no existing node (no placeholder instance): the example does", async () => {
        for (const stack of ["dev", "prod"]) {
            const result = await synthesize(stack, out);
            assert.deepStrictEqual(result.problems, []);
            assert.strictEqual(result.resources.filter((r) => r.type === "alicloud-kubeadm:index:ExistingNode").length, 0, stack);
        }
    });

    it("the saved commands are exactly what the emulator tests create (nodeCommandSpecs), and the providers take their ids", async () => {
        const result = await synthesize("dev", out);
        const { nodeCommandSpecs } = await import("../src/components/nodeCommands");
        const recorded = result.resources.filter((r) => r.type === "alicloud:ecs/command:Command" && r.parent === "dev-commands");
        const specs = nodeCommandSpecs("dev");
        assert.deepStrictEqual(recorded.map((r) => r.inputs.name).sort(), specs.map((s) => s.args.commandName).sort());
        for (const { args } of specs) {
            const r = recorded.find((x) => x.inputs.name === args.commandName)!;
            assert.strictEqual(Buffer.from(r.rawInputs.commandContent as string, "base64").toString("utf8"), args.script, args.commandName);
            assert.deepStrictEqual([r.inputs.type, r.inputs.enableParameter, r.inputs.timeout], ["RunShellScript", args.parameters, args.timeoutSeconds]);
        }
        const ids = Object.fromEntries(recorded.map((r) => [String(r.inputs.name).replace(/^dev-/, ""), r.id]));
        const dynamic = result.resources.filter((r) => r.type === "pulumi-nodejs:dynamic:Resource" && r.rawInputs.commands !== undefined);
        assert.ok(dynamic.length >= 2, "pool capacities take the command ids");
        for (const d of dynamic) assert.deepStrictEqual(d.rawInputs.commands, ids, d.name);
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
