#!/usr/bin/env bash
# The test command of the README and of CI: installs what is missing, then
# runs every test (unit, property, end-to-end on the real binary over
# net_pcap vdevs), the end-to-end tests again with one CPU kept busy,
# clippy's packet-path lints, a build of the fuzz targets (and a short
# smoke run of each when cargo-fuzz is available), and the namespace labs,
# idle and loaded.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

# A busy loop pinned to the last CPU, for the loaded runs: the suite must
# hold on a loaded machine, not only on an idle one. Tests wait for states,
# never for time; a check that measures time judges against a baseline of
# its own run.
busy=""
load_on() {
    local cpu=$(( $(nproc) - 1 ))
    taskset -c "$cpu" sh -c 'while :; do :; done' &
    busy=$!
    echo "loaded: CPU $cpu kept busy (pid $busy)"
}
load_off() {
    [[ -n "$busy" ]] && kill "$busy" 2>/dev/null || true
    busy=""
}
trap load_off EXIT

cargo test --workspace --locked
load_on
cargo test --locked -p int-node --tests
cargo test --locked -p int-tools --test view
load_off

bash scripts/check-tools-without-dpdk.sh
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

# The fuzz targets build on any machine (cargo-fuzz or not): a target
# that no longer compiles fails here, not only where cargo-fuzz is.
cargo check --manifest-path int-core/fuzz/Cargo.toml --locked --bins
cargo check --manifest-path int-tools/fuzz/Cargo.toml --locked --bins

if cargo fuzz --version >/dev/null 2>&1; then
    # cargo-fuzz needs nightly features; RUSTC_BOOTSTRAP enables them on the
    # stable toolchain this project builds with.
    for target in parse_int_block parse_report parse_int21 parse_tr20 parse_tunnels sink_strip sink_restore sink21_restore transit_push ioam_roles ifa_walk ifa_roles ifa_hostile ifa_ipfix; do
        echo "fuzz smoke: $target"
        mkdir -p "int-core/fuzz/corpus/$target"
        (cd int-core/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "corpus/$target" "seeds/$target" \
            -- -max_total_time="${FUZZ_SECONDS:-15}" -print_final_stats=0 2>&1 | tail -n 2)
    done
    for target in join aggregate_input stream_batch view_http; do
        echo "fuzz smoke: $target (int-tools)"
        mkdir -p "int-tools/fuzz/corpus/$target"
        (cd int-tools/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "corpus/$target" "seeds/$target" \
            -- -max_total_time="${FUZZ_SECONDS:-15}" -print_final_stats=0 2>&1 | tail -n 2)
    done
else
    echo "fuzz smoke: skipped (cargo install cargo-fuzz to run it)"
fi

# The network-namespace lab: real kernel TCP/UDP through source, WAN and
# sink nodes on af_packet; checks the transfer hash, loss counts and a
# latency change, in an INT 0.5 (Host-INT) domain and in an INT 2.1 one,
# and a delay on one link of a multi-hop INT 2.1 path.
# Needs root (namespaces, veth). The lab's WAN node is an impair pipeline:
# lab equipment, built in with int-node's `lab` feature.
labs() {
    target/debug/int-lab lab --topology config/lab/basic.yaml
    target/debug/int-lab lab --topology config/lab/int21.yaml
    target/debug/int-lab lab --topology config/lab/multihop21.yaml
    target/debug/int-lab lab --topology config/lab/multihop21-mx.yaml
    target/debug/int-lab lab --topology config/lab/multihop21-xd.yaml
    target/debug/int-lab lab --topology config/lab/pathswitch21.yaml
    target/debug/int-lab lab --topology config/lab/pathswitch21-xd.yaml
    target/debug/int-lab lab --topology config/lab/ioam.yaml
    target/debug/int-lab lab --topology config/lab/congestion.yaml
    target/debug/int-lab lab --topology config/lab/scaleout21.yaml
    target/debug/int-lab lab --topology config/lab/multihopifa.yaml
    target/debug/int-lab lab --topology config/lab/pathswitchifa.yaml
    target/debug/int-lab lab --topology config/lab/probeifa.yaml
}
if [[ $(id -u) -eq 0 ]]; then
    cargo build --locked --workspace --features int-node/lab
    labs
    load_on
    labs
    load_off
    # The Debian packages: built, lintian, installed, checked, purged
    # (docs/packages.md).
    bash scripts/test-debs.sh
else
    echo "lab: skipped (needs root: cargo build --workspace --features int-node/lab; sudo target/debug/int-lab lab --topology config/lab/basic.yaml)"
fi
echo "all tests passed"
