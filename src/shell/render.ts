/**
 * The one module that renders what runs on an instance, at program time, from the static scripts beside it:
 *
 * - userdata and join scripts: `#!/bin/bash`, a header of shell-quoted `readonly AK_*='value'` parameters,
 *   then `prepare_node.sh` (shared functions) and one role script (`master_init.sh`, `attach_node.sh`);
 * - node operations (`ops/<name>.sh`, the table in src/rules/operations.ts): a header, `ops/lib.sh`, the
 *   parameter checks, the operation.
 *
 * A value that is only known per node or per run is a Cloud Assistant parameter. Cloud Assistant substitutes
 * `{{name}}` as text, whatever the invoker sends, so a saved command holds no `{{name}}` in code: its parameters
 * are its last lines, `# AK_X={{name}}` after a final `exit` that bash never reads past, which the command reads
 * from its own file as data and checks before it does anything ({@link savedParameters}, `parameters.sh`). The
 * static scripts are what shellcheck reads and what the sandbox runs; only headers differ. Dynamic providers
 * never read these files: they get rendered content as inputs, or the ids of saved commands.
 */
import * as fs from "fs";
import * as path from "path";
import * as zlib from "zlib";
import {
    CA_HASH_PATTERN, CERT_SAN_PATTERN, CERTIFICATE_KEY_PATTERN, checkTaints, defaultMirrors, DNS1123_LABEL_63, ENCRYPTION_KEY_PATTERN, formatProblem,
    formatTaint, HOST_PORT_PATTERN, HTTP_URL_PATTERN, IMAGE_SOURCE_PATTERN, isCidr, kubernetesVersionProblem, nodeLabelKeyProblem, imageReferenceProblem,
    isLabelValue, OPERATION_PARAMETERS, OPERATIONS, operationParameters, pauseImage, LEGACY_POOL_LABEL, POOL_LABEL, REGION_ID_PATTERN, SYSTEM_NAMESPACES, TOKEN_PATTERN, USERDATA_HARD_LIMIT_BYTES,
    type JoinOperation, type Mirrors, type OperationName, type ParameterName, type Problem, type Taint,
} from "../rules";

export { defaultMirrors, type Mirrors };

/** ECS accepts {@link USERDATA_HARD_LIMIT_BYTES} of userdata before Base64; rendering fails above it. */
export { USERDATA_HARD_LIMIT_BYTES };

/** Our own budget for userdata as delivered (packed: {@link packUserdata}): 20 KiB, well under ECS's 32 KiB. */
export const USERDATA_BUDGET_BYTES = 20 * 1024;

/**
 * The Kubernetes package repository for a minor version, without the `deb/` or `rpm/` suffix (the scripts add it).
 * pkgs.k8s.io uses `core:/stable:/v1.34/`; Alibaba's mirror uses `kubernetes-new/core/stable/v1.34/`.
 * @param packageMirror Base URL of the package mirror (see {@link Mirrors.packageMirror}).
 * @param kubernetesVersion Full version, e.g. `1.36.3`.
 */
export function kubernetesRepoUrl(packageMirror: string, kubernetesVersion: string): string {
    const minor = kubernetesVersion.split(".").slice(0, 2).join(".");
    const base = packageMirror.replace(/\/+$/, "");
    return isUpstream(base) ? `${base}/core:/stable:/v${minor}/` : `${base}/kubernetes-new/core/stable/v${minor}/`;
}

/**
 * The containerd RPM repository base (Docker's CentOS layout; the script adds `8/$basearch/stable` and `gpg`),
 * used on Alibaba Cloud Linux 3 only.
 * @param packageMirror Base URL of the package mirror; upstream sources map to `https://download.docker.com/linux/centos`.
 */
export function containerdRpmRepoUrl(packageMirror: string): string {
    const base = packageMirror.replace(/\/+$/, "");
    return isUpstream(base) ? "https://download.docker.com/linux/centos" : `${base}/docker-ce/linux/centos`;
}

function isUpstream(mirror: string): boolean {
    return /^https?:\/\/pkgs\.k8s\.io$/.test(mirror);
}

/** Parameters every node script needs. */
export interface NodeParams {
    /** Alibaba Cloud region id, e.g. `cn-hangzhou`; selects the default mirrors (the node reads its own region from metadata). Required. */
    region: string;
    /** Kubernetes version `x.y.z` (>= 1.31, kubeadm config API v1beta4), e.g. `1.36.3`. Required. */
    kubernetesVersion: string;
    /** Package mirror base URL. Default: {@link defaultMirrors}(region).packageMirror. */
    packageMirror?: string;
    /** Kubernetes package repository (deb/ and rpm/ below it). Default: {@link kubernetesRepoUrl}(packageMirror, kubernetesVersion). */
    kubernetesRepoUrl?: string;
    /** containerd RPM repository base for Alibaba Cloud Linux. Default: {@link containerdRpmRepoUrl}(packageMirror). */
    containerdRpmRepoUrl?: string;
    /** Image registry for control-plane and pause images. Default: {@link defaultMirrors}(region).imageRepository. */
    imageRepository?: string;
    /** containerd sandbox (pause) image. Default: `<imageRepository>/pause:<kubeadm's pause tag for the minor>` (src/rules/images.ts `pauseVersionFor`). */
    sandboxImage?: string;
    /** API endpoint `host:port` (NLB address or the single master's IP), e.g. `192.168.0.10:6443`. */
    apiEndpoint: string;
    /**
     * Images the node pre-pulls in parallel before joining (`AK_NODE_IMAGES`; src/rules/images.ts `nodeImages`), each
     * only when containerd does not have it: on a baked image none. Default none (the kubelet pulls them after the join).
     */
    nodeImages?: string[];
}

