#!/usr/bin/env bash
# `run` and `replay` of its history side by side (#52: "replaying a 10,000-event history takes no
# longer than running it"), median of N runs each, user CPU and wall clock, whole process.
#
#   benches/replay.sh                      # N=7, the release build
#   N=15 benches/replay.sh
#   BIN=target/debug/sfn-local benches/replay.sh   # a binary built otherwise (no cargo build)
#
# Workload: benches/workloads/map-10000.asl.json over its first 1,250 items, which writes 10,006
# events (8 per iteration); its history, as `get-execution-history` prints it, is 3.1 MB of JSON.
# `run` writes the history to a fresh SQLite database; `replay` reads that history, re-runs the
# definition in memory and compares the two, event by event.
source "$(dirname "$0")/common.sh"

python3 -c "
import json, sys
items = json.load(open('$W/map-10000.input.json'))['items'][:1250]
json.dump({'items': items}, open(sys.argv[1], 'w'))" "$TMP/input.json"

# measure CMD...: "user_seconds wall_seconds", the medians of N runs, each with a fresh database.
measure() {
  local users=() walls=()
  for _ in $(seq "$N"); do
    rm -f "$TMP"/db*
    /usr/bin/time -f "%U %e" -o "$TMP/time" "$@" > /dev/null 2> "$TMP/err" \
      || { cat "$TMP/err"; exit 1; }
    read -r u w < "$TMP/time"
    users+=("$u"); walls+=("$w")
  done
  echo "$(printf '%s\n' "${users[@]}" | median) $(printf '%s\n' "${walls[@]}" | median)"
}

RUN=("$BIN" run $W/map-10000.asl.json --input-file "$TMP/input.json" --db "$TMP/db"
  --max-history-events 0)
"${RUN[@]}" > /dev/null 2>&1
ARN=$("$BIN" list-executions --db "$TMP/db" \
  | python3 -c "import json,sys; print(json.load(sys.stdin)['executions'][0]['executionArn'])")
"$BIN" get-execution-history --db "$TMP/db" --execution-arn "$ARN" > "$TMP/history.json"
events=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['events']))" \
  "$TMP/history.json")
cp "$TMP/history.json" "$TMP/recorded.json"

read -r run_user run_wall <<< "$(measure "${RUN[@]}")"
read -r replay_user replay_wall <<< "$(measure "$BIN" replay "$TMP/recorded.json" \
  --definition $W/map-10000.asl.json)"

echo "$BIN, map of 1,250 items: $events events, $(stat -c %s "$TMP/recorded.json") bytes of history;"
echo "median of $N runs (whole process):"
printf '%-8s user %6.2f s   wall %6.2f s\n' run "$run_user" "$run_wall" replay "$replay_user" "$replay_wall"
printf 'replay / run: %.1fx user, %.1fx wall\n' \
  "$(echo "$replay_user / $run_user" | bc -l)" "$(echo "$replay_wall / $run_wall" | bc -l)"
