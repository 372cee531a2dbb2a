#!/usr/bin/env bash
# `sfn-local serve` with two CPU-bound executions running: another machine's StartExecution
# latency beside the same with nothing running, and how long StopExecution takes (see
# benches/fair_threads.py). Needs Python 3 (no packages).
#
#   benches/fair_threads.sh
#   N_STARTS=2000 benches/fair_threads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 benches/fair_threads.py target/release/sfn-local
