#!/usr/bin/env bash
# `run` and `replay` of its history side by side (#52: "replaying a 10,000-event history takes no
# longer than running it"): N rounds of one `run` and one `replay`, in turn, so that both see the
# same machine (its speed drifts within minutes); the median wall-clock time of each, whole
# process, in milliseconds, their ratio, and the median of each pair's own ratio (steadier: a
# pair sees one state of the machine).
#
#   benches/replay.sh                      # N=7, the release build
#   N=21 benches/replay.sh
#   BIN=target/debug/sfn-local benches/replay.sh   # a binary built otherwise (no cargo build)
#
# Workload: benches/workloads/map-10000.asl.json over its first 1,250 items, which writes 10,006
# events (8 per iteration); its history, as `get-execution-history` prints it, is 3.1 MB of JSON.
# `run` writes the history to a fresh SQLite database; `replay` reads that history, re-runs the
# definition in memory and compares the two, event by event (and must find them identical).
source "$(dirname "$0")/common.sh"

python3 -c "
import json, sys
items = json.load(open('$W/map-10000.input.json'))['items'][:1250]
json.dump({'items': items}, open(sys.argv[1], 'w'))" "$TMP/input.json"

RUN=("$BIN" run $W/map-10000.asl.json --input-file "$TMP/input.json" --db "$TMP/db"
  --max-history-events 0)
"${RUN[@]}" > /dev/null 2>&1
ARN=$("$BIN" list-executions --db "$TMP/db" \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['executions'][0]['executionArn'])")
"$BIN" get-execution-history --db "$TMP/db" --execution-arn "$ARN" > "$TMP/history.json"
events=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['events']))" \
  "$TMP/history.json")
cp "$TMP/history.json" "$TMP/recorded.json"
REPLAY=("$BIN" replay "$TMP/recorded.json" --definition $W/map-10000.asl.json)

run_s=() replay_s=() pair_ratios=()
for _ in $(seq "$N"); do
  run_s+=("$(once "${RUN[@]}")")
  replay_s+=("$(once "${REPLAY[@]}")")
  pair_ratios+=("$(echo "${replay_s[-1]} / ${run_s[-1]}" | bc -l)")
done
run_ms=$(printf '%s\n' "${run_s[@]}" | median | awk '{print $1 * 1000}')
replay_ms=$(printf '%s\n' "${replay_s[@]}" | median | awk '{print $1 * 1000}')

echo "$BIN, map of 1,250 items: $events events, $(stat -c %s "$TMP/recorded.json") bytes of history;"
echo "medians of $N alternating pairs (wall clock, whole process):"
printf '%-8s %8.1f ms\n' run "$run_ms" replay "$replay_ms"
printf 'replay / run: %.2fx (median of the per-pair ratios: %.2fx)\n' \
  "$(echo "$replay_ms / $run_ms" | bc -l)" "$(printf '%s\n' "${pair_ratios[@]}" | median)"
