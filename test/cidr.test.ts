// World: the functions and files themselves: no cluster, no cloud.
import * as assert from "assert";
import fc from "fast-check";
import { carveVSwitchCidrs, carvedVSwitchPrefix, contains, formatCidr, nodeCidrCount, overlaps, parseCidr, type Cidr } from "../src/rules/cidr";

const cidr = (text: string): Cidr => {
    const c = parseCidr(text);
    if (typeof c === "string") {
        throw new Error(c);
    }
    return c;
};

/** Arbitrary canonical IPv4 CIDR with a prefix in [min, max]. */
const arbCidr = (min: number, max: number) =>
    fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min, max })).map(([ip, prefix]) => {
        const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
        return { base: (ip & mask) >>> 0, prefix };
    });

describe("CIDR helpers", () => {
    it("parses and formats canonical blocks, and explains the rest", () => {
        assert.deepStrictEqual(cidr("192.168.0.0/16"), { base: 0xc0a80000, prefix: 16 });
        assert.strictEqual(formatCidr(cidr("10.96.0.0/12")), "10.96.0.0/12");
        assert.match(parseCidr("10.0.0.1/8") as string, /host bits set \(did you mean 10\.0\.0\.0\/8\?\)/);
        assert.match(parseCidr("10.0.0.0") as string, /not an IPv4 CIDR/);
        assert.match(parseCidr("256.0.0.0/8") as string, /octet above 255/);
    });

    it("overlap and containment agree with address arithmetic", () => {
        fc.assert(fc.property(arbCidr(0, 32), arbCidr(0, 32), (a, b) => {
            const aEnd = a.base + 2 ** (32 - a.prefix) - 1;
            const bEnd = b.base + 2 ** (32 - b.prefix) - 1;
            assert.strictEqual(overlaps(a, b), !(aEnd < b.base || bEnd < a.base));
            assert.strictEqual(contains(a, b), b.base >= a.base && bEnd <= aEnd);
            assert.strictEqual(overlaps(a, b), overlaps(b, a));
        }));
    });

    it("carved vSwitches are inside the VPC, pairwise disjoint, one per zone, /16–/29", () => {
        fc.assert(fc.property(arbCidr(8, 28), fc.integer({ min: 1, max: 16 }), (vpc, zones) => {
            if (carvedVSwitchPrefix(vpc, zones) === undefined) {
                return; // too small: validation reports it (tested in config tests)
            }
            const carved = carveVSwitchCidrs(formatCidr(vpc), zones).map(cidr);
            assert.strictEqual(carved.length, zones);
            for (const [i, v] of carved.entries()) {
                assert.ok(contains(vpc, v), `${formatCidr(v)} inside ${formatCidr(vpc)}`);
                assert.ok(v.prefix >= 16 && v.prefix <= 29);
                for (const w of carved.slice(0, i)) {
                    assert.ok(!overlaps(v, w), `${formatCidr(v)} vs ${formatCidr(w)}`);
                }
            }
        }));
    });

    it("carving is stable when zones are added (existing vSwitches never move)", () => {
        fc.assert(fc.property(arbCidr(8, 24), fc.integer({ min: 1, max: 15 }), (vpc, zones) => {
            if (carvedVSwitchPrefix(vpc, zones + 1) !== carvedVSwitchPrefix(vpc, zones) || carvedVSwitchPrefix(vpc, zones) === undefined) {
                return;
            }
            const before = carveVSwitchCidrs(formatCidr(vpc), zones);
            assert.deepStrictEqual(carveVSwitchCidrs(formatCidr(vpc), zones + 1).slice(0, zones), before);
        }));
    });

    it("refuses a VPC too small for one vSwitch per zone", () => {
        assert.strictEqual(carvedVSwitchPrefix(cidr("192.168.0.0/28"), 4), undefined);
        assert.throws(() => carveVSwitchCidrs("192.168.0.0/28", 4), /too small to carve 4 vSwitches/);
        assert.deepStrictEqual(carveVSwitchCidrs("192.168.0.0/24", 3), ["192.168.0.0/28", "192.168.0.16/28", "192.168.0.32/28"]);
    });

    it("counts node CIDRs", () => {
        assert.strictEqual(nodeCidrCount(cidr("172.16.0.0/16"), 25), 512);
        assert.strictEqual(nodeCidrCount(cidr("172.16.0.0/16"), 16), 0);
    });
});
