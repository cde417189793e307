/**
 * Certificates check: on every master, when each certificate kubeadm manages expires (PKI files and the client
 * certificates in the control plane's kubeconfigs) and whether the renewal timer (docs/security.md#certificate-renewal)
 * is enabled; a renewal that stopped on a component that did not come back is a problem. The same read carries each
 * master's last etcd backup (docs/disaster-recovery.md#backups): doctor reports the newest one's age and size, and warns
 * when it is older than twice the backup interval. Under 30 days left is a warning, expired a problem.
 */
import { DoctorContext, errorText, redact } from "./context";
import { Finding } from "./types";

/** Days under which a certificate is reported. */
export const CERT_WARNING_DAYS = 30;

/** Parses `<name> <ISO time>` lines of the doctor-certs operation. */
export function parseCertExpiry(text: string): { name: string; notAfter: number }[] {
    return text.split("\n").map((l) => /^(\S+)\s+(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$/.exec(l.trim())).filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ name: m[1], notAfter: Date.parse(m[2]) }));
}

/**
 * Runs the Certificates check.
 * @param ctx Shared reads of this doctor run.
 */
export async function checkCerts(ctx: DoctorContext): Promise<Finding[]> {
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string, couldNotLook?: boolean) =>
        out.push({ check: "certs", status, subject, evidence, next, ...(couldNotLook ? { couldNotLook } : {}) });
    let newest: { time: number; bytes: number; key: string } | undefined;
    let lastFailure = "";
    const renew = "on that master: `kubeadm certs renew all`, then restart the static pods one at a time (move each manifest out of /etc/kubernetes/manifests and back), one master at a time";
    for (const { instanceId, sections, error } of await ctx.onEachMaster("doctor-certs")) {
        const subject = `master ${instanceId}`;
        if (!sections) { add("problem", subject, `could not look: ${errorText(error)}`, "check the master's Cloud Assistant agent, then run doctor again", true); continue; }
        const renewal = keyValues(sections.renewal?.rc === 0 ? sections.renewal.output : "");
        if (renewal.status === "failed") {
            add("problem", subject, `the last certificate renewal (${renewal.time}) stopped: ${renewal.error ?? "no reason recorded"}`,
                "on that master: `journalctl -u alicloud-kubeadm-cert-renew`, bring the component back, then `systemctl start alicloud-kubeadm-cert-renew`");
        }
        const backup = keyValues(sections.backup?.rc === 0 ? sections.backup.output : "");
        if (backup.status === "ok" && Number.isFinite(Date.parse(backup.time)) && (!newest || Date.parse(backup.time) > newest.time)) {
            newest = { time: Date.parse(backup.time), bytes: Number(backup.bytes ?? 0), key: backup.key ?? "" };
        }
        if (backup.status === "failed") lastFailure = `${instanceId}: ${backup.error ?? "failed"} (${backup.time})`;
        const certs = sections.certs?.rc === 0 ? parseCertExpiry(sections.certs.output) : [];
        if (certs.length === 0) { add("problem", subject, `no certificate read: ${redact(sections.certs?.output ?? "no output").trim().slice(-300)}`, "check /etc/kubernetes/pki on that master"); continue; }
        const days = (c: { notAfter: number }) => Math.floor((c.notAfter - ctx.opts.now) / 86_400_000);
        const expired = certs.filter((c) => c.notAfter <= ctx.opts.now);
        const soon = certs.filter((c) => c.notAfter > ctx.opts.now && days(c) < CERT_WARNING_DAYS);
        const timer = sections.timer?.output.trim() === "enabled";
        const timerNote = timer ? "the renewal timer is enabled" : "the renewal timer is not installed (a master built before it existed): renew by hand";
        const list = (cs: typeof certs) => cs.map((c) => `${c.name} (${new Date(c.notAfter).toISOString().slice(0, 10)})`).join(", ");
        if (expired.length > 0) add("problem", subject, `expired: ${list(expired)}; ${timerNote}`, renew);
        else if (soon.length > 0) add("warning", subject, `less than ${CERT_WARNING_DAYS} days left: ${list(soon)}; ${timerNote}`, timer ? `${renew} (the timer renews under 90 days: check \`journalctl -u alicloud-kubeadm-cert-renew\`)` : renew);
        else {
            const first = certs.reduce((a, b) => (a.notAfter <= b.notAfter ? a : b));
            add(timer ? "ok" : "warning", subject, `${certs.length} certificates; the first to expire is ${first.name} in ${days(first)} days; ${timerNote}`, timer ? "" : renew);
        }
    }
    const interval = ctx.info.backupIntervalMinutes;
    if (interval !== undefined) {
        const subject = "etcd backup";
        const fix = "on the master of the etcd leader: `journalctl -u alicloud-kubeadm-etcd-backup` (docs/disaster-recovery.md#backups)";
        if (!newest) {
            add("warning", subject, `no master reports a backup yet${lastFailure ? `; the last attempt failed: ${lastFailure}` : ""}`, fix);
        } else {
            const ageMinutes = Math.floor((ctx.opts.now - newest.time) / 60_000);
            const evidence = `the last backup is ${ageMinutes} minutes old, ${newest.bytes} bytes (${newest.key})${lastFailure ? `; a later attempt failed: ${lastFailure}` : ""}`;
            add(ageMinutes > 2 * interval ? "warning" : "ok", subject, ageMinutes > 2 * interval ? `${evidence}: older than twice the interval (${interval} minutes)` : evidence,
                ageMinutes > 2 * interval ? fix : "");
        }
    }
    return out;
}

/** `key=value` lines as a record (the status files the masters' scripts write). */
function keyValues(text: string): Record<string, string> {
    return Object.fromEntries(text.split("\n").map((l) => /^([a-z_]+)=(.*)$/.exec(l.trim())).filter((m): m is RegExpExecArray => m !== null).map((m) => [m[1], m[2]]));
}
