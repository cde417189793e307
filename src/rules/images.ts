// Image sources: the default add-on images (pinned by digest where a digest can be cited), the pause image of each
// Kubernetes minor, and the grammar of image references (each region's default mirrors are in regions.ts).
// Sources: docs/upstream.md#flannel, #cloud-controller-manager-alibaba, #cluster-autoscaler-alicloud-provider, #image-digests.
import type { Report } from "./problems";

/** Upstream flannel image of release v0.28.9 (kube-flannel.yml). No Alibaba mirror is documented. */
export const DEFAULT_FLANNEL_IMAGE = "ghcr.io/flannel-io/flannel:v0.28.9";
/** flannel CNI plugin image that kube-flannel.yml v0.28.9 installs in its init container. */
export const DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE = "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3";
/** Alibaba Cloud Controller Manager v2.14.0 from Alibaba's own registry (the only published source). */
export const DEFAULT_CCM_IMAGE = "registry.cn-hangzhou.aliyuncs.com/acs/cloud-controller-manager-amd64:v2.14.0";
/** Upstream Cluster Autoscaler repository; its builds include the alicloud provider. No Alibaba mirror is documented. */
export const DEFAULT_AUTOSCALER_IMAGE_REPOSITORY = "registry.k8s.io/autoscaling/cluster-autoscaler";

/**
 * An image digest this project pins, with the upstream file it was read from. A digest is never typed in from
 * anywhere else: test/imageDigests.test.ts fails on a digest in the defaults or the synthesized manifests that is not
 * here, and docs/upstream.md#image-digests links each source at its commit.
 */
export interface CitedDigest {
    /** `registry/path:tag` as the project names it. */
    reference: string;
    /** `sha256:<64 hex>`: the tag's manifest list (image index) as the source records it. */
    digest: string;
    /** Where it is written: a GitHub repository, a path in it, the commit read. */
    source: { repository: string; path: string; commit: string };
}

/** The digests cited so far (docs/security.md#image-digests lists the default images still pulled by tag). */
export const CITED_DIGESTS: readonly CitedDigest[] = [
    {
        // The official Node.js image's record of what the tag pointed to, kept by Docker's official-images maintainers.
        reference: "docker.io/library/node:22.23.3-alpine3.23",
        digest: "sha256:baf676f7d0e552f3231945c2f979055ca121bce128c152f7a34e6bd1728b1c5a",
        source: { repository: "docker-library/repo-info", path: "repos/node/remote/22.23.3-alpine3.23.md", commit: "4211a1635d906d705a873434b7336b27c7678802" },
    },
];

/** `reference@digest` for a reference in {@link CITED_DIGESTS}; throws for any other (a digest needs its source). */
export function pinnedImage(reference: string): string {
    const cited = CITED_DIGESTS.find((d) => d.reference === reference);
    if (!cited) throw new Error(`no cited digest for ${reference}: add it to CITED_DIGESTS with its source, or keep the tag`);
    return `${reference}@${cited.digest}`;
}

/** Node.js image of the admission service (official image, Alpine variant), pinned by digest. Mirror it and set `images.admission` in China regions. */
export const DEFAULT_ADMISSION_IMAGE = pinnedImage("docker.io/library/node:22.23.3-alpine3.23");

/**
 * The warning for an image pulled by tag alone (no `@sha256:` digest), or undefined: whoever controls the tag
 * controls what runs, and the admission service and the CCM hold keys (docs/security.md#image-digests).
 */
export function unpinnedImageWarning(reference: string): string | undefined {
    if (/@sha(256|512):/.test(reference)) return undefined;
    return `${reference} is pulled by tag (its registry can point the tag at other content); pin it: ${reference}@sha256:<digest> (docs/security.md#image-digests)`;
}

// The distribution reference grammar, which containerd and the kubelet parse image names with
// (docs/upstream.md#image-references):
//   name       := [domain '/'] path-component ['/' path-component]*
//   domain     := host [':' port]      host := domain-component ['.' domain-component]* | '[' IPv6 ']'
//   path-component := [a-z0-9]+ (separator [a-z0-9]+)*   separator := [_.] | '__' | '-'+
//   reference  := name [':' tag] ['@' digest]   tag := [\w][\w.-]{0,127}
// Digests: sha256 (64) and sha512 (128) lower-case hex digits, the algorithms OCI registers.
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = "[\\w][\\w.-]{0,127}";
const DIGEST = "(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})";
/** `[registry[:port]/]path` without tag or digest (a tag is appended by the consumer). */
const IMAGE_REPOSITORY = new RegExp(`^${NAME}$`);
/**
 * A full image reference: repository plus `:tag` and/or `@<digest>`. One of them is required: without
 * either, the kubelet pulls `:latest`, which changes under a running cluster (and may not exist in a mirror).
 */
