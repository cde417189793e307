// Admission: the service that lets nodes join by cloud identity instead of a token in userdata
// (src/admission/, docs/admission.md). On every master (a DaemonSet on the control-plane nodes, host network,
// port 10443, so it survives the loss of a minority of masters and sees the nodes' real source addresses),
// running a pinned public Node.js image with the service's compiled code from an immutable ConfigMap (a new one, with a
// new name, whenever its files change). It serves TLS with
// its own key and a certificate for the masters' addresses (AdmissionCertificate, a Secret here), which a node
// verifies from the pin of its userdata; nothing of the masters' PKI is mounted. RBAC: what the service needs
// (claims, tokens, CSR approval for the kubelet client signer, the pool label on the Nodes it admitted, events),
// and what an admitted token needs for `kubeadm join`. The pools whose members may join are registrations (a
// ConfigMap each) the service re-reads while it runs: a pool attached later adds its own.
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { ADMITTED_GROUP, KUBELET_CLIENT_SIGNER, TOKEN_LABEL } from "../admission/approver";
import { ADMISSION_NAME, KEY_SECRET, NAMESPACE, NODE_LEASE_NAMESPACE, POOL_REGISTRATION_LABEL, poolRegistrationName } from "../admission/kube";
import { DEFAULT_READMIT_AFTER_SECONDS, POOL_LABEL, POOL_PENDING_TAINT } from "../admission/nodes";
import { ADMISSION_PORT, type ServiceConfig } from "../admission/server";
import { applyObjects, CONTROL_PLANE_LABEL, kubeObject, resourceName, type KubeObject } from "./kube";
import { DEFAULT_ADMISSION_IMAGE } from "../rules";

export { ADMISSION_PORT, ADMITTED_GROUP };

/** Public Node.js image the service runs in, pinned by digest (src/rules/images.ts). Mirror it and set `images.admission` in China regions. */
export { DEFAULT_ADMISSION_IMAGE };
/** The service's modules, in dependency order (each is plain CommonJS using Node built-ins only). */
export const ADMISSION_MODULES = ["der", "pkcs7", "challenge", "nodes", "admit", "approver", "cloud", "kube", "server"] as const;
/**
 * Modules of src/cloud the service uses, shipped beside its own (Node built-ins only, no imports): the process's
 * pacer of cloud calls. The service requires them as `../cloud/<name>`; in the bundle, as `./<name>`.
 */
export const ADMISSION_SHARED_MODULES = ["pacer"] as const;
const MOUNT = "/opt/alicloud-kubeadm-admission";
/** Where the service's own certificate and key are mounted (Secret {@link TLS_SECRET}). */
const TLS_MOUNT = "/etc/alicloud-kubeadm-admission/tls";
/** The Secret holding the service's certificate and key (type kubernetes.io/tls). */
export const TLS_SECRET = `${ADMISSION_NAME}-tls`;
/** The user the service runs as (nobody): it reads its own key from a Secret, nothing of the host. */
const SERVICE_UID = 65534;

/** Default lifetimes: a challenge lives 2 minutes, an admission token 15 minutes (kubeadm join takes about one). */
export const DEFAULT_CHALLENGE_TTL_SECONDS = 120;
export const DEFAULT_TOKEN_TTL_SECONDS = 900;

/**
 * The compiled service: `<module>.js` for each of {@link ADMISSION_MODULES}. From the compiled package the
 * `.js` files beside src/admission are used; from TypeScript sources (ts-node) they are transpiled here.
 */
export function admissionBundle(): Record<string, string> {
    const out: Record<string, string> = {};
    const compiled = (dir: string, m: string): string => {
        const js = path.join(dir, `${m}.js`);
        if (fs.existsSync(js)) return fs.readFileSync(js, "utf8").replace(/\n\/\/# sourceMappingURL=.*$/, "\n");
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const ts = require("typescript") as typeof import("typescript");
        return ts.transpileModule(fs.readFileSync(path.join(dir, `${m}.ts`), "utf8"), {
            compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, strict: true },
        }).outputText;
    };
    for (const m of ADMISSION_SHARED_MODULES) out[`${m}.js`] = compiled(path.join(__dirname, "..", "cloud"), m);
    for (const m of ADMISSION_MODULES) {
        let text = compiled(path.join(__dirname, "..", "admission"), m);
        for (const shared of ADMISSION_SHARED_MODULES) text = text.split(`require("../cloud/${shared}")`).join(`require("./${shared}")`);
        out[`${m}.js`] = text;
    }
    return out;
}