/** Parameters of the bake mode (`bake_node.sh`): the node's sources and images, no endpoint and no secret. */
export type BakeNodeParams = Omit<NodeParams, "apiEndpoint" | "nodeImages"> & {
    /** Images the kubelet pulls on every node (pause, kube-proxy, flannel and its CNI plugin), baked in. Required. */
    nodeImages: string[];
};

/** Parameters of master 0's `kubeadm init`. */
export interface MasterInitParams extends NodeParams {
    /** Pod CIDR (`networking.podSubnet`), e.g. `172.16.0.0/16`. */
    podCidr: string;
    /** Service CIDR (`networking.serviceSubnet`), e.g. `10.96.0.0/12`. */
    serviceCidr: string;
    /** Prefix length of each node's pod CIDR (kube-controller-manager `node-cidr-mask-size`), e.g. 25. */
    nodeCidrMaskSize: number;
    /** Extra API server certificate SANs (DNS names or IPs); the endpoint host is always included. Default: none. */
    certSANs?: string[];
    /**
     * Encrypt Secrets at rest with a key generated on master 0 (docs/security.md#encryption-at-rest). Every other
     * control-plane member then needs the masters' encryption config in its join: the saved join command receives it
     * whole over the secret channel (join-secrets); a script rendered here takes the one key
     * ({@link ControlPlaneJoinParams.encryptionKey}). Default false.
     */
    encryptSecrets?: boolean;
    /**
     * The CA hash the stack recorded for this cluster (`sha256:<hex>`), none when the cluster is new. With it the script
     * never runs `kubeadm init`: it joins the masters of {@link peerMasterIps} that answer with this CA, or stops and
     * names the restore command (docs/disaster-recovery.md). Default none.
     */
    recordedCaCertHash?: string;
    /** The private IPs of masters 1..n-1, which a re-created master 0 looks for its cluster at. Default none. */
    peerMasterIps?: string[];
}

/** A node taint (kubelet `--register-with-taints`). */
export type NodeTaint = Taint;

/**
 * A value the script gets at run time from a Cloud Assistant parameter: a line `# AK_X={{name}}` after the saved
 * command's final `exit`, filled in by its invocation and read as data by the script, which checks it before use
 * ({@link savedParameters}; src/cloud/operations.ts checks it before sending too).
 */
export interface ParameterRef {
    parameter: ParameterName;
}

/** A value given now, or a {@link ParameterRef}. */
export type Param<T> = T | ParameterRef;

function isRef(v: unknown): v is ParameterRef {
    return typeof v === "object" && v !== null && "parameter" in v;
}

/** The header value of a parameter reference. */
function placeholder(ref: ParameterRef): string {
    return `{{${ref.parameter}}}`;
}

/** Parameters of a worker's `kubeadm join` (pools and existing nodes). */
export interface AttachNodeParams extends NodeParams {
    /**
     * Pool name: joining through admission, the service labels the Node `node-restriction.kubernetes.io/alicloud-kubeadm-pool=<poolName>`
     * (from its own record of the instance's group); with a token, the node labels itself `alicloud-kubeadm/pool=<poolName>`.
     */
    poolName: string;
    /** Extra node labels (kubelet `--node-labels` rules: no `node-role.kubernetes.io/*`), or a parameter (`key=value,...`). Default: none. */
    labels?: Param<Record<string, string>>;
    /** Node taints, as objects or `key[=value]:Effect` strings, or a parameter (`key[=value]:Effect,...`). Default: none. */
    taints?: Param<Array<NodeTaint | string>>;
    /** Bootstrap token `[a-z0-9]{6}.[a-z0-9]{16}` (secret), or a parameter. Required unless `admission` is set (then forbidden). */
    token?: Param<string>;
    /**
     * Join by cloud identity: the node gets a single-use token from the admission service at these endpoints
     * (`<master private IP>:10443`, src/admission/); the script then carries no secret. Default: off (`token`).
     */
    admission?: AdmissionJoin;
    /** CA public key hash(es) `sha256:<hex>` pinned by the join (`caCertHashes`). */
    caCertHash: string | string[];
}

/** Where a node joining by cloud identity asks for its credential. */
export interface AdmissionJoin {
    /** `host:port` of each admission replica (every master's private IP and port 10443). */
    endpoints: string[];
    /** `sha256:<hex>` of the admission service's public key (AdmissionCertificate `pin`): the only TLS identity the node trusts there. */
    pin: string;
}

