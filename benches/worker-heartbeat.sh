#!/usr/bin/env bash
# What managed workers cost and how fast they react (release build, real time, no --time-scale):
#
#  1. one `sfn-local send-task-heartbeat`, process start to exit (goal: <= 10 ms), beside the
#     floor of starting any process (/bin/true) and, as the peer, the AWS CLI's own start
#     (`aws --version`, which a shell worker on AWS pays for every heartbeat), if installed;
#  2. crash detection: a `--worker` handler with HeartbeatSeconds 1 kills itself (SIGKILL); how
#     long from its death until the attempt timed out (goal: <= HeartbeatSeconds + 100 ms);
#  3. cancellation: how long from `stop-execution`, and from a TimeoutSeconds deadline, until
#     the handler got SIGTERM (goal: within 1 s).
#
#   benches/worker-heartbeat.sh [N]      (default N=10 rounds of 2 and 3; 200 heartbeats)
#   SFN_LOCAL_BIN=target/debug/sfn-local benches/worker-heartbeat.sh   (an existing binary)
# Needs python3 (its sqlite3 module and a precise timer).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
if [ -n "${SFN_LOCAL_BIN:-}" ]; then
  bin=$SFN_LOCAL_BIN            # e.g. target/debug/sfn-local when a release build is too dear
else
  cargo build --release --quiet
  bin=$PWD/target/release/sfn-local
fi
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
export SFN_LOCAL_DB=$work/bench.db SFN_LOCAL=$bin WORK=$work
aws=""
for candidate in "${SFN_LOCAL_DEPS:-.deps}/venv/bin/aws" "$(command -v aws || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then aws=$candidate; break; fi
done

callback() { # $1: extra fields of the Task state
  cat <<JSON
{"StartAt": "Work", "States": {"Work": {"Type": "Task",
  "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
  "Parameters": {"QueueUrl": "q", "MessageBody": {"TaskToken.\$": "\$\$.Task.Token"}},
  $1, "End": true}}}
JSON
}

# 1. The heartbeat's cost, on a task that waits an hour.
callback '"HeartbeatSeconds": 3600, "TimeoutSeconds": 7200' > "$work/wait.asl.json"
"$bin" run "$work/wait.asl.json" --name hb-cost >/dev/null 2>&1 &
pids+=($!)
token=""
for _ in $(seq 1 500); do
  # Before the run creates the database, list-tasks has nothing to print.
  token=$("$bin" list-tasks --format json 2>/dev/null | python3 -c 'import json,sys; t=json.loads(sys.stdin.read() or "{}").get("tasks"); print(t[0]["taskToken"] if t else "")' || true)
  [ -n "$token" ] && break
  sleep 0.02
done
[ -n "$token" ] || { echo "no task token appeared" >&2; exit 1; }
python3 - "$bin" "$token" "$aws" <<'PY'
import resource, statistics, subprocess, sys, time
bin, token, aws = sys.argv[1], sys.argv[2], sys.argv[3]
def cost(argv, n):
    # Wall time (what a worker waits) and CPU time (user + system: what it costs, and what a
    # loaded machine cannot inflate by making the process wait for a core).
    walls, cpus = [], []
    for _ in range(n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append((time.perf_counter() - t) * 1000)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    walls.sort()
    return (f"wall median {statistics.median(walls):6.1f} ms  p10 {walls[len(walls) // 10]:6.1f} ms"
            f"  p95 {walls[int(0.95 * (len(walls) - 1))]:6.1f} ms  cpu median {statistics.median(cpus):5.1f} ms")
print("1. one heartbeat, process start to exit (goal: <= 10 ms)")
print(f"   /bin/true (any process)         {cost(['/bin/true'], 200)}")
print(f"   sfn-local send-task-heartbeat   {cost([bin, 'send-task-heartbeat', '--task-token', token], 200)}")
if aws:
    print(f"   aws --version (the AWS CLI's start, peer) {cost([aws, '--version'], 20)}")
PY
kill "${pids[0]}" 2>/dev/null || true

# 2. Crash detection: the handler dies 300 ms in; HeartbeatSeconds 1.
cat > "$work/crash.sh" <<'SH'
#!/usr/bin/env bash
cat > /dev/null
sleep 0.3
printf '%s %s\n' "$SFN_EXECUTION_ARN" "$(date +%s%3N)" >> "$WORK/crashes"
kill -9 $$
SH
# 3. Cancellation: the handler records when SIGTERM came.
cat > "$work/term.sh" <<'SH'
#!/usr/bin/env bash
cat > /dev/null
trap 'printf "%s %s\n" "$SFN_EXECUTION_ARN" "$(date +%s%3N)" >> "$WORK/terms"; exit 0' TERM
printf '%s\n' "$SFN_EXECUTION_ARN" >> "$WORK/started"
while :; do sleep 0.01; done
SH
chmod +x "$work/crash.sh" "$work/term.sh"
callback '"HeartbeatSeconds": 1, "TimeoutSeconds": 60' > "$work/crash.asl.json"
callback '"HeartbeatSeconds": 1, "TimeoutSeconds": 600' > "$work/stop.asl.json"
callback '"TimeoutSeconds": 1' > "$work/deadline.asl.json"
: > "$work/stops"
for i in $(seq 1 "$n"); do
  "$bin" run "$work/crash.asl.json" --name "crash-$i" --worker "Work=$work/crash.sh" >/dev/null 2>&1 || true
  "$bin" run "$work/deadline.asl.json" --name "deadline-$i" --worker "Work=$work/term.sh" >/dev/null 2>&1 || true
  "$bin" run "$work/stop.asl.json" --name "stop-$i" --worker "Work=$work/term.sh" >/dev/null 2>&1 &
  runner=$!
  until grep -q ":stop-$i\$" "$work/started" 2>/dev/null; do sleep 0.01; done
  printf '%s %s\n' "arn:aws:states:us-east-1:123456789012:execution:stop:stop-$i" \
    "$(python3 -c 'import time; print(int(time.time() * 1000))')" >> "$work/stops"
  "$bin" stop-execution --execution-arn "stop-$i" >/dev/null
  wait "$runner" || true
done
python3 - "$SFN_LOCAL_DB" "$work" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1]); work = sys.argv[2]
def marks(name):
    out = {}
    for line in open(f"{work}/{name}"):
        arn, ms = line.split()
        out[arn] = int(ms)
    return out
def show(label, values, goal):
    values = sorted(values)
    if not values:
        print(f"   {label}: no measurements"); return
    print(f"   {label}: n {len(values)}  min {values[0]} ms  median {statistics.median(values)} ms"
          f"  max {values[-1]} ms  (goal: <= {goal} ms)")
rows = dict(db.execute("""SELECT e.execution_arn, t.answered_at FROM task_tokens t
    JOIN executions e ON e.id = t.execution_id WHERE t.status = 'TIMED_OUT'"""))
timeouts = dict(db.execute("""SELECT e.execution_arn, t.timeout_at FROM task_tokens t
    JOIN executions e ON e.id = t.execution_id"""))
crashes, terms, stops = marks("crashes"), marks("terms"), marks("stops")
print("2. crash detection, HeartbeatSeconds 1")
show("handler's death -> attempt timed out", [rows[a] - c for a, c in crashes.items() if a in rows], 1100)
print("3. cancellation")
show("stop-execution -> SIGTERM", [terms[a] - s for a, s in stops.items() if a in terms], 1000)
show("TimeoutSeconds deadline -> SIGTERM",
     [t - timeouts[a] for a, t in terms.items() if ":deadline:" in a], 1000)
PY