const IMAGE_REFERENCE = new RegExp(`^${NAME}(?::${TAG}(?:@${DIGEST})?|@${DIGEST})$`);
/** The distribution project's limit on a repository name (domain and path). */
export const MAX_IMAGE_NAME_LENGTH = 255;

/** The repository part of a reference: without `@digest` and without a `:tag` after the last `/`. */
function nameOf(value: string): string {
    const noDigest = value.split("@")[0];
    const slash = noDigest.lastIndexOf("/");
    const colon = noDigest.lastIndexOf(":");
    return colon > slash ? noDigest.slice(0, colon) : noDigest;
}
const HTTPS_URL = /^https:\/\/[A-Za-z0-9.-]+(:\d+)?(\/[^\s'"\\]*)?$/;

/**
 * Warns, at `images.<key>`, about every add-on image the cluster would pull by tag: the configured one or the default
 * (flannel, its CNI plugin, the CCM, the admission service; the Cluster Autoscaler's `<repository>:v<version>` when
 * `autoscalerImage` is given). An image that is no valid reference is left to its error.
 */
export function checkImageDigests(images: Partial<Record<"flannel" | "flannelCniPlugin" | "cloudControllerManager" | "admission", string>>,
    autoscalerImage: string | undefined, warn: Report): void {
    const defaults = { flannel: DEFAULT_FLANNEL_IMAGE, flannelCniPlugin: DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, cloudControllerManager: DEFAULT_CCM_IMAGE, admission: DEFAULT_ADMISSION_IMAGE };
    for (const key of Object.keys(defaults) as Array<keyof typeof defaults>) {
        const reference = images[key] ?? defaults[key];
        const warning = imageReferenceProblem(reference) ? undefined : unpinnedImageWarning(reference);
        if (warning) warn(`images.${key}`, warning);
    }
    const autoscaler = autoscalerImage === undefined || imageReferenceProblem(autoscalerImage) ? undefined : unpinnedImageWarning(autoscalerImage);
    if (autoscaler) warn("images.clusterAutoscalerRepository", `${autoscalerImage} is pulled by tag (its registry can point the tag at other content) and a repository ` +
        "takes no digest: copy it into a registry whose tags cannot be overwritten and set images.clusterAutoscalerRepository to it (docs/security.md#image-digests)");
}

/** Why `value` is not a full image reference, or undefined. */
export function imageReferenceProblem(value: string): string | undefined {
    if (IMAGE_REFERENCE.test(value)) {
        const name = nameOf(value);
        return name.length > MAX_IMAGE_NAME_LENGTH ? `"${name.slice(0, 40)}…" is an image name of ${name.length} characters; at most ${MAX_IMAGE_NAME_LENGTH} are allowed` : undefined;
    }
    const untagged = IMAGE_REPOSITORY.test(value) ? " with a tag or digest (without one the node pulls :latest)" : "";
    return `"${value}" is not an image reference${untagged} (expected registry/path:tag or registry/path@sha256:<digest>, path components of ` +
        `lower-case letters and digits separated by one ".", one or two "_", or "-"s; e.g. registry.cn-hangzhou.aliyuncs.com/my-ns/flannel:v0.28.9)`;
}

/** Why `value` is not an image repository (no tag, no digest), or undefined. */
export function imageRepositoryProblem(value: string): string | undefined {
    if (IMAGE_REPOSITORY.test(value) && value.length > MAX_IMAGE_NAME_LENGTH) {
        return `"${value.slice(0, 40)}…" is an image repository of ${value.length} characters; at most ${MAX_IMAGE_NAME_LENGTH} are allowed`;
    }
    return IMAGE_REPOSITORY.test(value) ? undefined
        : `"${value}" is not an image repository (expected registry/path without tag or digest, e.g. registry.cn-hangzhou.aliyuncs.com/my-ns)`;
}

/** Why `id` cannot be an image id or name (`image.id`: no white space), or undefined. */
export function imageIdProblem(id: string): string | undefined {
    return /\s/.test(id) ? `"${id}" is not an image id (no spaces; e.g. m-bp1example or ubuntu_24_04_x64_20G_alibase_20260101.vhd)` : undefined;
}

/**
 * Why `value` is not an https base URL of a package mirror, or undefined. It is the mirror's root: the node scripts
 * append the repository path themselves (`kubernetes-new/core/stable/v1.36/deb/`, `docker-ce/linux/centos/`, or on
 * pkgs.k8s.io `core:/stable:/v1.36/deb/`; src/shell/render.ts), so a URL that already names a repository would
 * name one that does not exist.
 */
export function packageMirrorProblem(value: string): string | undefined {
    if (!HTTPS_URL.test(value)) {
        return `"${value}" must be an https URL (e.g. https://mirrors.cloud.aliyuncs.com)`;
    }
    const repo = /\/(kubernetes-new|kubernetes|core:|docker-ce|deb|rpm)(\/|$)/.exec(new URL(value).pathname);
    return repo ? `"${value}" names a repository (…/${repo[1]}…): give the mirror's root (e.g. https://mirrors.aliyun.com or https://pkgs.k8s.io); ` +
        "the node scripts add the Kubernetes and containerd repository paths for the version" : undefined;
}

/**
 * Why an image (an id, a public image name, or `image.nameRegex`) names an operating system the node scripts cannot
 * set up, or undefined. Alibaba's public image names start with the OS (`ubuntu_24_04_…`, `aliyun_3_…`,
 * `win2022_…`, `centos_7_9_…`); the scripts install with apt (Ubuntu, Debian) or dnf (Alibaba Cloud Linux 3 and
 * other EL8-likes) and stop on anything else, after the instance was created. A custom image id (`m-…`) says nothing
 * (docs/upstream.md#public-image-names).
 */
export function imageOsProblem(image: string): string | undefined {
    const name = image.replace(/^\^/, "");
    const os = /^(win|freebsd|opensuse|suse|sles|fedora|coreos|centos_[5-7]_)/i.exec(name)?.[1];
    if (!os) {
        return undefined;
    }
    const what = /^win/i.test(os) ? "Windows" : /^centos/i.test(os) ? `CentOS ${os.slice(7, 8)} (yum, no dnf)` : os;
    return `"${image}" is a ${what} image, which the node scripts cannot set up (they need Ubuntu, Debian, or Alibaba Cloud Linux 3 or another ` +
        "EL8-like with dnf): use e.g. ^ubuntu_24_04_x64 or ^aliyun_3_x64";
}

/**
 * The size in GiB an Alibaba public image name states (`…_20G_alibase_…`, `win2022_…_40G_…`), or undefined. A
 * system disk must be at least as large as its image (CreateScalingConfiguration / RunInstances `SystemDisk.Size`).
 */
export function imageSizeGiB(image: string): number | undefined {
    const m = /_(\d+)G_/.exec(image);
    return m ? Number(m[1]) : undefined;
}

/**
 * The pause (sandbox) image tag kubeadm uses for a Kubernetes minor (`PauseVersion` in kubeadm's constants):
 * 3.10 up to 1.33, 3.10.1 for 1.34 and 1.35, 3.10.2 from 1.36. Sources: docs/upstream.md#kubeadm-pause-image.
 */
export function pauseVersionFor(minor: number): string {
    return minor >= 36 ? "3.10.2" : minor >= 34 ? "3.10.1" : "3.10";
}

/** The containerd sandbox (pause) image kubeadm expects: `<imageRepository>/pause:<pauseVersionFor(minor)>`. */
export function pauseImage(imageRepository: string, kubernetesVersion: string): string {
    return `${imageRepository.replace(/\/+$/, "")}/pause:${pauseVersionFor(Number(kubernetesVersion.split(".")[1]))}`;
}

/**
 * The kube-proxy image of kubeadm's kube-proxy DaemonSet: `<imageRepository>/kube-proxy:v<kubernetesVersion>`
 * (kubeadm builds it from `imageRepository` and `kubernetesVersion` of its ClusterConfiguration; docs/upstream.md#kubeadm-pause-image).
 */
export function kubeProxyImage(imageRepository: string, kubernetesVersion: string): string {
    return `${imageRepository.replace(/\/+$/, "")}/kube-proxy:v${kubernetesVersion}`;
}

/** What decides the images every node runs. */
export interface NodeImageSources {
    /** Full Kubernetes version, e.g. `1.36.3`. */
    kubernetesVersion: string;
    /** kubeadm `imageRepository` (pause, kube-proxy and the control-plane images). */
    imageRepository: string;
    /** flanneld image. Default {@link DEFAULT_FLANNEL_IMAGE}. */
    flannel?: string;
    /** flannel CNI plugin image. Default {@link DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE}. */
    flannelCniPlugin?: string;
}

/**
 * The images every node (master or worker) runs before any workload: the sandbox, kube-proxy (kubeadm's
 * DaemonSet) and flannel with its CNI plugin (our DaemonSet). The one source of truth: the node scripts'
 * sandbox image, the kubeadm configuration and the flannel manifest use these same references, and a
 * baked image pre-pulls exactly this list, so the kubelet has nothing left to pull (checked by test/bake.test.ts).
 */
export function nodeImages(s: NodeImageSources): { pause: string; kubeProxy: string; flannel: string; flannelCniPlugin: string } {
    return {
        pause: pauseImage(s.imageRepository, s.kubernetesVersion),
        kubeProxy: kubeProxyImage(s.imageRepository, s.kubernetesVersion),
        flannel: s.flannel ?? DEFAULT_FLANNEL_IMAGE,
        flannelCniPlugin: s.flannelCniPlugin ?? DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE,
    };
}
