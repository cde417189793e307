/**
 * Thin client for the Alibaba Cloud RPC OpenAPI (ECS 2014-05-26, ESS 2014-08-28, VPC 2016-04-28),
 * used by every dynamic provider of this library.
 *
 * - Transport and signing: `@alicloud/openapi-core` generic `callApi` (ACS3-HMAC-SHA256). Every request
 *   parameter travels in the form-encoded POST body, never in the URL query: a command's content or
 *   parameters must not end up in URL logs (proxies, gateways, error messages). The body is signed through
 *   `x-acs-content-sha256` (docs/security.md#request-parameters-in-the-body).
 * - Credentials: the default `@alicloud/credentials` chain, resolved at call time — environment
 *   (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET`, optional
 *   `ALIBABA_CLOUD_SECURITY_TOKEN`), OIDC role, `~/.aliyun/config.json`, `~/.alibabacloud/credentials`,
 *   then the ECS instance RAM role. Credentials are never resource inputs and are never captured
 *   when a dynamic provider is serialized.
 * - Endpoints: `<product>.<region>.aliyuncs.com`, or `<product>-vpc.<region>.aliyuncs.com` with
 *   `vpcEndpoint: true` (for callers running inside the VPC).
 * - Endpoint override: set **`ALICLOUD_KUBEADM_ENDPOINT`** (e.g. `http://127.0.0.1:8080`) to send
 *   every product's calls to that one URL instead (used by the local emulator in `testing/emulator`).
 *   Without a scheme, `https://` is assumed.
 * - Pacing: every attempt first takes its slot from the process's pacer (./pacer.ts: a token bucket per action
 *   that throttling answers slow down), so the calls of a whole `pulumi up` share one rate per action.
 * - Retries: exponential backoff with full jitter on `ServiceUnavailable`, any 5xx and transient network errors,
 *   bounded by attempts and total time; `Throttling*` answers are retried for as long as a time budget allows
 *   (`throttleBudgetMs`, 10 minutes), however many attempts that takes, the pacer spacing them. A server
 *   `x-acs-retry-after` (milliseconds) is honoured.
 * - Idempotency: only some actions define a `ClientToken` ({@link CLIENT_TOKEN_ACTIONS}); those carry one
 *   token, identical across retries, so a retry after a lost response does not act twice. Every other
 *   mutating action CAN act twice when a response is lost: callers make those steps safe by re-reading the
 *   state before acting again (docs/upstream.md#api-clienttoken-actions).
 * - Errors: everything surfaces as {@link OpenApiError} with `code`, `requestId`, `action` and a
 *   message that says what to do.
 *
 * SDK modules are `require()`d inside functions so Pulumi function serialization never captures them.
 */

import { pace, throttled } from "./pacer";
import { type Clock, SYSTEM_CLOCK } from "./wait";

/** Products this wrapper talks to. */
export type Product = "ecs" | "ess" | "vpc";

/** RPC API version used for each product. ESS uses 2014-08-28 on purpose (its array parameters are `InstanceId.N`). */
export const API_VERSIONS: Readonly<Record<Product, string>> = { ecs: "2014-05-26", ess: "2014-08-28", vpc: "2016-04-28" };

/**
 * `<product>:<Action>` of the actions this library calls whose request model has a `ClientToken`
 * (docs/upstream.md#api-clienttoken-actions). No other action gets one: the API would not honour it.
 */
export const CLIENT_TOKEN_ACTIONS: readonly string[] = ["ecs:RunCommand", "ecs:CreateCommand", "ecs:InvokeCommand", "ecs:ReplaceSystemDisk", "ecs:ModifyInstanceSpec", "ess:RemoveInstances", "vpc:CreateRouteEntry"];

/** Name of the environment variable that overrides the endpoint of every product (tests: the local emulator). */
export const ENDPOINT_ENV = "ALICLOUD_KUBEADM_ENDPOINT";

/** A request parameter value. Arrays expand to `Name.1`, `Name.2`, …; `undefined` is dropped. */
export type ParamValue = string | number | boolean | undefined | string[];

