// How every rule reports: a property path and a reason that says what to do. One path style everywhere:
// dotted, with list indexes as numbers (`nodePools.0.labels.team`), relative to what was checked.

/** One problem with an input: where (dotted property path) and why, with the fix. */
export interface Problem {
    path: string;
    reason: string;
}

/** Reports a problem at `path`. */
export type Report = (path: string, reason: string) => void;

/** `a.b` joined, skipping empty parts (so a rule can be called with or without a prefix). */
export function joinPath(...parts: Array<string | number | undefined>): string {
    return parts.filter((p) => p !== undefined && p !== "").join(".");
}

/** A Report that collects into a list; `prefix` is put in front of every path. */
export function collect(prefix = ""): { problems: Problem[]; report: Report } {
    const problems: Problem[] = [];
    return { problems, report: (path, reason) => problems.push({ path: joinPath(prefix, path), reason }) };
}

/** `<path>: <reason>`, the form the stack config's errors are printed in. */
export function formatProblem(p: Problem): string {
    return `${p.path}: ${p.reason}`;
}
