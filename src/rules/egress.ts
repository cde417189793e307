// What the nodes reach outside the VPC, for `network.natGateway: false`. The VPC is created by this stack, so
// without the NAT gateway its instances (which have no public address) reach only the VPC and Alibaba's
// VPC-internal endpoints: every package mirror and registry they install or pull from must be one of those,
// or `pulumi up` fails halfway, after the masters exist. Sources: docs/upstream.md#nat-off-sources.
import { contains, parseCidr } from "./cidr";
import { DEFAULT_ADMISSION_IMAGE, DEFAULT_AUTOSCALER_IMAGE_REPOSITORY, DEFAULT_CCM_IMAGE, DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, DEFAULT_FLANNEL_IMAGE } from "./images";
import { defaultMirrors } from "./regions";
import type { Report } from "./problems";

/** How a host is reached from a VPC without internet access. */
export type Reach = "vpc" | "internet" | "unknown";

/**
 * Hosts on the internet: the upstream registries and mirrors the defaults name, and Alibaba's public registry and
 * mirror endpoints (`registry.<region>.aliyuncs.com`, `crpi-….personal.cr.aliyuncs.com`, `mirrors.aliyun.com`), whose
 * VPC counterparts carry `-vpc` or `.cloud.` in their names.
 */
const INTERNET_HOST = new RegExp([
    "^(ghcr\\.io|registry\\.k8s\\.io|k8s\\.gcr\\.io|gcr\\.io|[a-z0-9-]+\\.gcr\\.io|quay\\.io|docker\\.io|registry-1\\.docker\\.io|public\\.ecr\\.aws)$",
    "^(pkgs\\.k8s\\.io|download\\.docker\\.com|mirrors\\.aliyun\\.com)$",
    "^registry\\.[a-z0-9-]+\\.aliyuncs\\.com$",
    "^crpi-[a-z0-9]+\\.[a-z0-9-]+\\.personal\\.cr\\.aliyuncs\\.com$",
].join("|"));

/**
 * Alibaba's VPC-internal endpoints: the package mirror `mirrors.cloud.aliyuncs.com`, Container Registry's VPC
 * endpoints (`registry-vpc.<region>.aliyuncs.com`, `crpi-…-vpc.<region>.personal.cr.aliyuncs.com`, and Enterprise
 * Edition's `<instance>-registry-vpc.<region>.cr.aliyuncs.com`, resolved in the VPCs on its access list).
 */
const VPC_HOST = /^(mirrors\.cloud\.aliyuncs\.com|registry-vpc\.[a-z0-9-]+\.aliyuncs\.com|[a-z0-9-]+-vpc\.[a-z0-9-]+\.(personal\.)?cr\.aliyuncs\.com)$/;

/** The host of an image reference or repository (`ghcr.io/flannel-io/flannel:v1` → ghcr.io; `flannel/flannel` → docker.io) or of a URL. */
export function sourceHost(source: string): string {
    const url = /^[a-z]+:\/\/([^/:]+)/i.exec(source);
    if (url) return url[1].toLowerCase();
    const first = source.split("/")[0];
    const isRegistry = source.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost");
    return (isRegistry ? first.split(":")[0] : "docker.io").toLowerCase();
}

/** How `host` is reached from a VPC (CIDR `vpcCidr`) without a NAT gateway. */
export function reachOf(host: string, vpcCidr: string): Reach {
    if (VPC_HOST.test(host)) return "vpc";
    if (INTERNET_HOST.test(host)) return "internet";
    const ip = parseCidr(`${host}/32`);
    const vpc = parseCidr(vpcCidr);
    if (typeof ip !== "string" && typeof vpc !== "string" && contains(vpc, ip)) return "vpc";
    return "unknown";
}

