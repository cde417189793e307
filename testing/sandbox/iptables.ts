/**
 * Reads the rule set the sandbox's iptables stub keeps (testing/sandbox/stubs/iptables) and walks a packet through
 * it in netfilter's order, to say which rule decides it. A model, kept harsh: a match this walker does not
 * understand (`-m ...` other than comment) counts as matching, so a rule that might accept a packet first does.
 * DNAT rewrites the destination (`--to-destination ADDR[:PORT]`) and the walk goes on with it through the later
 * tables, as netfilter does after nat PREROUTING (kube-proxy's Service rules); the other NAT targets end their table.
 * Routing is not modelled: a forwarded packet stays forwarded after DNAT (its new destination is not local).
 */
import * as fs from "fs";
import * as path from "path";

/** table → chain → rules (each the argument list after `-A <chain>`). */
export type RuleSet = Record<string, Record<string, string[][]>>;

/** Reads the stub's rule set from a sandbox's stub state directory (`Sandbox.env.AK_STUB_STATE`). */
export function readRuleSet(stubState: string): RuleSet {
    const base = path.join(stubState, "iptables");
    const set: RuleSet = {};
    if (!fs.existsSync(base)) return set;
    for (const table of fs.readdirSync(base)) {
        set[table] = {};
        for (const chain of fs.readdirSync(path.join(base, table))) {
            set[table][chain] = fs.readFileSync(path.join(base, table, chain), "utf8").split("\n").filter(Boolean).map((l) => l.split(" "));
        }
    }
    return set;
}

/** A packet: `in` set = it enters the node on that interface (forwarded); unset = the node itself sends it. */
export interface Packet { in?: string; out: string; src: string; dst: string }

/** Where a packet's fate was decided: the first DROP/REJECT, or `passed`; `dnat`: the destination it was rewritten to. */
export interface Verdict { verdict: "dropped" | "passed"; table?: string; chain?: string; rule?: string; dnat?: string }

const FORWARD_PATH: Array<[string, string]> = [["raw", "PREROUTING"], ["mangle", "PREROUTING"], ["nat", "PREROUTING"],
    ["mangle", "FORWARD"], ["filter", "FORWARD"], ["mangle", "POSTROUTING"], ["nat", "POSTROUTING"]];
const LOCAL_PATH: Array<[string, string]> = [["raw", "OUTPUT"], ["mangle", "OUTPUT"], ["nat", "OUTPUT"], ["filter", "OUTPUT"],
    ["mangle", "POSTROUTING"], ["nat", "POSTROUTING"]];

function ipToInt(ip: string): number {
    return ip.split(".").reduce((a, o) => (a << 8) + Number(o), 0) >>> 0;
}

function inCidr(ip: string, cidr: string): boolean {
    const [base, len = "32"] = cidr.split("/");
    const bits = Number(len);
    const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
    return ((ipToInt(ip) & mask) >>> 0) === ((ipToInt(base) & mask) >>> 0);
}

function ifaceMatches(pattern: string, iface: string | undefined): boolean {
    if (iface === undefined) return false;
    return pattern.endsWith("+") ? iface.startsWith(pattern.slice(0, -1)) : iface === pattern;
}

/** Whether `rule` matches `p`; returns the target (and its argument list) when it does. */
function match(rule: string[], p: Packet): string | undefined {
    let target: string | undefined;
    for (let i = 0; i < rule.length; i++) {
        const negate = rule[i] === "!";
        if (negate) i++;
        const opt = rule[i];
        const val = rule[i + 1];
        let ok: boolean;
        switch (opt) {
            case "-i": ok = ifaceMatches(val, p.in); i++; break;
            case "-o": ok = ifaceMatches(val, p.out); i++; break;
            case "-s": ok = inCidr(p.src, val); i++; break;
            case "-d": ok = inCidr(p.dst, val); i++; break;
            case "-j": target = val; i = rule.length; continue;
            case "-m": i++; continue;
            case "--comment": i++; continue;
            default: ok = true; // an unknown match: assume it matches (harsh)
        }
        if (negate ? ok : !ok) return undefined;
    }
    return target ?? "";
}

/** Walks `chain` of `table`; returns DROP/ACCEPT/DNAT (with the new destination)/undefined (fell through or RETURN). */
function walk(set: RuleSet, table: string, chain: string, p: Packet, depth = 0): { target?: string; chain?: string; rule?: string; to?: string } {
    if (depth > 32) throw new Error("iptables model: jump loop");
    for (const rule of set[table]?.[chain] ?? []) {
        const target = match(rule, p);
        if (target === undefined || target === "") continue;
        if (target === "RETURN") return {};
        if (["DROP", "REJECT", "ACCEPT"].includes(target)) return { target, chain, rule: rule.join(" ") };
        if (target === "DNAT") {
            const to = rule[rule.indexOf("--to-destination") + 1];
            if (!rule.includes("--to-destination") || !to) throw new Error(`iptables model: DNAT without --to-destination: ${rule.join(" ")}`);
            return { target, chain, rule: rule.join(" "), to: to.split(":")[0] };
        }
        if (["MASQUERADE", "SNAT", "REDIRECT"].includes(target)) return { target: "ACCEPT", chain, rule: rule.join(" ") };
        if (set[table]?.[target]) {
            const inner = walk(set, table, target, p, depth + 1);
            if (inner.target) return inner;
        }
        // MARK, CT, NOTRACK, LOG...: not terminal.
    }
    return {};
}

/** The verdict for packet `p` through the rule set, in netfilter's hook and table order (DNAT applied as it happens). */
export function verdict(set: RuleSet, p: Packet): Verdict {
    let packet = p;
    let dnat: string | undefined;
    for (const [table, chain] of p.in === undefined ? LOCAL_PATH : FORWARD_PATH) {
        const r = walk(set, table, chain, packet);
        if (r.target === "DROP" || r.target === "REJECT") return { verdict: "dropped", table, chain: r.chain, rule: r.rule, ...(dnat ? { dnat } : {}) };
        if (r.target === "DNAT" && r.to) packet = { ...packet, dst: dnat = r.to };
    }
    return { verdict: "passed", ...(dnat ? { dnat } : {}) };
}
