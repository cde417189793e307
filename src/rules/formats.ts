// Value formats shared by validation, components, providers and the node scripts' renderer:
// Go durations, versions, bootstrap tokens, certificate keys, CA pins, instance ids, names.

/** Lowest Kubernetes minor supported: kubeadm's config API v1beta4 arrived in 1.31. */
export const MIN_KUBERNETES_MINOR = 31;

/** A bootstrap token `<id>.<secret>` (kubeadm: 6 + 16 characters of [a-z0-9]). */
export const TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;
/** The public part of a bootstrap token; it names the Secret `bootstrap-token-<id>`. */
export const TOKEN_ID_PATTERN = /^[a-z0-9]{6}$/;
/** The certificate key printed by `kubeadm init phase upload-certs --upload-certs`: 32 bytes in hex. */
export const CERTIFICATE_KEY_PATTERN = /^[0-9a-f]{64}$/;
/** An X25519 public key of the secret channel: SPKI DER in Base64 (src/cloud/channel.ts). */
export const CHANNEL_KEY_PATTERN = /^MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=$/;
/** A sealed text of the secret channel: `<ephemeral X25519 key>.<openssl enc output>`, both Base64. */
export const SEALED_PATTERN = /^MCowBQYDK2VuAyEA[A-Za-z0-9+/]{43}=\.[A-Za-z0-9+/]{22,4000}={0,2}$/;
/**
 * The longest encryption config (the masters' whole EncryptionConfiguration, gzip + Base64) a control-plane join
 * carries: `<token> <certificate key> <config>` sealed must match {@link SEALED_PATTERN} (at most 4000 characters
 * after the dot, 3000 bytes: 16 of salt header, AES-CBC padding to 16, 64 of SHA-256 frame, 89 of token and
 * certificate key leave 2822): about 50 aescbc keys. src/shell/ops/join-secrets.sh refuses more with the same number.
 */
