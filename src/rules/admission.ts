// Limits of the admission settings (docs/admission.md).

/** Default of `admission.readmitAfterSeconds` (the same value as src/admission/nodes.ts DEFAULT_READMIT_AFTER_SECONDS). */
export const DEFAULT_READMIT_AFTER_SECONDS = 300;
/**
 * `admission.readmitAfterSeconds` bounds: at least 60 s (a kubelet renews its Lease every 10 s and the node
 * lifecycle controller marks a node NotReady after 40–50 s without one), at most a day.
 */
export const READMIT_AFTER_RANGE = { min: 60, max: 86_400 } as const;

/** Why `seconds` cannot be `admission.readmitAfterSeconds`, or undefined. */
export function readmitAfterProblem(seconds: number): string | undefined {
    return Number.isInteger(seconds) && seconds >= READMIT_AFTER_RANGE.min && seconds <= READMIT_AFTER_RANGE.max ? undefined
        : `must be a whole number of seconds from ${READMIT_AFTER_RANGE.min} to ${READMIT_AFTER_RANGE.max} (how stale a Node's heartbeat must be before its restarted instance may join again; default ${DEFAULT_READMIT_AFTER_SECONDS})`;
}
