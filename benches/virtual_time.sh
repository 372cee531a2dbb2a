#!/usr/bin/env bash
# The virtual clock against a scaled real clock on one suite: 1,000 executions of a machine that
# waits an hour, gives a silent worker its 60 s heartbeat inside an hour's budget, then retries a
# flaky task 10, 20 and 40 s apart. `sfn-local test` runs the suite twice in one go: on the
# virtual clock (time jumps to each deadline) and at --time-scale 0.001 (the fastest setting
# that kept deadlines in order before the virtual clock; an hour still lasts 3.6 s there).
# Prints both wall times side by side. Both runs must pass: the same branches at any speed.
#
#   benches/virtual_time.sh                    # 1,000 cases, a debug build unless BIN is given
#   CASES=200 BIN=target/release/sfn-local benches/virtual_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CASES="${CASES:-1000}"
if [ -z "${BIN:-}" ]; then
  cargo build --quiet
  BIN=target/debug/sfn-local
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat > "$TMP/night.asl.json" <<'JSON'
{
  "StartAt": "Hour",
  "States": {
    "Hour": {"Type": "Wait", "Seconds": 3600, "Next": "Callback"},
    "Callback": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q", "MessageBody": {"token.$": "$$.Task.Token"}},
      "HeartbeatSeconds": 60,
      "TimeoutSeconds": 3600,
      "ResultPath": "$.answer",
      "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "ResultPath": "$.silent", "Next": "Flaky"}],
      "Next": "Flaky"
    },
    "Flaky": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "flaky"},
      "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 10, "BackoffRate": 2, "MaxAttempts": 3}],
      "ResultSelector": {"done.$": "$.Payload"},
      "End": true
    }
  }
}
JSON
cat > "$TMP/night.mocks.json" <<'JSON'
{
  "StateMachines": {"night": {"TestCases": {"Silent": {"Callback": "NeverAnswers", "Flaky": "BusyThrice"}}}},
  "MockedResponses": {
    "NeverAnswers": {"0": {"NeverAnswers": true}},
    "BusyThrice": {"0-2": {"Throw": {"Error": "Busy", "Cause": "try later"}}, "3": {"Return": {"Payload": true}}}
  }
}
JSON
python3 - "$TMP" "$CASES" <<'PY'
import json, sys
tmp, n = sys.argv[1], int(sys.argv[2])
cases = [{"name": f"night {i}", "input": {"i": i}, "testCase": "Silent",
          "expect": {"status": "SUCCEEDED", "outputContains": {"done": True}}} for i in range(n)]
json.dump({"definition": "night.asl.json", "mockConfig": "night.mocks.json", "cases": cases},
          open(f"{tmp}/night.sfntest.json", "w"))
PY

# Prints the wall time; the suite's closing line goes to $TMP/$1.
timed() {
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  "$BIN" test "$TMP/night.sfntest.json" --jobs 200 --case-timeout 600 "$@" | tail -1 > "$TMP/$name"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
virtual=$(timed virtual --clock virtual)
scaled=$(timed scaled --clock real --time-scale 0.001)
printf '%-28s %10s  %s\n' "suite of $CASES executions" "wall (s)" "cases"
printf '%-28s %10.2f  %s\n' "--clock virtual" "$virtual" "$(cat "$TMP/virtual")"
printf '%-28s %10.2f  %s\n' "--time-scale 0.001" "$scaled" "$(cat "$TMP/scaled")"
printf '%-28s %9.0fx\n' "virtual, faster by" "$(echo "$scaled / $virtual" | bc -l)"
