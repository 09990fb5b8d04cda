#!/usr/bin/env bash
# The node benchmark: int-node beside dpdk-testpmd on the same vdevs, in one
# run. Arguments go to bench.py (--sizes, --flows, --seconds, --repeat,
# --cases). Results: bench/results/results.json and mpps.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --locked -p int-node -p int-tools
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install --quiet matplotlib || true
exec python3 bench/bench.py "$@"
