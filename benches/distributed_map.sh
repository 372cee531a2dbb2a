#!/usr/bin/env bash
# One Distributed Map of 10k, 100k and 1M items in `sfn-local serve` while another client
# starts and describes executions: children/s, peak memory, and the other client's latency
# (see benches/distributed_map.py). Needs Python 3 (no packages).
#
#   benches/distributed_map.sh
#   benches/distributed_map.sh 10000 100000     # other sizes
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 benches/distributed_map.py target/release/sfn-local "$@"
