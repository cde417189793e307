// Rules of node admission by cloud identity (docs/admission.md): the identity signing certificate the service
// trusts, and the ECS tag that opens the one-line manual path. Sources: docs/upstream.md#admission-config.
import * as crypto from "crypto";
import { tagKeyProblem, tagValueProblem } from "./alibaba";
import { AUTOSCALED_LABEL, CLUSTER_TAG, LEGACY_POOL_LABEL, POOL_LABEL, ROLE_TAG } from "./labels";
import { AUTOSCALED_SPEC_LABEL, SPEC_TAG } from "./spec";

/** The tag keys alicloud-kubeadm sets on its own resources and instances (and the labels that become pool instances' tags). */
const OWN_TAG_KEYS: readonly string[] = [CLUSTER_TAG, ROLE_TAG, POOL_LABEL, LEGACY_POOL_LABEL, AUTOSCALED_LABEL, SPEC_TAG, AUTOSCALED_SPEC_LABEL];

/**
 * Why `pem` is not one or more PEM certificates and nothing else, or undefined. The text goes verbatim into the
 * admission service's ConfigMap (plain Pulumi state, readable in the cluster): a private key pasted with the
 * certificate would be published there, so any block that is not a certificate is refused, without repeating it.
 * A block cut short (a BEGIN line without its END) would be dropped in silence by the service's parser, so it is
 * refused too.
 */
export function identityCertificateProblem(pem: string): string | undefined {
    const begins = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1]);
    const other = begins.find((type) => type !== "CERTIFICATE");
    if (other !== undefined) {
        const what = /PRIVATE KEY/.test(other) ? "a private key" : `a ${other} block`;
        return `holds ${what} (-----BEGIN ${other}-----) besides the certificate(s); the value is not repeated. This text is published in the ` +
            "admission service's ConfigMap: give only Alibaba's public certificate(s), and if a private key was set here, treat it as exposed";
    }
    const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) return "must be PEM (-----BEGIN CERTIFICATE-----): Alibaba's instance identity certificate, see docs/admission.md";
    if (begins.length !== blocks.length || (pem.match(/-----END CERTIFICATE-----/g) ?? []).length !== blocks.length) {
        return `has ${begins.length} BEGIN CERTIFICATE line(s) but ${blocks.length} whole certificate(s): a certificate is cut short or pasted into another; ` +
            "give each certificate whole, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----";
    }
    for (const b of blocks) {
        try {
            new crypto.X509Certificate(b);
        } catch (e) {
            return `a certificate does not parse: ${(e as Error).message}`;
        }
    }
    return undefined;
}

/** An ECS tag as `key=value`: a key of 1–128 characters without `=` or spaces, a value of at most 128 without spaces. */
export const JOIN_TAG_PATTERN = /^[^=\s]{1,128}=[^\s]{0,128}$/;

/**
 * Why `joinTag` cannot open the manual join path, or undefined: it must be an ECS tag `key=value` that the cloud
 * accepts (alibaba-tags: no key starting with `aliyun` or `acs:`, no `http://`/`https://`, nor a value starting with
 * `aliyun`/`acs:`), not one of the tags alicloud-kubeadm puts on its own resources (cluster, role, pool, autoscaled, spec hash:
 * any value of those keys is one it sets, or would set on a pool added later), and without a second `=` (the
 * admission service splits the text at each `=`).
 */
export function joinTagProblem(joinTag: string): string | undefined {
    if (!JOIN_TAG_PATTERN.test(joinTag)) {
        return `"${joinTag}" must be key=value (an ECS tag; e.g. alicloud-kubeadm/join=dev)`;
    }
    const at = joinTag.indexOf("=");
    const key = joinTag.slice(0, at);
    const value = joinTag.slice(at + 1);
    if (value.includes("=")) {
        return `"${joinTag}": the value has a second "=", which the admission service does not read (it compares only the text up to it); use a value without "="`;
    }
    if (OWN_TAG_KEYS.includes(key)) {
        return `"${joinTag}": ${key} is a tag alicloud-kubeadm puts on its own instances, so they would all be admitted by the tag alone; ` +
            "use a key of your own (e.g. alicloud-kubeadm/join=dev), set only on the instances that may join";
    }
    const cloud = tagKeyProblem(key) ?? tagValueProblem(value);
    return cloud ? `"${joinTag}": ${cloud}, so no instance can carry this tag` : undefined;
}

/**
 * Why the join tag is one that instances of the cluster already carry, or undefined: `carried` maps each such
 * `key=value` to who carries it (`tags.team`, `nodePools.1.labels.team`, …). The manual path admits any instance
 * with the tag, so an instance the cluster tags itself (a master, a pool node that left its scaling group) would
 * be admitted by the tag alone, past the membership checks.
 */
export function joinTagCarriedProblem(joinTag: string, carried: ReadonlyMap<string, string>): string | undefined {
    const by = carried.get(joinTag);
    return by === undefined ? undefined
        : `"${joinTag}" is a tag the cluster puts on its own instances (from ${by}), so every such instance would be admitted by the tag alone; ` +
            "use a tag that only the instances meant to join carry";
}