export const MAX_ENCRYPTION_CONFIG_GZ_B64 = 2800;
/** A channel id: names an instance's one-use channel key pair. */
export const CHANNEL_ID_PATTERN = /^[0-9a-f]{32}$/;
/** The name of one stack credential: a service-account token Secret in kube-system. */
export const STACK_CREDENTIAL_PATTERN = /^alicloud-kubeadm-stack-[a-z0-9]{8}$/;
/** A CA pin for `caCertHashes`: `sha256:` and the hex SHA-256 of the CA's SubjectPublicKeyInfo. */
export const CA_HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;
/** An ECS instance id. */
export const INSTANCE_ID_PATTERN = /^i-[a-z0-9]{8,30}$/;
/** A DNS-1123 label (Kubernetes object names, cluster and pool names). */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A DNS-1123 label of at most 63 characters: a Kubernetes label value such as a node's pool name. */
export const DNS1123_LABEL_63 = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** The shape of a region id (`cn-hangzhou`, `ap-southeast-1`); src/rules/regions.ts knows which exist. */
export const REGION_ID_PATTERN = /^[a-z]{2,}-[a-z0-9-]+$/;
/** `host:port` (an API or admission endpoint): a DNS name or an IPv4 address, and up to 5 digits. */
export const HOST_PORT_PATTERN = /^([A-Za-z0-9.-]+):(\d{1,5})$/;
/** An http(s) URL a node script may put in a shell variable (no white space, quotes or backslashes). */
export const HTTP_URL_PATTERN = /^https?:\/\/[^\s'"\\]+$/;
/** An image registry or reference a node script may put in a shell variable (loose: the config checks it fully). */
export const IMAGE_SOURCE_PATTERN = /^[a-z0-9][a-z0-9._\-/:@]*$/i;
/** An API server certificate SAN: a DNS name (a `*` label allowed) or an IP address. */
export const CERT_SAN_PATTERN = /^[A-Za-z0-9*][A-Za-z0-9.*:-]*$/;
/** A secrets-encryption key of kube-apiserver's `aescbc` provider: 32 bytes in Base64. */
export const ENCRYPTION_KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

/** The units of Go's time.ParseDuration, in seconds. */
const DURATION_UNITS: Readonly<Record<string, number>> = { ns: 1e-9, us: 1e-6, "µs": 1e-6, "μs": 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/**
 * A non-negative Go duration in ASCII, as an extended regular expression that bash's `[[ =~ ]]` reads too:
 * an optional `+`, then `0` or one or more `<number><unit>` (`10m`, `1h30m`, `1.5h`, `.5h`, `500ms`).
 * Go also takes `µs`; the node operations' parameters stay ASCII, so they use this.
 */
export const GO_DURATION_ERE = "^[+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$";

/**
 * Seconds of a Go duration as `time.ParseDuration` reads it (`10m`, `1h30m`, `1.5h`, `500ms`, `0`, `+5m`), or
 * undefined when it is not one. Negative durations are refused: nothing here takes one. The Cluster
 * Autoscaler's, the CCM's and kubeadm's duration flags all parse with this grammar.
 */
export function parseDuration(text: string): number | undefined {
    const seconds = durationSeconds(text);
    // Go holds a duration in an int64 of nanoseconds and refuses a longer one ("invalid duration").
    return seconds !== undefined && seconds <= MAX_GO_DURATION_SECONDS ? seconds : undefined;
}

/** The longest Go duration: 2^63 − 1 nanoseconds (about 2562047h47m), in seconds. */
export const MAX_GO_DURATION_SECONDS = 9223372036.854775807;

/** Seconds of a duration by the grammar alone (no upper bound), or undefined. */
function durationSeconds(text: string): number | undefined {
    const unsigned = text.startsWith("+") ? text.slice(1) : text;
    if (unsigned === "0") {
        return 0;
    }
    const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
    let seconds = 0;
    let at = 0;
    while (at < unsigned.length) {
        part.lastIndex = at;
        const m = part.exec(unsigned);
        if (!m) {
            return undefined;
        }
        seconds += Number(m[1]) * DURATION_UNITS[m[2]];
        at = part.lastIndex;
    }
    return unsigned.length > 0 ? seconds : undefined;
}

/** Why `text` is not a Go duration (the reason names examples), or undefined when it is one. */
export function durationProblem(text: string): string | undefined {
    if (parseDuration(text) !== undefined) {
        return undefined;
    }
    return durationSeconds(text) !== undefined
        ? `"${text}" is longer than Go's longest duration (2562047h, 2^63 − 1 nanoseconds); Go refuses it as an invalid duration`
        : `"${text}" must be a duration like 10m, 1h30m or 1.5h (Go duration syntax)`;
}

/**
 * `[major, minor, patch]` of a full version `1.36.3` (a leading `v` is allowed), or undefined. Numbers as
 * semver writes them: no leading zeros, no surrounding spaces (a package or image tag is built from the
 * text as given, so `1.036.3` or ` 1.36.3` would name nothing that exists).
 */
export function parseVersion(text: string): [number, number, number] | undefined {
    const m = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/.exec(text);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Why `version` is not a Kubernetes version this project supports, or undefined. */
export function kubernetesVersionProblem(version: string): string | undefined {
    const v = parseVersion(version);
    if (!v || version.startsWith("v")) {
        const near = /^\s*v?(\d+)\.(\d+)\.(\d+)\s*$/.exec(version);
        const fix = near ? ` (did you mean "${near.slice(1).map(Number).join(".")}"? no spaces, no leading zeros, no v)` : " (quote it in YAML)";
        return `"${version}" must be a full version like "1.36.3"${fix}`;
    }
    if (v[0] !== 1 || v[1] < MIN_KUBERNETES_MINOR) {
        return `${version} is older than 1.${MIN_KUBERNETES_MINOR}; kubeadm config v1beta4 needs 1.${MIN_KUBERNETES_MINOR} or newer`;
    }
    return undefined;
}

/** Why `name` is not a DNS-1123 label of at most `max` characters, or undefined. */
export function dnsLabelProblem(name: string, max: number): string | undefined {
    return DNS1123_LABEL.test(name) && name.length <= max
        ? undefined
        : `"${name}" must be a DNS-1123 label of at most ${max} characters (lowercase letters, digits, '-')`;
}

/**
 * Why a cluster or pool name cannot be part of an ECS host name, or undefined. The masters' host names are
 * `<cluster>-master-<n>` and the pools' instances are named `<cluster>-<pool>`; ECS refuses a host name with
 * consecutive hyphens (docs/upstream.md#alibaba-names).
 */
export function hostNamePartProblem(name: string): string | undefined {
    return name.includes("--")
        ? `"${name}" contains "--": it becomes part of ECS host names (e.g. <cluster>-master-0), which may not contain consecutive hyphens; use single hyphens`
        : undefined;
}

/**
 * Why `pattern` cannot be a Go (RE2) regular expression, or undefined. Patterns that select images are
 * matched by the Alibaba provider in Go: it must compile in JavaScript and use nothing RE2 lacks
 * (lookaround, backreferences, possessive quantifiers).
 */
export function goRegexProblem(pattern: string): string | undefined {
    try {
        new RegExp(pattern);
    } catch (err) {
        return `"${pattern}" is not a regular expression (${(err as Error).message.replace(/^Invalid regular expression: /, "")})`;
    }
    if (/\(\?<?[=!]|\\[1-9]|\\k<|[*+?}][+]/.test(pattern)) {
        return `"${pattern}" uses lookaround, a backreference or a possessive quantifier, which Go's regular expressions (RE2) do not support`;
    }
    return undefined;
}
