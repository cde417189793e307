#!/bin/bash
# stack-credential-revoke (on a master): delete the token Secret AK_CREDENTIAL of the stack's ServiceAccount, which
# revokes that token at once; one already gone is fine. Prints `revoked`.
ak_kubectl -n kube-system delete secret "$AK_CREDENTIAL" --ignore-not-found >/dev/null
echo revoked
