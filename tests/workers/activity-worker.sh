#!/usr/bin/env bash
# An activity worker loop: take a task, heartbeat, answer; stop after $MAX_TASKS tasks.
set -u
sfn=${SFN_LOCAL:-sfn-local}
done_tasks=0
while [ "$done_tasks" -lt "${MAX_TASKS:-1}" ]; do
  task=$("$sfn" get-activity-task --activity-arn "$ACTIVITY_ARN" --worker-name "$WORKER_NAME" --poll-seconds 5) || exit 1
  [ "$task" = "{}" ] && continue
  token=$(printf '%s' "$task" | sed -n 's/.*"taskToken":"\([^"]*\)".*/\1/p')
  "$sfn" send-task-heartbeat --task-token "$token" || exit 1
  "$sfn" send-task-success --task-token "$token" --task-output '{"rows":2}' || exit 1
  done_tasks=$((done_tasks + 1))
done
