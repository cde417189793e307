// Argument errors of the components, the way Pulumi reports them: an InputPropertiesError whose message
// lists every problem with its property path (the details are also in `errors`), thrown before anything
// is registered.
import * as pulumi from "@pulumi/pulumi";
import { collect, MAX_RESOURCE_TAGS, tagKeyProblem, tagValueProblem, type Problem, type Report } from "../rules";

/** Throws when `problems` is not empty. `what` names the component, e.g. `NodePool "dev-pool-general"`. */
export function throwIfProblems(what: string, problems: readonly Problem[]): void {
    if (problems.length === 0) {
        return;
    }
    const lines = problems.map((p) => `  - ${p.path || "(arguments)"}: ${p.reason}`).join("\n");
    throw new pulumi.InputPropertiesError({
        message: `invalid arguments of ${what} (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n${lines}`,
        errors: problems.map((p) => ({ propertyPath: p.path, reason: p.reason })),
    });
}

/** Runs `check` with a collecting Report and throws every problem it reported. */
export function checkArgs(what: string, check: (report: Report) => void): void {
    const { problems, report } = collect();
    check(report);
    throwIfProblems(what, problems);
}

/** Runs a parser with a collecting Report; throws every problem it reported, else returns what it parsed. */
export function parseArgs<T>(what: string, parse: (report: Report) => T | undefined): T {
    const { problems, report } = collect();
    const parsed = parse(report);
    throwIfProblems(what, problems);
    if (parsed === undefined) {
        throw new Error(`${what}: its arguments were refused without a reason (a bug: please report it)`);
    }
    return parsed;
}

/**
 * True when `value` is known now: not an Output or a Promise. Component arguments may be Pulumi Inputs;
 * the checks look at what is known and leave the rest to the resources that receive it.
 */
export function isKnown(value: unknown): boolean {
    return !pulumi.Output.isInstance(value) && !(value instanceof Promise);
}

/**
 * Checks the cloud tags a component puts on its resources (at `tags`, `tags.<key>`): Alibaba's key and value
 * rules and the 20-tag limit (one more, the role or pool tag, is added to masters and scaling groups).
 * The `alicloud-kubeadm/` tags are the project's own and allowed here: Cluster passes its cluster tag.
 */
export function checkTags(tags: Record<string, string> | undefined, report: Report): void {
    if (tags === undefined || !isKnown(tags) || typeof tags !== "object") {
        return;
    }
    const count = Object.keys(tags).length;
    if (count + 1 > MAX_RESOURCE_TAGS) {
        report("tags", `${count} tags + one role or pool tag = ${count + 1} on the masters and scaling groups; Alibaba Cloud allows at most ${MAX_RESOURCE_TAGS} per resource`);
    }
    for (const [key, value] of Object.entries(tags)) {
        const reason = tagKeyProblem(key) ?? (typeof value === "string" ? tagValueProblem(value) : "a tag value must be a string");
        if (reason) {
            report(`tags.${key}`, reason);
        }
    }
}
