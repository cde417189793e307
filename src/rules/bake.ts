// Baked node images (`image.bake`): what validation says about them. No Pulumi import.
import { instanceTypeProblem } from "./alibaba";
import type { Report } from "./problems";

/** Instance type of the image build when `image.bakeInstanceType` is unset: the masters' default type. */
export const DEFAULT_BAKE_INSTANCE_TYPE = "ecs.g7.large";

/** The settings of a baked image, as the stack config gives them. */
export interface BakeSettings {
    bake: boolean;
    bakeInstanceType?: string;
}

/**
 * Checks `image.bake*` and says what baking costs. `poolImages` lists, per pool, whether it sets its own
 * `imageId` (such a pool keeps its image and does not get the baked one).
 */
export function checkBake(image: BakeSettings, poolImages: Array<{ name: string; imageId?: string }>, problem: Report, warn: Report): void {
    if (image.bakeInstanceType !== undefined) {
        const type = instanceTypeProblem(image.bakeInstanceType);
        if (type) problem("image.bakeInstanceType", type);
        if (!image.bake) problem("image.bakeInstanceType", "is only used with image.bake: true; remove it or set image.bake: true");
    }
    if (!image.bake) return;
    warn("image.bake", "every `pulumi up` that changes kubernetesVersion, images.*, the base image (image.id / image.nameRegex) " +
        "or the node scripts builds a new image before any node changes: an ECS Image Builder instance " +
        `(${image.bakeInstanceType ?? DEFAULT_BAKE_INSTANCE_TYPE}, pay-as-you-go) runs for about 10–20 minutes in the first vSwitch ` +
        "and the image's snapshot is billed per GB-month (one image is kept; the old one is deleted after the pools moved). " +
        "Masters keep the image they were created from; new pool nodes boot the new one, existing nodes are not replaced. " +
        "Nodes then join without installing or pulling anything (docs/scale-up.md)");
    poolImages.forEach((p, i) => {
        if (p.imageId !== undefined) warn(`nodePools.${i}.imageId`, `pool ${p.name} sets its own image, so it does not boot the baked image (it installs at boot)`);
    });
}
