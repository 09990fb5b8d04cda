#!/usr/bin/env bash
# int-tools must build and pass its tests on a host without DPDK or
# libclang (a collector host): build it in a target directory of its own
# with pkg-config unable to find any library and bindgen unable to find
# libclang, run its tests, and check that the binary links no librte.
set -euo pipefail
cd "$(dirname "$0")/.."

target=target/without-dpdk
if cargo tree -p int-tools --locked --prefix none | grep -E '^(dpdk-sys|bindgen) '; then
    echo "int-tools depends on DPDK's bindings" >&2
    exit 1
fi
PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= LIBCLANG_PATH=/nonexistent \
    cargo test -p int-tools --locked --target-dir "$target"
if ldd "$target/debug/int-tools" | grep librte; then
    echo "int-tools links DPDK" >&2
    exit 1
fi
echo "int-tools without DPDK: built, tested, links no librte ($(ldd "$target/debug/int-tools" | wc -l) libraries)"
