// CPU architecture of instance types and images: an instance boots only an image of its own architecture, one
// image serves every instance type of a pool, a baked image has the architecture of the instance that built it,
// and the default Cloud Controller Manager image is built for amd64 only. Each side's architecture is read only
// where a source says it (the instance family tables, the public image names); where it cannot be read, no rule
// applies. Sources: docs/upstream.md#instance-architecture.
import { DEFAULT_CCM_IMAGE } from "./images";

/** The two CPU architectures of ECS instance families. */
export type Architecture = "x86_64" | "arm64";

/** The Arm instance families: YiTian 710 (g8y, c8y, r8y and their ECS Bare Metal versions) and Ampere Altra (g6r, c6r). */
export const ARM_INSTANCE_FAMILIES: readonly string[] = ["g8y", "c8y", "r8y", "ebmg8y", "ebmc8y", "ebmr8y", "g6r", "c6r"];

/**
 * x86 families (Intel, AMD, Hygon) this project knows: the enterprise generations 5 to 8 and the shared and
 * burstable ones. A family in neither list has no architecture here, and no rule is applied to it.
 */
export const X86_INSTANCE_FAMILIES: readonly string[] = [
    "g5", "c5", "r5", "g6", "c6", "r6", "g6e", "c6e", "r6e", "g6a", "c6a", "r6a", "g6t", "c6t",
    "g7", "c7", "r7", "g7a", "c7a", "r7a", "g7t", "c7t", "r7t", "g7ne", "g7se", "c7se", "r7se",
    "g8i", "c8i", "r8i", "g8a", "c8a", "r8a", "g8ae", "c8ae", "r8ae",
    "hfg6", "hfc6", "hfr6", "hfg7", "hfc7", "hfr7", "t5", "t6", "u1", "e", "n1", "n2", "n4", "sn1", "sn2", "sn1ne", "sn2ne", "se1", "se1ne",
];

/** The architecture of an instance type (`ecs.<family>.<size>`; `ecs.t5-lc1m2.small` is family t5), or undefined when unknown. */
export function instanceTypeArchitecture(type: string): Architecture | undefined {
    const family = type.split(".")[1]?.split("-")[0];
    if (family === undefined) return undefined;
    return ARM_INSTANCE_FAMILIES.includes(family) ? "arm64" : X86_INSTANCE_FAMILIES.includes(family) ? "x86_64" : undefined;
}

/**
 * The architecture an image id, image name or name pattern names, or undefined: Alibaba's public image names
 * carry it as a part between `_` (`ubuntu_24_04_x64_20G_alibase_….vhd`, `ubuntu_24_04_arm64_20G_alibase_….vhd`).
 * A custom image id (`m-…`) says nothing.
 */
export function imageArchitecture(image: string): Architecture | undefined {
    if (/(^|[_^])(x64|x86_64|amd64)(_|$)/i.test(image)) return "x86_64";
    if (/(^|[_^])(arm64|aarch64)(_|$)/i.test(image)) return "arm64";
    return undefined;
}

/** True when an image reference is built for amd64 only (its repository name says `-amd64`). */
function amd64OnlyImage(reference: string): boolean {
    return /[-_/]amd64([:@/]|$)/.test(reference.split("@")[0]);
}

/** What the architecture rules look at: the instance types and images of a cluster. */
export interface ArchitectureInput {
    /** The cluster's image: `image.id`, else `image.nameRegex`. */
    image: string;
    /** The path of the cluster's image setting the user wrote (`image.id` or `image.nameRegex`). */
    imagePath: string;
    controlPlaneInstanceType: string;
    /** `image.bake` and the build's instance type (its default when unset). */
    bake: boolean;
    bakeInstanceType: string;
    /** Whether `image.bakeInstanceType` was written (else the default is reported at `image.bake`). */
    bakeInstanceTypeGiven: boolean;
    /** The CCM image (`images.cloudControllerManager`, else the default). */
    ccmImage?: string;
    pools: ReadonlyArray<{ instanceTypes: readonly string[]; imageId?: string; instanceTypeGiven: boolean }>;
}

const ARCH_NAME: Record<Architecture, string> = { x86_64: "x86 (x86_64)", arm64: "Arm (arm64)" };

/**
 * Checks that every instance boots an image of its architecture: the masters and each pool's instance types
 * against the image they boot (a pool's `imageId`, or the cluster's image; with `image.bake`, the baked image,
 * which has the build instance's architecture), the build instance against the base image, the types of one pool
 * against each other, and Arm masters against an amd64-only CCM image. Reports at the instance type the user wrote.
 */