export interface AdmissionArgs {
    /** Cluster name (labels). Required. */
    clusterName: string;
    /** Region id of the cluster. Required. */
    region: string;
    /** The account id instances must belong to (`alicloud.getCallerIdentity().accountId`). Required. */
    accountId: pulumi.Input<string>;
    /**
     * The cluster's pools: each gets a registration the service reads (a pool attached later registers itself with
     * {@link admissionPoolRegistration}). Required (may be empty).
     */
    pools: Array<{
        /** Pool name (its nodes' pool label). Required. */
        name: string;
        /** The pool's ESS scaling group. Required. */
        scalingGroupId: pulumi.Input<string>;
    }>;
    /** The service's own certificate and key (an AdmissionCertificate's outputs; the key a secret). Required. */
    tls: {
        /** PEM certificate for the masters' addresses. Required. */
        certPem: pulumi.Input<string>;
        /** PEM private key (secret). Required. */
        keyPem: pulumi.Input<string>;
    };
    /** How stale an existing Node's heartbeat must be before its instance may be admitted again, seconds. Default {@link DEFAULT_READMIT_AFTER_SECONDS}. */
    readmitAfterSeconds?: number;
    /** Existing nodes: instance id → pool label value. Default none. */
    existingNodes?: Record<string, string>;
    /** PEM of the instance identity signing certificate(s) (Alibaba's; docs/admission.md). Required. */
    identityCertificate: string;
    /** `key=value`: instances with this tag may join through the manual one-line path. Default: off. */
    joinTag?: string;
    /** The manual attach script served at /attach.sh (no secret in it). Default: none (path off). */
    attachScript?: pulumi.Input<string>;
    /** Node.js image. Default {@link DEFAULT_ADMISSION_IMAGE}. */
    image?: string;
    /** Challenge lifetime, seconds. Default {@link DEFAULT_CHALLENGE_TTL_SECONDS}. */
    challengeTtlSeconds?: number;
    /** Admission token lifetime, seconds. Default {@link DEFAULT_TOKEN_TTL_SECONDS}. */
    tokenTtlSeconds?: number;
    /** Accept identity signatures with a SHA-1 digest (docs/security.md#sha-1). Default true. */
    allowSha1?: boolean;
}

/** The service's RBAC: its own role and the admitted nodes' (what `kubeadm join` and the kubelet's TLS bootstrap need). */
/** The service's ServiceAccount as the API server names it. */
const SERVICE_ACCOUNT_USER = `system:serviceaccount:${NAMESPACE}:${ADMISSION_NAME}`;

/**
 * A ValidatingAdmissionPolicy on the service's own Secret writes (RBAC cannot restrict a create by type or
 * content): it may create a bootstrap token only as `bootstrap-token-<id>`, labelled as an admission token,
 * in the admitted group alone (never kubeadm's auto-approved group), and its key Secret; delete only those;
 * update none. Anything else — a service-account-token Secret for a controller, a token in another group —
 * is refused.
 */
