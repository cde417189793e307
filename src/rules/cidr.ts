// IPv4 CIDR arithmetic: parsing, containment, overlap and vSwitch carving.
// Plain functions over numbers so that every rule is easy to test (see test/cidr.test.ts).

/** A parsed IPv4 CIDR block: `base` is the network address as an unsigned 32-bit number. */
export interface Cidr {
    base: number;
    prefix: number;
}

const CIDR_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/**
 * Parses `a.b.c.d/n`. Returns a reason string when the text is not a canonical IPv4 CIDR
 * (octets 0–255, prefix 0–32, no host bits set), so the caller can name the property.
 */
export function parseCidr(text: string): Cidr | string {
    const m = CIDR_RE.exec(text.trim());
    if (!m) {
        return `"${text}" is not an IPv4 CIDR block (expected a.b.c.d/n, e.g. 192.168.0.0/16)`;
    }
    const octets = m.slice(1, 5).map(Number);
    const prefix = Number(m[5]);
    if (octets.some((o) => o > 255)) {
        return `"${text}" has an octet above 255`;
    }
    if (prefix > 32) {
        return `"${text}" has a prefix above /32`;
    }
    const base = ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
    if ((base & ~maskOf(prefix)) >>> 0 !== 0) {
        return `"${text}" has host bits set (did you mean ${formatCidr({ base: (base & maskOf(prefix)) >>> 0, prefix })}?)`;
    }
    return { base, prefix };
}

/** True when `text` is a string that parses as a canonical IPv4 CIDR. */
export function isCidr(text: unknown): text is string {
    return typeof text === "string" && typeof parseCidr(text) !== "string";
}

/** The netmask of a prefix as an unsigned 32-bit number. */
export function maskOf(prefix: number): number {
    return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Number of addresses in the block. */
export function sizeOf(c: Cidr): number {
    return 2 ** (32 - c.prefix);
}

export function formatIp(n: number): string {
    return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

export function formatCidr(c: Cidr): string {
    return `${formatIp(c.base)}/${c.prefix}`;
}

/** True when the two blocks share at least one address. */
export function overlaps(a: Cidr, b: Cidr): boolean {
    const aEnd = a.base + sizeOf(a) - 1;
    const bEnd = b.base + sizeOf(b) - 1;
    return a.base <= bEnd && b.base <= aEnd;
}

/** True when every address of `inner` is inside `outer`. */
export function contains(outer: Cidr, inner: Cidr): boolean {
    return inner.prefix >= outer.prefix && (inner.base & maskOf(outer.prefix)) >>> 0 === outer.base;
}

/** Alibaba Cloud accepts vSwitch masks from /16 to /29. */
export const VSWITCH_MIN_PREFIX = 16;
export const VSWITCH_MAX_PREFIX = 29;

/**
 * The prefix used when vSwitches are carved automatically from the VPC: 16 equal slices of the VPC
 * (room to add zones later), at least enough slices for every zone, and within Alibaba's /16–/29 range.
 * Returns undefined when the VPC is too small to hold one vSwitch per zone.
 */
export function carvedVSwitchPrefix(vpc: Cidr, zoneCount: number): number | undefined {
    const bitsForZones = Math.ceil(Math.log2(Math.max(zoneCount, 1)));
    const prefix = Math.max(VSWITCH_MIN_PREFIX, vpc.prefix + Math.max(4, bitsForZones));
    if (prefix > VSWITCH_MAX_PREFIX || prefix - vpc.prefix < bitsForZones) {
        return undefined;
    }
    return prefix;
}

/**
 * Carves one vSwitch CIDR per zone from the start of the VPC block, in zone order.
 * Deterministic: the same VPC and zone count always give the same blocks, so adding a zone at the
 * end never moves an existing vSwitch.
 */
export function carveVSwitchCidrs(vpcCidr: string, zoneCount: number): string[] {
    const vpc = parseCidr(vpcCidr);
    if (typeof vpc === "string") {
        throw new Error(vpc);
    }
    const prefix = carvedVSwitchPrefix(vpc, zoneCount);
    if (prefix === undefined) {
        throw new Error(`${vpcCidr} is too small to carve ${zoneCount} vSwitches of at most /${VSWITCH_MAX_PREFIX}`);
    }
    const step = 2 ** (32 - prefix);
    return Array.from({ length: zoneCount }, (_, i) => formatCidr({ base: vpc.base + i * step, prefix }));
}

/** How many node pod CIDRs of `/nodeMaskSize` fit in the pod CIDR (0 when the mask is not finer). */
export function nodeCidrCount(pod: Cidr, nodeMaskSize: number): number {
    return nodeMaskSize > pod.prefix ? 2 ** (nodeMaskSize - pod.prefix) : 0;
}
