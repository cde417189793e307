/**
 * Versions check: the version the config asks for (`clusterInfo.kubernetesVersion`), the one each API server runs and each
 * Node's kubelet, and any skew outside the version-skew policy (docs/upgrades.md#version-support): API servers more than a
 * minor apart, a kubelet newer than the oldest API server or more than three minors older. An upgrade left half-way (API
 * servers on two versions, kubelets behind the API servers, the config ahead) is a warning whose next step is
 * `pulumi up`, which resumes it.
 */
import { compareVersions, oldestVersion, skewFindings } from "../rules";
import { DoctorContext } from "./context";
import { Finding } from "./types";

/** `1.36.3: a, b; 1.35.4: c`: the names per version, newest first. */
function byVersion(versions: Readonly<Record<string, string>>): string {
    const groups = new Map<string, string[]>();
    for (const [name, v] of Object.entries(versions)) groups.set(v || "?", [...(groups.get(v || "?") ?? []), name]);
    return [...groups].sort(([a], [b]) => compareVersions(b, a)).map(([v, names]) => `${v}: ${names.sort().join(", ")}`).join("; ");
}

/**
 * Runs the Versions check.
 * @param ctx Shared reads of this doctor run.
 */
export async function checkVersions(ctx: DoctorContext): Promise<Finding[]> {
    const configured = ctx.info.kubernetesVersion;
    const { kubelets, apiServers, unlabelled } = await ctx.versions();
    const out: Finding[] = [];
    const add = (status: Finding["status"], subject: string, evidence: string, next: string) => out.push({ check: "versions", status, subject, evidence, next });
    const resume = "run `pulumi up`: it resumes the upgrade where it stopped (docs/upgrades.md#pausing-and-resuming)";
    const servers = Object.values(apiServers).filter(Boolean);
    const running = oldestVersion(servers);
    if (!running && unlabelled.length > 0) {
        add("problem", "API servers", `kube-apiserver pods found on ${unlabelled.join(", ")}, none of them a Node labelled node-role.kubernetes.io/control-plane: the masters' control-plane label is missing (only a control-plane Node's API server counts)`,
            "label each master's Node again as kubeadm does (`kubectl label node <master> node-role.kubernetes.io/control-plane=`) and find what removed the label");
        return out;
    }
    if (!running) {
        add("problem", "API servers", "no kube-apiserver pod found in kube-system", "the join check's /readyz and `crictl ps -a` on each master show whether the control plane runs");
        return out;
    }
    for (const skew of skewFindings(servers, kubelets)) {
        add("problem", "version skew", `${skew} (outside the Kubernetes version-skew policy)`,
            "move the component named back into the policy: kubelets through `pulumi up` (NodeVersions) or by replacing the node; API servers by finishing the upgrade with `pulumi up`");
    }
    if (new Set(servers).size > 1) add("warning", "API servers", `run more than one version (${byVersion(apiServers)}): an upgrade did not finish`, resume);
    const behind = Object.fromEntries(Object.entries(kubelets).filter(([, v]) => compareVersions(v, running) < 0));
    if (Object.keys(behind).length > 0) add("warning", "kubelets", `older than the API servers (${running}): ${byVersion(behind)}`, resume);
    if (compareVersions(configured, running) > 0) {
        add("warning", "kubernetesVersion", `the config asks for ${configured}, the API servers run ${running}`, `${resume}; \`pulumi preview\` says first whether it may`);
    } else if (compareVersions(configured, running) < 0) {
        add("problem", "kubernetesVersion", `the config asks for ${configured}, older than the API servers' ${running}: kubeadm does not downgrade`,
            `set kubernetesVersion to ${running} (or newer) in the stack config`);
    }
    if (out.length === 0) {
        add("ok", "versions", `configured ${configured}; API servers ${byVersion(apiServers)}; kubelets ${byVersion(kubelets)}; within the version-skew policy`, "");
    }
    return out;
}
