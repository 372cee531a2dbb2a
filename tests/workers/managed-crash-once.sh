#!/usr/bin/env bash
# A managed handler (no token handling at all): leaves its pid in $TOKEN_DIR/pid-ATTEMPT; the
# first handler ever started in $TOKEN_DIR works "forever" (the test kills it, or the runner
# above it); every later one answers at once with what it got.
set -eu
input=$(cat)
# Claim "first" before the pid appears: a test that kills the handler as soon as it sees the
# pid must not leave the claim to the next handler.
first=false
if mkdir "$TOKEN_DIR/first-handler" 2>/dev/null; then first=true; fi
printf '%s' "$$" > "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp"
mv "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp" "$TOKEN_DIR/pid-$SFN_RETRY_COUNT"
if [ "$first" = true ]; then
  sleep 60
fi
printf '{"attempt":%s,"input":%s}\n' "$SFN_RETRY_COUNT" "$input"
