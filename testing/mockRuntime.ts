// In-process Pulumi mocks that record every registered resource (type, name, parent, inputs) with
// deterministic ids. Used by the offline synth and by the tests. Import the code under test only
// after installMocks() (Pulumi reads the mock monitor when resources are constructed).
import * as crypto from "crypto";
import * as pulumi from "@pulumi/pulumi";

/** Pulumi's wire signature for secret values (sdk/go/common/resource/properties.go). */
const SIG_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export const REDACTED = "[secret]";

export interface RecordedResource {
    type: string;
    name: string;
    /** The resource's URN as the engine would form it (`urn:pulumi:<stack>::<project>::<parent types>$<type>::<name>`). */
    urn: string;
    /** URNs (or alias specs) this resource declares as its previous identities. */
    aliases: string[];
    /** Name of the parent resource, undefined at the root. */
    parent?: string;
    /** Reference of the explicit provider (`<provider urn>::<id>`), if any. */
    provider?: string;
    /** True for custom (cloud) resources, false for components. */
    custom: boolean;
    /** Inputs as registered, secrets redacted to "[secret]". */
    inputs: Record<string, unknown>;
    /** Dotted paths of the inputs that were secrets. */
    secretInputs: string[];
    /** Outputs the resource asks the engine to keep secret (`additionalSecretOutputs`). */
    secretOutputs: string[];
    /** Inputs whose changes the engine ignores after creation (`ignoreChanges`), and those that replace it (`replaceOnChanges`). */
    ignoreChanges: string[];
    replaceOnChanges: string[];
    /** URNs the resource depends on as the engine records it (`dependsOn` and the resources its inputs come from). */
    dependencies: string[];
    id?: string;
    /** Inputs with secrets revealed: for assertions in tests only, never written out. */
    rawInputs: Record<string, unknown>;
    /** The name the Kubernetes provider gives an object its inputs leave unnamed (no `metadata.name`), as modelled here. */
    autoName?: string;
}

export interface MockOptions {
    project?: string;
    stack?: string;
    /** Full config keys (`alicloud:region`, `alicloud-kubeadm:cluster`); objects are JSON-encoded. */
    config?: Record<string, unknown>;
    /** Answers for data-source calls by token; defaults cover the ones the stack uses. */
    calls?: Record<string, (inputs: Record<string, unknown>) => Record<string, unknown>>;
    /**
     * The version the cluster's API servers serve, as ControlPlaneVersion reads it (`runningVersion`). Default: the
     * configured one (`targetVersion`: a new cluster runs what it was built with). A test of an upgrade sets the old one.
     */
    runningVersion?: string;
    /** The outputs of the stacks a StackReference reads, by stack name (every output secret, as a handle's stack has it); others have none. */
    stackOutputs?: Record<string, Record<string, unknown>>;
    /** Ids to give resources instead of the generated ones, by `<type>::<name>` (e.g. a scaling group an emulator also has). */
    ids?: Record<string, string>;
    /**
     * Outputs of this library's dynamic resources instead of {@link DYNAMIC_PLACEHOLDERS}, by output name (e.g. the
     * `caCertHash` of a real control plane, so the userdata synth renders joins it). Default: the placeholders.
     */
    dynamicOutputs?: Record<string, unknown>;
    /**
     * The engine's step of each custom resource (its create or update), awaited before the registration is answered,
     * as the engine answers RegisterResource only once the step is done: a test of the order Pulumi works in. Default none.
     */
    step?: (type: string, name: string) => Promise<void>;
}

export interface Recorder {
    resources: RecordedResource[];
    /** Resources of one type token. */
    ofType(type: string): RecordedResource[];
    /** Waits until every registration queued so far has been answered. */
    settle(): Promise<void>;
}

function shortHash(text: string, length = 12): string {
    return crypto.createHash("sha256").update(text).digest("hex").slice(0, length);
}