export function secretPolicyObjects(labels: Record<string, string>): KubeObject[] {
    const name = `${ADMISSION_NAME}-secrets`;
    const ours = (o: string) => `(${o}.type == 'bootstrap.kubernetes.io/token' && ${o}.metadata.name.startsWith('bootstrap-token-') && ` +
        `has(${o}.metadata.labels) && '${TOKEN_LABEL}' in ${o}.metadata.labels && ${o}.metadata.labels['${TOKEN_LABEL}'] == 'true')`;
    const key = (o: string) => `(${o}.metadata.name == '${KEY_SECRET}' && ${o}.type == 'Opaque')`;
    return [
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name, labels },
            spec: {
                failurePolicy: "Fail",
                matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE", "DELETE"], resources: ["secrets"] }] },
                matchConditions: [{ name: "the-admission-service", expression: `request.userInfo.username == '${SERVICE_ACCOUNT_USER}'` }],
                validations: [
                    { expression: "request.operation != 'UPDATE'", message: "the admission service updates no Secret" },
                    {
                        // Secret data is Base64 text in the object the policy sees. (The policy has no clock: a token must
                        // expire, but how soon is the service's choice.)
                        expression: `request.operation != 'CREATE' || ${key("object")} || (${ours("object")} && has(object.data) && ` +
                            `'auth-extra-groups' in object.data && object.data['auth-extra-groups'] == '${Buffer.from(ADMITTED_GROUP).toString("base64")}' && ` +
                            `'expiration' in object.data && object.data['expiration'] != '')`,
                        message: `the admission service creates only its bootstrap tokens (group ${ADMITTED_GROUP}, with an expiration) and ${KEY_SECRET}`,
                    },
                    { expression: `request.operation != 'DELETE' || ${key("oldObject")} || ${ours("oldObject")}`, message: "the admission service deletes only its own tokens" },
                ],
            },
        },
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name, labels },
            spec: { policyName: name, validationActions: ["Deny"] },
        },
        ...leasePolicyObjects(labels),
    ];
}

/**
 * Leases named `alicloud-kubeadm-admission-*` (challenge claims, each token's node) are written by the service
 * alone, and the service writes no other Lease: what the approver reads cannot come from a component that may
 * create Leases in kube-system (the CCM, the autoscaler, the controller manager), and the service's own
 * credential cannot take over another component's leader election.
 */
export function leasePolicyObjects(labels: Record<string, string>): KubeObject[] {
    const name = `${ADMISSION_NAME}-leases`;
    const ours = `request.name.startsWith('${ADMISSION_NAME}-')`;
    const service = `request.userInfo.username == '${SERVICE_ACCOUNT_USER}'`;
    return [
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name, labels },
            spec: {
                failurePolicy: "Fail",
                matchConstraints: { resourceRules: [{ apiGroups: ["coordination.k8s.io"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE", "DELETE"], resources: ["leases"] }] },
                // Only writes that involve the service or its names are looked at: every other Lease (node heartbeats,
                // leader elections) passes untouched.
                matchConditions: [{ name: "the-admission-service-or-its-leases", expression: `request.namespace == '${NAMESPACE}' && (${ours} || ${service})` }],
                validations: [{ expression: `${ours} && ${service}`, message: `only the admission service writes ${ADMISSION_NAME}-* Leases, and it writes no other` }],
            },
        },
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name, labels },
            spec: { policyName: name, validationActions: ["Deny"] },
        },
    ];
}

/**
 * The service may patch Nodes (RBAC cannot say which fields), and writes nothing to a Node but the pool label
 * {@link POOL_LABEL} and the removal of the registration taint {@link POOL_PENDING_TAINT}: every other label, the
 * annotations, the other taints, cordoning and the rest of the spec stay as they were. It creates and deletes none.
 */
export function nodePolicyObjects(labels: Record<string, string>): KubeObject[] {
    const name = `${ADMISSION_NAME}-nodes`;
    const labelsOf = (o: string) => `${o}.metadata.?labels.orValue({})`;
    const taintsOf = (o: string) => `${o}.spec.?taints.orValue([])`;
    const same = (field: string) => `object.${field} == oldObject.${field}`;
    return [
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name, labels },
            spec: {
                failurePolicy: "Fail",
                matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE", "DELETE"], resources: ["nodes"] }] },
                matchConditions: [{ name: "the-admission-service", expression: `request.userInfo.username == '${SERVICE_ACCOUNT_USER}'` }],
                validations: [
                    { expression: "request.operation == 'UPDATE'", message: "the admission service creates and deletes no Node" },
                    {
                        expression: `${labelsOf("object")}.all(k, k == '${POOL_LABEL}' || (k in ${labelsOf("oldObject")} && ${labelsOf("oldObject")}[k] == ${labelsOf("object")}[k])) && ` +
                            `${labelsOf("oldObject")}.all(k, k == '${POOL_LABEL}' || k in ${labelsOf("object")})`,
                        message: `the admission service changes no Node label but ${POOL_LABEL}`,
                    },
                    {
                        expression: `${taintsOf("object")}.all(t, t in ${taintsOf("oldObject")}) && ${taintsOf("oldObject")}.all(t, t.key == '${POOL_PENDING_TAINT}' || t in ${taintsOf("object")})`,
                        message: `the admission service only removes the taint ${POOL_PENDING_TAINT}`,
                    },
                    {
                        expression: [same("metadata.?annotations"), same("metadata.?ownerReferences"), same("metadata.?finalizers"), same("spec.?unschedulable"),
                            same("spec.?podCIDR"), same("spec.?podCIDRs"), same("spec.?providerID")].join(" && "),
                        message: "the admission service changes no Node annotation, owner, finalizer, cordon, pod CIDR or provider id",
                    },
                ],
            },
        },
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name, labels },
            spec: { policyName: name, validationActions: ["Deny"] },
        },
    ];
}

