#!/usr/bin/env bash
# The serve tests' callback worker (bound with --task Callback:Double=...): reads the Task's
# input, heartbeats and answers through the real AWS CLI, as a worker of AWS's would.
set -euo pipefail
input=$(cat)
n=$(printf '%s' "$input" | sed -n 's/.*"n":\([0-9]*\).*/\1/p')
aws stepfunctions send-task-heartbeat --endpoint-url "$ENDPOINT" --task-token "$SFN_TASK_TOKEN"
aws stepfunctions send-task-success --endpoint-url "$ENDPOINT" --task-token "$SFN_TASK_TOKEN" \
  --task-output "{\"doubled\":$((n * 2))}"
