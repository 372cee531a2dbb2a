#!/usr/bin/env bash
# A managed handler (no token handling at all): leaves its pid in $TOKEN_DIR/pid-ATTEMPT, then on
# the first attempt works "forever" (the test kills it, or the runner above it); on later
# attempts it answers at once with what it got.
set -eu
input=$(cat)
printf '%s' "$$" > "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp"
mv "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp" "$TOKEN_DIR/pid-$SFN_RETRY_COUNT"
if [ "$SFN_RETRY_COUNT" = 0 ]; then
  sleep 60
fi
printf '{"attempt":%s,"input":%s}\n' "$SFN_RETRY_COUNT" "$input"
