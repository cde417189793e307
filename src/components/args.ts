// Argument errors of the components, the way Pulumi reports them: an InputPropertiesError whose message
// lists every problem with its property path (the details are also in `errors`), thrown before anything
// is registered.
import * as pulumi from "@pulumi/pulumi";
import { collect, type Problem, type Report } from "../rules";

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
