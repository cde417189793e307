// In-memory models of the two sides admission talks to, holding state the tests assert on: the API server's
// Leases, Nodes, bootstrap-token Secrets and recorded decisions; the cloud's members of this cluster.
import * as crypto from "crypto";
import type { ClusterView, CloudView, Decision, Member } from "../../src/admission/admit";
import type { NodeRecord } from "../../src/admission/nodes";

export class ModelCluster implements ClusterView {
    leases = new Map<string, number>();
    nodes = new Map<string, NodeRecord>();
    tokens = new Map<string, { secret: string; providerId: string; instanceId: string; pool: string; expiresAt: number; used: number }>();
    decisions: Decision[] = [];
    async claimOnce(id: string, expiresAt: number): Promise<boolean> {
        await new Promise((r) => setImmediate(r));
        if (this.leases.has(id)) return false;
        this.leases.set(id, expiresAt);
        return true;
    }
    async node(providerId: string): Promise<NodeRecord | undefined> {
        return this.nodes.get(providerId);
    }
    async createNodeToken(providerId: string, instanceId: string, ttlSeconds: number, pool: string): Promise<{ token: string; expiresAt: number }> {
        const id = crypto.randomBytes(3).toString("hex");
        const secret = crypto.randomBytes(8).toString("hex");
        const expiresAt = Date.now() + ttlSeconds * 1000;
        this.tokens.set(id, { secret, providerId, instanceId, pool, expiresAt, used: 0 });
        return { token: `${id}.${secret}`, expiresAt };
    }
    async record(decision: Decision): Promise<void> {
        this.decisions.push(decision);
    }
}

export class ModelCloud implements CloudView {
    members = new Map<string, Member>();
    async member(instanceId: string): Promise<Member | undefined> {
        return this.members.get(instanceId);
    }
}
