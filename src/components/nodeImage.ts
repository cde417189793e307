// NodeImage: the node runtime baked into a custom ECS image (issue 18), so that a node joins without
// installing or pulling anything.
//
// How: ECS Image Builder, driven by what @pulumi/alicloud 3.108.0 really has.
//  - `ecs.EcsImagePipeline` (base image, build instance type, vSwitch, `buildContent`, `imageName` prefix) holds
//    the build: its `buildContent` RUNs the bake script (src/shell/bake_node.sh, rendered by renderBakeNode: the
//    same preparation steps a stock boot runs, then the clean-up for cloning), gzip + Base64 in chunks.
//  - `ecs.ImagePipelineExecution` starts one build. It returns while the build still runs, has no image id
//    output, and its delete does nothing (the Terraform resource only forgets it).
//  - `BakedImage` (src/providers/bakedImage.ts) closes those gaps: it waits for the build, takes the image id
//    from DescribeImagePipelineExecutions (or the one image named `<imageName>*`), and deletes the image on
//    destroy or replacement. The image is owned like every other resource.
//  `ecs.EcsImageComponent` is not used: one build with its commands inline needs no reusable component, and the
//  pipeline's 16 KB of `buildContent` hold the compressed script several times over.
//
// Rebuilds: every name carries a key hashed from the build's inputs (the rendered bake script, which holds the
// Kubernetes version, the package sources and every image reference; the base image; the build settings), and
// the pipeline is replaced on any change. A new key means a new pipeline, a new execution and a new BakedImage;
// the new image is created before the old one is deleted, after the scaling configurations moved to it. Nodes
// already running are never replaced by this: masters ignore image drift, pool nodes keep their instance until
// a removal (drain first) takes them.
import * as alicloud from "@pulumi/alicloud";
import * as crypto from "crypto";
import * as zlib from "zlib";
import * as pulumi from "@pulumi/pulumi";
import { renderBakeNode, type BakeNodeParams } from "../shell/render";
import { BakedImage } from "../providers/bakedImage";
import { DEFAULT_BAKE_INSTANCE_TYPE, instanceTypeProblem, collect } from "../rules";
import { validatedByParser } from "../validated";
import { checkArgs, throwIfProblems } from "./args";
import { attachesThroughHandle, clusterHandleProblems, handleAndGiven, type ClusterHandle } from "./clusterHandle";

/** Characters of one `RUN printf` line of the encoded script (the build content may hold 127 commands). */
const CHUNK = 2000;
/** Where the build writes the script (removed by the last command). */
const SCRIPT = "/var/tmp/alicloud-kubeadm-bake";

export interface NodeImageArgs extends BakeNodeParams {
    /** Cluster name: prefixes the pipeline and image names (`<clusterName>-node-<key>`). Required. */
    clusterName: string;
    /** Image the build starts from (the cluster's `image.id`, or the image `image.nameRegex` found). Required. */
    baseImageId: pulumi.Input<string>;
    /** vSwitch of the build instance; it needs egress to the package mirror and the registries (the cluster's NAT). Required. */
    vswitchId: pulumi.Input<string>;
    /** Build instance type. Default {@link DEFAULT_BAKE_INSTANCE_TYPE}. */
    instanceType?: string;
    /** System disk of the build instance, and so of the image, GiB. Default 40. */
    systemDiskSize?: number;
    /** Cloud tags of the pipeline. Default none. */
    tags?: Record<string, string>;
    /** How long the build may take, seconds. Default 3600. */
    timeoutSeconds?: number;
}

/**
 * A NodeImage built outside a Cluster for it, through the handle the Cluster exports: the cluster's Kubernetes
 * version, image sources and base image, and its first vSwitch for the build; the args' own values over them.
 */
export interface AttachedNodeImageArgs {
    /** The cluster: `<Cluster>.handle`, or `await clusterHandleOf(stackReference)` in another program. Required. */
    cluster: ClusterHandle;
    /** Image the build starts from. Default: the cluster's base image. */
    baseImageId?: pulumi.Input<string>;
    /** vSwitch of the build instance. Default: the cluster's first. */
    vswitchId?: pulumi.Input<string>;
    /** Build instance type. Default {@link DEFAULT_BAKE_INSTANCE_TYPE}. */
    instanceType?: string;
    /** System disk of the build instance, and so of the image, GiB. Default 40. */
    systemDiskSize?: number;
    /** Cloud tags of the pipeline. Default: the cluster's. */
    tags?: Record<string, string>;
    /** How long the build may take, seconds. Default 3600. */
    timeoutSeconds?: number;
}

/** The image's arguments from a handle (after {@link clusterHandleProblems}): the handle's, the args' own values over them. */
function attachedNodeImageArgs(args: AttachedNodeImageArgs): NodeImageArgs {
    const { cluster, given } = handleAndGiven(args);
    return { ...cluster.nodeImage, ...given };
}

