#!/usr/bin/env bash
# Keeps heartbeating until a heartbeat is refused (its task timed out or was closed): the
# heartbeat's answer is the cancellation channel. Leaves $TOKEN_DIR/cancelled behind.
set -u
sfn=${SFN_LOCAL:-sfn-local}
cat > /dev/null
printf '%s' "$SFN_TASK_TOKEN" > "$TOKEN_DIR/token-$SFN_RETRY_COUNT"
while "$sfn" send-task-heartbeat --task-token "$SFN_TASK_TOKEN" 2>"$TOKEN_DIR/heartbeat-error"; do
  sleep 0.1
done
touch "$TOKEN_DIR/cancelled"
