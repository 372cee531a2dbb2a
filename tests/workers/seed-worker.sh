#!/usr/bin/env bash
# The seed scenario's worker. Attempt 0: heartbeats twice, then dies by SIGKILL without a word.
# Attempt 1: heartbeats once and answers. Each attempt's token is saved in $TOKEN_DIR.
set -u
sfn=${SFN_LOCAL:-sfn-local}
input=$(cat)
printf '%s' "$SFN_TASK_TOKEN" > "$TOKEN_DIR/token-$SFN_RETRY_COUNT"
if [ "$SFN_RETRY_COUNT" = 0 ]; then
  "$sfn" send-task-heartbeat --task-token "$SFN_TASK_TOKEN" || exit 3
  sleep 0.05
  "$sfn" send-task-heartbeat --task-token "$SFN_TASK_TOKEN" || exit 3
  kill -KILL $$
fi
"$sfn" send-task-heartbeat --task-token "$SFN_TASK_TOKEN" || exit 3
"$sfn" send-task-success --task-token "$SFN_TASK_TOKEN" --task-output "{\"done\":true,\"attempt\":$SFN_RETRY_COUNT}"
