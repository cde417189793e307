// Cluster: the whole stack from one validated config, in the order a cluster comes up:
// config → validation → network → control plane → join material → pools/nodes → add-ons.
import * as pulumi from "@pulumi/pulumi";
import * as alicloud from "@pulumi/alicloud";
import * as k8s from "@pulumi/kubernetes";
import { packUserdata, renderControlPlaneJoinCommand, renderMasterInit, renderOperation, renderUpgradeCommand } from "../shell/render";
import { clusterTags, nodeScriptParams, validateClusterConfig, type ClusterConfig, type ClusterConfigInput, type ExistingNodeInput, type StackConfig } from "../config";
import { autoscalerArgsOf, networkArgsOf, nodeImageArgsOf, podNetworkArgsOf } from "../configSlices";
import { throwIfProblems } from "./args";
import { joinContext, withNodeVersion } from "./joinArgs";
import { attachAdmissionPolicy, attachAutoscalerPolicy, ControlPlane, masterPrivateIp, masterZoneIndex } from "./controlPlane";
import { ClusterAutoscaler } from "./clusterAutoscaler";
import type { ClusterInfo, PoolInfo } from "../doctor/types";
import { ApiServerReady } from "../providers/apiServerReady";
import { ControlPlaneMember } from "../providers/controlPlaneMember";
import { ControlPlaneVersion } from "../providers/controlPlaneVersion";
import { NodeVersions } from "../providers/nodeVersions";
import { JoinInfo } from "../providers/joinInfo";
import { attachThrough, createAttachCommand, EXISTING_POOL_NAME, ExistingNode, servedAttachScript, sshConnection, type SshConnectionArgs } from "./existingNode";
import { admissionAttachOneLiner } from "../shell/renderAdmission";
import { NodeCommands, saveCommand } from "./nodeCommands";
import { formatProblem, OPERATIONS, providerIdOf, SECRET_STAND_IN, SSH_SECRET_FIELDS, type Problem } from "../rules";
import { NodePool } from "./nodePool";
import { ALIBABA_IDENTITY_CERTIFICATE } from "../admission/alibabaCertificate";
import { NAMESPACE } from "../admission/kube";
import { Admission, ADMISSION_PORT } from "./admission";
import { AdmissionCertificate } from "../providers/admissionCertificate";
import { PodNetwork } from "./podNetwork";
import { PodSecurity } from "./podSecurity";
import { Network } from "./network";
import { NodeImage } from "./nodeImage";
import { CLUSTER_HANDLE_FORMAT, type ClusterHandle } from "./clusterHandle";
import { EtcdBackup } from "./backup";
import { MasterMaintenance } from "../providers/masterMaintenance";
import { renderMasterMaintenance } from "../shell/renderBackup";

/** The cluster config as a program gives it: plain values, except the SSH secrets (see {@link SshConnectionArgs}). */
export type ClusterConfigArgs = Omit<ClusterConfigInput, "existingNodes"> & {
    /** Existing ECS instances joined as nodes; an SSH connection's secrets may be Pulumi secrets. Default `[]`. */
    existingNodes?: Array<Omit<ExistingNodeInput, "connection"> & {
        /** Run the attach script over SSH (mode `manual` only). Default: Cloud Assistant. */
        connection?: SshConnectionArgs;
    }>;
};

export interface ClusterArgs {
    /** The `alicloud-kubeadm:cluster` object (README "Configuration"); validated before anything is created. Required. */
    config: ClusterConfigArgs;
    /** The Alibaba Cloud region, usually `alicloud:region`. Required. */
    region: string;
    /**
     * Problems the stack program found reading the stack's config (`readStackConfig`: ignored keys of the
     * namespace, a cluster value that is not JSON), reported together with the config's own. Default none.
     */
    stackConfig?: Pick<StackConfig, "problems" | "warningProblems">;
    /**
     * The CA hash this stack recorded in an earlier `pulumi up` (the stack output `caCertHash`; the stack program reads
     * it from its own stack). With it a re-created master 0 never runs `kubeadm init`: it joins the masters that answer
     * with that CA, or stops naming the restore command (docs/disaster-recovery.md). Default none (a new cluster).
     */
    recordedCaCertHash?: pulumi.Input<string | undefined>;
}

