/**
 * What a node runs to join through admission when the whole attach script is not in its userdata: a short
 * bootstrap that fetches the attach script from the cluster's admission service (TLS checked against the CA
 * pin), fills in the node's labels and taints, and runs it. It carries no secret: the endpoints and the CA pin.
 * Used by the saved attach command of existing nodes (the full script with the admission client exceeds what a
 * saved command may hold) and, as one line, by the manual path (stack output `attachCommand`).
 */
import { CA_HASH_PATTERN, HOST_PORT_PATTERN } from "../rules";
import { renderAttachNode, shellQuote, type AttachNodeParams } from "./render";

/** The attach script the admission service serves at /attach.sh: `{{labels}}` and `{{taints}}` are filled in by the bootstrap. */
export function renderServedAttachScript(params: Omit<AttachNodeParams, "labels" | "taints" | "token"> & { admission: { endpoints: string[] } }): string {
    return renderAttachNode({ ...params, labels: { parameter: "labels" }, taints: { parameter: "taints" } });
}

function check(endpoints: string[], caCertHash: string): void {
    if (endpoints.length === 0 || !endpoints.every((e) => HOST_PORT_PATTERN.test(e))) throw new Error("admission bootstrap: endpoints must be host:port");
    if (!CA_HASH_PATTERN.test(caCertHash)) throw new Error("admission bootstrap: caCertHash must be sha256:<64 hex digits>");
}

/**
 * The bootstrap as a script (the saved attach command's content): tries each endpoint; labels and taints are
 * the saved command's parameters `{{labels}}` / `{{taints}}` (validated by Cloud Assistant and by the script).
 */
export function renderAdmissionBootstrap(endpoints: string[], caCertHash: string): string {
    check(endpoints, caCertHash);
    return [
        "#!/bin/bash",
        "# alicloud-kubeadm attach through admission (rendered by src/shell/renderAdmission.ts): no secret in here.",
        "set -euo pipefail",
        `pin=${shellQuote(caCertHash)}`,
        "labels='{{labels}}'",
        "taints='{{taints}}'",
        ": '{{channel}}' # the saved attach command's channel parameter: nothing is sent through admission",
        'dir=$(mktemp -d) && mkdir "${dir}/no-ca" # curl would trust the system CA path too: an empty one instead',
        `for e in ${endpoints.map(shellQuote).join(" ")}; do`,
        '  curl -fsS --max-time 5 --insecure "https://${e}/ca.crt" -o "${dir}/ca.in" || continue',
        "  # Only the first certificate, re-encoded: the one the pin is checked on is the only one curl then trusts.",
        '  openssl x509 -in "${dir}/ca.in" -out "${dir}/ca.crt" || continue',
        '  sum=$(openssl x509 -in "${dir}/ca.crt" -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum)',
        '  [ "sha256:${sum%% *}" = "$pin" ] || { echo "admission ${e}: CA does not match the pin" >&2; continue; }',
        '  curl -fsS --max-time 30 --cacert "${dir}/ca.crt" --capath "${dir}/no-ca" "https://${e}/attach.sh" -o "${dir}/attach.sh" || continue',
        '  sed -i -e "s|{{labels}}|${labels}|" -e "s|{{taints}}|${taints}|" "${dir}/attach.sh"',
        '  exec bash "${dir}/attach.sh"',
        "done",
        'echo "no admission endpoint answered with the pinned CA" >&2',
        "exit 1",
        "",
    ].join("\n");
}

/**
 * The manual path as one line to paste on an instance (as root): no labels or taints, no secret. It tries each
 * master in turn, trusts only the first certificate of /ca.crt and only when it matches the pin, and runs the
 * attach script only once it was downloaded whole.
 */
export function admissionAttachOneLiner(endpoints: string[], caCertHash: string): string {
    check(endpoints, caCertHash);
    return `d=$(mktemp -d) && mkdir $d/no-ca && for e in ${endpoints.join(" ")}; do ` +
        `curl -fsSk --max-time 5 https://$e/ca.crt -o $d/ca.in && openssl x509 -in $d/ca.in -out $d/ca.crt && ` +
        `[ "sha256:$(openssl x509 -in $d/ca.crt -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)" = ${caCertHash} ] && ` +
        `curl -fsS --max-time 30 --cacert $d/ca.crt --capath $d/no-ca https://$e/attach.sh -o $d/attach.sh && break; rm -f $d/attach.sh; done; ` +
        `[ -s $d/attach.sh ] && sed -i -e 's|{{labels}}||' -e 's|{{taints}}||' $d/attach.sh && bash $d/attach.sh`;
}
