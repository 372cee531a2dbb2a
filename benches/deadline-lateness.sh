#!/usr/bin/env bash
# How late is an expiry acted on? (Goal: within 100 ms of its deadline.)
#
# Runs N executions of a `.waitForTaskToken` Task whose worker never answers, with
# HeartbeatSeconds 1 at --time-scale 0.2 (a 200 ms heartbeat deadline), one after the other, then
# reads the database: for each token, how long after its heartbeat deadline (heartbeat_at) the
# runner's conditional UPDATE closed it (answered_at), and when the TaskTimedOut event was
# written. Needs python3 (for its sqlite3 module) to read the numbers.
#
#   benches/deadline-lateness.sh [N]      (default N=20; builds the release binary first)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
cargo build --release --quiet
bin=$PWD/target/release/sfn-local
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export SFN_LOCAL_DB=$work/bench.db
cat > "$work/silent.asl.json" <<'JSON'
{"StartAt": "Wait", "States": {"Wait": {"Type": "Task",
  "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
  "HeartbeatSeconds": 1, "TimeoutSeconds": 60,
  "Parameters": {"QueueUrl": "q", "MessageBody": {"TaskToken.$": "$$.Task.Token"}},
  "End": true}}}
JSON
for i in $(seq 1 "$n"); do
  "$bin" run "$work/silent.asl.json" --name "late-$i" --time-scale 0.2 >/dev/null 2>&1 || true
done
python3 - "$SFN_LOCAL_DB" <<'PY'
import sqlite3, sys, statistics
db = sqlite3.connect(sys.argv[1])
rows = db.execute("""SELECT answered_at - heartbeat_at FROM task_tokens
                     WHERE status = 'TIMED_OUT' AND expired_by = 'HEARTBEAT'""").fetchall()
late = sorted(r[0] for r in rows)
if not late:
    sys.exit("no heartbeat expiries recorded")
p95 = late[min(len(late) - 1, int(round(0.95 * (len(late) - 1))))]
print(f"expiries: {len(late)}  lateness ms: min {late[0]}  median {statistics.median(late)}  "
      f"p95 {p95}  max {late[-1]}  (goal: <= 100)")
PY