export function architectureProblems(a: ArchitectureInput, report: (path: string, reason: string) => void): void {
    const baseArch = imageArchitecture(a.image);
    const bakeArch = a.bake ? instanceTypeArchitecture(a.bakeInstanceType) : undefined;
    const bakePath = a.bakeInstanceTypeGiven ? "image.bakeInstanceType" : "image.bake";
    if (a.bake && baseArch && bakeArch && baseArch !== bakeArch) {
        report(bakePath, `the image build runs on ${a.bakeInstanceType}, an ${ARCH_NAME[bakeArch]} instance type, but the base image ${a.image} ` +
            `(${a.imagePath}) is ${ARCH_NAME[baseArch]}: it cannot boot there. Set image.bakeInstanceType to ` +
            `an ${ARCH_NAME[baseArch]} type, or use a base image of the build's architecture`);
    }
    // What the masters and the pools without their own image boot, and how to name it. A build that cannot boot its
    // base image was reported above; the nodes are then held to the base image, whose architecture the user chose.
    const clusterArch = a.bake ? baseArch ?? bakeArch : baseArch;
    const clusterImage = a.bake ? `the baked image (built on ${a.bakeInstanceType})` : `image ${a.image} (${a.imagePath})`;
    const mismatch = (type: string, typeArch: Architecture, imageArch: Architecture, image: string, fix: string) =>
        `${type} is an ${ARCH_NAME[typeArch]} instance type, but it would boot ${image}, which is ${ARCH_NAME[imageArch]}: ECS refuses to start it. ${fix}`;
    const masterArch = instanceTypeArchitecture(a.controlPlaneInstanceType);
    if (masterArch && clusterArch && masterArch !== clusterArch) {
        report("controlPlane.instanceType", mismatch(a.controlPlaneInstanceType, masterArch, clusterArch, clusterImage,
            `Use an ${ARCH_NAME[clusterArch]} instance type for the masters, or an ${ARCH_NAME[masterArch]} image`));
    } else if (masterArch === "arm64" && amd64OnlyImage(a.ccmImage ?? DEFAULT_CCM_IMAGE)) {
        report("controlPlane.instanceType", `${a.controlPlaneInstanceType} is an Arm (arm64) instance type, and the Cloud Controller Manager runs on the masters ` +
            `from ${a.ccmImage ?? DEFAULT_CCM_IMAGE}, which is built for amd64 only: set images.cloudControllerManager to a multi-architecture CCM image ` +
            "(registry.<region>.aliyuncs.com/acs/cloud-controller-manager:<tag>), or use an x86 instance type for the masters");
    }
    a.pools.forEach((pool, i) => {
        const typePath = (j: number) => (pool.instanceTypeGiven ? `nodePools.${i}.instanceType` : `nodePools.${i}.instanceTypes.${j}`);
        if (mixedArchitectureProblem(pool.instanceTypes)) {
            return; // reported with the pool (checkPool)
        }
        const archs = pool.instanceTypes.map(instanceTypeArchitecture);
        const first = archs.findIndex((x) => x !== undefined);
        const imageArch = pool.imageId !== undefined ? imageArchitecture(pool.imageId) : clusterArch;
        const image = pool.imageId !== undefined ? `image ${pool.imageId} (nodePools.${i}.imageId)` : clusterImage;
        const j = first;
        if (j >= 0 && imageArch && archs[j] !== imageArch) {
            report(typePath(j), mismatch(pool.instanceTypes[j], archs[j]!, imageArch, image,
                `Set nodePools.${i}.imageId to an ${ARCH_NAME[archs[j]!]} image (e.g. ubuntu_24_04_${archs[j] === "arm64" ? "arm64" : "x64"}_20G_alibase_<date>.vhd), ` +
                `or use ${ARCH_NAME[imageArch]} instance types`));
        }
    });
}

/**
 * Why a pool's instance types cannot share one image, or undefined: the index of the first type whose
 * architecture differs from an earlier one's, and the reason (reported at `instanceTypes.<index>`).
 */
export function mixedArchitectureProblem(types: readonly string[]): { index: number; reason: string } | undefined {
    const archs = types.map(instanceTypeArchitecture);
    const first = archs.findIndex((x) => x !== undefined);
    const mixed = archs.findIndex((x, j) => j > first && x !== undefined && x !== archs[first]);
    if (first < 0 || mixed < 0) return undefined;
    return {
        index: mixed,
        reason: `${types[mixed]} is ${ARCH_NAME[archs[mixed]!]} and ${types[first]} (instanceTypes.${first}) is ${ARCH_NAME[archs[first]!]}: ` +
            "one pool boots one image, which runs on one architecture; put each architecture in its own pool",
    };
}
