#!/usr/bin/env bash
# The virtual clock against a scaled real clock on one suite: 1,000 executions of a machine that
# waits an hour, gives a silent worker its 60 s heartbeat inside an hour's budget, then retries a
# flaky task 10, 20 and 40 s apart. `sfn-local test` runs the suite twice in one go: on the
# virtual clock (time jumps to each deadline) and at --time-scale 0.001 (the fastest setting
# that kept deadlines in order before the virtual clock; an hour still lasts 3.6 s there).
# Prints both wall times side by side. Both runs must pass: the same branches at any speed.
# A third row runs the suite with the flaky task as the template's own Python Lambda code (it
# raises Busy until its third retry) instead of a mock, on the virtual clock: outside work holds
# the clock, so its history is the mocked one's, at the cost of the handlers' wall time
# (REAL_JOBS cases at once, one warm Python process each).
#
#   benches/virtual_time.sh                    # 1,000 cases, a debug build unless BIN is given
#   CASES=200 BIN=target/release/sfn-local benches/virtual_time.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CASES="${CASES:-1000}"
REAL_JOBS="${REAL_JOBS:-8}"
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

# The same machine with the flaky task as the template's Python function, unmocked.
mkdir -p "$TMP/flaky"
cat > "$TMP/flaky/app.py" <<'PY'
class Busy(Exception):
    pass


def handler(event, context):
    if event["retry"] < 3:
        raise Busy("try later")
    return True
PY
cat > "$TMP/template.yaml" <<'YAML'
Transform: AWS::Serverless-2016-10-31
Resources:
  Night:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: night
      DefinitionUri: night-real.asl.json
      DefinitionSubstitutions: {Flaky: !GetAtt Flaky.Arn}
  Flaky:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: flaky/, Handler: app.handler, Runtime: python3.12, Timeout: 5}
YAML
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
machine = json.load(open(f"{tmp}/night.asl.json"))
machine["States"]["Flaky"]["Parameters"] = {"FunctionName": "${Flaky}", "Payload": {"retry.$": "$$.State.RetryCount"}}
json.dump(machine, open(f"{tmp}/night-real.asl.json", "w"))
mocks = json.load(open(f"{tmp}/night.mocks.json"))
del mocks["StateMachines"]["night"]["TestCases"]["Silent"]["Flaky"]
json.dump(mocks, open(f"{tmp}/night-real.mocks.json", "w"))
spec = json.load(open(f"{tmp}/night.sfntest.json"))
del spec["definition"]
spec.update(template="template.yaml", mockConfig="night-real.mocks.json")
json.dump(spec, open(f"{tmp}/night-real.sfntest.json", "w"))
PY

# Prints the wall time; the suite's closing line goes to $TMP/$1.
timed() {
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  "$BIN" test "$TMP/${SPEC:-night}.sfntest.json" --jobs "${JOBS:-200}" --case-timeout 600 "$@" | tail -1 > "$TMP/$name"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
virtual=$(timed virtual --clock virtual)
scaled=$(timed scaled --clock real --time-scale 0.001)
real_code=$(SPEC=night-real JOBS=$REAL_JOBS timed real_code --clock virtual)
printf '%-28s %10s  %s\n' "suite of $CASES executions" "wall (s)" "cases"
printf '%-28s %10.2f  %s\n' "--clock virtual" "$virtual" "$(cat "$TMP/virtual")"
printf '%-28s %10.2f  %s\n' "--time-scale 0.001" "$scaled" "$(cat "$TMP/scaled")"
printf '%-28s %9.0fx\n' "virtual, faster by" "$(echo "$scaled / $virtual" | bc -l)"
printf '%-28s %10.2f  %s\n' "virtual, real Lambda code" "$real_code" "$(cat "$TMP/real_code")"