/**
 * A kubelet's Node claims no other instance: a Node named `<region>.<instance-id>` (every Node this project joins),
 * written by a kubelet (`system:node:…`), has no provider id or that same one. NodeRestriction fixes a kubelet's
 * Node name but not the provider id it registers (docs/upstream.md#noderestriction-node-name), and the Cluster
 * Autoscaler and the CCM take a Node's instance from its provider id: a Node claiming another pool member's
 * provider id, kept empty, made the autoscaler delete that member undrained (docs/security.md#node-names). Nodes
 * named otherwise (a kubelet set up by hand) are left alone.
 */
export function kubeletNodePolicyObjects(labels: Record<string, string>): KubeObject[] {
    const name = `${ADMISSION_NAME}-kubelet-provider-id`;
    return [
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name, labels },
            spec: {
                failurePolicy: "Fail",
                matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["nodes"] }] },
                matchConditions: [{ name: "a-kubelet", expression: "request.userInfo.username.startsWith('system:node:')" }],
                validations: [{
                    expression: "!object.metadata.name.matches('^[a-z0-9-]+[.]i-[a-z0-9]+$') || object.spec.?providerID.orValue('') == '' || " +
                        "object.spec.?providerID.orValue('') == object.metadata.name",
                    message: "a kubelet's Node named <region>.<instance-id> may have no provider id but its own name",
                }],
            },
        },
        {
            apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", metadata: { name, labels },
            spec: { policyName: name, validationActions: ["Deny"] },
        },
    ];
}