/** Retry policy of {@link callApi}. */
export interface RetryOptions {
    /** Total attempts including the first one. Default 6. */
    maxAttempts?: number;
    /** Give up when the next wait would pass this many ms since the first attempt. Default 60000. */
    totalTimeoutMs?: number;
    /** Backoff base: the cap of the n-th wait is `baseDelayMs * 2^(n-1)`. Default 500. */
    baseDelayMs?: number;
    /** Upper bound of one backoff wait (a server `x-acs-retry-after` may exceed it). Default 10000. */
    maxDelayMs?: number;
    /** Extra error codes to retry, e.g. ESS `ScalingActivityInProgress`. Default none. */
    retryableCodes?: string[];
    /**
     * Throttling answers are retried until this many ms have passed since the first attempt, whatever
     * `maxAttempts` and `totalTimeoutMs` say: a step under throttling finishes late rather than not at all. Default 600000.
     */
    throttleBudgetMs?: number;
    /** Called before each wait; for logging. Default none. */
    onRetry?: (info: { action: string; attempt: number; code: string; delayMs: number }) => void;
    /**
     * The clock the time bounds (`totalTimeoutMs`, `throttleBudgetMs`) are measured on and the backoff waits slept on
     * (tests); the pacer's spacing of throttled calls is on the pacer's clock (`configurePacer`). Default {@link SYSTEM_CLOCK} (./wait).
     */
    clock?: Clock;
}

/** Options of {@link callApi}. */
export interface CallOptions {
    /** Region id, e.g. `cn-hangzhou`. Sent as `RegionId` unless the params already set it. */
    region: string;
    /** Use the VPC-internal endpoint `<product>-vpc.<region>.aliyuncs.com`. Default false. */
    vpcEndpoint?: boolean;
    /** Retry policy; see {@link RetryOptions} for defaults. */
    retry?: RetryOptions;
    /** Add a `ClientToken`. Default: true for the actions in {@link CLIENT_TOKEN_ACTIONS}, which define one. */
    clientToken?: boolean;
    /** Per-request read timeout in ms. Default 30000. */
    readTimeoutMs?: number;
}

const DEFAULT_RETRY: Required<Omit<RetryOptions, "onRetry" | "retryableCodes" | "clock">> = {
    maxAttempts: 6,
    throttleBudgetMs: 600_000,
    totalTimeoutMs: 60_000,
    baseDelayMs: 500,
    maxDelayMs: 10_000,
};

// A plain array, not a Set: Pulumi function serialization cannot capture Set/Map values.
const NETWORK_CODES = ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "ENOTFOUND", "ESOCKETTIMEDOUT", "ReadTimeout", "ConnectTimeout", "ReadTimeoutError", "ConnectTimeoutError"];

/**
 * One typed error for every failed OpenAPI call.
 * `message` reads: `<product> <Action> failed: <Code> (HTTP <status>): <server message> [RequestId …]. <what to do>`.
 */
export class OpenApiError extends Error {
    /** Alibaba error code, e.g. `Throttling.User`, `InvalidInstance.NotFound`; a network error code for transport failures. */
    readonly code: string;
    /** Server request id (quote it to Alibaba support); empty when no response arrived. */
    readonly requestId: string;
    /** API action, e.g. `RunCommand`. */
    readonly action: string;
    /** Product the action belongs to. */
    readonly product: Product;
    /** HTTP status; 0 when no response arrived. */
    readonly httpStatus: number;
    /** Whether the error class is transient (it was retried until the budget ran out). */
    readonly retryable: boolean;
    /** Attempts made before giving up. */
    readonly attempts: number;
    /** The server's own message, without the hint. */
    readonly serverMessage: string;

    constructor(init: { code: string; requestId: string; action: string; product: Product; httpStatus: number; retryable: boolean; attempts: number; serverMessage: string }) {
        super(describeError(init));
        this.name = "OpenApiError";
        this.code = init.code;
        this.requestId = init.requestId;
        this.action = init.action;
        this.product = init.product;
        this.httpStatus = init.httpStatus;
        this.retryable = init.retryable;
        this.attempts = init.attempts;
        this.serverMessage = init.serverMessage;
    }
}

function describeError(e: { code: string; requestId: string; action: string; product: Product; httpStatus: number; retryable: boolean; attempts: number; serverMessage: string }): string {
    const where = `${e.product.toUpperCase()} ${e.action} failed: ${e.code}` + (e.httpStatus ? ` (HTTP ${e.httpStatus})` : "");
    const rid = e.requestId ? ` [RequestId ${e.requestId}]` : "";
    return `${where}: ${e.serverMessage.replace(/[.\s]+$/, "")}${rid}. ${hintFor(e)}.`;
}

