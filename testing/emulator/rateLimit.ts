/**
 * A per-action request rate limit for the emulator, the smallest the admission bench needs: each action may be
 * called `perSecond` times a second (a token bucket per action holding one second's worth, refilled evenly);
 * a call beyond it is answered as the gateway answers an account over an API's flow control, HTTP 400
 * `Throttling.User` "Request was denied due to user flow control." (the code Terraform's `NeedRetry` retries,
 * terraform-provider-alicloud alicloud/errors.go#L207-L240 at 81c43b67, docs/upstream.md#api-retries; the
 * message is the one the emulator's `throttle()` answers). Alibaba's per-action limits are per account and not
 * published: `perSecond` is an assumption chosen to show where behaviour changes. Nothing is applied for a
 * refused call.
 *
 * Kept apart from the emulator's core on purpose: the emulator's own configurable per-action limit (issue 25)
 * supersedes this module; it chains any `beforeRequest` hook already installed and restores it when removed.
 */
import type { Emulator } from "./index";

export interface RateLimit {
    /** Calls answered `Throttling.User`, per action. */
    readonly throttled: Map<string, number>;
    /** Removes the limit (the earlier hook, if any, is restored). */
    remove(): void;
}

export function limitRate(emu: Emulator, perSecond: number, now: () => number = Date.now): RateLimit {
    const buckets = new Map<string, { tokens: number; at: number }>();
    const throttled = new Map<string, number>();
    const earlier = emu.beforeRequest;
    emu.beforeRequest = (req) => {
        const hooked = earlier?.(req);
        if (hooked) return hooked;
        const t = now();
        const b = buckets.get(req.action) ?? { tokens: perSecond, at: t };
        b.tokens = Math.min(perSecond, b.tokens + ((t - b.at) / 1000) * perSecond);
        b.at = t;
        buckets.set(req.action, b);
        if (b.tokens >= 1) {
            b.tokens -= 1;
            return undefined;
        }
        throttled.set(req.action, (throttled.get(req.action) ?? 0) + 1);
        return { status: 400, code: "Throttling.User", message: "Request was denied due to user flow control." };
    };
    return { throttled, remove: () => { emu.beforeRequest = earlier; } };
}
