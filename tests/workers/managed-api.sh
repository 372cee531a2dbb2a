#!/usr/bin/env bash
# A managed handler for `sfn-local worker --endpoint-url` (the API gives it no SFN_* variables
# but the token): records its environment and pid in $TOKEN_DIR/N (N counts handlers), then
# does what its input's "mode" says, then answers with what it got:
#   crash-once  the first handler works "forever" (the test kills it)
#   quiet       works QUIET_SECONDS without a word
#   until-term  works until SIGTERM, records it in $TOKEN_DIR/term (whole, by a rename: the
#               test reads it as soon as it exists), answers (to be discarded)
#   fail        exits 3 naming its error on its last stderr line
set -u
input=$(cat)
n=0
while ! mkdir "$TOKEN_DIR/h$n" 2>/dev/null; do n=$((n + 1)); done
{
  printf 'pid=%s\n' "$$"
  printf 'endpoint=%s\n' "${AWS_ENDPOINT_URL_SFN:-}"
  printf 'region=%s\n' "${AWS_REGION:-}"
  printf 'account=%s\n' "${SFN_LOCAL_ACCOUNT_ID:-}"
  printf 'token=%s\n' "${SFN_TASK_TOKEN:+set}"
} > "$TOKEN_DIR/h$n/env.tmp"
mv "$TOKEN_DIR/h$n/env.tmp" "$TOKEN_DIR/h$n/env"
case "$input" in *crash-once*) [ "$n" = 0 ] && sleep 60 ;; esac
case "$input" in *quiet*) sleep "${QUIET_SECONDS:-3}" ;; esac
case "$input" in
  *until-term*)
    trap 'echo term > "$TOKEN_DIR/.term"; mv "$TOKEN_DIR/.term" "$TOKEN_DIR/term"; echo "{\"discard\":true}"; exit 0' TERM
    while :; do sleep 0.05; done ;;
  *fail*)
    echo 'working...' >&2
    echo '{"Error": "Handler.Broken", "Cause": "the codec is missing"}' >&2
    exit 3 ;;
esac
printf '{"handler":%s,"input":%s}\n' "$n" "$input"
