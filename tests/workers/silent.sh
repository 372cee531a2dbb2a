#!/usr/bin/env bash
# Takes the task and never says anything.
cat > /dev/null
printf '%s' "$SFN_TASK_TOKEN" > "$TOKEN_DIR/token-$SFN_RETRY_COUNT"