/**
 * Validates a cluster config and returns it with defaults applied. Throws InputPropertiesError
 * listing every problem (`<property.path>: <reason>`); logs warnings to the Pulumi log.
 */
export function resolveClusterConfig(args: ClusterArgs, resource?: pulumi.Resource): ClusterConfig {
    const { plain, secrets, unknowns } = separateOutputs(args.config);
    const result = validateClusterConfig(plain, args.region);
    const stack = args.stackConfig ?? { problems: [], warningProblems: [] };
    for (const warning of [...stack.warningProblems, ...result.warningProblems]) {
        pulumi.log.warn(formatProblem(warning), resource);
    }
    // A cluster value the stack program could not read is reported once, by the reader; a value that is an Output, once.
    const reported = new Set([...stack.problems, ...unknowns].map((p) => p.path));
    const problems = [...stack.problems, ...unknowns, ...result.problems.filter((p) => !reported.has(p.path))];
    if (!result.config || problems.length > 0) {
        throwIfProblems("Cluster (its config)", problems);
    }
    const config = result.config!;
    for (const { node, key, value } of secrets) {
        (config.existingNodes[node].connection as unknown as Record<string, unknown>)[key] = value;
    }
    return config;
}

/**
 * The cloud resources go to the alicloud provider's region, the scripts and the dynamic providers' calls to
 * `args.region`: with the default provider the two must agree, or `pulumi up` fails after the VPC exists.
 */
function checkProviderRegion(region: string, opts: pulumi.ComponentResourceOptions | undefined): void {
    if (opts?.provider || opts?.providers) return; // an explicit provider: its region is the caller's to match
    const providerRegion = new pulumi.Config("alicloud").get("region");
    if (providerRegion && typeof region === "string" && providerRegion !== region) {
        throwIfProblems("Cluster", [{ path: "region", reason: `is ${region}, but the default alicloud provider creates resources in alicloud:region ${providerRegion}: ` +
            `pass region: "${providerRegion}", or set \`pulumi config set alicloud:region ${region}\`` }]);
    }
}

/**
 * The config as plain values for the rules. An SSH secret given as an Output (`config.requireSecret`) stands
 * in as a placeholder and is put back after; any other Output cannot be checked before anything is created,
 * so it is a problem at its path.
 */
function separateOutputs(config: unknown): { plain: unknown; secrets: Array<{ node: number; key: string; value: unknown }>; unknowns: Problem[] } {
    const secrets: Array<{ node: number; key: string; value: unknown }> = [];
    const unknowns: Problem[] = [];
    const walk = (value: unknown, path: string[]): unknown => {
        if (pulumi.Output.isInstance(value) || (typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function")) {
            const m = /^existingNodes\.(\d+)\.connection\.(\w+)$/.exec(path.join("."));
            // An SSH secret given as a Pulumi secret (an Output): checked as present, passed on as it is.
            if (m && SSH_SECRET_FIELDS.includes(m[2])) {
                secrets.push({ node: Number(m[1]), key: m[2], value });
                return SECRET_STAND_IN;
            }
            unknowns.push({ path: path.join("."), reason: "must be a plain value known before anything is created (an Output or a promise cannot be checked): resolve it in the program, e.g. read it from the stack config" });
            return undefined;
        }
        if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)]));
        if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
        return value;
    };
    return { plain: walk(config, []), secrets, unknowns };
}

