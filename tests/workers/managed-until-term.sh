#!/usr/bin/env bash
# A managed handler that works until SIGTERM, then records it ($TOKEN_DIR/term-ATTEMPT) and
# exits 0 with a result that must be discarded.
set -u
cat > /dev/null
# Written aside and renamed: the test reads a file as soon as it exists, never half written.
trap 'echo term > "$TOKEN_DIR/.term"; mv "$TOKEN_DIR/.term" "$TOKEN_DIR/term-$SFN_RETRY_COUNT"; echo "{\"discard\":true}"; exit 0' TERM
printf '%s' "$$" > "$TOKEN_DIR/.pid"
mv "$TOKEN_DIR/.pid" "$TOKEN_DIR/pid-$SFN_RETRY_COUNT"
while :; do sleep 0.05; done
