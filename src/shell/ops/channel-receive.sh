#!/bin/bash
# channel-receive (on any instance): open AK_SEALED with the one-use key of channel AK_CHANNEL (made by channel-open,
# deleted now) and keep the secret in a root-only tmpfs file for the join script, which reads and deletes it. The
# second of the two round trips of a secret sent to this instance (src/cloud/channel.ts, docs/security.md).
# Prints only `received`.
dir=$(ak_channel_dir)
secret=$(ak_unseal "$AK_CHANNEL" "$AK_SEALED")
(umask 077 && printf '%s\n' "$secret" >"${dir}/${AK_CHANNEL}")
echo received
