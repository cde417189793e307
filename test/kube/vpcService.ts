/**
 * A server of this test process, reachable inside the cluster's VPC (test/kube/cluster.ts `vpc`) at an address of the
 * VPC router's (e.g. the metadata service's 100.100.100.200:80), with each caller's real address: a small bridge
 * process in the cluster's network namespace accepts TCP there and hands each connection to a unix socket in the run
 * folder, first line `PROXY TCP4 <source> <destination> <source port> <destination port>` (the PROXY protocol v1);
 * this side reads that line and gives the connection to the server with `remoteAddress` = the source.
 *
 *   const md = await serveInVpc(c, "metadata", { ip: "100.100.100.200", port: 80 }, http.createServer(handler));
 *   // handler: req.socket.remoteAddress is the node's private IP
 *   await md.stop();
 */
import * as fs from "fs";
import type * as http from "http";
import * as net from "net";
import type { Cluster } from "./cluster";

const BRIDGE = `
const net = require("net");
const [ip, port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock, () => {
    u.write("PROXY TCP4 " + c.remoteAddress.replace(/^::ffff:/, "") + " " + ip + " " + c.remotePort + " " + port + "\\r\\n");
    c.pipe(u); u.pipe(c);
  });
  c.on("error", () => u.destroy()); u.on("error", () => c.destroy());
}).listen(Number(port), ip, () => console.log("listening on " + ip + ":" + port));
`;

export interface VpcService {
    stop(): Promise<void>;
}

/** Serves `server` (HTTP, not listening itself) at `ip:port` inside `c`'s network namespace; it sees each caller's address. */
export function serveInVpc(c: Cluster, name: string, at: { ip: string; port: number }, server: http.Server): Promise<VpcService> {
    return bridgeFromVpc(c, name, at, (socket, source) => {
        // the server sees the caller's address (it checks who is asking, as the real services do)
        Object.defineProperty(socket, "remoteAddress", { value: source, configurable: true });
        server.emit("connection", socket);
    }, () => server.closeAllConnections());
}

/** Forwards TCP from `ip:port` inside `c`'s network namespace to `target` on this machine's loopback (e.g. the emulator). */
export function forwardFromVpc(c: Cluster, name: string, at: { ip: string; port: number }, target: { port: number }): Promise<VpcService> {
    const open = new Set<net.Socket>();
    return bridgeFromVpc(c, name, at, (socket) => {
        const t = net.connect(target.port, "127.0.0.1");
        open.add(socket);
        socket.on("close", () => open.delete(socket));
        socket.pipe(t);
        t.pipe(socket);
        t.on("error", () => socket.destroy());
    }, () => { for (const s of open) s.destroy(); });
}

async function bridgeFromVpc(c: Cluster, name: string, at: { ip: string; port: number }, accept: (socket: net.Socket, source: string) => void,
    closeAll: () => void): Promise<VpcService> {
    if (!c.netns) throw new Error("serveInVpc: the cluster has no network namespace");
    const sock = c.path(`vpc-${name}.sock`);
    fs.rmSync(sock, { force: true });
    const front = net.createServer((socket) => {
        let head = Buffer.alloc(0);
        const onData = (d: Buffer): void => {
            head = Buffer.concat([head, d]);
            const end = head.indexOf("\r\n");
            if (end < 0) {
                if (head.length > 200) socket.destroy();
                return;
            }
            socket.off("data", onData);
            const [, , source] = head.subarray(0, end).toString().split(" ");
            const rest = head.subarray(end + 2);
            socket.pause();
            if (rest.length) socket.unshift(rest);
            accept(socket, source);
            socket.resume();
        };
        socket.on("data", onData);
        socket.on("error", () => socket.destroy());
    });
    await new Promise<void>((resolve, reject) => { front.once("error", reject); front.listen(sock, () => resolve()); });
    const bridge = c.start(`vpc-${name}`, process.execPath, ["-e", BRIDGE, at.ip, String(at.port), sock]);
    await c.waitFor(`${name} listening on ${at.ip}:${at.port} in the VPC`, async () => fs.readFileSync(c.path(`logs/vpc-${name}.log`), "utf8").includes("listening"), 20_000);
    return {
        stop: async () => {
            await bridge.stop();
            closeAll();
            await new Promise<void>((r) => front.close(() => r()));
        },
    };
}