/** A self-managed kubeadm cluster on Alibaba Cloud, built from one config object. */
export class Cluster extends pulumi.ComponentResource {
    /** The validated config with defaults applied. */
    public readonly config: ClusterConfig;
    public readonly network: Network;
    /** The baked node image masters and pools boot (`image.bake: true`); undefined otherwise. */
    public readonly nodeImage?: NodeImage;
    public readonly controlPlane: ControlPlane;
    /** CA pin and the stack's kubeconfig read from master 0 (both secret). */
    public readonly joinInfo: JoinInfo;
    /** The node operations saved as Cloud Assistant commands. */
    public readonly commands: NodeCommands;
    /** The stack's kubeconfig: a cluster-admin service-account token, revocable and rotatable (secret; docs/security.md). */
    public readonly kubeconfig: pulumi.Output<string>;
    /** Masters 1..n-1 joined with kubeadm join --control-plane. */
    public readonly controlPlaneMembers: ControlPlaneMember[];
    /** Kubernetes provider for add-ons, usable once the API server answers /readyz. */
    public readonly kubernetesProvider: k8s.Provider;
    /** flannel (alloc) + Alibaba Cloud Controller Manager (pod routes). */
    public readonly podNetwork: PodNetwork;
    /** The policy that keeps pods with host access off the masters (docs/security.md#pod-security). */
    public readonly podSecurity: PodSecurity;
    /** ESS node pools, in config order. */
    public readonly nodePools: NodePool[];
    /** Existing ECS instances joined to the cluster, in config order. */
    public readonly existingNodes: ExistingNode[];
    /** The admission service on the masters: pools and existing nodes join by cloud identity (docs/admission.md). */
    public readonly admission: Admission;
    /** The admission service's key and certificate; `pin` is what joining nodes trust it by. */
    public readonly admissionCertificate: AdmissionCertificate;
    /** The one-line manual attach command (no secret: the admission endpoints and the pin of the service's key). */
    public readonly attachCommand: pulumi.Output<string>;
    /** The Cluster Autoscaler, when at least one pool autoscales. */
    public readonly autoscaler?: ClusterAutoscaler;
    /** Where everything is, for `npm run doctor` (not secret). */
    public readonly clusterInfo: pulumi.Output<ClusterInfo>;
    /**
     * What a NodePool, an ExistingNode or a NodeImage built outside this Cluster attaches through (`cluster: <Cluster>.handle`);
     * export it (`export const cluster = myCluster.handle`) for another program's {@link clusterHandleOf}. Its CA pin and
     * kubeconfig are secrets.
     */
    public readonly handle: ClusterHandle;
    /** etcd backups: the bucket, the backup key (docs/disaster-recovery.md#backups). */
    public readonly backup: EtcdBackup;
    /**
     * The version the cluster runs, read from it, and the control plane's move to `kubernetesVersion` one master at a
     * time (docs/upgrades.md). Every node's join material and the autoscaler's image take `runningVersion`.
     */
    public readonly version: ControlPlaneVersion;
    /** The worker nodes moved in place to the running version, after the pools and the admission service took it. */
    public readonly nodeVersions: NodeVersions;

