#!/usr/bin/env bash
# Refreshes the corpora the tests read (tests/corpora/) from the project's shared folder, where they
# are maintained: the AWS-recorded conformance cases, the JSONata test suite and the real-world
# definitions. The copies are verbatim; each corpus's PROVENANCE.md says where it came from.
#   scripts/refresh-corpora.sh [SHARED_DIR]     (default: ../shared beside the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
shared="${1:-${SFN_SHARED:-../shared}}"
for corpus in conformance jsonata-test-suite realworld; do
  [ -d "$shared/$corpus" ] || { echo "no $shared/$corpus" >&2; exit 1; }
  keep="tests/corpora/$corpus/PROVENANCE.md"
  saved=$(mktemp); cp "$keep" "$saved" 2>/dev/null || : > "$saved"
  rm -rf "tests/corpora/$corpus"
  cp -R "$shared/$corpus" "tests/corpora/$corpus"
  [ -s "$saved" ] && cp "$saved" "$keep"
  rm -f "$saved"
  chmod -R u+w "tests/corpora/$corpus"
done
echo "refreshed tests/corpora from $shared"