function hintFor(e: { code: string; action: string; product: Product; httpStatus: number; retryable: boolean; attempts: number }): string {
    const c = e.code;
    if (/^(SignatureDoesNotMatch|IncompleteSignature|InvalidAccessKeyId|InvalidSecurityToken|InvalidTimeStamp|SignatureNonceUsed)/.test(c) || c === "CredentialsNotFound") {
        return "Check the Alibaba Cloud credentials: ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET (plus ALIBABA_CLOUD_SECURITY_TOKEN for STS), the profile files, or the ECS RAM role, and the machine clock";
    }
    if (/^(Forbidden|NoPermission|Forbidden\.RAM)/.test(c)) {
        return `Grant the caller the RAM permission ${e.product}:${e.action}`;
    }
    if (/Throttling/.test(c)) {
        return `Alibaba Cloud rate-limited the call; gave up after ${e.attempts} attempt(s) over the throttling budget. Retry later, ` +
            "lower the rate other clients of the account use, or raise the action's quota (Quota Center, API rate limits)";
    }
    if (c === "ServiceUnavailable" || e.httpStatus >= 500) {
        return `The service failed transiently; gave up after ${e.attempts} attempt(s). Retry later`;
    }
    if (e.httpStatus === 0) {
        return `No response after ${e.attempts} attempt(s). Check network access to the endpoint (or ${ENDPOINT_ENV} if set)`;
    }
    if (/NotFound$/.test(c)) {
        return "The named resource does not exist in this region (released or mistyped?)";
    }
    return "Fix the request or the resource state named above and retry";
}

/** True when an action changes state (anything not `Describe*`, `List*`, `Get*`, `Query*`). */
export function isMutating(action: string): boolean {
    return !/^(Describe|List|Get|Query)/.test(action);
}

/**
 * Endpoint host for a product and region; honours {@link ENDPOINT_ENV}.
 * @param product ECS, ESS or VPC.
 * @param region Region id.
 * @param vpcEndpoint Use the VPC-internal endpoint. Default false.
 * @returns `{ host, protocol }` where host may include a port.
 */
export function resolveEndpoint(product: Product, region: string, vpcEndpoint = false): { host: string; protocol: "http" | "https" } {
    const override = process.env[ENDPOINT_ENV];
    if (override) {
        const m = /^(https?):\/\/([^/]+)\/?$/.exec(override.trim());
        if (m) return { protocol: m[1] as "http" | "https", host: m[2] };
        if (/^[^/:]+(:\d+)?$/.test(override.trim())) return { protocol: "https", host: override.trim() };
        throw new Error(`${ENDPOINT_ENV}="${override}" is not a URL like http://127.0.0.1:8080`);
    }
    return { protocol: "https", host: `${product}${vpcEndpoint ? "-vpc" : ""}.${region}.aliyuncs.com` };
}

/** Flatten params into the RPC query: arrays → `Name.1…N`, booleans/numbers → strings, undefined dropped. */
export function flattenParams(params: Record<string, ParamValue>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(params)) {
        if (v === undefined) continue;
        if (Array.isArray(v)) v.forEach((item, i) => { out[`${k}.${i + 1}`] = item; });
        else out[k] = String(v);
    }
    return out;
}

/**
 * A fresh default credential chain. Deliberately not cached in a module variable: Pulumi serializes
 * captured module state by value, and a cached credential would carry keys into the state file.
 */
function defaultCredential(): unknown {
    const Credential = require("@alicloud/credentials").default;
    return new Credential();
}

interface SdkError { name?: string; code?: string; statusCode?: number; requestId?: string; retryAfter?: number; message?: string; data?: Record<string, unknown> }

/**
 * Call one RPC action and return the parsed JSON response body.
 *
 * @param product `ecs`, `ess` or `vpc`.
 * @param action Action name, e.g. `RunCommand`.
 * @param params Request parameters (arrays become `Name.N`). `RegionId` defaults to `opts.region`.
 * @param opts Region, endpoint and retry options; see {@link CallOptions}.
 * @returns The response body (always has `RequestId`).
 * @throws {@link OpenApiError} when the call fails for good.
 */
