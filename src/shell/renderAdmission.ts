/**
 * What a node runs to join through admission when the whole attach script is not in its userdata: a short
 * bootstrap that fetches the attach script from the cluster's admission service (TLS trusted only with the
 * service's pinned key), fills in the node's labels and taints, and runs it. It carries no secret: the endpoints
 * and the pin of the service's key.
 * Used by the saved attach command of existing nodes (the full script with the admission client exceeds what a
 * saved command may hold) and, as one line, by the manual path (stack output `attachCommand`).
 */
import { CA_HASH_PATTERN, HOST_PORT_PATTERN } from "../rules";
import { renderAttachNode, savedParameters, shellQuote, type AttachNodeParams } from "./render";

/** The attach script the admission service serves at /attach.sh: `{{labels}}` and `{{taints}}` are filled in by the bootstrap. */
export function renderServedAttachScript(params: Omit<AttachNodeParams, "labels" | "taints" | "token"> & { admission: { endpoints: string[]; pin: string } }): string {
    return renderAttachNode({ ...params, labels: { parameter: "labels" }, taints: { parameter: "taints" } });
}

function check(endpoints: string[], pin: string): void {
    if (endpoints.length === 0 || !endpoints.every((e) => HOST_PORT_PATTERN.test(e))) throw new Error("admission bootstrap: endpoints must be host:port");
    if (!CA_HASH_PATTERN.test(pin)) throw new Error("admission bootstrap: the admission service's pin must be sha256:<64 hex digits>");
}

/**
 * The bootstrap as a script (the saved attach command's content): tries each endpoint; labels and taints are
 * the saved command's parameters, read as data and checked before use (render.ts savedParameters), and put into
 * the served script's own parameter lines only then.
 */
export function renderAdmissionBootstrap(endpoints: string[], pin: string): string {
    check(endpoints, pin);
    const parameters = savedParameters(["labels", "taints", "channel"]);
    return [
        "#!/bin/bash",
        "# alicloud-kubeadm attach through admission (rendered by src/shell/renderAdmission.ts): no secret in here.",
        "set -euo pipefail",
        ...parameters.reader,
        `pin=${shellQuote(pin)}`,
        ': "$AK_CHANNEL" # the saved attach command\'s channel parameter: nothing is sent through admission',
        'dir=$(mktemp -d) && mkdir "${dir}/no-ca" # curl would trust the system CA path too: an empty one instead',
        `for e in ${endpoints.map(shellQuote).join(" ")}; do`,
        '  curl -fsS --max-time 5 --insecure "https://${e}/admission.crt" -o "${dir}/service.in" || continue',
        "  # Only the first certificate, re-encoded: the one the pin is checked on is the only one curl then trusts.",
        '  openssl x509 -in "${dir}/service.in" -out "${dir}/service.crt" || continue',
        '  sum=$(openssl x509 -in "${dir}/service.crt" -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum)',
        '  [ "sha256:${sum%% *}" = "$pin" ] || { echo "admission ${e}: its key does not match the pin" >&2; continue; }',
        '  curl -fsS --max-time 30 --cacert "${dir}/service.crt" --capath "${dir}/no-ca" "https://${e}/attach.sh" -o "${dir}/attach.sh" || continue',
        // The served script's parameter lines (# AK_NODE_LABELS={{labels}}...) get the values checked above.
        '  sed -i -e "s|^# AK_NODE_LABELS=[{][{]labels[}][}]$|# AK_NODE_LABELS=${AK_NODE_LABELS}|" -e "s|^# AK_NODE_TAINTS=[{][{]taints[}][}]$|# AK_NODE_TAINTS=${AK_NODE_TAINTS}|" "${dir}/attach.sh"',
        '  exec bash "${dir}/attach.sh"',
        "done",
        'echo "no admission endpoint answered with the pinned key" >&2',
        "exit 1",
        ...parameters.trailer,
    ].join("\n");
}

/**
 * The manual path as one line to paste on an instance (as root): no labels or taints, no secret. It tries each
 * master in turn, trusts only the first certificate of /admission.crt and only when its key matches the pin, and
 * runs the attach script only once it was downloaded whole.
 */
export function admissionAttachOneLiner(endpoints: string[], pin: string): string {
    check(endpoints, pin);
    return `d=$(mktemp -d) && mkdir $d/no-ca && for e in ${endpoints.join(" ")}; do ` +
        `curl -fsSk --max-time 5 https://$e/admission.crt -o $d/service.in && openssl x509 -in $d/service.in -out $d/service.crt && ` +
        `[ "sha256:$(openssl x509 -in $d/service.crt -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)" = ${pin} ] && ` +
        `curl -fsS --max-time 30 --cacert $d/service.crt --capath $d/no-ca https://$e/attach.sh -o $d/attach.sh && break; rm -f $d/attach.sh; done; ` +
        `[ -s $d/attach.sh ] && sed -i -e 's|{{labels}}||' -e 's|{{taints}}||' $d/attach.sh && bash $d/attach.sh`;
}