/** Parameters of a control-plane member's `kubeadm join --control-plane` (masters 1..n-1). */
export interface ControlPlaneJoinParams extends Omit<AttachNodeParams, "poolName"> {
    /** Certificate key from `kubeadm init phase upload-certs --upload-certs` on master 0: 64 hex digits (secret), or a parameter. */
    certificateKey: Param<string>;
    /** Value of the `alicloud-kubeadm/pool` label. Default `control-plane`. */
    poolName?: string;
    /**
     * Master 0's secrets-encryption key (32 bytes, Base64; secret), or a parameter: the member writes master 0's
     * one-key config with it. For a script rendered with literal secrets (the saved control-plane join command
     * receives the masters' whole config, every key, over the channel instead). Default none (no encryption config).
     */
    encryptionKey?: Param<string>;
}

/**
 * Renders the bake-mode script (`bake_node.sh`): the same preparation steps a stock boot runs, then the
 * `baked` marker and the clean-up for cloning. Carries no cluster secret (no token, no CA pin, no endpoint).
 * @param params Sources and images; throws an Error listing every invalid parameter.
 */
export function renderBakeNode(params: BakeNodeParams): string {
    const asNode: NodeParams = { ...params, apiEndpoint: "bake.invalid:1" };
    const problems = nodeProblems(asNode);
    check(problems, "nodeImages", params.nodeImages.length > 0, "must list the images to bake");
    throwIfAny("renderBakeNode", problems);
    return assemble("bake_node.sh", [
        ...nodeHeader(asNode).filter(([name]) => name !== "AK_API_ENDPOINT"),
        ["AK_IMAGE_REPOSITORY", imageRepositoryOf(asNode)],
        ["AK_BAKE", "1"],
    ]);
}

/** Header variables that carry secrets; {@link redactUserdata} blanks them. */
export const SECRET_PARAMETERS: readonly string[] = ["AK_BOOTSTRAP_TOKEN", "AK_CA_CERT_HASHES", "AK_RECORDED_CA_HASH", "AK_CERTIFICATE_KEY", "AK_ENCRYPTION_KEY"];

/**
 * Renders master 0's userdata (node preparation + `kubeadm init`).
 * @param params Cluster parameters; throws an Error listing every invalid parameter.
 * @returns The script text (`#!/bin/bash` ...), at most {@link USERDATA_HARD_LIMIT_BYTES}.
 */
export function renderMasterInit(params: MasterInitParams): string {
    const problems = nodeProblems(params);
    check(problems, "podCidr", isCidr(params.podCidr), "must be an IPv4 CIDR like 172.16.0.0/16");
    check(problems, "serviceCidr", isCidr(params.serviceCidr), "must be an IPv4 CIDR like 10.96.0.0/12");
    const podPrefix = isCidr(params.podCidr) ? Number(params.podCidr.split("/")[1]) : 0;
    check(problems, "nodeCidrMaskSize", Number.isInteger(params.nodeCidrMaskSize) && params.nodeCidrMaskSize > podPrefix && params.nodeCidrMaskSize <= 30,
        `must be an integer in ${podPrefix + 1}..30 (longer than the podCidr prefix)`);
    const endpointHost = (params.apiEndpoint ?? "").replace(/:\d+$/, "");
    (params.certSANs ?? []).forEach((san, i) => check(problems, `certSANs[${i}]`, CERT_SAN_PATTERN.test(san), "must be a DNS name or an IP address"));
    check(problems, "recordedCaCertHash", params.recordedCaCertHash === undefined || CA_HASH_PATTERN.test(params.recordedCaCertHash), "must be sha256:<64 hex digits>");
    (params.peerMasterIps ?? []).forEach((ip, i) => check(problems, `peerMasterIps[${i}]`, /^(\d{1,3}\.){3}\d{1,3}$/.test(ip), "must be an IPv4 address"));
    throwIfAny("renderMasterInit", problems);
    return assemble("master_init.sh", [
        ...nodeHeader(params),
        ["AK_ENCRYPT_SECRETS", params.encryptSecrets ? "1" : "0"],
        ["AK_IMAGE_REPOSITORY", imageRepositoryOf(params)],
        ["AK_POD_CIDR", params.podCidr],
        ["AK_SERVICE_CIDR", params.serviceCidr],
        ["AK_NODE_CIDR_MASK_SIZE", String(params.nodeCidrMaskSize)],
        ["AK_CERT_SANS", unique((params.certSANs ?? []).filter((s) => s !== endpointHost)).join(",")],
        ["AK_PSA_EXEMPT_NAMESPACES", SYSTEM_NAMESPACES.join(",")],
        ...(params.recordedCaCertHash ? [["AK_RECORDED_CA_HASH", params.recordedCaCertHash] as [string, string]] : []),
        ...(params.peerMasterIps?.length ? [["AK_PEER_MASTER_IPS", params.peerMasterIps.join(",")] as [string, string]] : []),
    ], params.recordedCaCertHash ? [...MASTER_SHARED, "master_guard.sh"] : MASTER_SHARED);
}

/** What a master's script carries besides prepare_node.sh: the control-plane hardening and policy (docs/security.md). */
const MASTER_SHARED = ["control_plane.sh", "control_plane_policy.sh"];

/**
 * Renders a worker's userdata (node preparation + `kubeadm join`). The result carries the bootstrap token:
 * wrap it in `pulumi.secret`, and use {@link redactUserdata} before writing it anywhere.
 * @param params Join parameters; throws an Error listing every invalid parameter (never echoing secrets).
 * @returns The script text (`#!/bin/bash` ...), at most {@link USERDATA_HARD_LIMIT_BYTES}.
 */
