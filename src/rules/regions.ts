// Alibaba Cloud regions and zones: the regions this project knows, which of them are in mainland China,
// each region's default package and image sources, and the grammar of zone ids.
// Sources: docs/upstream.md#alibaba-regions and #alibaba-zones.

/** Package and image sources for a region. */
export interface Mirrors {
    /** Base URL of the package mirror, e.g. `https://mirrors.cloud.aliyuncs.com` or `https://pkgs.k8s.io`. */
    packageMirror: string;
    /** Registry for the control-plane images and the pause image, e.g. `registry.k8s.io`. */
    imageRepository: string;
}

/** Alibaba's VPC-internal package mirror and `google_containers` image mirror: the defaults in mainland China. */
export const ALIBABA_MIRRORS: Readonly<Mirrors> = {
    packageMirror: "https://mirrors.cloud.aliyuncs.com",
    imageRepository: "registry.cn-hangzhou.aliyuncs.com/google_containers",
};

/** The upstream Kubernetes sources: the defaults everywhere else (and for a region this table does not know). */
export const UPSTREAM_MIRRORS: Readonly<Mirrors> = { packageMirror: "https://pkgs.k8s.io", imageRepository: "registry.k8s.io" };

/** What this project knows of a region. */
export interface Region {
    /** The console's name, e.g. `China (Hangzhou)`. */
    name: string;
    /** In mainland China: upstream sources (pkgs.k8s.io, registry.k8s.io, ghcr.io) may be slow or unreachable there. */
    mainlandChina: boolean;
    /** Default package and image sources of nodes in the region. */
    mirrors: Readonly<Mirrors>;
}

const china = (name: string): Region => ({ name, mainlandChina: true, mirrors: ALIBABA_MIRRORS });
const abroad = (name: string): Region => ({ name, mainlandChina: false, mirrors: UPSTREAM_MIRRORS });

/**
 * The public regions, by id. Regions open often and there is no list to fetch at synth time: a region
 * missing here is a warning (it then gets the upstream sources), never an error.
 */
export const REGIONS: Readonly<Record<string, Region>> = {
    "cn-qingdao": china("China (Qingdao)"),
    "cn-beijing": china("China (Beijing)"),
    "cn-zhangjiakou": china("China (Zhangjiakou)"),
    "cn-huhehaote": china("China (Hohhot)"),
    "cn-wulanchabu": china("China (Ulanqab)"),
    "cn-hangzhou": china("China (Hangzhou)"),
    "cn-shanghai": china("China (Shanghai)"),
    "cn-nanjing": china("China (Nanjing - Local Region)"),
    "cn-fuzhou": china("China (Fuzhou - Local Region)"),
    "cn-shenzhen": china("China (Shenzhen)"),
    "cn-heyuan": china("China (Heyuan)"),
    "cn-guangzhou": china("China (Guangzhou)"),
    "cn-chengdu": china("China (Chengdu)"),
    "cn-wuhan-lr": china("China (Wuhan - Local Region)"),
    "cn-beijing-finance-1": china("China North 2 Finance"),
    "cn-shanghai-finance-1": china("China East 2 Finance"),
    "cn-shenzhen-finance-1": china("China South 1 Finance"),
    "cn-hongkong": abroad("China (Hong Kong)"),
    "ap-northeast-1": abroad("Japan (Tokyo)"),
    "ap-northeast-2": abroad("South Korea (Seoul)"),
    "ap-southeast-1": abroad("Singapore"),
    "ap-southeast-3": abroad("Malaysia (Kuala Lumpur)"),
    "ap-southeast-5": abroad("Indonesia (Jakarta)"),
    "ap-southeast-6": abroad("Philippines (Manila)"),
    "ap-southeast-7": abroad("Thailand (Bangkok)"),
    "ap-southeast-8": abroad("Malaysia (Johor)"),
    "us-east-1": abroad("US (Virginia)"),
    "us-west-1": abroad("US (Silicon Valley)"),
    "us-southeast-1": abroad("US (Atlanta)"),
    "na-south-1": abroad("Mexico"),
    "eu-central-1": abroad("Germany (Frankfurt)"),
    "eu-west-1": abroad("UK (London)"),
    "me-east-1": abroad("UAE (Dubai)"),
    "me-central-1": abroad("SAU (Riyadh - Partner Region)"),
};

/** A region id's shape: lower-case words and numbers joined by `-` (`cn-hangzhou`, `ap-southeast-1`, `cn-shanghai-finance-1`). */
const REGION_ID = /^[a-z]{2,}(-[a-z0-9]+)+$/;
/** A zone id of an unknown region whose id ends in a number: `<region>` directly followed by one letter. */
const NUMBERED_REGION_ZONE = /^([a-z]+(?:-[a-z0-9]+)*-[0-9]+)[a-z]$/;

/** The table entry of a region, or undefined for a region this project does not know. */
export function regionInfo(region: string): Region | undefined {
    return Object.prototype.hasOwnProperty.call(REGIONS, region) ? REGIONS[region] : undefined;
}

