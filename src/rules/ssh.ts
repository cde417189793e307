// SSH connections to existing nodes (`existingNodes[].connection`): what the remote command (@pulumi/command
// 1.2.1) does with each field, so that a value it would fail on at `pulumi up` is refused before anything is
// created. It dials `net.JoinHostPort(host, port)` and parses the key with golang.org/x/crypto/ssh
// (`ParsePrivateKey`, or `ParsePrivateKeyWithPassphrase` when a passphrase is given). Sources:
// docs/upstream.md#ssh-connection. Messages never repeat a key, a passphrase or a password.
import { isIP } from "net";
import type { Report } from "./problems";

/**
 * What an SSH secret given as a Pulumi secret (an Output) stands in as while the config is checked: present,
 * with a value not known yet, so the rules that read the value skip it.
 */
export const SECRET_STAND_IN = "<secret>";

/** Fields of a connection whose values are secrets. */
export const SSH_SECRET_FIELDS: readonly string[] = ["privateKey", "privateKeyPassword", "password"];

/** A DNS name: labels of letters, digits, `-` and `_` (Go's resolver takes `_`), not starting or ending with `-`. */
const DNS_NAME = /^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/**
 * Why `host` is not an address the remote command can dial, or undefined. It joins `host` and `port` itself,
 * so a port or a user written into `host` makes an address that does not resolve (`10.0.0.5:2222:22`).
 */
export function sshHostProblem(host: string): string | undefined {
    if (host !== host.trim() || /\s/.test(host)) {
        return `"${host}" contains white space: give the address alone (e.g. 192.168.16.20 or node-1.example.com)`;
    }
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(host)) {
        return `"${host}" is a URL: give the address alone (e.g. 192.168.16.20), the user in connection.user and the port in connection.port`;
    }
    const at = host.lastIndexOf("@");
    if (at >= 0) {
        return `"${host}" has a user in it: set connection.user to "${host.slice(0, at)}" and connection.host to "${host.slice(at + 1)}"`;
    }
    const bracketed = /^\[([^\]]*)\](?::(\d+))?$/.exec(host);
    if (bracketed) {
        return bracketed[2] !== undefined
            ? `"${host}" has a port in it: set connection.host to "${bracketed[1]}" (no brackets) and connection.port to ${Number(bracketed[2])}`
            : `"${host}": give an IPv6 address without brackets ("${bracketed[1]}"); the port goes in connection.port`;
    }
    if (isIP(host) !== 0) {
        return undefined;
    }
    const hostPort = /^([^:]+):(\d+)$/.exec(host);
    if (hostPort) {
        return `"${host}" has a port in it: set connection.host to "${hostPort[1]}" and connection.port to ${Number(hostPort[2])}`;
    }
    if (host.includes("/")) {
        return `"${host}" is not an address (a path or a CIDR?): give the IP address or DNS name the machine running Pulumi reaches the instance at`;
    }
    if (/^[0-9.]+$/.test(host)) {
        return `"${host}" is not an IPv4 address (four numbers 0–255)`;
    }
    return DNS_NAME.test(host) ? undefined
        : `"${host}" is neither an IP address nor a DNS name (letters, digits, "-" and "." only)`;
}

/** Why `user` is not a login name, or undefined: no white space, no `@`, `:` or `/` (a host or a path written into it). */
export function sshUserProblem(user: string): string | undefined {
    if (user.includes("@")) {
        return `"${user}" has a host in it: connection.user is the login name alone (e.g. root), the address goes in connection.host`;
    }
    return /[\s:/]/.test(user) ? `"${user}" is not a login name (no white space, ":" or "/"; e.g. root or ubuntu)` : undefined;
}

/** PEM block types golang.org/x/crypto/ssh parses as a private key (ParseRawPrivateKey). */
const PRIVATE_KEY_TYPES = ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "DSA PRIVATE KEY", "OPENSSH PRIVATE KEY"];

const HOW_TO_SET = "set the key's contents as a secret: `pulumi config set --secret --path " +
    "'alicloud-kubeadm:cluster.existingNodes[<i>].connection.privateKey' < ~/.ssh/id_ed25519`";

/**
 * Why `key` is not a private key the remote command can use, or undefined. The key is never repeated. `passphrase`
 * says whether `privateKeyPassword` is set: an encrypted key needs it, and an unencrypted one refuses it
 * (x/crypto/ssh answers "key is not password protected" / "not an encrypted key").
 */