export function admissionRbacObjects(): KubeObject[] {
    const labels = { "app.kubernetes.io/name": ADMISSION_NAME };
    const sa = { kind: "ServiceAccount", name: ADMISSION_NAME, namespace: NAMESPACE };
    const group = { kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: ADMITTED_GROUP };
    const binding = (kind: "ClusterRoleBinding" | "RoleBinding", name: string, roleKind: "ClusterRole" | "Role", roleName: string, subject: object): KubeObject =>
        kubeObject<Omit<k8s.types.input.rbac.v1.RoleBinding, "kind">>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind,
            metadata: { name, labels, ...(kind === "RoleBinding" ? { namespace: NAMESPACE } : {}) },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name: roleName }, subjects: [subject as never],
        });
    return [
        kubeObject<k8s.types.input.core.v1.ServiceAccount>({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: ADMISSION_NAME, namespace: NAMESPACE, labels } }),
        kubeObject<k8s.types.input.rbac.v1.ClusterRole>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "alicloud-kubeadm:admission", labels },
            rules: [
                // Nodes: whether one holds a joining instance's identity, and the pool label on those it admitted
                // (what it may write: nodePolicyObjects).
                { apiGroups: [""], resources: ["nodes"], verbs: ["get", "patch"] },
                { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] },
                { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests/approval"], verbs: ["update"] },
                { apiGroups: ["certificates.k8s.io"], resources: ["signers"], resourceNames: [KUBELET_CLIENT_SIGNER], verbs: ["approve"] },
            ],
        }),
        binding("ClusterRoleBinding", "alicloud-kubeadm:admission", "ClusterRole", "alicloud-kubeadm:admission", sa),
        kubeObject<k8s.types.input.rbac.v1.Role>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "alicloud-kubeadm:admission", namespace: NAMESPACE, labels },
            rules: [
                // Secrets: create and delete only what the policy below allows (its own bootstrap tokens, its key); read
                // only its key. Reading any kube-system Secret, or creating one of another type, would be cluster-admin.
                { apiGroups: [""], resources: ["secrets"], verbs: ["create", "delete"] },
                { apiGroups: [""], resources: ["secrets"], resourceNames: [KEY_SECRET], verbs: ["get"] },
                // Leases: single-use challenge claims, and each token's node (what the approver reads; marked used on its first CSR).
                { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create", "get", "list", "update", "delete"] },
                { apiGroups: [""], resources: ["events"], verbs: ["create"] },
                // The pool registrations (ConfigMaps labelled alicloud-kubeadm/admission-pool): the allowed scaling groups.
                { apiGroups: [""], resources: ["configmaps"], verbs: ["list"] },
            ],
        }),
        // The nodes' heartbeats (a Lease per node, renewed by its kubelet): is a Node's kubelet still alive?
        kubeObject<k8s.types.input.rbac.v1.Role>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "alicloud-kubeadm:admission-heartbeats", namespace: NODE_LEASE_NAMESPACE, labels },
            rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get"] }],
        }),
        ...secretPolicyObjects(labels),
        ...nodePolicyObjects(labels),
        ...kubeletNodePolicyObjects(labels),
        binding("RoleBinding", "alicloud-kubeadm:admission", "Role", "alicloud-kubeadm:admission", sa),
        kubeObject<k8s.types.input.rbac.v1.RoleBinding>({
            apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "alicloud-kubeadm:admission-heartbeats", namespace: NODE_LEASE_NAMESPACE, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "alicloud-kubeadm:admission-heartbeats" }, subjects: [sa as never],
        }),
        // What kubeadm grants its default-node-token group, minus the blanket CSR auto-approval.
        binding("ClusterRoleBinding", "alicloud-kubeadm:admitted-node-bootstrapper", "ClusterRole", "system:node-bootstrapper", group),
        binding("ClusterRoleBinding", "alicloud-kubeadm:admitted-get-nodes", "ClusterRole", "kubeadm:get-nodes", group),
        binding("RoleBinding", "alicloud-kubeadm:admitted-kubeadm-config", "Role", "kubeadm:nodes-kubeadm-config", group),
        binding("RoleBinding", "alicloud-kubeadm:admitted-kubelet-config", "Role", "kubeadm:kubelet-config", group),
    ];
}

/**
 * A pool's registration: the scaling group whose members may join, and the pool their Nodes are labelled with.
 * The service reads every registration while it runs, so a pool attached to the cluster later (another program's
 * `NodePool`) is admitted without a restart once its registration exists (and the masters' RAM role may read its
 * group: `ess:DescribeScalingInstances` on it).
 */
export function admissionPoolRegistration(pool: string, scalingGroupId: pulumi.Input<string>, clusterName: string): KubeObject {
    return kubeObject<k8s.types.input.core.v1.ConfigMap>({
        apiVersion: "v1", kind: "ConfigMap",
        metadata: { name: poolRegistrationName(pool), namespace: NAMESPACE, labels: { [POOL_REGISTRATION_LABEL]: "true", "alicloud-kubeadm/cluster": clusterName } },
        data: { pool, scalingGroupId },
    });
}

/**
 * The name of the ConfigMap holding the service's files (name → content) when rendered as plain objects:
 * `alicloud-kubeadm-admission-<16 hex digits of SHA-256 over them in name order>`. Other files are another name; the
 * same files, the same name. (The Admission component lets Pulumi name it instead: docs/admission.md#what-is-served.)
 */
export function admissionFilesName(files: Record<string, string>): string {
    const checksum = createHash("sha256").update(JSON.stringify(Object.keys(files).sort().map((name) => [name, files[name]]))).digest("hex").slice(0, 16);
    return `${ADMISSION_NAME}-${checksum}`;
}

/**
 * The ConfigMap (code, config, certificate, manual attach script; immutable, named `filesName`, by default after its
 * content: {@link admissionFilesName}), the TLS Secret and the DaemonSet that mounts that ConfigMap.
 */
