/**
 * Rendering of doctor's findings: a compact table for people (colour only on a TTY without NO_COLOR)
 * and JSON for machines; and the exit code (0 no problem, 1 a problem, 2 could not look).
 */
import { Finding } from "./types";

/** Exit codes of `npm run doctor`. */
export const EXIT = { ok: 0, problem: 1, couldNotLook: 2 } as const;

/**
 * The exit code for a set of findings: 2 when any check could not look (the diagnosis is incomplete),
 * else 1 when any problem was found, else 0.
 */
export function exitCodeOf(findings: Finding[]): number {
    if (findings.some((f) => f.couldNotLook)) return EXIT.couldNotLook;
    return findings.some((f) => f.status === "problem") ? EXIT.problem : EXIT.ok;
}

/** Counts of findings by status. */
export function summaryOf(findings: Finding[]): { ok: number; warning: number; problem: number; couldNotLook: number } {
    return {
        ok: findings.filter((f) => f.status === "ok").length, warning: findings.filter((f) => f.status === "warning").length,
        problem: findings.filter((f) => f.status === "problem").length, couldNotLook: findings.filter((f) => f.couldNotLook).length,
    };
}

/**
 * JSON for machines: `{ cluster, exitCode, summary, findings }`, pretty-printed.
 * @param cluster Cluster name.
 * @param findings What doctor found.
 */
export function renderJson(cluster: string, findings: Finding[]): string {
    return JSON.stringify({ cluster, exitCode: exitCodeOf(findings), summary: summaryOf(findings), findings }, null, 2) + "\n";
}

/** Whether to colour: stdout is a TTY and NO_COLOR is unset. */
export function useColour(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
    return !!stream.isTTY && env.NO_COLOR === undefined;
}

const COLOURS = { ok: "\x1b[32m", warning: "\x1b[33m", problem: "\x1b[31m", dim: "\x1b[2m", reset: "\x1b[0m" } as const;

/**
 * Word-wraps text to `width` columns (words longer than that are cut); keeps explicit newlines.
 * @returns The lines, without trailing newlines.
 */
export function wrapText(text: string, width: number): string[] {
    const out: string[] = [];
    for (const para of text.split("\n")) {
        let line = "";
        for (const word of para.split(" ")) {
            if (line && line.length + 1 + word.length > width) { out.push(line); line = ""; }
            line = line ? `${line} ${word}` : word;
            while (line.length > width) { out.push(line.slice(0, width)); line = line.slice(width); }
        }
        out.push(line);
    }
    return out;
}

/**
 * The table for people: one row per finding (status, check, subject), evidence and next step indented
 * below; ok rows are one line. Ends with a summary line.
 * @param cluster Cluster name.
 * @param findings What doctor found.
 * @param opts `colour` (default false) and `width` of the text (default 100, at least 40).
 */
export function renderTable(cluster: string, findings: Finding[], opts: { colour?: boolean; width?: number } = {}): string {
    const c = (k: keyof typeof COLOURS, s: string) => (opts.colour ? `${COLOURS[k]}${s}${COLOURS.reset}` : s);
    const width = Math.max(40, opts.width ?? 100);
    const subjW = Math.min(40, Math.max(...findings.map((f) => f.subject.length), 7));
    const lines = [`doctor: cluster ${cluster}`, "", `${"STATUS".padEnd(8)} ${"CHECK".padEnd(10)} ${"SUBJECT".padEnd(subjW)}  EVIDENCE`];
    // A check that could not look for the same reason as an earlier one says so instead of repeating it.
    const firstSaid = new Map<string, string>();
    for (const f of findings) {
        const label = (f.couldNotLook ? "no look" : f.status).padEnd(8);
        const status = c(f.status, label);
        const head = `${status} ${f.check.padEnd(10)} ${f.subject.padEnd(subjW)}  `;
        const indent = " ".repeat(8 + 1 + 10 + 1 + subjW + 2);
        const said = f.couldNotLook ? firstSaid.get(`${f.evidence}\n${f.next ?? ""}`) : undefined;
        if (f.couldNotLook && !said) firstSaid.set(`${f.evidence}\n${f.next ?? ""}`, f.check);
        const ev = wrapText(said ? `could not look: the same failure as ${said} above` : f.evidence, Math.max(30, width - indent.length));
        lines.push(head + ev[0], ...ev.slice(1).map((l) => indent + l));
        if (f.next && !said) wrapText(`→ ${f.next}`, Math.max(30, width - indent.length)).forEach((l) => lines.push(indent + c("dim", l)));
    }
    const s = summaryOf(findings);
    const verdict = exitCodeOf(findings) === EXIT.couldNotLook ? c("problem", "could not look everywhere") : s.problem ? c("problem", `${s.problem} problem(s)`) : c("ok", "no problem");
    lines.push("", `${verdict}: ${s.ok} ok, ${s.warning} warning(s), ${s.problem} problem(s)${s.couldNotLook ? `, ${s.couldNotLook} check(s) could not look` : ""}`);
    return lines.join("\n") + "\n";
}
