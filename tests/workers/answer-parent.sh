#!/bin/sh
# A child execution's Task: answers its parent's startExecution.waitForTaskToken with the
# token it was started with ({"token": "..."} on stdin), then returns {}.
input=$(cat)
token=$(printf '%s' "$input" | sed 's/.*"token":"\([^"]*\)".*/\1/')
"$SFN_LOCAL" send-task-success --task-token "$token" --task-output '{"answeredBy":"child"}' || exit 1
echo '{}'