export function sshPrivateKeyProblem(key: string, passphrase: boolean): string | undefined {
    const text = key.trim();
    const firstBlock = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(text);
    if (!firstBlock) {
        if (/^(ssh-(rsa|dss|ed25519)|ecdsa-sha2-|sk-(ssh|ecdsa)-)/.test(text)) {
            return `is a public key (the .pub file's one line); the private key is the file without .pub: ${HOW_TO_SET}`;
        }
        if (/^PuTTY-User-Key-File-/.test(text)) {
            return "is a PuTTY key (.ppk), which the SSH client cannot read: convert it with `puttygen key.ppk -O private-openssh -o key`, then " + HOW_TO_SET;
        }
        if (!text.includes("\n") && /^(~|\/|\.{1,2}\/|[A-Za-z]:[\\/])|\.(pem|key|ppk)$|(^|[\\/])id_[a-z0-9]+$/.test(text)) {
            return `is a file path, not a key (the value is not read from a file): ${HOW_TO_SET}`;
        }
        return `is not a PEM private key (no -----BEGIN … PRIVATE KEY----- line; the value is not repeated: it is a secret): ${HOW_TO_SET}`;
    }
    const type = firstBlock[1];
    if (/PUBLIC KEY$/.test(type)) {
        return `is a public key (-----BEGIN ${type}-----); give the private key: ${HOW_TO_SET}`;
    }
    if (type === "CERTIFICATE") {
        return "is a certificate (-----BEGIN CERTIFICATE-----), not a private key: " + HOW_TO_SET;
    }
    if (type === "ENCRYPTED PRIVATE KEY") {
        return "is an encrypted PKCS#8 key (-----BEGIN ENCRYPTED PRIVATE KEY-----), which the SSH client does not read: convert it to the OpenSSH format " +
            "with `ssh-keygen -p -f <key>` (it keeps the passphrase) and set that";
    }
    if (!PRIVATE_KEY_TYPES.includes(type)) {
        return `starts with a -----BEGIN ${type}----- block, which is not a private key the SSH client reads (RSA, EC, DSA, PKCS#8 or OpenSSH private key)`;
    }
    if (!new RegExp(`-----END ${type}-----`).test(text)) {
        return `is cut short: its -----BEGIN ${type}----- line has no -----END ${type}----- line (set the whole file)`;
    }
    const encrypted = privateKeyEncrypted(text, type);
    if (encrypted === true && !passphrase) {
        return "is encrypted with a passphrase: set connection.privateKeyPassword too (as a secret), or give an unencrypted key";
    }
    if (encrypted === false && passphrase) {
        return "is not encrypted, and the SSH client refuses a passphrase for a key that has none: remove connection.privateKeyPassword";
    }
    return undefined;
}

/**
 * Whether a PEM private key is encrypted, or undefined when that cannot be read: legacy PEM says so in a
 * `Proc-Type: 4,ENCRYPTED` header; an OpenSSH key names its cipher (`none` when unencrypted) after the magic
 * `openssh-key-v1\0` (PROTOCOL.key of OpenSSH).
 */
function privateKeyEncrypted(text: string, type: string): boolean | undefined {
    const body = new RegExp(`-----BEGIN ${type}-----([\\s\\S]*?)-----END ${type}-----`).exec(text)?.[1] ?? "";
    if (type !== "OPENSSH PRIVATE KEY") {
        return /^Proc-Type:\s*4,ENCRYPTED/m.test(body);
    }
    const der = Buffer.from(body.replace(/\s+/g, ""), "base64");
    const magic = "openssh-key-v1\0";
    if (der.length < magic.length + 4 || der.subarray(0, magic.length).toString("latin1") !== magic) {
        return undefined;
    }
    const length = der.readUInt32BE(magic.length);
    const cipher = der.subarray(magic.length + 4, magic.length + 4 + length).toString("latin1");
    return cipher !== "none";
}

/** The fields of a connection the rules read (any of them may be absent, an Output, or a secret's stand-in). */
export interface SshConnectionFields {
    host?: unknown;
    port?: unknown;
    user?: unknown;
    privateKey?: unknown;
    privateKeyPassword?: unknown;
    password?: unknown;
}

/**
 * Checks the content of a connection's fields that are plain strings (reported at `host`, `user`, `privateKey`,
 * `privateKeyPassword`; a secret given as an Output is skipped, it cannot be read before `pulumi up`).
 */
export function sshConnectionContentProblems(c: SshConnectionFields, report: Report): void {
    const plain = (v: unknown): v is string => typeof v === "string" && v !== SECRET_STAND_IN;
    if (typeof c.host === "string" && c.host.length > 0) {
        const reason = sshHostProblem(c.host);
        if (reason) report("host", reason);
    }
    if (typeof c.user === "string" && c.user.length > 0) {
        const reason = sshUserProblem(c.user);
        if (reason) report("user", reason);
    }
    const passphrase = c.privateKeyPassword !== undefined;
    if (plain(c.privateKey) && c.privateKey.length > 0) {
        const reason = sshPrivateKeyProblem(c.privateKey, passphrase);
        if (reason) report("privateKey", reason);
    } else if (c.privateKey === undefined && passphrase) {
        report("privateKeyPassword", "is the passphrase of connection.privateKey, which is not set: set the key too, or remove the passphrase");
    }
}

/** The address a connection dials, for telling two nodes on one target apart: the host (case-insensitive for names) and the port. */
export function sshTarget(host: string, port: number): string {
    return `${isIP(host) ? host : host.toLowerCase().replace(/\.$/, "")}:${port}`;
}
