#!/usr/bin/env bash
# The fault-injection test's callback worker: takes a moment, heartbeats, answers. It outlives a
# runner killed meanwhile; its answer is then recorded in the token row for the resumed runner.
set -u
sfn=${SFN_LOCAL:-sfn-local}
cat > /dev/null
sleep 0.15
"$sfn" send-task-heartbeat --task-token "$SFN_TASK_TOKEN" 2>/dev/null
sleep 0.1
"$sfn" send-task-success --task-token "$SFN_TASK_TOKEN" --task-output '{"answered":true}' 2>/dev/null
exit 0