/** What the NAT rule looks at. */
export interface EgressInput {
    region: string;
    vpcCidr: string;
    natGateway: boolean;
    publicEndpoint: boolean;
    controlPlaneCount: number;
    /** Whether a pool autoscales (the Cluster Autoscaler runs). */
    autoscaled: boolean;
    images: {
        flannel?: string; flannelCniPlugin?: string; cloudControllerManager?: string; clusterAutoscalerRepository?: string;
        kubernetesRepository?: string; packageMirror?: string; admission?: string;
    };
}

/**
 * With `natGateway: false`, checks that nothing the cluster needs is on the internet (reported at
 * `network.natGateway`, the setting the user wrote): the package mirror, the Kubernetes, flannel, CCM, admission and
 * (with autoscaled pools) autoscaler images, the autoscaler's Location endpoint, and a public load balancer that the
 * nodes and masters would join through. A source on a host of unknown reach (a mirror of your own) is a warning at
 * its own path: it may be reachable through a route or DNS zone of yours.
 */
export function natOffProblems(e: EgressInput, problem: Report, warn: Report): void {
    if (e.natGateway) return;
    const mirrors = defaultMirrors(e.region);
    const sources: Array<{ path: string; value: string; given: boolean }> = [
        { path: "images.packageMirror", value: e.images.packageMirror ?? mirrors.packageMirror, given: e.images.packageMirror !== undefined },
        { path: "images.kubernetesRepository", value: e.images.kubernetesRepository ?? mirrors.imageRepository, given: e.images.kubernetesRepository !== undefined },
        { path: "images.flannel", value: e.images.flannel ?? DEFAULT_FLANNEL_IMAGE, given: e.images.flannel !== undefined },
        { path: "images.flannelCniPlugin", value: e.images.flannelCniPlugin ?? DEFAULT_FLANNEL_CNI_PLUGIN_IMAGE, given: e.images.flannelCniPlugin !== undefined },
        { path: "images.cloudControllerManager", value: e.images.cloudControllerManager ?? DEFAULT_CCM_IMAGE, given: e.images.cloudControllerManager !== undefined },
        { path: "images.admission", value: e.images.admission ?? DEFAULT_ADMISSION_IMAGE, given: e.images.admission !== undefined },
        ...(e.autoscaled ? [{ path: "images.clusterAutoscalerRepository", value: e.images.clusterAutoscalerRepository ?? DEFAULT_AUTOSCALER_IMAGE_REPOSITORY,
            given: e.images.clusterAutoscalerRepository !== undefined }] : []),
    ];
    const outside: string[] = [];
    for (const s of sources) {
        const reach = reachOf(sourceHost(s.value), e.vpcCidr);
        if (reach === "internet") {
            outside.push(`${s.path} (${s.given ? "" : "default "}${s.value})`);
        } else if (reach === "unknown") {
            warn(s.path, `${sourceHost(s.value)} is not a VPC-internal endpoint this project knows, and network.natGateway is false: make sure the VPC ` +
                "reaches it (a route or a PrivateZone record of yours) before the nodes boot, or they cannot install and join");
        }
    }
    if (e.autoscaled) {
        outside.push("the Cluster Autoscaler's endpoint lookup (location.aliyuncs.com over HTTPS; no VPC endpoint)");
    }
    if (outside.length > 0) {
        problem("network.natGateway", `is false, so the cluster's instances (no public address) reach nothing outside its new VPC, but they need: ${outside.join("; ")}. ` +
            "Set natGateway: true, or point every source at a VPC-internal endpoint (mirrors.cloud.aliyuncs.com, registry-vpc.<region>.aliyuncs.com, " +
            "or your Container Registry Enterprise Edition's -registry-vpc domain)" + (e.autoscaled ? " and make the pools fixed (size)" : ""));
    }
    if (e.publicEndpoint && e.controlPlaneCount > 1) {
        problem("network.natGateway", "is false with controlPlane.publicEndpoint: true and several masters: nodes and masters join through the internet-facing " +
            "load balancer, whose public address they reach only through the NAT gateway; set natGateway: true, or publicEndpoint: false");
    }
}