export function renderAttachNode(params: AttachNodeParams): string {
    return assemble("attach_node.sh", attachHeader("renderAttachNode", params, []), params.admission ? ["admission_client.sh"] : []);
}

/**
 * Renders the join script of a control-plane member: the attach script with `AK_CERTIFICATE_KEY`, so the
 * JoinConfiguration gets `controlPlane.certificateKey` (kubeadm then downloads the control-plane certificates).
 * Runs over Cloud Assistant; the result carries the token and the certificate key: keep it secret.
 * @param params Join parameters plus the certificate key; throws an Error listing every invalid parameter.
 */
export function renderControlPlaneJoin(params: ControlPlaneJoinParams): string {
    const problems: Problem[] = [];
    const key = params.certificateKey;
    check(problems, "certificateKey", isRef(key) || CERTIFICATE_KEY_PATTERN.test(key ?? ""), "must be 64 lower-case hex digits");
    check(problems, "certificateKey", isRef(key) === isRef(params.token), "must be a parameter exactly when the token is one (both travel sealed)");
    const encryptionKey = params.encryptionKey;
    check(problems, "encryptionKey", encryptionKey === undefined || isRef(encryptionKey) || ENCRYPTION_KEY_PATTERN.test(encryptionKey),
        "must be 32 bytes in Base64 (master 0's encryption key)");
    const header = attachHeader("renderControlPlaneJoin", { ...params, poolName: params.poolName ?? "control-plane" }, problems);
    const encryption: Array<[string, string]> = encryptionKey === undefined ? [] : [["AK_ENCRYPTION_KEY", isRef(encryptionKey) ? placeholder(encryptionKey) : encryptionKey]];
    // A saved join command gets the certificate key with the token over the channel (AK_CHANNEL), never as a parameter.
    const certificate: Array<[string, string]> = isRef(key) ? [] : [["AK_CERTIFICATE_KEY", key]];
    return assemble("attach_node.sh", [...header, ...certificate, ...encryption, ["AK_PSA_EXEMPT_NAMESPACES", SYSTEM_NAMESPACES.join(",")]], MASTER_SHARED);
}

/** Validated header of attach_node.sh; `problems` carries the caller's own findings. */
function attachHeader(fn: string, params: AttachNodeParams, problems: Problem[]): Array<[string, string]> {
    problems.push(...nodeProblems(params));
    check(problems, "poolName", DNS1123_LABEL_63.test(params.poolName ?? ""), "must be a DNS label (lower-case letters, digits, '-')");
    const labels = params.labels ?? {};
    for (const [key, value] of isRef(labels) ? [] : Object.entries(labels)) {
        const keyProblem = nodeLabelKeyProblem(key);
        check(problems, `labels.${key}`, !keyProblem, keyProblem ?? "");
        check(problems, `labels.${key}`, key !== POOL_LABEL && key !== LEGACY_POOL_LABEL, "is set from poolName; remove it");
        check(problems, `labels.${key}`, isLabelValue(value), "value must be empty or up to 63 of [A-Za-z0-9._-], starting and ending alphanumeric");
    }
    const taints = params.taints ?? [];
    const taintText = isRef(taints) ? placeholder(taints)
        : checkTaints(taints, (path, reason) => problems.push({ path: `taints.${path}`, reason })).map(formatTaint).join(",");
    const token = params.token;
    const admission = admissionProblems(params, problems);
    if (!admission) check(problems, "token", isRef(token) || TOKEN_PATTERN.test(token ?? ""), "must be a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}");
    const hashes = ([] as string[]).concat(params.caCertHash ?? []);
    check(problems, "caCertHash", hashes.length > 0 && hashes.every((h) => CA_HASH_PATTERN.test(h)), "must be sha256:<64 lower-case hex digits> (one or more)");
    throwIfAny(fn, problems);
    return [
        ...nodeHeader(params),
        ["AK_POOL_NAME", params.poolName],
        ["AK_NODE_LABELS", isRef(labels) ? placeholder(labels) : Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(",")],
        ["AK_NODE_TAINTS", taintText],
        // Joining by cloud identity: endpoints instead of a token (no token variable at all). A saved join command
        // (token given as a parameter) never carries the token: the channel-receive operation left it on the
        // instance, received sealed to its one-use key; AK_CHANNEL names it (docs/security.md).
        ...(admission ? [["AK_ADMISSION_ENDPOINTS", admission.endpoints.join(",")], ["AK_ADMISSION_PIN", admission.pin]] as Array<[string, string]>
            : isRef(token) ? [["AK_CHANNEL", placeholder({ parameter: "channel" })] as [string, string]] : [["AK_BOOTSTRAP_TOKEN", token!] as [string, string]]),
        ["AK_CA_CERT_HASHES", hashes.join(",")],
    ];
}