/** Alibaba-style id prefixes, so ids in resources.json read like the real ones. */
const ID_PREFIX: Record<string, string> = {
    "alicloud:vpc/network:Network": "vpc-",
    "alicloud:vpc/switch:Switch": "vsw-",
    "alicloud:vpc/natGateway:NatGateway": "ngw-",
    "alicloud:ecs/eipAddress:EipAddress": "eip-",
    "alicloud:ecs/securityGroup:SecurityGroup": "sg-",
    "alicloud:ecs/instance:Instance": "i-",
    "alicloud:ess/scalingGroup:ScalingGroup": "asg-",
    "alicloud:ess/scalingConfiguration:ScalingConfiguration": "asc-",
    "alicloud:nlb/loadBalancer:LoadBalancer": "nlb-",
    "alicloud:ecs/command:Command": "c-",
};

/** Attributes the real provider computes, given deterministic values. */
function computedState(type: string, name: string, inputs: Record<string, any>): Record<string, unknown> {
    const h = shortHash(`${type}/${name}`);
    const octet = (parseInt(h.slice(0, 2), 16) % 250) + 2;
    switch (type) {
        case "pulumi:pulumi:StackReference":
            // A stack that recorded nothing yet (the first `pulumi up`): no outputs.
            return { outputs: {}, secretOutputNames: [] };
        case "alicloud:vpc/network:Network":
            return { routeTableId: `vtb-${h}`, routerId: `vrt-${h}` };
        case "alicloud:vpc/natGateway:NatGateway":
            return { snatTableIds: `stb-${h}`, forwardTableIds: `ftb-${h}` };
        case "alicloud:ecs/eipAddress:EipAddress":
            return { ipAddress: `198.51.100.${octet}` };
        case "alicloud:ecs/instance:Instance":
            return { privateIp: `192.168.${parseInt(h.slice(2, 4), 16) % 16}.${octet}`, status: "Running" };
        case "alicloud:nlb/loadBalancer:LoadBalancer":
            return { dnsName: `nlb-${h}.cn-region.nlb.aliyuncsslb.com` };
        case "alicloud:ram/role:Role":
            return { arn: `acs:ram::1234567890123456:role/${name}` };
        case "kubernetes:core/v1:ConfigMap":
            // An object without metadata.name is named by the Kubernetes provider, `<resource name>-<random suffix>`, kept
            // until the resource is replaced; an immutable ConfigMap is replaced when its data changes (docs/upstream.md
            // #pulumi-replace-order). Here: a suffix from the data, so other data is another name, the same data the same.
            return inputs.metadata?.name === undefined
                ? { metadata: { ...inputs.metadata, name: `${name}-${shortHash(JSON.stringify(inputs.data ?? {}), 8)}` } } : {};
        default:
            return {};
    }
}

/**
 * Outputs of this library's dynamic resources (which never run under mocks), as recognisable
 * placeholders: a token and a CA pin that cannot be mistaken for real ones.
 */
export const DYNAMIC_PLACEHOLDERS: Record<string, unknown> = {
    caCertHash: `sha256:${"0".repeat(64)}`,
    kubeconfig: "apiVersion: v1\nkind: Config\n# placeholder: the real admin kubeconfig is read from master 0 at deploy time\n",
    token: "abcdef.0123456789abcdef",
    tokenId: "abcdef",
    certificateKey: "0".repeat(64),
    /** BakedImage: the image a build produced. */
    imageId: "m-bakedimageplaceholder",
    /** AdmissionCertificate: the pin of the service's key, its certificate and key (placeholders, not PEM that parses). */
    pin: `sha256:${"1".repeat(64)}`,
    certPem: "-----BEGIN CERTIFICATE-----\n# placeholder: the admission service's certificate is made at deploy time\n-----END CERTIFICATE-----\n",
    keyPem: "-----BEGIN PRIVATE KEY-----\n# placeholder\n-----END PRIVATE KEY-----\n",
    notAfter: "2031-01-01T00:00:00.000Z",
    /** BackupKey: a key pair made at `pulumi up` (an X25519 public key of zeros, its id, no private key). */
    publicKey: `MCowBQYDK2VuAyEA${"A".repeat(43)}=`,
    keyId: "0".repeat(16),
    privateKey: "(the backup key's private half, made at pulumi up)",
    retired: [],
};