export function admissionWorkloadObjects(args: {
    config: ServiceConfig; identityCertificate: string; attachScript?: string; image?: string; clusterName: string; filesName?: string;
    tls?: { certPem: pulumi.Input<string>; keyPem: pulumi.Input<string> };
}): KubeObject[] {
    const labels = { "app.kubernetes.io/name": ADMISSION_NAME, "alicloud-kubeadm/cluster": args.clusterName };
    const data: Record<string, string> = {
        ...admissionBundle(),
        "config.json": JSON.stringify(args.config, null, 2),
        "identity-signer.pem": args.identityCertificate,
        ...(args.attachScript ? { "attach.sh": args.attachScript } : {}),
    };
    // Any change of the files is a new ConfigMap name (here their checksum; in the Admission component, the name the
    // Kubernetes provider gives the replacement), so a new pod template (the pods restart and read them); a name holds
    // one content for good (immutable), so a pod mounts its template's files or none yet, however stale the kubelet's
    // cache; once the DaemonSet's rollout completes, every replica serves these files (docs/admission.md#what-is-served).
    const filesName = args.filesName ?? admissionFilesName(data);
    return [
        kubeObject<k8s.types.input.core.v1.ConfigMap>({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: filesName, namespace: NAMESPACE, labels }, data, immutable: true }),
        // Its own key and certificate; the certificate is re-signed in place (same key) when the masters change,
        // and the service reloads it (kubelet refreshes Secret volumes within about a minute).
        kubeObject<k8s.types.input.core.v1.Secret>({
            apiVersion: "v1", kind: "Secret", metadata: { name: TLS_SECRET, namespace: NAMESPACE, labels }, type: "kubernetes.io/tls",
            stringData: { "tls.crt": args.tls?.certPem ?? "", "tls.key": args.tls ? pulumi.secret(args.tls.keyPem) : "" },
        }),
        kubeObject<k8s.types.input.apps.v1.DaemonSet>({
            apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: ADMISSION_NAME, namespace: NAMESPACE, labels },
            spec: {
                selector: { matchLabels: { "app.kubernetes.io/name": ADMISSION_NAME } },
                updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
                template: {
                    metadata: { labels },
                    spec: {
                        serviceAccountName: ADMISSION_NAME,
                        hostNetwork: true,
                        dnsPolicy: "ClusterFirstWithHostNet",
                        priorityClassName: "system-cluster-critical",
                        nodeSelector: { [CONTROL_PLANE_LABEL]: "" },
                        // Masters carry the control-plane taint and, until the CCM initializes them, the uninitialized one.
                        tolerations: [{ operator: "Exists", effect: "NoSchedule" }, { key: "CriticalAddonsOnly", operator: "Exists" }],
                        // Nobody: its own key comes from its Secret (group-readable), nothing of the host is mounted.
                        securityContext: { runAsUser: SERVICE_UID, runAsGroup: SERVICE_UID, runAsNonRoot: true, fsGroup: SERVICE_UID },
                        containers: [{
                            name: "admission",
                            image: args.image ?? DEFAULT_ADMISSION_IMAGE,
                            command: ["node", `${MOUNT}/server.js`, `${MOUNT}/config.json`],
                            env: [{ name: "HOSTNAME", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } }],
                            ports: [{ name: "admission", containerPort: args.config.port, hostPort: args.config.port, protocol: "TCP" }],
                            readinessProbe: { httpGet: { scheme: "HTTPS", path: "/healthz", port: args.config.port }, periodSeconds: 10 },
                            livenessProbe: { httpGet: { scheme: "HTTPS", path: "/healthz", port: args.config.port }, periodSeconds: 30, failureThreshold: 4 },
                            resources: { requests: { cpu: "20m", memory: "48Mi" }, limits: { memory: "192Mi" } },
                            securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
                            volumeMounts: [
                                { name: "code", mountPath: MOUNT, readOnly: true },
                                { name: "tls", mountPath: TLS_MOUNT, readOnly: true },
                            ],
                        }],
                        volumes: [
                            { name: "code", configMap: { name: filesName } },
                            { name: "tls", secret: { secretName: TLS_SECRET, defaultMode: 0o440 } },
                        ],
                    },
                },
            },
        }),
    ];
}

