#!/usr/bin/env bash
# A managed handler that works until SIGTERM, then records it ($TOKEN_DIR/term-ATTEMPT) and
# exits 0 with a result that must be discarded.
set -u
cat > /dev/null
trap 'echo term > "$TOKEN_DIR/term-$SFN_RETRY_COUNT"; echo "{\"discard\":true}"; exit 0' TERM
printf '%s' "$$" > "$TOKEN_DIR/pid-$SFN_RETRY_COUNT"
while :; do sleep 0.05; done
