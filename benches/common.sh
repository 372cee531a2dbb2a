# Sourced by benches/run.sh and benches/replay.sh: strict mode, the repository's root as the
# working folder, N (runs per figure, default 7), BIN (the release build, built here, unless
# given), W (the workloads), TMP (a folder removed on exit), `median` (of numbers on stdin) and
# `once` (the wall-clock seconds of one run of a command).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N="${N:-7}"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/sfn-local
fi
W=benches/workloads
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# once CMD...: the wall-clock seconds of one run of CMD (stdin from $IN), with a fresh database
# ($TMP/db removed first, untimed). Bash's clock around the bare process, to the microsecond: a
# wrapper like /usr/bin/time costs a few ms of its own and counts in hundredths.
once() {
  rm -f "$TMP"/db*
  local start=$EPOCHREALTIME
  "$@" < "${IN:-/dev/null}" > /dev/null 2> "$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
  echo "$EPOCHREALTIME - $start" | bc -l
}
