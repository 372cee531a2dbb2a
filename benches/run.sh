#!/usr/bin/env bash
# Whole-process benchmarks of sfn-local (release build), median of N runs each, with peak memory.
#
#   benches/run.sh            # N=7
#   N=15 benches/run.sh
#   BIN=path/to/sfn-local benches/run.sh   # a binary built otherwise (no cargo build)
#
# Workloads (benches/workloads/):
#   pass-chain-1000    1,000 chained Pass states
#   map-10000          an inline Map over 10,000 items, three Pass states each using States.Format
#   choice-loop-10000  a Choice loop counting to 10,000 with States.MathAdd
#   validate-75        `sfn-local validate` on a 75-state definition
#   one-state          a one-state Pass machine: the floor of a `run` (process, database, schema)
# and the bytes the Map's database takes on disk (after a checkpoint), with BEFORE=path/to/an
# older sfn-local the same for it beside.
# Every run writes the full history to a fresh SQLite database. The Map and the Choice loop write
# 80,000 and 40,000 events, past AWS's 25,000-event cap, so they run with --max-history-events 0
# (AWS itself could not run them to the end).
#
# If LOCAL_SFN points at aws-local-stepfunctions' `local-sfn` (npm i aws-local-stepfunctions@3.0.0,
# on node 22 first on PATH), the three run workloads then run again in alternating pairs with
# it (one run of each in turn, N rounds), for the comparison in the README.
source "$(dirname "$0")/common.sh"

# measure NAME CMD...: prints "NAME median_seconds peak_MB". Times come from runs of the bare
# command (a wrapper like /usr/bin/time costs a few ms of its own); peak memory from one more run
# under /usr/bin/time.
measure() {
  local name=$1; shift
  local times=()
  for _ in $(seq "$N"); do
    times+=("$(once "$@")")
  done
  rm -f "$TMP"/db*
  /usr/bin/time -f "%M" -o "$TMP/time" "$@" < "${IN:-/dev/null}" > /dev/null 2> "$TMP/err" || { cat "$TMP/err"; exit 1; }
  local t m
  t=$(printf '%s\n' "${times[@]}" | median)
  m=$(cat "$TMP/time")
  printf '%-22s %9.4f s %8.1f MB\n' "$name" "$t" "$(echo "$m / 1024" | bc -l)"
}

# pair NAME INPUT -- OURS... -- THEIRS...: N rounds of one run of each, in turn, so that both
# see the same machine (this one's speed drifts by ±15% within minutes); prints the medians and
# their ratio.
pair() {
  local name=$1 input=$2 ours=() theirs=() side=ours ours_t=() theirs_t=()
  shift 3
  for arg in "$@"; do
    if [ "$arg" = "--" ]; then side=theirs; continue; fi
    if [ $side = ours ]; then ours+=("$arg"); else theirs+=("$arg"); fi
  done
  for _ in $(seq "$N"); do
    ours_t+=("$(IN=$input once "${ours[@]}")")
    theirs_t+=("$(IN=$input once "${theirs[@]}")")
  done
  local a b
  a=$(printf '%s\n' "${ours_t[@]}" | median)
  b=$(printf '%s\n' "${theirs_t[@]}" | median)
  printf '%-22s sfn-local %8.4f s   aws-local-stepfunctions %8.4f s   %5.1fx\n' \
    "$name" "$a" "$b" "$(echo "$b / $a" | bc -l)"
}

echo "sfn-local, median of $N runs (wall clock, whole process), peak RSS:"
measure pass-chain-1000   $BIN run $W/pass-chain-1000.asl.json --db "$TMP/db"
measure map-10000         $BIN run $W/map-10000.asl.json --input-file $W/map-10000.input.json --db "$TMP/db" --max-history-events 0
measure choice-loop-10000 $BIN run $W/choice-loop-10000.asl.json --db "$TMP/db" --max-history-events 0
measure validate-75       $BIN validate $W/validate-75-states.asl.json
measure one-state         $BIN run $W/one-state.asl.json --db "$TMP/db"

# db_bytes BIN: the Map's database on disk, its WAL checkpointed into it first.
db_bytes() {
  rm -f "$TMP"/db*
  "$1" run $W/map-10000.asl.json --input-file $W/map-10000.input.json --db "$TMP/db" \
    --max-history-events 0 > /dev/null 2>&1
  python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$TMP/db"
  stat -c %s "$TMP/db"
}
printf '%-22s %9d bytes' map-10000-database "$(db_bytes "$BIN")"
if [ -n "${BEFORE:-}" ]; then printf '   (%s: %d bytes)' "$BEFORE" "$(db_bytes "$BEFORE")"; fi
echo

if [ -n "${LOCAL_SFN:-}" ]; then
  echo "Alternating pairs with aws-local-stepfunctions ($LOCAL_SFN): each of N rounds runs"
  echo "sfn-local, then the peer, on the same workload; medians of each, and their ratio:"
  # local-sfn reads its input from stdin whenever stdin is not a terminal (ignoring the
  # arguments), so each input goes there, for the peer as for a user in a pipeline.
  echo '{}' > "$TMP/empty.json"
  pair pass-chain-1000 "$TMP/empty.json" -- $BIN run $W/pass-chain-1000.asl.json --db "$TMP/db" \
    -- "$LOCAL_SFN" -f $W/pass-chain-1000.asl.json
  pair map-10000 $W/map-10000.input.json -- $BIN run $W/map-10000.asl.json \
    --input-file $W/map-10000.input.json --db "$TMP/db" --max-history-events 0 \
    -- "$LOCAL_SFN" -f $W/map-10000.asl.json
  pair choice-loop-10000 "$TMP/empty.json" -- $BIN run $W/choice-loop-10000.asl.json --db "$TMP/db" \
    --max-history-events 0 -- "$LOCAL_SFN" -f $W/choice-loop-10000.asl.json
fi
