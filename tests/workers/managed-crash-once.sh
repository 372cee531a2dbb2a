#!/usr/bin/env bash
# A managed handler (no token handling at all): leaves its pid in $TOKEN_DIR/pid-ATTEMPT; the
# first handler ever started in $TOKEN_DIR works "forever" (the test kills it, or the runner
# above it); every later one answers at once with what it got.
set -eu
input=$(cat)
# Decided before the pid is published: a test that kills the first handler as soon as its pid
# appears must not leave the "forever" part to the next one.
first=false
if mkdir "$TOKEN_DIR/first-handler" 2>/dev/null; then
  first=true
fi
printf '%s' "$$" > "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp"
mv "$TOKEN_DIR/pid-$SFN_RETRY_COUNT.tmp" "$TOKEN_DIR/pid-$SFN_RETRY_COUNT"
if $first; then
  sleep 60
fi
printf '{"attempt":%s,"input":%s}\n' "$SFN_RETRY_COUNT" "$input"