/** The Image Builder commands that write the bake script to the build instance and run it. */
export function bakeBuildContent(script: string): string {
    const encoded = zlib.gzipSync(Buffer.from(script, "utf8"), { level: 9, mtime: 0 } as zlib.ZlibOptions).toString("base64");
    const lines: string[] = [];
    for (let k = 0; k < encoded.length; k += CHUNK) lines.push(`RUN printf '%s' '${encoded.slice(k, k + CHUNK)}' >> ${SCRIPT}.b64`);
    lines.push(`RUN base64 -d ${SCRIPT}.b64 | gunzip > ${SCRIPT}.sh && bash ${SCRIPT}.sh && rm -f ${SCRIPT}.b64 ${SCRIPT}.sh`);
    return lines.join("\n");
}

/** Throws InputPropertiesError listing every problem of arguments given directly (the build's own; the bake script's are the renderer's). */
function nodeImageProblems(args: NodeImageArgs): void {
    const { problems, report } = collect();
    if (args.instanceType !== undefined) {
        const type = instanceTypeProblem(args.instanceType);
        if (type) report("instanceType", type);
    }
    if (!/^[a-z][a-z0-9-]{0,39}$/.test(args.clusterName ?? "")) report("clusterName", "must be the cluster name: a DNS label starting with a letter, at most 40 characters");
    const size = args.systemDiskSize ?? 40;
    if (!Number.isInteger(size) || size < 20 || size > 500) report("systemDiskSize", "must be 20..500 GiB (Image Builder)");
    throwIfProblems("NodeImage", problems);
}

/** A custom image with the node runtime baked in; `imageId` is what masters and pools boot. */
export class NodeImage extends pulumi.ComponentResource {
    /** The baked image (`m-…`), owned by {@link resources}.image. */
    readonly imageId: pulumi.Output<string>;
    /** The images baked for every node (pause, kube-proxy, flannel and its CNI plugin); masters' control-plane images come from kubeadm's list. */
    readonly images: string[];
    /** The rendered bake script (no secrets). */
    readonly script: string;
    readonly resources: { pipeline: alicloud.ecs.EcsImagePipeline; execution: alicloud.ecs.ImagePipelineExecution; image: BakedImage };

    constructor(name: string, given: NodeImageArgs | AttachedNodeImageArgs, opts?: pulumi.ComponentResourceOptions) {
        if (attachesThroughHandle<AttachedNodeImageArgs>(given)) checkArgs("NodeImage", (report) => clusterHandleProblems(given.cluster, report));
        const args = attachesThroughHandle<AttachedNodeImageArgs>(given) ? attachedNodeImageArgs(given) : given;
        super("alicloud-kubeadm:index:NodeImage", name, {}, opts);
        if (!validatedByParser(args)) nodeImageProblems(args);


        const size = args.systemDiskSize ?? 40;
        const { clusterName, baseImageId, vswitchId, instanceType, systemDiskSize: _s, tags, timeoutSeconds, ...bake } = args;
        this.script = renderBakeNode(bake);
        this.images = [...args.nodeImages];
        const buildContent = bakeBuildContent(this.script);
        const type = instanceType ?? DEFAULT_BAKE_INSTANCE_TYPE;
        const key = pulumi.all([baseImageId, vswitchId]).apply(([base, vsw]) => crypto.createHash("sha256")
            .update(JSON.stringify({ buildContent, base, vsw, type, size, tags: tags ?? {} })).digest("hex").slice(0, 10));
        const imageName = pulumi.interpolate`${clusterName}-node-${key}`;

        const pipeline = new alicloud.ecs.EcsImagePipeline(`${name}-pipeline`, {
            name: imageName,
            imageName,
            description: `alicloud-kubeadm ${clusterName}: node image, Kubernetes v${args.kubernetesVersion}`,
            baseImageType: "IMAGE",
            baseImage: baseImageId,
            buildContent,
            instanceType: type,
            systemDiskSize: size,
            vswitchId,
            // Egress goes through the cluster's NAT gateway (or the VPC's own): no public IP on the build instance.
            internetMaxBandwidthOut: 0,
            deleteInstanceOnFailure: true,
            tags,
        }, { parent: this, replaceOnChanges: ["*"] });
        const execution = new alicloud.ecs.ImagePipelineExecution(`${name}-build`, { imagePipelineId: pipeline.id }, { parent: this });
        const image = new BakedImage(`${name}-image`, {
            region: args.region, executionId: execution.id, imageNamePrefix: imageName, timeoutSeconds,
        }, { parent: this });
        this.imageId = image.imageId;
        this.resources = { pipeline, execution, image };
        this.registerOutputs({ imageId: this.imageId });
    }
}
