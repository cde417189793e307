/**
 * BakedImage: the custom image one ECS Image Builder execution produced, owned like any other resource.
 *
 * `alicloud.ecs.ImagePipelineExecution` starts a build and returns while it is still PREPARING or BUILDING;
 * it has no image id output and its delete is a no-op (the Terraform resource only forgets it). This resource
 * closes both gaps: create waits until the execution is SUCCESS and reads the image id from
 * DescribeImagePipelineExecutions (or, when that field is empty, finds the one image whose name starts with
 * the pipeline's unique `imageName` prefix); delete deletes that image. A rebuild is a new execution, hence a
 * replacement: the new image is created first, the scaling configurations move to it, then the old image is
 * deleted. No image is left behind untracked.
 */
import * as pulumi from "@pulumi/pulumi";
import { deleteImage, describeImageBuild, describeOwnImages } from "../cloud/ecs";
import { pulumiLog } from "./log";
import { withPacingLog } from "./pacing";
import type { ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { waitFor } from "../cloud/wait";

/** Bump when the provider's behaviour changes: Pulumi cannot see code changes of a dynamic provider. */
export const BAKED_IMAGE_PROVIDER_VERSION = "1";

export interface BakedImageInputs {
    /** Region id, e.g. `cn-hangzhou`. Required. */
    region: string;
    /** The execution's id (`ImagePipelineExecution.id`). Required. */
    executionId: string;
    /** The pipeline's `imageName`: ECS names the image `<prefix>_<build time>`; unique per build here. Required. */
    imageNamePrefix: string;
    /** How long a build may take, seconds. Default 3600. */
    timeoutSeconds?: number;
    /** First poll delay, ms. Default 15000; tests lower it. */
    pollIntervalMs?: number;
    providerVersion?: string;
}

/** The arguments of a BakedImage (documented in {@link BakedImageInputs}). */
export type BakedImageArgs = ResourceArgs<BakedImageInputs>;

export interface BakedImageOutputs {
    /** The custom image id (`m-…`). */
    imageId: string;
}

/** Terminal failures of an execution. */
const FAILED = ["FAILED", "CANCELLED", "CANCELLING"];

/**
 * Waits for the build and returns its image.
 * @throws when the build fails, is cancelled, or does not finish within the timeout (naming the execution and the fix)
 */
export async function awaitBakedImage(inputs: BakedImageInputs, progress: (m: string) => void = () => undefined): Promise<BakedImageOutputs> {
    const build = await waitFor(async () => {
        const b = await describeImageBuild(inputs.region, inputs.executionId);
        const status = b?.status ?? "NOT FOUND";
        if (status === "SUCCESS") return { done: true, value: b! };
        if (FAILED.includes(status) || !b) {
            throw new Error(`image build ${inputs.executionId} ${status}${b?.message ? `: ${b.message}` : ""}\n` +
                "  fix: read the build log in the ECS console (Image Builder → execution), fix the cause (package mirror, " +
                "egress of the build vSwitch, instance type stock), then `pulumi up --replace` the NodeImage's execution.");
        }
        return { done: false, state: status };
    }, {
        timeoutMs: (inputs.timeoutSeconds ?? 3600) * 1000, firstDelayMs: inputs.pollIntervalMs ?? 15_000, maxDelayMs: 60_000,
        log: (status) => progress(`image build ${inputs.executionId}: ${status}`), logEveryMs: Infinity,
    }, (status) => new Error(`image build ${inputs.executionId} still ${status} after ${inputs.timeoutSeconds ?? 3600} s\n` +
        "  fix: run `pulumi up` again to keep waiting (the build goes on), or cancel it in the ECS console."));
    progress(`image build ${inputs.executionId}: SUCCESS`);
    return { imageId: build.imageId || await findImage(inputs) };
}

async function findImage(inputs: BakedImageInputs): Promise<string> {
    const images = await describeOwnImages(inputs.region, inputs.imageNamePrefix);
    if (images.length !== 1) {
        throw new Error(`image build ${inputs.executionId} succeeded but ${images.length} images are named ${inputs.imageNamePrefix}*; ` +
            "expected exactly one\n  fix: delete the extra images in the ECS console and run `pulumi up` again.");
    }
    return images[0].imageId;
}

/** Deletes the image (Force: masters created from it keep running). An image already gone is fine. */
export async function deleteBakedImage(region: string, imageId: string, warn: (m: string) => void = () => undefined): Promise<void> {
    if ((await deleteImage(region, imageId, true)) === "already gone") warn(`baked image ${imageId} was already gone`);
}

/** Another build (execution, image name, region) is another image; the wait's settings are an update. */
const BAKED_IMAGE_DIFF = inputDiff<BakedImageInputs>()({
    replace: ["region", "executionId", "imageNamePrefix"],
    update: ["providerVersion", "timeoutSeconds", "pollIntervalMs"],
    ignore: [],
});

export const bakedImageProvider: pulumi.dynamic.ResourceProvider = withPacingLog({
    async create(inputs: BakedImageInputs) {
        const outs = await awaitBakedImage(inputs, (m) => pulumiLog().info(m));
        return { id: outs.imageId, outs: { ...inputs, ...outs } };
    },
    async diff(_id: string, olds: BakedImageInputs & BakedImageOutputs, news: BakedImageInputs) {
        // The new image first: the scaling configurations move to it before the old one goes.
        return { ...diffInputs(BAKED_IMAGE_DIFF, olds, news), deleteBeforeReplace: false };
    },
    async update(_id: string, olds: BakedImageInputs & BakedImageOutputs, news: BakedImageInputs) {
        return { outs: { ...news, imageId: olds.imageId } };
    },
    async delete(_id: string, props: BakedImageInputs & BakedImageOutputs) {
        await deleteBakedImage(props.region, props.imageId, (m) => pulumiLog().warn(m));
    },
});

/** The image an Image Builder execution produced; deleted with this resource. */
export class BakedImage extends pulumi.dynamic.Resource {
    /** The custom image id. */
    declare readonly imageId: pulumi.Output<string>;

    constructor(name: string, args: BakedImageArgs, opts?: pulumi.CustomResourceOptions) {
        super(bakedImageProvider, name, { imageId: undefined, providerVersion: BAKED_IMAGE_PROVIDER_VERSION, ...args }, opts);
    }
}