const DEFAULT_CALLS: Record<string, (inputs: Record<string, unknown>) => Record<string, unknown>> = {
    "alicloud:ecs/getImages:getImages": (inputs) => {
        const id = `${String(inputs.nameRegex ?? "image").replace(/[^a-z0-9_]/gi, "")}_20G_alibase_20260101.vhd`;
        return { ids: [id], images: [{ id, imageId: id, name: id, osType: "linux" }] };
    },
    // The account the admission service checks instances against (src/components/cluster.ts).
    "alicloud:index/getCallerIdentity:getCallerIdentity": () => ({ accountId: "1234567890123456", arn: "acs:ram::1234567890123456:root", identityType: "Account", id: "1234567890123456" }),
};

function isSecret(value: unknown): value is { value: unknown } {
    return typeof value === "object" && value !== null && (value as Record<string, unknown>)[SIG_KEY] === SECRET_SIG;
}

/** Returns [redacted copy, revealed copy] and collects the paths of secret values. */
function splitSecrets(value: unknown, path: string, secretPaths: string[]): [unknown, unknown] {
    if (isSecret(value)) {
        secretPaths.push(path);
        return [REDACTED, splitSecrets(value.value, path, [])[1]];
    }
    if (Array.isArray(value)) {
        const pairs = value.map((v, i) => splitSecrets(v, `${path}[${i}]`, secretPaths));
        return [pairs.map((p) => p[0]), pairs.map((p) => p[1])];
    }
    if (typeof value === "object" && value !== null) {
        const red: Record<string, unknown> = {};
        const raw: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
            [red[k], raw[k]] = splitSecrets(v, path ? `${path}.${k}` : k, secretPaths);
        }
        return [red, raw];
    }
    return [value, value];
}

/** The URN an alias spec stands for (name/type/parent default to the resource's own). */
function aliasSpecUrn(monitor: { newUrn(parent: string, type: string, name: string): string }, req: { getType(): string; getName(): string; getParent(): string },
    alias: { getSpec(): { getName(): string; getType(): string; getParenturn(): string; getNoparent(): boolean } | undefined }): string {
    const spec = alias.getSpec();
    if (!spec) return "";
    const parent = spec.getNoparent() ? "" : spec.getParenturn() || req.getParent();
    return monitor.newUrn(parent, spec.getType() || req.getType(), spec.getName() || req.getName());
}

function nameFromUrn(urn: string): string | undefined {
    return urn ? urn.split("::").pop() : undefined;
}

/**
 * Installs recording mocks and the given config. Call before importing the program or components.
 * Each call starts a fresh recorder.
 */
