#!/usr/bin/env bash
# A managed handler that ignores SIGTERM: it works past its task's TimeoutSeconds, then tries
# to answer by itself (its status goes to $TOKEN_DIR/late-status), prints a late result, and
# keeps running until SIGKILL.
set -u
trap '' TERM
cat > /dev/null
printf '%s' "$$" > "$TOKEN_DIR/pid"
sleep "${LATE_AFTER:-1.5}"
"$SFN_LOCAL" send-task-success --task-token "$SFN_TASK_TOKEN" --task-output '{"late":true}' \
  2> "$TOKEN_DIR/late-error"
echo $? > "$TOKEN_DIR/late-status"
echo '{"late":true}'
sleep 60
echo 'never' > "$TOKEN_DIR/survived"