/** The service's config as the component writes it (paths inside the pod). */
export function serviceConfig(a: { accountId: string; region: string; existingNodes?: Record<string, string>; joinTag?: string;
    challengeTtlSeconds?: number; tokenTtlSeconds?: number; readmitAfterSeconds?: number; attachScript?: boolean; allowSha1?: boolean }): ServiceConfig {
    return {
        accountId: a.accountId, regionId: a.region, existingNodes: a.existingNodes ?? {}, joinTag: a.joinTag,
        challengeTtlSeconds: a.challengeTtlSeconds ?? DEFAULT_CHALLENGE_TTL_SECONDS, tokenTtlSeconds: a.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS,
        readmitAfterSeconds: a.readmitAfterSeconds ?? DEFAULT_READMIT_AFTER_SECONDS,
        port: ADMISSION_PORT, tlsCertFile: `${TLS_MOUNT}/tls.crt`, tlsKeyFile: `${TLS_MOUNT}/tls.key`,
        signerFile: `${MOUNT}/identity-signer.pem`, attachScriptFile: a.attachScript ? `${MOUNT}/attach.sh` : undefined, allowSha1: a.allowSha1 !== false,
    };
}

/** The admission service on the masters. Needs a Kubernetes provider (opts.provider). */
export class Admission extends pulumi.ComponentResource {
    /** Port on every master's private IP. */
    public readonly port = ADMISSION_PORT;
    /**
     * The service's DaemonSet. Its pods mount the ConfigMap named after its content (code, config, served attach
     * script), so a change is a new pod template and rolls every pod, and its update returns once every pod runs the new
     * template (the Kubernetes provider's await): what depends on it finds the new script and config served
     * (docs/admission.md#what-is-served).
     */
    public readonly workload: pulumi.CustomResource;

    constructor(name: string, args: AdmissionArgs, opts?: pulumi.ComponentResourceOptions) {
        super("alicloud-kubeadm:index:Admission", name, {}, opts);
        const childOpts = { parent: this };
        const rbac = applyObjects(`${name}-rbac`, admissionRbacObjects(), childOpts);
        // The account id is known at deployment: the objects' kinds and names are fixed now, their contents follow
        // (so preview shows the resources).
        const render = (filesName?: string) => pulumi.all([args.accountId, args.attachScript ?? ""]).apply(([accountId, attachScript]) =>
            admissionWorkloadObjects({
                config: serviceConfig({ ...args, accountId, attachScript: attachScript !== "" }), filesName,
                identityCertificate: args.identityCertificate, attachScript: attachScript || undefined, image: args.image, clusterName: args.clusterName,
            }));
        const [configMap, secret, daemonSet] = admissionWorkloadObjects({
            config: serviceConfig({ ...args, accountId: "", attachScript: false }), identityCertificate: "", image: args.image, clusterName: args.clusterName, tls: args.tls,
            filesName: ADMISSION_NAME,
        });
        // The files' ConfigMap is immutable and named by the Kubernetes provider (no metadata.name): a change of its data
        // replaces it with a new object under a new name, created first; the DaemonSet, which mounts the name the
        // provider gave, is updated next, and the old ConfigMap is deleted at the end of the `pulumi up`, after the
        // rollout (docs/admission.md#what-is-served). Its Pulumi name is the one the fixed-name ConfigMap of earlier
        // versions had, so an existing stack replaces that resource.
        const files = new k8s.core.v1.ConfigMap(resourceName(`${name}-service`, configMap), {
            apiVersion: "v1", kind: "ConfigMap", immutable: true,
            metadata: { namespace: configMap.metadata.namespace, labels: configMap.metadata.labels },
            data: render().apply((o) => o[0].data as Record<string, string>),
        }, { ...childOpts, dependsOn: rbac });
        const rendered = files.metadata.name.apply((filesName) => render(filesName));
        // The cluster's pools are registered before the service starts (registrations added later are read too).
        const service = applyObjects(`${name}-service`, [
            secret,
            ...args.pools.map((p) => admissionPoolRegistration(p.name, p.scalingGroupId, args.clusterName)),
            { ...daemonSet, spec: rendered.apply((o) => o[2].spec) },
        ], { ...childOpts, dependsOn: [...rbac, files] });
        this.workload = service[service.length - 1];
        this.registerOutputs({});
    }
}