export function installMocks(options: MockOptions = {}): Recorder {
    const resources: RecordedResource[] = [];
    const calls = { ...DEFAULT_CALLS, ...options.calls };
    const parents = new Map<string, string | undefined>();
    const urns = new Map<string, { urn: string; aliases: string[] }>();
    const secretOutputs = new Map<string, string[]>();
    const changeOptions = new Map<string, { ignoreChanges: string[]; replaceOnChanges: string[] }>();
    const dependencies = new Map<string, string[]>();

    const mocks: pulumi.runtime.Mocks = {
        newResource(args) {
            const secretInputs: string[] = [];
            const [inputs, rawInputs] = splitSecrets(args.inputs, "", secretInputs) as [Record<string, unknown>, Record<string, unknown>];
            if (typeof inputs.__provider === "string") {
                // The serialized provider code: large, and the same for every resource of a kind.
                inputs.__provider = `[serialized dynamic provider, ${inputs.__provider.length} bytes]`;
            }
            const key = `${args.type}::${args.name}`;
            const id = args.custom ? options.ids?.[key] ?? `${ID_PREFIX[args.type] ?? ""}${shortHash(key)}` : undefined;
            const identity = urns.get(key) ?? { urn: "", aliases: [] };
            const computed = computedState(args.type, args.name, args.inputs) as { metadata?: { name?: string } };
            resources.push({
                type: args.type, name: args.name, urn: identity.urn, aliases: identity.aliases, parent: parents.get(key), provider: args.provider || undefined,
                custom: args.custom ?? true, inputs, secretInputs, secretOutputs: secretOutputs.get(key) ?? [], dependencies: dependencies.get(key) ?? [], id, rawInputs,
                ...(changeOptions.get(key) ?? { ignoreChanges: [], replaceOnChanges: [] }),
                ...(computed.metadata?.name !== undefined ? { autoName: computed.metadata.name } : {}),
            });
            const placeholders = args.type === "pulumi-nodejs:dynamic:Resource" ? { ...DYNAMIC_PLACEHOLDERS, ...options.dynamicOutputs } : {};
            const stack = args.type === "pulumi:pulumi:StackReference" ? options.stackOutputs?.[String(args.inputs.name)] : undefined;
            if (stack) {
                // Another stack's outputs (a Cluster's handle); a stack not given has recorded nothing (computedState).
                return { id: String(args.inputs.name), state: { name: args.inputs.name, outputs: stack, secretOutputNames: Object.keys(stack) } };
            }
            // ControlPlaneVersion: what the cluster runs is read from it, never echoed from the config.
            const running = args.type === "pulumi-nodejs:dynamic:Resource" && typeof args.inputs.targetVersion === "string" && !("version" in args.inputs)
                ? { runningVersion: options.runningVersion ?? args.inputs.targetVersion, apiServerVersions: {}, kubeletVersions: {} } : {};
            return { id: id ?? "", state: { ...placeholders, ...args.inputs, ...running, ...computed } };
        },
        call(args) {
            const answer = calls[args.token];
            if (!answer) {
                throw new Error(`no mock answer for data source ${args.token}; add one in testing/mockRuntime.ts`);
            }
            return answer(args.inputs);
        },
    };

    // The public Mocks interface does not pass the parent; capture it from the register request.
    interface AliasSpec { getUrn(): string; hasSpec(): boolean; getSpec(): { getName(): string; getType(): string; getParenturn(): string; getNoparent(): boolean } | undefined }
    interface RegisterRequest {
        getType(): string; getName(): string; getParent(): string; getAliasesList?(): AliasSpec[]; getAliasurnsList?(): string[]; getAdditionalsecretoutputsList?(): string[];
        getIgnorechangesList?(): string[]; getReplaceonchangesList?(): string[];
        getDependenciesList?(): string[];
    }
    interface Monitor { registerResource(req: RegisterRequest, cb: unknown): Promise<void>; newUrn(parent: string, type: string, name: string): string }
    const step = options.step;
    if (step) {
        const answer = mocks.newResource.bind(mocks);
        mocks.newResource = async (args) => {
            if (args.custom !== false) await step(args.type, args.name);
            return answer(args);
        };
    }
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { MockMonitor } = require("@pulumi/pulumi/runtime/mocks") as { MockMonitor: new (m: pulumi.runtime.Mocks) => Monitor };
    const monitor = new MockMonitor(mocks);
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req, cb) => {
        const key = `${req.getType()}::${req.getName()}`;
        parents.set(key, nameFromUrn(req.getParent()));
        secretOutputs.set(key, req.getAdditionalsecretoutputsList?.() ?? []);
        changeOptions.set(key, { ignoreChanges: req.getIgnorechangesList?.() ?? [], replaceOnChanges: req.getReplaceonchangesList?.() ?? [] });
        dependencies.set(key, req.getDependenciesList?.() ?? []);
        const aliases = [
            ...(req.getAliasurnsList?.() ?? []),
            ...(req.getAliasesList?.() ?? []).map((a) => a.getUrn() || aliasSpecUrn(monitor, req, a)),
        ];
        urns.set(key, { urn: monitor.newUrn(req.getParent(), req.getType(), req.getName()), aliases });
        return register(req, cb);
    };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const settings = require("@pulumi/pulumi/runtime/settings");
    settings.setMockOptions(monitor, options.project ?? "alicloud-kubeadm", options.stack ?? "test", false);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const state = require("@pulumi/pulumi/runtime/state");
    Object.assign(state.getStore(), { supportsSecrets: true, supportsResourceReferences: true, supportsOutputValues: false, supportsAliasSpecs: true });

    const config: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.config ?? {})) {
        config[k] = typeof v === "string" ? v : JSON.stringify(v);
    }
    pulumi.runtime.setAllConfig(config);

    return {
        resources,
        ofType: (type) => resources.filter((r) => r.type === type),
        settle: () => settings.waitForRPCs() as Promise<void>,
    };
}

/** Resolves an Output's value under mocks (undefined while unknown). */
export function valueOf<T>(output: pulumi.Input<T>): Promise<T> {
    return new Promise((resolve) => pulumi.output(output).apply((v) => resolve(v as T)));
}
