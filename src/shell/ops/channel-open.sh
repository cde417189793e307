#!/bin/bash
# channel-open (on any instance): make the one-use X25519 key pair of channel AK_CHANNEL (private key root-only on
# tmpfs, deleted by the command that opens the secret sealed to it) and print its public key. The first of the
# two round trips of a secret sent to this instance (src/cloud/channel.ts, docs/security.md).
ak_channel_open "$AK_CHANNEL"