/** Checks `admission` (exclusive with `token`); returns it when set. */
function admissionProblems(params: AttachNodeParams, problems: Problem[]): AdmissionJoin | undefined {
    const a = params.admission;
    if (a === undefined) return undefined;
    if (params.token !== undefined) problems.push({ path: "token", reason: "must not be set with admission (the node gets its token from the admission service)" });
    const endpoints = Array.isArray(a?.endpoints) ? a.endpoints : [];
    check(problems, "admission.endpoints", endpoints.length > 0 && endpoints.every((e) => HOST_PORT_PATTERN.test(e)),
        "must be one or more host:port (each master's private IP and the admission port 10443)");
    check(problems, "admission.pin", CA_HASH_PATTERN.test(a?.pin ?? ""), "must be sha256:<64 lower-case hex digits> (the admission service's key, AdmissionCertificate pin)");
    return a;
}

/**
 * Replaces the values of the secret header variables ({@link SECRET_PARAMETERS}) with `<redacted>`, for
 * synth output, logs and golden files.
 * @param script Rendered userdata.
 */
export function redactUserdata(script: string): string {
    return script.replace(/^readonly (AK_[A-Z0-9_]+)='(?:[^']|'\\'')*'$/gm, (line, name: string) =>
        SECRET_PARAMETERS.includes(name) ? `readonly ${name}='<redacted>'` : line);
}

/**
 * Quotes a value for a POSIX shell: single quotes, each embedded `'` written as `'\''`.
 * @param value Any string without NUL characters.
 */
export function shellQuote(value: string): string {
    if (value.includes("\0")) throw new Error("shellQuote: a shell value cannot contain NUL characters");
    return `'${value.replace(/'/g, `'\\''`)}'`;
}

function imageRepositoryOf(p: NodeParams): string {
    return (p.imageRepository ?? defaultMirrors(p.region).imageRepository).replace(/\/+$/, "");
}

function nodeHeader(p: NodeParams): Array<[string, string]> {
    const packageMirror = p.packageMirror ?? defaultMirrors(p.region).packageMirror;
    return [
        ["AK_KUBERNETES_VERSION", p.kubernetesVersion],
        ["AK_K8S_REPO_URL", p.kubernetesRepoUrl ?? kubernetesRepoUrl(packageMirror, p.kubernetesVersion)],
        ["AK_CONTAINERD_RPM_REPO_URL", p.containerdRpmRepoUrl ?? containerdRpmRepoUrl(packageMirror)],
        ["AK_SANDBOX_IMAGE", p.sandboxImage ?? pauseImage(imageRepositoryOf(p), p.kubernetesVersion)],
        ["AK_API_ENDPOINT", p.apiEndpoint],
        ...(p.nodeImages?.length ? [["AK_NODE_IMAGES", p.nodeImages.join(",")] as [string, string]] : []),
    ];
}

function nodeProblems(p: NodeParams): Problem[] {
    const problems: Problem[] = [];
    for (const [key, value] of Object.entries(p)) {
        if (typeof value === "string" && value.includes("\0")) problems.push({ path: key, reason: "must not contain NUL characters" });
    }
    check(problems, "region", REGION_ID_PATTERN.test(p.region ?? ""), "must be a region id like cn-hangzhou");
    const version = kubernetesVersionProblem(p.kubernetesVersion ?? "");
    check(problems, "kubernetesVersion", !version, version ?? "");
    const endpoint = HOST_PORT_PATTERN.exec(p.apiEndpoint ?? "");
    check(problems, "apiEndpoint", !!endpoint && Number(endpoint[2]) >= 1 && Number(endpoint[2]) <= 65535, "must be host:port, e.g. 192.168.0.10:6443");
    for (const key of ["packageMirror", "kubernetesRepoUrl", "containerdRpmRepoUrl"] as const) {
        const value = p[key];
        if (value !== undefined) check(problems, key, HTTP_URL_PATTERN.test(value), "must be an http(s) URL");
    }
    for (const key of ["imageRepository", "sandboxImage"] as const) {
        const value = p[key];
        if (value !== undefined) check(problems, key, IMAGE_SOURCE_PATTERN.test(value), "must be an image reference like registry.k8s.io");
    }
    (p.nodeImages ?? []).forEach((image, i) => {
        const reason = imageReferenceProblem(image);
        check(problems, `nodeImages[${i}]`, !reason, reason ?? "");
    });
    return problems;
}

function check(problems: Problem[], name: string, ok: boolean, reason: string): void {
    if (!ok) problems.push({ path: name, reason });
}

function throwIfAny(fn: string, problems: readonly Problem[]): void {
    if (problems.length > 0) throw new Error(`${fn}: invalid parameters:\n  ${problems.map(formatProblem).join("\n  ")}`);
}

function unique(values: string[]): string[] {
    return [...new Set(values)];
}

/** Directory holding the static scripts: next to this file (under ts-node, and in the compiled package). */
function scriptDir(): string {
    if (!fs.existsSync(path.join(__dirname, "prepare_node.sh"))) throw new Error(`node scripts not found in ${__dirname}`);
    return __dirname;
}

/**
 * A static script as it goes into userdata: without its shebang and full-line comments (the repository copy
 * is the documented one; ECS userdata is size-limited). shellcheck directives stay.
 */
/** A static script of src/shell as it is rendered into what runs (comments and blank lines outside heredocs dropped). */
export function shellBody(file: string): string {
    return body(file);
}

function body(file: string): string {
    let heredocEnd: string | undefined;
    return fs.readFileSync(path.join(scriptDir(), ...file.split("/")), "utf8")
        .split("\n")
        .filter((line) => {
            if (heredocEnd !== undefined) {
                if (line === heredocEnd) heredocEnd = undefined;
                return true; // a heredoc's text is data (e.g. a script the node installs, with its #! line)
            }
            if (/^\s*#/.test(line)) return /^\s*# shellcheck /.test(line);
            heredocEnd = /<<-?\s*['"]?([A-Za-z_]+)['"]?/.exec(line)?.[1];
            return true;
        })
        .join("\n")
        .replace(/\n{3,}/g, "\n\n");
}

/**
 * The line of a role script that calls `ak_admission_token` is kept only when the node joins through admission
 * (src/shell/admission_client.sh is then included); other scripts leave it out, so the saved join commands
 * (within a few bytes of their limit) do not grow.
 */
function admissionBlocks(text: string, admission: boolean): string {
    return admission ? text : text.split("\n").filter((line) => !/\bak_admission_token\b/.test(line)).join("\n");
}

/**
 * prepare_node.sh without its empty `ak_pull_images` step, which node_images.sh defines for real (nodes that list
 * their images get it: the userdata budget keeps it out of the others).
 */
function prepareWithoutPullStub(): string {
    const text = body("prepare_node.sh");
    const stub = /^ak_pull_images\(\) \{\n {2}:\n\}\n/m;
    if (!stub.test(text)) throw new Error("prepare_node.sh has no empty ak_pull_images step for node_images.sh to replace");
    return text.replace(stub, "");
}

function assemble(roleScript: string, header: Array<[string, string]>, shared: readonly string[] = []): string {
    const withImages = header.some(([name]) => name === "AK_NODE_IMAGES");
    // `{{name}}` values are Cloud Assistant parameters: read from the lines after the final `exit`, never in the header.
    const refs = header.flatMap(([variable, value]) => {
        const name = /^\{\{([A-Za-z]+)\}\}$/.exec(value)?.[1] as ParameterName | undefined;
        if (name === undefined) return [];
        if (OPERATION_PARAMETERS[name]?.variable !== variable) throw new Error(`render: ${variable} cannot be parameter ${name}`);
        return [name];
    });
    const parameters = savedParameters(refs);
    const lines = header.filter(([, value]) => !/^\{\{[A-Za-z]+\}\}$/.test(value)).map(([name, value]) => `readonly ${name}=${shellQuote(value)}`);
    const script = [
        "#!/bin/bash",
        `# alicloud-kubeadm userdata (${roleScript}), rendered by src/shell/render.ts. Parameters:`,
        ...lines,
        "",
        ...parameters.reader,
        "# ---- src/shell/prepare_node.sh ----",
        ...(withImages ? [prepareWithoutPullStub(), "# ---- src/shell/node_images.sh ----", body("node_images.sh")] : [body("prepare_node.sh")]),
        ...shared.flatMap((file) => [`# ---- src/shell/${file} ----`, body(file)]),
        `# ---- src/shell/${roleScript} ----`,
        admissionBlocks(body(roleScript), shared.includes("admission_client.sh")),
        ...parameters.trailer,
    ].join("\n");
    const bytes = Buffer.byteLength(script, "utf8");
    if (bytes > USERDATA_HARD_LIMIT_BYTES) {
        throw new Error(`rendered ${roleScript} is ${bytes} bytes; ECS accepts at most ${USERDATA_HARD_LIMIT_BYTES} before Base64`);
    }
    return script;
}

