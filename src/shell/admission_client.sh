#!/bin/bash
# alicloud-kubeadm admission client (sourced between prepare_node.sh and attach_node.sh when the node joins by
# cloud identity; src/shell/render.ts puts it there). The node gets a single-use bootstrap token from the
# cluster's admission service (src/admission/) by proving who it is: its ECS instance identity document,
# PKCS#7-signed by Alibaba Cloud with the service's challenge as audience. The userdata holds no secret:
# AK_ADMISSION_ENDPOINTS (the masters' private IP:10443), the pin of the service's key, the CA pin, the pool, the
# versions. The service's TLS certificate is trusted only when its public key matches AK_ADMISSION_PIN. No proxy:
# the service checks that the request comes from the instance's own private IP. Refused or unreachable rounds
# back off exponentially with jitter (a burst of nodes does not retry in step), within AK_ADMISSION_TIMEOUT.

AK_ADMISSION_ATTEMPTS="${AK_ADMISSION_ATTEMPTS:-120}"
AK_ADMISSION_TIMEOUT="${AK_ADMISSION_TIMEOUT:-900}"
AK_ADMISSION_BACKOFF_MAX="${AK_ADMISSION_BACKOFF_MAX:-30}"
# attach_node.sh checks the token's form and writes a JoinConfiguration before its join loop; the real token
# replaces this placeholder (no credential: the "pendin" id never exists) before each attempt, in
# ak_admission_token, which then rewrites the JoinConfiguration ($config of attach_node.sh).
AK_BOOTSTRAP_TOKEN=$(printf 'pendin.%016d' 0)
# The node registers with this taint (attach_node.sh): the admission service removes it when it sets the pool
# label, so no pod lands before the label (src/admission/nodes.ts POOL_PENDING_TAINT).
# shellcheck disable=SC2034 # read by attach_node.sh (ak_join_config)
AK_POOL_PENDING_TAINT="startup-taint.cluster-autoscaler.kubernetes.io/alicloud-kubeadm-pool:NoSchedule"

# ak_ca_pin FILE: the sha256:<hex> pin of a certificate's public key (kubeadm's caCertHashes form).
ak_ca_pin() {
  local sum
  sum=$(openssl x509 -in "$1" -noout -pubkey | openssl pkey -pubin -outform DER | sha256sum) || return 1
  printf 'sha256:%s' "${sum%% *}"
}

# ak_backoff ROUND: sleeps before the next round: AK_RETRY_DELAY doubled each round up to AK_ADMISSION_BACKOFF_MAX
# seconds, a random part of it ("equal jitter": between half and all of it).
ak_backoff() {
  local delay=$AK_RETRY_DELAY round=$1
  while ((round > 1 && delay < AK_ADMISSION_BACKOFF_MAX)); do
    delay=$((delay * 2))
    round=$((round - 1))
  done
  ((delay <= AK_ADMISSION_BACKOFF_MAX)) || delay=$AK_ADMISSION_BACKOFF_MAX
  ((delay > 0)) || return 0
  local ms=$((delay * 500 + RANDOM % (delay * 500 + 1)))
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
}

# ak_identity PATH: print dynamic/PATH of the metadata service (IMDSv2 token when available).
ak_identity() {
  local -a auth=()
  [ -z "${AK_IMDS_TOKEN:-}" ] || auth=(-H "X-aliyun-ecs-metadata-token: ${AK_IMDS_TOKEN}")
  curl -fsS --max-time 5 "${auth[@]}" "${AK_METADATA}/dynamic/$1"
}

