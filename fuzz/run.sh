#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, one after the other on one core, and prints the
# executions and findings (crashes, timeouts, out-of-memory) per target.
#
#   fuzz/run.sh SECONDS [TARGET...]
#
# Needs the nightly toolchain and cargo-fuzz (`rustup toolchain install nightly`,
# `cargo +nightly install cargo-fuzz`); not part of CI. Seeds come from fuzz/seeds.py (the
# conformance corpus in tests/corpora and the repository's fixtures). Findings are kept in
# fuzz/artifacts/TARGET/; reproduce one with
#   fuzz/target/x86_64-unknown-linux-gnu/release/TARGET fuzz/artifacts/TARGET/crash-...
set -euo pipefail

seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
cd "$(dirname "$0")"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(definition path template intrinsic choice jsonata mock_config test_spec task_output serve_request nesting)
fi

# No sanitizer: the code under test is safe Rust, and without ASan each execution is several
# times faster. Debug assertions on, so an arithmetic overflow is a finding too.
# FUZZ_NO_BUILD=1: use the binaries as built (a campaign over several calls builds once).
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    cargo +nightly fuzz build --fuzz-dir . -s none -a >build.log 2>&1 || {
        cat build.log >&2
        exit 1
    }
fi
python3 seeds.py >/dev/null

bin=target/x86_64-unknown-linux-gnu/release
printf '%-14s %14s %8s %9s %5s\n' target executions crashes timeouts ooms
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t" logs
    log="logs/$t.log"
    # -fork=1: one worker process, restarted after a finding, so one crash does not end the
    # run; each finding is saved under artifacts/. -close_fd_mask=1: `test` prints reports.
    "$bin/$t" "corpus/$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -max_len=16384 \
        -close_fd_mask=1 -artifact_prefix="artifacts/$t/" >"$log" 2>&1 || true
    # Fork mode's status lines: "#EXECS: cov: ... oom/timeout/crash: O/T/C time: ...".
    last=$(grep -E '^#[0-9]+: ' "$log" | tail -n 1 || true)
    execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
    read -r ooms timeouts crashes < <(sed -E 's#.*oom/timeout/crash: ([0-9]+)/([0-9]+)/([0-9]+).*#\1 \2 \3#' <<<"$last")
    printf '%-14s %14s %8s %9s %5s\n' "$t" "${execs:-0}" "${crashes:-?}" "${timeouts:-?}" "${ooms:-?}"
done