/** True for region ids of mainland China (from the table; an unknown region is not). */
export function isChinaRegion(region: string): boolean {
    return regionInfo(region)?.mainlandChina ?? false;
}

/** Default package and image sources for a region: the table's, or the upstream ones for an unknown region. */
export function defaultMirrors(region: string): Mirrors {
    return { ...(regionInfo(region)?.mirrors ?? UPSTREAM_MIRRORS) };
}

/**
 * True when `zone` is a zone id of `region`: the region id and one lower-case letter, joined by `-` when the
 * region id ends in a letter (`cn-hangzhou-h`, `cn-wuhan-lr-a`) and directly when it ends in a digit
 * (`ap-southeast-1a`, `cn-shanghai-finance-1z`). Alibaba's zone ids follow that one pattern
 * (docs/upstream.md#alibaba-zones), so `cn-hangzhouh` or `ap-southeast-1-a` name no zone.
 */
export function isZoneOf(zone: string, region: string): boolean {
    const separator = /[0-9]$/.test(region) ? "" : "-";
    return zone.length === region.length + separator.length + 1 && zone.startsWith(region + separator) && /[a-z]$/.test(zone);
}

/** The region a zone id belongs to, when `text` is recognisably a zone id (of a known region, or of a numbered one). */
export function regionOfZone(text: string): string | undefined {
    const known = Object.keys(REGIONS).find((r) => isZoneOf(text, r));
    if (known) {
        return known;
    }
    const m = NUMBERED_REGION_ZONE.exec(text);
    return m && !regionInfo(text) ? m[1] : undefined;
}

/** Why `region` cannot be an `alicloud:region`, or undefined (an unknown but well-formed id is fine: see {@link regionWarning}). */
export function regionProblem(region: string): string | undefined {
    const of = regionInfo(region) ? undefined : regionOfZone(region);
    if (of) {
        return `"${region}" is a zone; the region is ${of} (run \`pulumi config set alicloud:region ${of}\` and list ${region} under zones)`;
    }
    return REGION_ID.test(region) ? undefined : `"${region}" is not a region id (expected e.g. cn-hangzhou or ap-southeast-1)`;
}

/** The warning for a well-formed region id this project does not know, or undefined. */
export function regionWarning(region: string): string | undefined {
    if (regionInfo(region) || regionProblem(region)) {
        return undefined;
    }
    return `region ${region} is not in this project's region table (src/rules/regions.ts): nodes default to the upstream package and ` +
        `image sources (${UPSTREAM_MIRRORS.packageMirror}, ${UPSTREAM_MIRRORS.imageRepository}); in mainland China set images.packageMirror and images.kubernetesRepository`;
}

/** Why `zone` is not a zone of `region`, or undefined. */
export function zoneProblem(zone: string, region: string): string | undefined {
    if (isZoneOf(zone, region)) {
        return undefined;
    }
    const other = regionOfZone(zone);
    const hint = other && other !== region ? ` (it is a zone of ${other})` : "";
    const style = /[0-9]$/.test(region) ? "directly followed by one letter" : "followed by \"-\" and one letter";
    return `"${zone}" is not a zone of region ${region}${hint}: a zone id of ${region} is the region id ${style}, e.g. ${exampleZone(region)}`;
}

/** An example zone id of a region, in the region's own style. */
export function exampleZone(region: string): string {
    return region === "cn-hangzhou" ? "cn-hangzhou-h" : /[0-9]$/.test(region) ? `${region}a` : `${region}-a`;
}

/** The day the zone letters below were gathered (docs/upstream.md#alibaba-zone-list says from where). */
export const ZONES_AS_OF = "2026-12-02";

/**
 * Zone letters of the regions whose list this project keeps (the others are checked by the zone id grammar only).
 * The lists may be incomplete, and zones open and retire without notice: a zone missing here is a warning, never
 * an error.
 */
export const KNOWN_ZONES: Readonly<Record<string, string>> = {
    "cn-hangzhou": "befghijk",
    "cn-shanghai": "befglmn",
    "cn-beijing": "acdefghijkl",
    "ap-southeast-1": "abc",
};

/**
 * The warning for a zone of a region with a kept list that is not on it, or undefined: it may have opened after
 * {@link ZONES_AS_OF}, or it does not exist (retired, or a typo), and then creating its vSwitch fails right after the
 * VPC is created. A zone that is not a zone of the region at all is {@link zoneProblem}'s.
 */
export function zoneWarning(zone: string, region: string): string | undefined {
    const letters = Object.prototype.hasOwnProperty.call(KNOWN_ZONES, region) ? KNOWN_ZONES[region] : undefined;
    if (letters === undefined || !isZoneOf(zone, region) || letters.includes(zone.slice(-1))) {
        return undefined;
    }
    const known = [...letters].map((l) => (/[0-9]$/.test(region) ? `${region}${l}` : `${region}-${l}`));
    return `"${zone}" is not among the zones of ${region} this project knows (${known.join(", ")}; as of ${ZONES_AS_OF}): if it opened since, ` +
        "ignore this; otherwise its vSwitch cannot be created and `pulumi up` stops right after creating the VPC";
}
