// World: pure functions of the etcd quorum checks (src/recovery/quorum.ts), no emulator: a removal by name, which the
// sweep of stale members and the member replacement make, must name exactly one member.
import * as assert from "assert";
import { removalProblem, staleMembers, type EtcdMember } from "../src/recovery/quorum";

const member = (id: string, name: string, healthy: boolean, ip: string): EtcdMember =>
    ({ id, name, healthy, isLearner: false, peerUrls: [`https://${ip}:2380`], clientUrls: [`https://${ip}:2379`] });

describe("etcd member removal by name", () => {
    it("a stale member whose name another member holds too is not removed by that name", () => {
        // Five members, a healthy quorum either way: only the shared name stops the removal.
        const members = [
            member("a1", "cn-hangzhou.i-m0", true, "10.0.0.1"), member("a2", "cn-hangzhou.i-m1", true, "10.0.0.2"),
            member("a3", "cn-hangzhou.i-m2", true, "10.0.0.3"),
            member("b1", "cn-hangzhou.i-gone", false, "10.0.0.9"), member("b2", "cn-hangzhou.i-gone", false, "10.0.0.8"),
        ];
        const stale = staleMembers(members, "cn-hangzhou", (id) => id !== "i-gone");
        assert.deepStrictEqual(stale.map((m) => m.id), ["b1", "b2"]);
        assert.match(removalProblem(members, { name: "cn-hangzhou.i-gone" }) ?? "", /2 etcd members are named cn-hangzhou\.i-gone \(ids b1, b2\)/);
        // One member of that name: removed as before.
        assert.strictEqual(removalProblem(members.slice(0, 4), { name: "cn-hangzhou.i-gone" }), undefined);
    });
});
