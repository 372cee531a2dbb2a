# Sourced by benches/run.sh and benches/replay.sh: strict mode, the repository's root as the
# working folder, N (runs per figure, default 7), BIN (the release build, built here, unless
# given), W (the workloads), TMP (a folder removed on exit) and `median` (of numbers on stdin).
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
