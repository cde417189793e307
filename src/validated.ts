// The mark of a value that has been validated: only a parser makes one. The parsers are src/config.ts (the
// stack config and the slices of it the components take) and each component's own argument parser, for a
// component used directly (Network, PodNetwork, ClusterAutoscaler). A component given a marked value trusts it
// and checks nothing again; given anything else (a program's own object, a copy of a validated one) it runs
// that value's parser once. test/validatedType.test.ts keeps the mark in the parsers: no `as` cast to a
// validated type, and no call of markValidated, anywhere else.
declare const validatedMark: unique symbol;

/** `T`, as a parser returned it: checked by every rule that applies to it, defaults applied. */
export type Validated<T> = T & { readonly [validatedMark]: true };

/** Every value a parser returned (by identity: a copy, or an edited copy, is not one). */
const made = new WeakSet<object>();

/** Marks `value` as validated. For parsers only (test/validatedType.test.ts). */
export function markValidated<T extends object>(value: T): Validated<T> {
    made.add(value);
    return value as Validated<T>;
}

/** True when a parser returned `value` itself (narrows a union to its validated members). */
export function isValidated<T>(value: T): value is Extract<T, { readonly [validatedMark]: true }> {
    return validatedByParser(value);
}

/** True when a parser returned `value` itself: for arguments whose type does not say (a component's own `Args`). */
export function validatedByParser(value: unknown): boolean {
    return typeof value === "object" && value !== null && made.has(value);
}
