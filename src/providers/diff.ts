// How a dynamic resource's `diff` treats each of its inputs: a change replaces the resource, updates it in place,
// or is not a change at all (a wait bound only create reads, …). Every input is named in exactly one list, and
// the compiler checks it: an input added to a resource's `Inputs` without a place in its policy does not compile,
// so none can be forgotten (as `NodeMembershipInputs.admission` once was).

/** The three lists of a resource's diff policy. */
export interface InputDiff<T> {
    /** Inputs whose change replaces the resource (compared with a missing value taken as ""). */
    replace: readonly (keyof T)[];
    /** Inputs whose change is an update in place. */
    update: readonly (keyof T)[];
    /** Inputs whose change alone is no change: each policy says why. */
    ignore: readonly (keyof T)[];
}

type Named<T, P extends InputDiff<T>> = P["replace"][number] | P["update"][number] | P["ignore"][number];
/** The inputs a policy leaves out, or never. */
type Missing<T, P extends InputDiff<T>> = Exclude<keyof T, Named<T, P>>;

/**
 * A diff policy for inputs `T`, checked complete at compile time: `inputDiff<Inputs>()({ replace, update, ignore })`
 * fails to compile (naming the input) unless every key of `T` is in one of the lists.
 */
export function inputDiff<T>() {
    return <const P extends InputDiff<T>>(policy: P & ([Missing<T, P>] extends [never] ? unknown : { missingFromPolicy: Missing<T, P> })): P => policy;
}

/** What `diff` answers for `olds` → `news` under `policy`. */
export function diffInputs<T>(policy: InputDiff<T>, olds: Partial<NoInfer<T>>, news: Partial<NoInfer<T>>): { changes: boolean; replaces: string[] } {
    const replaces = policy.replace.filter((k) => JSON.stringify(olds[k] ?? "") !== JSON.stringify(news[k] ?? "")).map(String);
    const changes = replaces.length > 0 || policy.update.some((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]));
    return { changes, replaces };
}
