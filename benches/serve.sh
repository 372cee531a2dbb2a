#!/usr/bin/env bash
# `sfn-local serve` beside moto's server (interpreter enabled) in the same run; prints the
# figures side by side (see benches/serve.py). Needs the clients of .ci/deps.
#
#   benches/serve.sh
#   N_THROUGHPUT=5000 N_WAITING=1000 benches/serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
deps="${SFN_LOCAL_DEPS:-$PWD/.deps}"
cargo build --release --quiet
exec "$deps/venv/bin/python" benches/serve.py target/release/sfn-local "$deps/venv/bin/moto_server"