export async function callApi(product: Product, action: string, params: Record<string, ParamValue>, opts: CallOptions): Promise<Record<string, unknown>> {
    const crypto = require("crypto") as typeof import("crypto");
    const core = require("@alicloud/openapi-core");
    const retry = { ...DEFAULT_RETRY, ...opts.retry };
    const query = flattenParams({ RegionId: opts.region, ...params });
    if ((opts.clientToken ?? CLIENT_TOKEN_ACTIONS.includes(`${product}:${action}`)) && query.ClientToken === undefined) query.ClientToken = crypto.randomUUID();
    const { host, protocol } = resolveEndpoint(product, opts.region, opts.vpcEndpoint);
    const clock = retry.clock ?? SYSTEM_CLOCK;
    const started = clock.now();
    const key = `${product}:${action}`;

    for (let attempt = 1; ; attempt++) {
        let err: SdkError;
        const { slotTakenAt } = await pace(key);
        try {
            const client = new core.default(new core.$OpenApiUtil.Config({
                credential: defaultCredential(), endpoint: host, protocol, regionId: opts.region,
                readTimeout: opts.readTimeoutMs ?? 30_000, connectTimeout: 5_000,
            }));
            const apiParams = new core.$OpenApiUtil.Params({
                action, version: API_VERSIONS[product], protocol: protocol.toUpperCase(), pathname: "/", method: "POST",
                authType: "AK", style: "RPC", reqBodyType: "formData", bodyType: "json",
            });
            // Parameters in the form body (signed by its SHA-256), none in the URL: see the module comment.
            const request = new core.$OpenApiUtil.OpenApiRequest({ body: { ...query } });
            const res = await client.callApi(apiParams, request, {});
            return (res?.body ?? {}) as Record<string, unknown>;
        } catch (e) {
            err = (e ?? {}) as SdkError;
        }
        const failure = toFailure(err, retry.retryableCodes ?? []);
        const retryAfter = err.retryAfter !== undefined && err.retryAfter >= 0 ? err.retryAfter : undefined;
        const throttling = /Throttling/.test(failure.code);
        // The pacer spaces a throttled action's calls from now on: the retry waits for its slot, not for a backoff of its own.
        if (throttling) throttled(key, retryAfter, slotTakenAt);
        const elapsed = clock.now() - started;
        const backoffCap = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
        const delayMs = throttling ? 0 : retryAfter ?? Math.floor(Math.random() * backoffCap);
        const spent = throttling ? elapsed + delayMs > retry.throttleBudgetMs : attempt >= retry.maxAttempts || elapsed + delayMs > retry.totalTimeoutMs;
        if (!failure.retryable || spent) {
            throw new OpenApiError({ ...failure, action, product, attempts: attempt });
        }
        retry.onRetry?.({ action, attempt, code: failure.code, delayMs });
        if (delayMs > 0) await clock.sleep(delayMs);
    }
}

function toFailure(err: SdkError, extraCodes: string[]): { code: string; requestId: string; httpStatus: number; retryable: boolean; serverMessage: string } {
    const httpStatus = typeof err.statusCode === "number" ? err.statusCode : 0;
    const data = err.data ?? {};
    let code = String(err.code ?? data.Code ?? err.name ?? "UnknownError");
    let serverMessage = typeof data.Message === "string" ? data.Message : String(err.message ?? "");
    if (!httpStatus && /Unable to load credentials|credentials/i.test(serverMessage) && !NETWORK_CODES.includes(code)) {
        code = "CredentialsNotFound";
        // The SDK's chain glues every provider's failure into one line (paths, a metadata-service URL, a DNS
        // error for the host "undefined"); the hint below says what to set.
        serverMessage = "no credentials in the Alibaba Cloud credential chain (environment, profile files, ECS RAM role)";
    }
    // Transport errors may quote the request URL; it carries no parameter, but drop any query anyway.
    serverMessage = serverMessage.replace(/\?\S*/g, "?…") || "(no message)";
    const requestId = err.requestId && err.requestId !== "undefined" ? err.requestId : String(data.RequestId ?? "");
    const retryable = /Throttling/.test(code) || code === "ServiceUnavailable" || httpStatus >= 500 ||
        (httpStatus === 0 && NETWORK_CODES.includes(code)) || extraCodes.includes(code);
    return { code, requestId, httpStatus, retryable, serverMessage };
}
