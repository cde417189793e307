/**
 * ApiServerReady: waits (bounded, with progress) until the API server answers `GET /readyz` with
 * `ok`, verifying its certificate against the cluster CA from the kubeconfig. The Kubernetes provider
 * is built from this resource's kubeconfig output, so no add-on is applied before the control plane
 * is ready. The probe runs where Pulumi runs: that machine must reach the API endpoint (public
 * endpoint with apiAllowedCidrs, or a runner inside the VPC for an internal endpoint).
 */
import * as pulumi from "@pulumi/pulumi";
import type { ResourceArgs } from "./access";
import { diffInputs, inputDiff } from "./diff";
import { withCarriedOutputs } from "./partialUpdate";
import { waitFor } from "../cloud/wait";
import { logInfo } from "./log";
import { yamlLibrary } from "./libraries";

export interface ApiServerReadyInputs {
    /** Admin kubeconfig (secret). Required. */
    kubeconfig: string;
    /** Bound on the wait, seconds. Default 900. */
    timeoutSeconds?: number;
    /** Pause between probes, seconds. Default 10. */
    pollSeconds?: number;
    providerVersion?: string;
}

/** The arguments of an ApiServerReady (documented in {@link ApiServerReadyInputs}). */
export type ApiServerReadyArgs = ResourceArgs<ApiServerReadyInputs>;

interface KubeconfigCluster { server: string; ca?: string }

/** The current context's server and CA (PEM) from a kubeconfig. */
export function clusterOf(kubeconfig: string): KubeconfigCluster {
    const YAML = yamlLibrary();
    const doc = YAML.parse(kubeconfig) as {
        "current-context"?: string;
        contexts?: Array<{ name: string; context?: { cluster?: string } }>;
        clusters?: Array<{ name: string; cluster?: { server?: string; "certificate-authority-data"?: string } }>;
    };
    const contextName = doc?.["current-context"];
    const clusterName = doc?.contexts?.find((c) => c.name === contextName)?.context?.cluster ?? doc?.clusters?.[0]?.name;
    const cluster = doc?.clusters?.find((c) => c.name === clusterName)?.cluster;
    if (!cluster?.server) {
        throw new Error("the kubeconfig has no cluster server for its current context");
    }
    const caData = cluster["certificate-authority-data"];
    return { server: cluster.server, ca: caData ? Buffer.from(caData, "base64").toString("utf8") : undefined };
}

/** One probe: resolves with the status code and body of `GET <server>/readyz`. */
export function probeReadyz(cluster: KubeconfigCluster, timeoutMs = 5000): Promise<{ status: number; body: string }> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const https = require("https") as typeof import("https");
    return new Promise((resolve, reject) => {
        const req = https.get(`${cluster.server.replace(/\/+$/, "")}/readyz`, { ca: cluster.ca, timeout: timeoutMs }, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => { body += chunk; });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
        req.on("error", reject);
    });
}

/** Waits until /readyz says ok; throws after the bound with the last answer. */
export async function waitForApiServer(inputs: ApiServerReadyInputs, log: (m: string) => void = () => undefined): Promise<void> {
    const cluster = clusterOf(inputs.kubeconfig);
    const timeoutMs = (inputs.timeoutSeconds ?? 900) * 1000;
    const pollMs = (inputs.pollSeconds ?? 10) * 1000;
    await waitFor(async () => {
        try {
            const { status, body } = await probeReadyz(cluster);
            if (status === 200 && body.trim() === "ok") return { done: true, value: undefined };
            return { done: false, state: `HTTP ${status}: ${body.trim().split("\n").slice(-3).join("; ")}` };
        } catch (err) {
            return { done: false, state: (err as Error).message };
        }
    }, { timeoutMs, firstDelayMs: pollMs, maxDelayMs: pollMs, factor: 1, log: (last) => log(`waiting for the API server at ${cluster.server} /readyz: ${last}`), logEveryMs: 3 * pollMs - 1 },
    (last) => new Error(`the API server at ${cluster.server} was not ready within ${Math.round(timeoutMs / 1000)} s (last: ${last}). ` +
        "Check that this machine can reach the endpoint (apiAllowedCidrs, or run Pulumi inside the VPC for an internal endpoint) and run `npm run doctor`."));
    log(`API server ${cluster.server} is ready`);
}

export const API_SERVER_READY_PROVIDER_VERSION = "1";

/** The outputs of an ApiServerReady that are secrets: the kubeconfig it passes on. */
export const API_SERVER_READY_SECRET_OUTPUTS = ["kubeconfig"] as const;

/** A new kubeconfig is waited for again; the wait's bounds alone are no change (they are read only while waiting). */
const API_SERVER_READY_DIFF = inputDiff<ApiServerReadyInputs>()({
    replace: [],
    update: ["kubeconfig", "providerVersion"],
    ignore: ["timeoutSeconds", "pollSeconds"],
});

export const apiServerReadyProvider: pulumi.dynamic.ResourceProvider = withCarriedOutputs({
    async create(inputs: ApiServerReadyInputs) {
        await waitForApiServer(inputs, logInfo);
        return { id: "api-server-ready", outs: inputs };
    },
    async diff(_id: string, olds: ApiServerReadyInputs, news: ApiServerReadyInputs) {
        return { changes: diffInputs(API_SERVER_READY_DIFF, olds, news).changes };
    },
    async update(_id: string, _olds: ApiServerReadyInputs, news: ApiServerReadyInputs) {
        await waitForApiServer(news, logInfo);
        return { outs: news };
    },
});

/** Completes once the API server answers /readyz; its `kubeconfig` output feeds the Kubernetes provider. */
export class ApiServerReady extends pulumi.dynamic.Resource {
    /** The same kubeconfig, available only after the API server is ready (secret). */
    declare readonly kubeconfig: pulumi.Output<string>;

    constructor(name: string, args: ApiServerReadyArgs, opts?: pulumi.CustomResourceOptions) {
        super(apiServerReadyProvider, name, { providerVersion: API_SERVER_READY_PROVIDER_VERSION, ...args, kubeconfig: pulumi.secret(args.kubeconfig) },
            { ...opts, additionalSecretOutputs: [...API_SERVER_READY_SECRET_OUTPUTS] });
    }
}