    constructor(name: string, args: ClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Validate before registering anything, so bad input creates nothing at all.
        checkProviderRegion(args.region, opts);
        const config = resolveClusterConfig(args);
        super("alicloud-kubeadm:index:Cluster", name, {}, opts);
        this.config = config;
        const tags = clusterTags(config);

        this.network = new Network(`${name}-network`, networkArgsOf(config), { parent: this });

        const imageId = config.image.id
            ? pulumi.output(config.image.id)
            : alicloud.ecs.getImagesOutput({ nameRegex: config.image.nameRegex, owners: "system", mostRecent: true }, { parent: this })
                .apply((r) => {
                    // The provider always answers with a list; an answer without one is a test double's (Pulumi's generic
                    // mocks echo the inputs): no image id then, rather than an error nothing deployed would raise.
                    if (!Array.isArray(r.images)) {
                        return "";
                    }
                    if (r.images.length === 0) {
                        throw new Error(`image.nameRegex: no system image in ${config.region} matches ${config.image.nameRegex}; set image.id`);
                    }
                    return r.images[0].id;
                });

        const net = this.network;
        // image.bake: masters and pools boot the baked image; existing nodes (mode auto) keep the base image.
        if (config.image.bake) {
            this.nodeImage = new NodeImage(`${name}-node-image`, nodeImageArgsOf(config, { baseImageId: imageId, vswitchId: net.resources.vswitches[0].id }),
                { parent: this, dependsOn: [net] });
        }
        const nodeImageId = this.nodeImage?.imageId ?? imageId;
        this.controlPlane = new ControlPlane(`${name}-control-plane`, {
            config,
            vpcId: net.vpcId,
            vswitchIds: net.resources.vswitches.map((v) => v.id),
            securityGroupIds: [net.masterSecurityGroupId],
            apiSecurityGroupId: net.apiSecurityGroupId,
            routeTableId: net.routeTableId,
            natEipAddress: net.natEipAddress,
            natGateway: config.network.natGateway,
            imageId: nodeImageId,
            tags,
            userdata: (index, endpoint, certSANs, recorded) => masterUserdata(config, index, endpoint, certSANs, recorded),
            recordedCaCertHash: args.recordedCaCertHash,
        }, { parent: this });

        // Join material: the CA pin and the stack's own kubeconfig (a revocable service-account token) from master 0, and the node operations saved as commands.
        this.joinInfo = new JoinInfo(`${name}-join-info`, {
            region: config.region,
            masterInstanceId: this.controlPlane.resources.masters[0].id,
            kubeconfigServer: this.controlPlane.kubeconfigServer,
            scripts: { initStatus: renderOperation("init-status"), stackCredential: renderOperation("stack-credential"), stackCredentialRevoke: renderOperation("stack-credential-revoke") },
        }, { parent: this });
        this.kubeconfig = pulumi.secret(this.joinInfo.kubeconfig);
        this.commands = new NodeCommands(`${name}-commands`, { clusterName: config.name }, { parent: this });
        const commands = this.commands.ids;

        // The version the cluster runs, read from its API servers once master 0 is up; when the config asks for another,
        // the control plane moves there one master at a time (docs/upgrades.md). Everything that joins a node takes the
        // running version, so no node gets a kubelet newer than an API server.
        const upgradeCommand = saveCommand(`${name}-upgrade`, {
            commandName: `${config.name}-upgrade`, parameters: true, timeoutSeconds: OPERATIONS.upgrade.timeoutSeconds, description: OPERATIONS.upgrade.description,
            script: renderUpgradeCommand(nodeScriptParams(config)),
        }, { parent: this });
        this.version = new ControlPlaneVersion(`${name}-version`, {
            region: config.region, masterInstanceId: this.controlPlane.resources.masters[0].id, masterInstanceIds: this.controlPlane.masterInstanceIds, commands,
            targetVersion: config.kubernetesVersion, upgradeCommandId: upgradeCommand.id,
            autoscaled: config.nodePools.some((p) => p.autoscale !== undefined), autoscalerVersion: config.autoscaler.version ?? "",
            instanceType: config.controlPlane.instanceType,
        }, { parent: this, dependsOn: [this.joinInfo] });
        const runningVersion = this.version.runningVersion;

        // Masters 1..n-1 join one at a time (etcd grows by one member per step), each with the saved
        // control-plane join command and a fresh token and certificate key from master 0.
        const masters = this.controlPlane.resources.masters;
        const joinCommand = masters.length < 2 ? undefined : saveCommand(`${name}-control-plane-join`, {
            commandName: `${config.name}-control-plane-join`, parameters: true,
            timeoutSeconds: OPERATIONS["control-plane-join"].timeoutSeconds, description: OPERATIONS["control-plane-join"].description,
            // The version members join with is the one the control plane runs (a re-created member joins the masters as they are).
            script: pulumi.secret(pulumi.all([this.controlPlane.endpoint, this.joinInfo.caCertHash, runningVersion]).apply(([apiEndpoint, caCertHash, version]) =>
                renderControlPlaneJoinCommand({ ...nodeScriptParams(withNodeVersion(config, version)), apiEndpoint, caCertHash }))),
        }, { parent: this });
        let previous: pulumi.Resource = this.joinInfo;
        // What every member shares: the join command, the saved operations, the route clean-up on removal.
        const memberCommon = {
            region: config.region, joinCommandId: joinCommand?.id ?? "", joinSecretsScript: renderOperation("join-secrets"), commands,
            routeTableId: net.routeTableId, podCidr: config.network.podCidr,
        };
        this.controlPlaneMembers = masters.slice(1).map((member, k) => {
            previous = new ControlPlaneMember(`${name}-master-${k + 1}-join`, {
                ...memberCommon, masterInstanceId: masters[0].id, masterInstanceIds: this.controlPlane.masterInstanceIds, memberInstanceId: member.id,
            }, { parent: this, dependsOn: [previous] });
            return previous as ControlPlaneMember;
        });

        // Master 0 too, with 3 or 5 masters, after the others: a no-op while master 0 runs (its Node is there); a re-created
        // master 0 (src/shell/master_guard.sh) is joined through the other masters like any member, its old etcd member
        // removed first (docs/disaster-recovery.md#lost-disk-on-master-0).
        const master0Member = masters.length < 2 ? undefined : new ControlPlaneMember(`${name}-master-0-join`, {
            ...memberCommon, masterInstanceId: masters[1].id, masterInstanceIds: pulumi.all(masters.slice(1).map((m) => m.id)), memberInstanceId: masters[0].id,
        }, { parent: this, dependsOn: [previous] });
        if (master0Member) this.controlPlaneMembers.push(master0Member);

        // etcd backups (docs/disaster-recovery.md#backups): the bucket, the masters' put permission, the backup key; every
        // master gets the backup timer (and the certificate renewal timer) from the saved maintenance command.
        const accountId = alicloud.getCallerIdentityOutput({ parent: this }).accountId;
        this.backup = new EtcdBackup(`${name}-backup`, {
            clusterName: config.name, region: config.region, accountId, roleName: this.controlPlane.roleName, settings: config.backup, tags,
        }, { parent: this });
        const maintenanceCommand = saveCommand(`${name}-master-maintenance`, {
            commandName: `${config.name}-master-maintenance`, parameters: false, timeoutSeconds: 300,
            description: "install the etcd backup timer and the certificate renewal timer on a master",
            script: this.backup.backupScript.apply((script) => renderMasterMaintenance(script, config.backup.intervalMinutes)),
        }, { parent: this });
        new MasterMaintenance(`${name}-master-maintenance`, {
            region: config.region, masterInstanceIds: this.controlPlane.masterInstanceIds, commandId: maintenanceCommand.id,
        }, { parent: this, dependsOn: [this.joinInfo, ...this.controlPlaneMembers] });

        // Nodes: ESS pools and existing instances join by cloud identity (docs/admission.md): they ask every
        // master's admission replica for a single-use token, so no userdata or command holds a join secret.
        const master0 = masters[0].id;
        const masterInstanceIds = this.controlPlane.masterInstanceIds;
        const identityCertificate = config.admission.identityCertificate ?? ALIBABA_IDENTITY_CERTIFICATE;
        const masterIps = pulumi.all(masters.map((m) => m.privateIp));
        const admissionEndpoints = masterIps.apply((ips) => ips.map((ip) => `${ip}:${ADMISSION_PORT}`));
        // The admission service's own key and certificate for the masters' addresses; nodes pin its key.
        this.admissionCertificate = new AdmissionCertificate(`${name}-admission-tls`, { addresses: masterIps }, { parent: this });
        const admissionPin = this.admissionCertificate.pin;
        // The join context: everything a node needs to join, built once.
        const join = joinContext(config, {
            apiEndpoint: this.controlPlane.endpoint, caCertHash: this.joinInfo.caCertHash,
            masterInstanceId: master0, masterInstanceIds, commands, routeTableId: net.routeTableId, admissionEndpoints, admissionPin,
            kubernetesVersion: runningVersion,
        });
        // The Cluster registers the pools and existing nodes of its config with the admission service itself (its config and policy below).
        this.nodePools = config.nodePools.map((pool) => new NodePool(`${name}-pool-${pool.name}`, {
            ...join, imageId: nodeImageId, pool, tags,
            vswitchIds: net.resources.vswitches.map((v) => v.id),
            securityGroupIds: [net.clusterSecurityGroupId],
            dependsOn: [this.joinInfo], registeredWithAdmission: true,
        }, { parent: this }));
        const attachCommand = !config.existingNodes.some((n) => n.mode === "manual") ? undefined
            : createAttachCommand(`${name}-attach`, join, { parent: this });
        // Add-ons: only once the API server is ready, through a provider built from the secret kubeconfig.
        const ready = new ApiServerReady(`${name}-api-ready`, { kubeconfig: this.joinInfo.kubeconfig }, { parent: this });
        this.kubernetesProvider = new k8s.Provider(`${name}-k8s`, { kubeconfig: ready.kubeconfig }, { parent: this });
        this.podSecurity = new PodSecurity(`${name}-pod-security`, {
            clusterName: config.name,
            masterNodeNames: this.controlPlane.masterInstanceIds.apply((ids) => ids.map((id) => providerIdOf(config.region, id))),
            exemptNamespaces: config.podSecurity.exemptNamespaces,
        }, { parent: this, provider: this.kubernetesProvider });
        this.podNetwork = new PodNetwork(`${name}-pod-network`, podNetworkArgsOf(config, net.routeTableId), { parent: this, provider: this.kubernetesProvider });
        {
            attachAdmissionPolicy(this.controlPlane, config, this.nodePools.map((p) => p.scalingGroupId));
            // The attach script the service serves to existing nodes and the manual path (no secret in it); a manual
            // existing node's spec hashes the same rendering (servedAttachScript).
            const served = pulumi.all([join.apiEndpoint, join.caCertHash, admissionEndpoints, admissionPin, runningVersion]).apply(([apiEndpoint, caCertHash, endpoints, pin, version]) =>
                servedAttachScript(join.config, { apiEndpoint, caCertHash, endpoints, pin, version }));
            this.attachCommand = pulumi.all([admissionPin, admissionEndpoints]).apply(([pin, endpoints]) => admissionAttachOneLiner(endpoints, pin));
            this.admission = new Admission(`${name}-admission`, {
                attachScript: served,
                clusterName: config.name, region: config.region, identityCertificate, joinTag: config.admission.joinTag, image: config.images.admission,
                allowSha1: config.admission.allowSha1,
                accountId,
                pools: this.nodePools.map((p, i) => ({ name: config.nodePools[i].name, scalingGroupId: p.scalingGroupId })),
                existingNodes: Object.fromEntries(config.existingNodes.map((n) => [n.instanceId, EXISTING_POOL_NAME])),
                tls: { certPem: this.admissionCertificate.certPem, keyPem: this.admissionCertificate.keyPem },
                readmitAfterSeconds: config.admission.readmitAfterSeconds,
            }, { parent: this, provider: this.kubernetesProvider });
        }
        // Every existing node joins through the admission service, so its attach waits for the service's DaemonSet:
        // its update returns once every pod serves the new attach script and config (docs/admission.md#what-is-served).
        // The nodes that may be replaced in place go one at a time: each one's membership depends on the one before, so
        // Pulumi starts its update (its removal) only once the other's returned, Ready again (docs/rotation.md#existing-nodes).
        let replacedBefore: ExistingNode | undefined;
        this.existingNodes = config.existingNodes.map((node) => {
            const existing = new ExistingNode(`${name}-node-${node.instanceId}`, {
                ...join, imageId, node, attachCommandId: attachCommand?.id, connection: sshConnection(node.connection), registeredWithAdmission: true,
            }, { parent: this, dependsOn: [this.admission.workload, ...(node.rollout === "replace" && replacedBefore ? [replacedBefore.resources.membership] : [])] });
            if (node.rollout === "replace") replacedBefore = existing;
            return existing;
        });

        const autoscaled = this.nodePools.filter((p) => p.autoscale);
        if (autoscaled.length > 0) {
            attachAutoscalerPolicy(this.controlPlane, config, autoscaled.map((p) => p.scalingGroupId));
            this.autoscaler = new ClusterAutoscaler(`${name}-autoscaler`, autoscalerArgsOf(config, new Map(autoscaled.map((p) => [p.poolName, p.scalingGroupId])), runningVersion),
                { parent: this, provider: this.kubernetesProvider });
        }

        // The worker nodes follow the running version in place, once the pools, the existing nodes and the admission
        // service join new nodes with it (docs/upgrades.md#nodes).
        this.nodeVersions = new NodeVersions(`${name}-node-versions`, {
            region: config.region, masterInstanceId: master0, masterInstanceIds, commands,
            version: runningVersion, targetVersion: config.kubernetesVersion, upgradeCommandId: upgradeCommand.id, batchSize: config.upgrade.nodeBatchSize,
        }, { parent: this, dependsOn: [...this.nodePools, ...this.existingNodes, this.admission, ...this.controlPlaneMembers] });

        const pools = pulumi.all(this.nodePools.map((p, i) => p.scalingGroupId.apply((scalingGroupId): PoolInfo => {
            const pool = config.nodePools[i];
            return pool.autoscale
                ? { name: pool.name, mode: "autoscale", min: pool.autoscale.min, max: pool.autoscale.max, scalingGroupId }
                : { name: pool.name, mode: "fixed", size: pool.size, min: 0, max: pool.size ?? 0, scalingGroupId };
        })));
        // Each existing node's spec and the one it joined with, as the memberships' state holds them (doctor lists the outdated ones).
        const existingSpecs = pulumi.all(this.existingNodes.map((e) => pulumi.all([e.resources.membership.spec, e.resources.membership.joinedSpec])));
        this.clusterInfo = pulumi.all([this.controlPlane.masterInstanceIds, this.controlPlane.endpoint, net.routeTableId, pools, commands, joinCommand?.id, existingSpecs])
            .apply(([masterInstanceIds, apiEndpoint, routeTableId, poolInfos, commandIds, controlPlaneJoinCommandId, specs]): ClusterInfo => ({
                name: config.name,
                region: config.region,
                kubernetesVersion: config.kubernetesVersion,
                masterInstanceIds, apiEndpoint, routeTableId,
                podCidr: config.network.podCidr,
                pools: poolInfos,
                existingNodes: config.existingNodes.map((n, i) => ({
                    instanceId: n.instanceId, mode: n.mode,
                    ...(specs[i][0] ? { spec: specs[i][0] } : {}), ...(specs[i][1] ? { joinedSpec: specs[i][1] } : {}),
                })),
                commands: commandIds,
                backupIntervalMinutes: config.backup.intervalMinutes,
                ...(controlPlaneJoinCommandId ? { controlPlaneJoinCommandId } : {}),
            }));

        this.handle = {
            format: CLUSTER_HANDLE_FORMAT,
            // The CA pin is a secret output of JoinInfo (which the engine marks); marked here too, so that the handle's
            // secrets are this library's doing, as clusterHandleOf's are.
            join: { ...join, caCertHash: pulumi.secret(join.caCertHash) },
            placement: {
                vswitchIds: net.resources.vswitches.map((v) => v.id), securityGroupIds: [net.clusterSecurityGroupId], imageId: nodeImageId, baseImageId: imageId, tags,
            },
            nodeImage: nodeImageArgsOf(config, { baseImageId: imageId, vswitchId: net.resources.vswitches[0].id }),
            attachCommandId: attachCommand?.id,
            admission: {
                clusterName: config.name, namespace: NAMESPACE, kubeconfig: this.kubeconfig,
                pools: config.nodePools.map((p) => p.name), existingNodes: config.existingNodes.map((n) => n.instanceId),
            },
            ram: { roleName: this.controlPlane.roleName, region: config.region },
        };
        // A node attached through the handle in this program waits for the admission service as the Cluster's own do and,
        // when it may be replaced in place, goes after them.
        attachThrough(this.handle, { served: this.admission.workload, replaced: replacedBefore?.resources.membership });

        this.registerOutputs({ network: this.network, controlPlane: this.controlPlane, kubeconfig: this.kubeconfig });
    }
}