/** The line after a saved command's final `exit` that its parameter lines follow (src/shell/parameters.sh). */
export const PARAMETER_MARKER = "# alicloud-kubeadm parameters: data, never run";

/**
 * How a saved command gets its Cloud Assistant parameters without ever parsing them as code: `reader` (the lines
 * to put before anything else runs: `parameters.sh` and its call, which checks each value against its pattern and
 * sets the variable readonly) and `trailer` (the command's last lines: `exit`, {@link PARAMETER_MARKER}, then
 * `# AK_X={{name}}` per parameter (comments to shellcheck), where Cloud Assistant puts the values). Both empty without parameters.
 */
export function savedParameters(names: readonly ParameterName[]): { reader: string[]; trailer: string[] } {
    if (names.length === 0) return { reader: [], trailer: [] };
    const specs = names.map((n) => OPERATION_PARAMETERS[n]);
    return {
        reader: [
            "# ---- src/shell/parameters.sh ----",
            body("parameters.sh"),
            `ak_parameters ${specs.map((p) => `${p.variable} ${shellQuote(p.pattern.source)} ${shellQuote(p.what)}`).join(" ")}`,
        ],
        trailer: ["# shellcheck disable=SC2317 # reached when the script before it falls through", "exit", PARAMETER_MARKER,
            ...names.map((n) => `# ${OPERATION_PARAMETERS[n].variable}={{${n}}}`), ""],
    };
}

/** A script split before its parameter lines (`exit`, the marker and what follows, kept as they are), if it has them. */
function splitTrailer(script: string): { code: string; trailer: string } {
    const at = script.indexOf(`\nexit\n${PARAMETER_MARKER}\n`);
    return at < 0 ? { code: script, trailer: "" } : { code: script.slice(0, at + 1), trailer: script.slice(at + 1) };
}

