#!/usr/bin/env bash
# One of the load test's workers (tests/load.rs). Polls `list-tasks`, takes the tasks whose
# input n is its share (n % WORKERS == WORKER), heartbeats each one every 100 ms a few times,
# answers it with {"double": 2n}, and counts what it sent and what was accepted. Stops when
# $LOAD_DIR/stop exists, then writes its counts to $LOAD_DIR/counts-$WORKER.
set -u
sfn=${SFN_LOCAL:-sfn-local}
w=$WORKER
k=$WORKERS
beats=${LOAD_BEATS:-3}
hb_ok=0 hb_refused=0 answers_ok=0 answers_refused=0 polls=0
: > "$LOAD_DIR/answered-$w"
while [ ! -e "$LOAD_DIR/stop" ]; do
  polls=$((polls + 1))
  mine=$("$sfn" list-tasks --format json 2>>"$LOAD_DIR/stderr-$w" |
    jq -r --argjson w "$w" --argjson k "$k" \
      '.tasks[] | (.input | fromjson) as $i | select($i.n % $k == $w) | "\(.taskToken) \($i.n)"')
  if [ -z "$mine" ]; then
    sleep 0.2
    continue
  fi
  while read -r token n; do
    [ -n "$token" ] || continue
    for _ in $(seq "$beats"); do
      if "$sfn" send-task-heartbeat --task-token "$token" 2>>"$LOAD_DIR/stderr-$w"; then
        hb_ok=$((hb_ok + 1))
      else
        hb_refused=$((hb_refused + 1))
      fi
      sleep 0.1
    done
    if "$sfn" send-task-success --task-token "$token" --task-output "{\"double\":$((n * 2)),\"by\":$w}" \
      2>>"$LOAD_DIR/stderr-$w"; then
      answers_ok=$((answers_ok + 1))
      echo "$token" >> "$LOAD_DIR/answered-$w"
    else
      answers_refused=$((answers_refused + 1))
    fi
  done <<< "$mine"
done
echo "$hb_ok $hb_refused $answers_ok $answers_refused $polls" > "$LOAD_DIR/counts-$w"
