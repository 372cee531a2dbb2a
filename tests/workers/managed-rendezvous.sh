#!/usr/bin/env bash
# A managed handler that answers only once RENDEZVOUS handlers are running at the same time
# (each leaves $TOKEN_DIR/running-PID); gives up with an error after 30 s.
set -eu
input=$(cat)
touch "$TOKEN_DIR/running-$$"
for _ in $(seq 1 600); do
  n=$(ls "$TOKEN_DIR" | grep -c '^running-' || true)
  if [ "$n" -ge "${RENDEZVOUS:-4}" ]; then
    printf '{"together":%s,"input":%s}\n' "$n" "$input"
    exit 0
  fi
  sleep 0.05
done
echo '{"Error":"Alone","Cause":"the other handlers never came"}' >&2
exit 1