/** What a saved command's content may be after Base64 (docs/upstream.md#cas-content-limit: the sources say 18 or 24 KB; the smaller holds). */
export const SAVED_COMMAND_LIMIT_BASE64 = 18 * 1024;

/**
 * A script as it goes into a saved command: without blank lines, comments and leading indentation (outside
 * heredocs, whose text is data; the `#!` line and shellcheck directives stay), so the attach script fits the
 * 18 KB a saved command may hold. Bash reads it the same: the scripts have no multi-line quoted strings.
 */
export function compactShell(script: string): string {
    const { code, trailer } = splitTrailer(script);
    const out: string[] = [];
    let heredocEnd: string | undefined;
    for (const line of code.split("\n")) {
        if (heredocEnd !== undefined) {
            out.push(line);
            if (line === heredocEnd) heredocEnd = undefined;
            continue;
        }
        const trimmed = line.replace(/^\s+/, "");
        // An operation's first comment names it in Cloud Assistant's records: it stays too.
        const keep = (out.length === 0 && trimmed.startsWith("#!")) || trimmed.startsWith("# shellcheck ") || trimmed.startsWith("# alicloud-kubeadm operation: ");
        if (trimmed === "" || (trimmed.startsWith("#") && !keep)) continue;
        // Each static script starts with the same `set -euo pipefail`: once is enough.
        if (trimmed === "set -euo pipefail" && out.includes(trimmed)) continue;
        // A trailing ` # comment` goes too when nothing before it could quote or escape it (and a directive's note).
        out.push(trimmed.startsWith("# shellcheck ") ? trimmed.replace(/^(# shellcheck \S+)\s+#.*$/, "$1")
            : trimmed.replace(/^([^'"`#$\\]*?)\s+#\s.*$/, "$1"));
        heredocEnd = /<<-?\s*['"]?([A-Za-z_]+)['"]?/.exec(trimmed)?.[1];
    }
    return out.join("\n") + "\n" + trailer;
}

/**
 * A compacted node script packed for a saved command: the `#!` line and the `readonly AK_*` header stay as they are
 * (Cloud Assistant fills their `{{parameters}}` in), the rest travels gzip-compressed in Base64 and is unpacked and
 * `eval`ed on the node (base64 and gzip are on every supported image). A failed unpack exits 1 instead of running
 * nothing. The scripts' own text, shellcheck and sandbox runs are unchanged; only what Cloud Assistant stores shrinks.
 */
export function packShell(script: string): string {
    const { code, trailer } = splitTrailer(script);
    const lines = code.replace(/\n$/, "").split("\n");
    let head = 0;
    // The `#!` line, an operation's naming comment (Cloud Assistant's records show it) and the `readonly AK_*` header stay.
    while (head < lines.length && (head === 0 ? lines[0].startsWith("#!") : /^(readonly AK_[A-Z0-9_]+=|# alicloud-kubeadm operation: )/.test(lines[head]))) head++;
    const packed = zlib.gzipSync(Buffer.from(lines.slice(head).join("\n") + "\n", "utf8"), { level: 9 }).toString("base64").match(/.{1,76}/g) ?? [];
    return [
        lines[0],
        "# shellcheck disable=SC2034 # the header is read by the packed part",
        ...lines.slice(1, head),
        "ak_packed=$(base64 -d <<'AK_PACKED' | gzip -dc",
        ...packed,
        "AK_PACKED",
        ") || { echo 'alicloud-kubeadm: cannot unpack this script (base64, gzip)' >&2; exit 1; }",
        "eval \"$ak_packed\"",
        "",
    ].join("\n") + trailer;
}

/**
 * A node script as userdata carries it (a pool's scaling configuration, an existing instance in `auto` mode,
 * master 0): compacted and packed ({@link packShell}), so the readable `readonly AK_*` header (pool, versions,
 * endpoints, CA pin: nothing secret through admission) stays in the clear and the whole script takes about half
 * the bytes.
 * Throws when even that exceeds {@link USERDATA_BUDGET_BYTES}, naming what to shorten.
 */
export function packUserdata(script: string, what: string): string {
    const packed = packShell(compactShell(script));
    const bytes = Buffer.byteLength(packed, "utf8");
    if (bytes > USERDATA_BUDGET_BYTES) {
        throw new Error(`${what}: its userdata is ${bytes} bytes packed, over the ${USERDATA_BUDGET_BYTES}-byte budget; shorten its labels, taints or image list`);
    }
    return packed;
}

/** Throws unless `script` fits a saved command. */
function fitSavedCommand(what: string, script: string): string {
    const size = Buffer.byteLength(script, "utf8");
    const b64 = 4 * Math.ceil(size / 3);
    if (b64 > SAVED_COMMAND_LIMIT_BASE64) {
        throw new Error(`${what} is ${b64} bytes after Base64, over the ${SAVED_COMMAND_LIMIT_BASE64} a saved Cloud Assistant command may hold`);
    }
    return script;
}

/**
 * The saved attach command of existing nodes (`mode: manual`): the attach script, compacted and packed
 * ({@link packShell}), with the node's labels and taints as the parameters `labels` and `taints`, and the
 * `channel` on which the instance received the token sealed (channel-receive): neither the command nor its
 * parameters hold a secret.
 */
export function renderAttachCommand(params: Omit<AttachNodeParams, "labels" | "taints" | "token">): string {
    return fitSavedCommand("the attach command", packShell(compactShell(renderAttachNode({
        ...params, labels: { parameter: "labels" }, taints: { parameter: "taints" }, token: { parameter: "channel" },
    }))));
}

/**
 * The saved control-plane join command: the attach script, compacted and packed, whose token and certificate
 * key the instance received sealed on the channel named by the parameter `channel` (channel-receive).
 */
export function renderControlPlaneJoinCommand(params: Omit<ControlPlaneJoinParams, "token" | "certificateKey">): string {
    return fitSavedCommand("the control-plane join command", packShell(compactShell(renderControlPlaneJoin({
        ...params, token: { parameter: "channel" }, certificateKey: { parameter: "channel" },
    }))));
}

/** Parameters of the saved upgrade command: the target version and the node's package sources, no endpoint and no secret. */
export type UpgradeParams = Omit<NodeParams, "apiEndpoint" | "nodeImages">;

/**
 * The saved upgrade command (src/shell/upgrade.sh): one step of moving a master or a node to `kubernetesVersion`,
 * the step as the parameter `step`, the packages through prepare_node.sh's install path from the target minor's
 * repository. Compacted and packed like the join commands; it carries no secret.
 */
export function renderUpgradeCommand(params: UpgradeParams): string {
    const asNode: NodeParams = { ...params, apiEndpoint: "upgrade.invalid:1" };
    throwIfAny("renderUpgradeCommand", nodeProblems(asNode));
    return fitSavedCommand("the upgrade command", packShell(compactShell(assemble("upgrade.sh", [
        ...nodeHeader(asNode).filter(([name]) => name !== "AK_API_ENDPOINT"),
        ["AK_UPGRADE_STEP", "{{upgradeStep}}"],
    ]))));
}

/** The value standing for "filled in at run time" in {@link renderOperation}. */
const TEMPLATE = "\u0000template";

/** The shared scripts an operation calls besides ops/lib.sh (and channel.sh, which goes to every one that uses it). */
const OPERATION_LIBRARIES: Partial<Record<OperationName, readonly string[]>> = {
    "etcd-restore": ["etcd_restore.sh", "control_plane_policy.sh"],
    "list-nodes": ["kubectl_template.sh"],
    "pod-owners": ["kubectl_template.sh"],
    "cluster-validate": ["kubectl_template.sh"],
    "outdated-taint": ["kubectl_template.sh"],
    "upgrade-status": ["kubectl_template.sh"],
    "static-pods": ["kubectl_template.sh"],
    "doctor-nodes": ["kubectl_template.sh"],
    "doctor-join": ["kubectl_template.sh"],
};

/**
 * A node operation (src/shell/ops/<op>.sh, the table in src/rules/operations.ts): header, `ops/lib.sh`, the
 * checks of its parameters, the operation. A saved operation renders its parameters as `{{name}}`; a
 * one-off one (RunCommand) takes its values now, checked against the same patterns.
 */
export function renderOperation(op: Exclude<OperationName, JoinOperation>, values: Partial<Record<ParameterName, string>> = {}): string {
    const spec = OPERATIONS[op];
    const names: readonly ParameterName[] = spec.parameters;
    // A one-off operation may leave parameters as `{{name}}` for the provider to fill at run time (fillOperation),
    // e.g. the channel key it makes for that one call.
    const given = spec.saved ? {} : operationParameters(op, { ...Object.fromEntries(names.map((n) => [n, TEMPLATE])), ...values }, true);
    // A saved operation reads its parameters as data from its last lines (savedParameters); a one-off one gets them
    // quoted into its header now or by fillOperation, checked on both sides.
    const header = spec.saved ? [] : names.map((name) => {
        const p = OPERATION_PARAMETERS[name];
        return `readonly ${p.variable}=${given[name] === TEMPLATE ? `'{{${name}}}'` : shellQuote(given[name])}`;
    });
    const checks = spec.saved ? [] : names.map((name) => {
        const p = OPERATION_PARAMETERS[name];
        return `ak_param ${p.variable} ${shellQuote(p.pattern.source)} ${shellQuote(p.what)}`;
    });
    const parameters = savedParameters(spec.saved ? names : []);
    const opBody = body(`ops/${op}.sh`);
    const script = [
        "#!/bin/bash",
        `# alicloud-kubeadm operation: ${op} (${spec.description}), rendered by src/shell/render.ts.${names.length ? (spec.saved ? " Parameters: its last lines." : " Parameters:") : ""}`,
        ...header,
        "# ---- src/shell/ops/lib.sh ----",
        body("ops/lib.sh"),
        ...parameters.reader,
        // The secret channel's functions only in the operations that seal or open a secret.
        ...(/\bak_(seal|unseal|channel_)/.test(opBody) ? ["# ---- src/shell/channel.sh ----", body("channel.sh")] : []),
        ...(OPERATION_LIBRARIES[op] ?? []).flatMap((file) => [`# ---- src/shell/${file} ----`, body(file)]),
        ...checks,
        `# ---- src/shell/ops/${op}.sh ----`,
        opBody,
        ...parameters.trailer,
    ].join("\n");
    return spec.saved ? fitSavedCommand(`operation ${op}`, script) : script;
}
