#!/usr/bin/env bash
# Drives `sfn-local serve` with the real AWS CLI, unchanged but for --endpoint-url. Needs
# ENDPOINT, SFN_LOCAL (the binary, for the one-world checks), SFN_LOCAL_DB and OUT_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sfn() { aws stepfunctions --endpoint-url "$ENDPOINT" "$@"; }
role=arn:aws:iam::123456789012:role/test
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }
final_status() {
  for _ in $(seq 1 600); do
    s=$(sfn describe-execution --execution-arn "$1" --query status --output text)
    [ "$s" != RUNNING ] && { echo "$s"; return; }
    sleep 0.1
  done
  echo RUNNING
}

# A callback Task whose worker is a shell script calling send-task-heartbeat/-success.
m=$(sfn create-state-machine --name Callback --definition "file://$here/callback.asl.json" \
  --role-arn $role --query stateMachineArn --output text)
e=$(sfn start-execution --state-machine-arn "$m" --name cb-1 --input '{"n":21}' --query executionArn --output text)
expect "$(final_status "$e")" SUCCEEDED "callback execution"
expect "$(sfn describe-execution --execution-arn "$e" --query output --output text)" '{"doubled":42}' "callback output"
# The history, read whole and in pages of 2 by the CLI's own paginator: the same events.
all=$(sfn get-execution-history --execution-arn "$e" --query 'events[].type' --output json)
paged=$(sfn get-execution-history --execution-arn "$e" --page-size 2 --query 'events[].type' --output json)
expect "$paged" "$all" "paged history"
echo "$all" | grep -q TaskSubmitted || fail "no TaskSubmitted in: $all"
expect "$(sfn get-execution-history --execution-arn "$e" --reverse-order --page-size 3 --query 'events[0].type' --output json)" \
  '"ExecutionSucceeded"' "reverse order"
# The same execution through the CLI (one database).
"$SFN_LOCAL" describe-execution --execution-arn "$e" | grep -q '"status": "SUCCEEDED"' || fail "CLI does not see $e"

# A late answer: nobody answers within TimeoutSeconds; the token, read with the CLI, is then refused.
m=$(sfn create-state-machine --name Late --definition "file://$here/late.asl.json" \
  --role-arn $role --query stateMachineArn --output text)
e=$(sfn start-execution --state-machine-arn "$m" --name late-1 --query executionArn --output text)
expect "$(final_status "$e")" FAILED "late execution"
# The token, read from the history (the task was open only for its TimeoutSeconds: reading it
# with list-tasks raced the timeout on a loaded machine).
token=$(sfn get-execution-history --execution-arn "$e" \
  --query "events[?type=='TaskScheduled'].taskScheduledEventDetails.parameters | [0]" --output text \
  | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
[ -n "$token" ] || fail "no task token in the history of $e"
expect "$(sfn describe-execution --execution-arn "$e" --query error --output text)" States.Timeout "late error"
if sfn send-task-success --task-token "$token" --task-output '{}' 2> "$OUT_DIR/late.err"; then
  fail "a late answer was accepted"
fi
grep -q "(TaskTimedOut)" "$OUT_DIR/late.err" || fail "late answer: $(cat "$OUT_DIR/late.err")"

# An activity worker loop on get-activity-task.
a=$(sfn create-activity --name Pack --query activityArn --output text)
sed "s#ACTIVITY_ARN#$a#" "$here/activity.asl.json" > "$OUT_DIR/activity.asl.json"
m=$(sfn create-state-machine --name Packing --definition "file://$OUT_DIR/activity.asl.json" \
  --role-arn $role --query stateMachineArn --output text)
e1=$(sfn start-execution --state-machine-arn "$m" --input '{"box":1}' --query executionArn --output text)
e2=$(sfn start-execution --state-machine-arn "$m" --input '{"box":2}' --query executionArn --output text)
done_tasks=0
while [ $done_tasks -lt 2 ]; do
  token=$(sfn get-activity-task --activity-arn "$a" --worker-name packer --query taskToken --output text)
  [ "$token" = None ] && continue
  sfn send-task-heartbeat --task-token "$token"
  sfn send-task-success --task-token "$token" --task-output '{"packed":true}'
  done_tasks=$((done_tasks + 1))
done
expect "$(final_status "$e1")" SUCCEEDED "activity execution 1"
expect "$(final_status "$e2")" SUCCEEDED "activity execution 2"

# A mocked test case, chosen as in Step Functions Local: stateMachineArn#TestCase.
m=$(sfn create-state-machine --name Order --definition "file://$here/order.asl.json" \
  --role-arn $role --query stateMachineArn --output text)
e=$(sfn start-execution --state-machine-arn "$m#HappyPath" --query executionArn --output text)
expect "$(final_status "$e")" SUCCEEDED "mocked execution"
expect "$(sfn describe-execution --execution-arn "$e" --query output --output text)" '{"charged":true}' "mocked output"

# StartSyncExecution of an EXPRESS machine (the CLI's sync- host prefix is off: see the README).
m=$(sfn create-state-machine --name Hello --type EXPRESS --definition "file://$here/pass.asl.json" \
  --role-arn $role --query stateMachineArn --output text)
out=$(AWS_DISABLE_HOST_PREFIX_INJECTION=true sfn start-sync-execution --state-machine-arn "$m" \
  --input '{"who":"sync"}' --query '[status, output]' --output text)
expect "$out" "$(printf 'SUCCEEDED\t{"greeting":"hello sync"}')" "sync execution"

# Executions of `sfn-local run` are visible through the API.
"$SFN_LOCAL" run "$here/pass.asl.json" --name from-cli --input '{"who":"cli"}' > /dev/null
cli_arn=arn:aws:states:us-east-1:123456789012:execution:pass:from-cli
expect "$(sfn describe-execution --execution-arn "$cli_arn" --query output --output text)" '{"greeting":"hello cli"}' "run seen by the API"

# Error shapes.
if sfn describe-execution --execution-arn arn:aws:states:us-east-1:123456789012:execution:Callback:nope 2> "$OUT_DIR/err"; then
  fail "describe of a missing execution succeeded"
fi
grep -q "(ExecutionDoesNotExist)" "$OUT_DIR/err" || fail "missing execution: $(cat "$OUT_DIR/err")"
if sfn create-state-machine --name Broken --definition '{"StartAt":"Nowhere","States":{}}' --role-arn $role 2> "$OUT_DIR/err"; then
  fail "an invalid definition was stored"
fi
grep -q "(InvalidDefinition)" "$OUT_DIR/err" || fail "invalid definition: $(cat "$OUT_DIR/err")"
sfn list-state-machines --query 'stateMachines[].name' --output text | grep -vq Broken || fail "Broken was stored"
echo "aws-cli: all checks passed"