/**
 * Master 0 runs kubeadm init from its userdata. Masters 1..n-1 get none: ControlPlaneMember prepares
 * and joins them over Cloud Assistant once master 0 is up (they need its certificate key).
 */
export function masterUserdata(config: ClusterConfig, index: number, apiEndpoint: string, certSANs: string[], recordedCaCertHash?: string): string | undefined {
    if (index > 0) {
        return undefined;
    }
    // Packed like the pools' (packUserdata): the `readonly AK_*` header readable, the body compressed. Existing
    // masters ignore userdata drift, so only masters created from now on boot the packed form.
    return packUserdata(renderMasterInit({
        ...nodeScriptParams(config),
        apiEndpoint,
        podCidr: config.network.podCidr,
        serviceCidr: config.network.serviceCidr,
        nodeCidrMaskSize: config.network.nodeCidrMaskSize,
        certSANs,
        // Every other control-plane member gets master 0's key over the sealed join-secrets channel
        // (docs/security.md#encryption-at-rest).
        encryptSecrets: true,
        // A re-created master 0 of a cluster the stack recorded joins the others or stops (src/shell/master_guard.sh).
        recordedCaCertHash,
        peerMasterIps: Array.from({ length: config.controlPlane.count - 1 }, (_, k) =>
            masterPrivateIp(config.network.vswitchCidrs[masterZoneIndex(k + 1, config.zones.length)], k + 1, config.zones.length)),
        // No AK_NODE_IMAGES (node_images.sh) on master 0, baked or not: NodeImage builds its image in the same
        // `pulumi up`, just before it, so the image always matches (masters ignore image drift afterwards), and
        // kubeadm init finds its images baked; node_images.sh would only check that.
    }), "controlPlane (master 0)");
}

