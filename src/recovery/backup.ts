/**
 * A backup before a control-plane change (docs/disaster-recovery.md#backups): the reusable step that member replacement
 * runs before it removes or joins a member, and that an upgrade runs before it touches a master. It runs the saved
 * etcd-backup-now operation on each master in turn; the master whose etcd member leads takes the backup, the others
 * answer `skipped`. Observe, then decide: the outcome is read from what the master's script recorded.
 */
import { invokeOperation, type ClusterAccess } from "../cloud/operations";

/** What {@link backupBeforeChange} found. */
export type BackupOutcome = { status: "ok"; key: string; bytes: number; master: string } | { status: "not-installed" };

/** `key=value` lines as a record. */
function fields(text: string): Record<string, string> {
    return Object.fromEntries(text.split("\n").map((l) => /^([a-z_]+)=(.*)$/.exec(l.trim())).filter((m): m is RegExpExecArray => m !== null).map((m) => [m[1], m[2]]));
}

/**
 * Takes an etcd backup now, before `what` (e.g. "removing control-plane member i-…").
 * @returns where it went, or `not-installed` when no master has the backup yet (a cluster being created, or one whose
 *   masters did not get the backup timer yet: then there is nothing to back up with, and the caller goes on, warned)
 * @throws Error naming each master's answer when a master has the backup but none could take one: the change must wait
 */
export async function backupBeforeChange(access: ClusterAccess, what: string, log: (m: string) => void = () => undefined,
    warn: (m: string) => void = () => undefined): Promise<BackupOutcome> {
    const answers: string[] = [];
    let installed = false;
    for (const master of access.masterInstanceIds) {
        let out: Record<string, string>;
        try {
            out = fields(await invokeOperation(access, "etcd-backup-now", master));
        } catch (err) {
            answers.push(`${master}: ${(err as Error).message.split("\n")[0]}`);
            continue;
        }
        if (out.status === "not-installed") { answers.push(`${master}: not installed`); continue; }
        installed = true;
        if (out.status === "ok") {
            log(`etcd backup before ${what}: ${out.key} (${out.bytes} bytes, revision ${out.revision}) from ${master}`);
            return { status: "ok", key: out.key ?? "", bytes: Number(out.bytes ?? 0), master };
        }
        answers.push(`${master}: ${out.status}${out.error ? ` (${out.error})` : out.leader ? ` (leader ${out.leader})` : ""}`);
    }
    if (!installed) {
        warn(`no etcd backup before ${what}: no master has the backup installed yet (${answers.join("; ")})`);
        return { status: "not-installed" };
    }
    throw new Error(`no etcd backup could be taken before ${what}, so it is not done: ${answers.join("; ")}. ` +
        "Fix the backup (`npm run doctor` shows the last one; docs/disaster-recovery.md#backups), then run `pulumi up` again");
}
