#!/usr/bin/env bash
# Answers with send-task-failure.
set -u
sfn=${SFN_LOCAL:-sfn-local}
cat > /dev/null
"$sfn" send-task-failure --task-token "$SFN_TASK_TOKEN" --error OutOfStock --cause "sku A1 is gone"
