#!/bin/sh
# A Task bound with `serve --task Stamp=...` in every state machine: its input, stamped.
input=$(cat)
printf '{"stamped":true,"input":%s}\n' "$input"
