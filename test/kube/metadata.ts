/**
 * The ECS instance metadata service (`http://100.100.100.200`) of the emulator's instances, for the real nodes and the
 * master's add-ons: each request is answered for the instance whose private IP asks (as ECS does: the service knows the
 * caller by its address), from the emulator's state. Items (docs/upstream.md#ecs-imds, #ecs-identity-document):
 *
 *   PUT /latest/api/token                                   an IMDSv2 session token
 *   GET /latest/meta-data/<item>                            region-id, instance-id, private-ipv4, hostname, zone-id,
 *                                                           vpc-id, vswitch-id, instance/instance-type, image-id,
 *                                                           owner-account-id, network-type, mac
 *   GET /latest/meta-data/ram/security-credentials/[role]  the instance RAM role and its STS credentials (the emulator's
 *                                                           test AccessKey plus a token), for instances given a role
 *   GET /latest/dynamic/instance-identity/document          the signed identity document's JSON
 *   GET /latest/dynamic/instance-identity/pkcs7?audience=   its PKCS#7 signature for that audience, made with the test
 *                                                           PKI the admission tests use (testing/admission/pki.ts)
 *   GET /latest/user-data                                   the instance's user data
 *
 * An address of no instance gets 404. `requests` records `<ip> <method> <path>` for the tests.
 */
import * as crypto from "crypto";
import * as http from "http";
import { documentWithAudience } from "../../src/admission/admit";
import type { Emulator, EmuInstance } from "../../testing/emulator";
import { TEST_CREDENTIALS } from "../../testing/emulator";
import { identityDocument } from "../../testing/admission/harness";
import type { TestPki } from "../../testing/admission/pki";

export interface MetadataOptions {
    emu: Emulator;
    /** Signs identity documents (the admission tests' test PKI). */
    pki: TestPki;
    /** The account the instances belong to (`owner-account-id`). */
    accountId: string;
    /** Instance id → RAM role name, for the instances that have one (the masters). */
    roles?: Record<string, string>;
    /** More addresses of an instance (a master's other IPs, and 100.100.100.200 itself for its own processes). */
    aliases?: Record<string, string>;
}

export interface Metadata {
    server: http.Server;
    /** Answers one request for the instance with this id (the cloud proxy uses it for the master's add-ons). */
    answerFor(instanceId: string, req: http.IncomingMessage, res: http.ServerResponse): void;
    requests: string[];
}

function send(res: http.ServerResponse, status: number, body: string | object): void {
    const text = typeof body === "string" ? body : JSON.stringify(body);
    res.writeHead(status, { "content-type": typeof body === "string" ? "text/plain" : "application/json" });
    res.end(text);
}

export function metadataService(o: MetadataOptions): Metadata {
    const requests: string[] = [];
    const byIp = (ip: string): EmuInstance | undefined => {
        const alias = o.aliases?.[ip];
        if (alias) return o.emu.instances.get(alias);
        return [...o.emu.instances.values()].find((i) => i.privateIp === ip);
    };
    const answer = (inst: EmuInstance, req: http.IncomingMessage, res: http.ServerResponse): void => {
        const url = new URL(req.url ?? "/", "http://100.100.100.200");
        const p = url.pathname;
        if (req.method === "PUT" && p === "/latest/api/token") return send(res, 200, `imds-${crypto.randomBytes(12).toString("hex")}`);
        const doc = () => identityDocument({ instanceId: inst.instanceId, ip: inst.privateIp, accountId: o.accountId, regionId: inst.regionId });
        if (p === "/latest/dynamic/instance-identity/document") return send(res, 200, doc());
        if (p === "/latest/dynamic/instance-identity/pkcs7") {
            void o.pki.signAsync(documentWithAudience(doc(), url.searchParams.get("audience") ?? "")).then((sig) => send(res, 200, sig), () => send(res, 500, "sign failed"));
            return;
        }
        if (p === "/latest/user-data") return send(res, 200, Buffer.from(inst.userData, "base64").toString("utf8"));
        const item = p.startsWith("/latest/meta-data/") ? p.slice("/latest/meta-data/".length).replace(/^Ram\//, "ram/") : undefined;
        const role = o.roles?.[inst.instanceId];
        const items: Record<string, string> = {
            "region-id": inst.regionId, "instance-id": inst.instanceId, "private-ipv4": inst.privateIp, "hostname": inst.hostName,
            "zone-id": inst.zoneId, "vpc-id": inst.vpcId, "vswitch-id": inst.vSwitchId, "instance/instance-type": inst.instanceType,
            "image-id": inst.imageId, "owner-account-id": o.accountId, "network-type": "vpc", "mac": "00:16:3e:00:00:01",
        };
        if (item !== undefined && items[item] !== undefined) return send(res, 200, items[item]);
        if (role && (item === "ram/security-credentials/" || item === "ram/security-credentials")) return send(res, 200, role);
        if (role && item === `ram/security-credentials/${role}`) {
            const now = new Date();
            return send(res, 200, {
                AccessKeyId: TEST_CREDENTIALS.accessKeyId, AccessKeySecret: TEST_CREDENTIALS.accessKeySecret, SecurityToken: `emulator-sts-${crypto.randomBytes(8).toString("hex")}`,
                Expiration: new Date(now.getTime() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z"), LastUpdated: now.toISOString().replace(/\.\d+Z$/, "Z"), Code: "Success",
            });
        }
        send(res, 404, "Not Found");
    };
    const server = http.createServer((req, res) => {
        const ip = (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
        requests.push(`${ip} ${req.method} ${req.url}`);
        const inst = byIp(ip);
        if (!inst) return send(res, 404, "Not Found");
        answer(inst, req, res);
    });
    return {
        server, requests,
        answerFor: (instanceId, req, res) => {
            const inst = o.emu.instances.get(instanceId);
            requests.push(`${instanceId} ${req.method} ${req.url}`);
            if (!inst) return send(res, 404, "Not Found");
            answer(inst, req, res);
        },
    };
}