# ak_admission_token: sets AK_BOOTSTRAP_TOKEN from the first admission endpoint that admits this node; a
# refusal is logged with its reason and what to do (and marked in admission.refused), then retried.
ak_admission_token() {
  local attempt endpoint pin code reason challenge deadline
  local dir="${AK_STATE_DIR}/admission"
  local -a endpoints=()
  [[ ${AK_ADMISSION_PIN:-} =~ ^sha256:[0-9a-f]{64}$ ]] || ak_die "AK_ADMISSION_PIN must be sha256:<64 hex digits> (the admission service's key)"
  IFS=, read -r -a endpoints <<<"$AK_ADMISSION_ENDPOINTS"
  # curl trusts the system CA path too unless pointed elsewhere: an empty one, so the pinned certificate is the only one.
  (umask 077 && mkdir -p "$dir" "${dir}/no-ca")
  deadline=$((SECONDS + AK_ADMISSION_TIMEOUT))
  for ((attempt = 1; attempt <= AK_ADMISSION_ATTEMPTS && SECONDS <= deadline; attempt++)); do
    for endpoint in "${endpoints[@]}"; do
      # The certificate is public; it is trusted only when its key matches the pin. Only the first certificate,
      # re-encoded: the one the pin is checked on is the only one curl trusts (a bundle would smuggle in another).
      if ! curl -fsS --noproxy "*" --max-time 5 --insecure "https://${endpoint}/admission.crt" -o "${dir}/service.in" ||
        ! openssl x509 -in "${dir}/service.in" -out "${dir}/service.crt" 2>/dev/null; then
        ak_log "admission ${endpoint}: unreachable (round ${attempt}/${AK_ADMISSION_ATTEMPTS})"
        continue
      fi
      pin=$(ak_ca_pin "${dir}/service.crt") || pin=""
      if [ "$pin" != "$AK_ADMISSION_PIN" ]; then
        ak_log "admission ${endpoint}: its key (${pin:-unreadable}) is not the pinned one; not trusting it"
        continue
      fi
      if ! challenge=$(curl -fsS --noproxy "*" --max-time 5 --cacert "${dir}/service.crt" --capath "${dir}/no-ca" "https://${endpoint}/challenge") ||
        [[ ! $challenge =~ ^ak1\.[0-9]{10}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$ ]]; then
        ak_log "admission ${endpoint}: no valid challenge (round ${attempt}/${AK_ADMISSION_ATTEMPTS})"
        continue
      fi
      if ! ak_identity instance-identity/document >"${dir}/document" ||
        ! ak_identity "instance-identity/pkcs7?audience=${challenge}" >"${dir}/signature"; then
        ak_log "cannot read the instance identity from ${AK_METADATA}; is the metadata service enabled?"
        continue
      fi
      code=$(curl -sS --noproxy "*" --max-time 30 --cacert "${dir}/service.crt" --capath "${dir}/no-ca" -o "${dir}/response" -w '%{http_code}' \
        --data-urlencode "document@${dir}/document" --data-urlencode "signature@${dir}/signature" \
        --data-urlencode "audience=${challenge}" "https://${endpoint}/admit") || code=000
      if [ "$code" = 200 ]; then
        AK_BOOTSTRAP_TOKEN=$(grep -oE '"token":"[a-z0-9]{6}\.[a-z0-9]{16}"' "${dir}/response" | cut -d'"' -f4) || AK_BOOTSTRAP_TOKEN=""
        rm -f "${dir}/response"
        if [ -n "$AK_BOOTSTRAP_TOKEN" ]; then
          rm -f "${AK_STATE_DIR}/admission.refused"
          ak_log "admitted by the admission service at ${endpoint}"
          if [ -n "${config:-}" ]; then (umask 077 && ak_join_config >"$config"); fi
          return 0
        fi
      fi
      reason=$(sed -nE 's/.*"message":"(([^"\\]|\\.)*)".*/\1/p' "${dir}/response" 2>/dev/null | head -c 800) || reason=""
      ak_log "admission ${endpoint} refused this node (HTTP ${code}): ${reason:-no reason given}"
      ak_mark admission.refused "endpoint=${endpoint}" "http=${code}" "reason=${reason}"
    done
    ak_backoff "$attempt"
  done
  ak_die "no admission service admitted this node after $((attempt - 1)) rounds; the reasons are above" \
    "(and in ${AK_STATE_DIR#"$AK_ROOT"}/admission.refused); \`npm run doctor\` lists the service's recent refusals"
}
