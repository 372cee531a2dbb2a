#!/usr/bin/env bash
# A managed handler that works QUIET_SECONDS without a word (no heartbeat of its own), then
# prints its result.
set -eu
input=$(cat)
sleep "${QUIET_SECONDS:-5}"
printf '{"worked":%s,"input":%s}\n' "${QUIET_SECONDS:-5}" "$input"
