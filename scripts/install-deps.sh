#!/usr/bin/env bash
# Installs what int-node needs to build and test, from Debian 12's packages:
# DPDK 22.11 (libdpdk-dev, and dpdk-dev for dpdk-testpmd), clang/libclang for
# bindgen, pkg-config, and the tools the tests use (tcpdump, iproute2).
# Idempotent: packages already present are left alone, and apt is not touched
# when nothing is missing. Used by the README, .ci/run and docker/Dockerfile.
set -euo pipefail

packages=(libdpdk-dev dpdk dpdk-dev pkg-config clang libclang-dev iproute2 tcpdump ca-certificates)
if [[ "${INT_NODE_RUNTIME_ONLY:-0}" == "1" ]]; then
    # Runtime image: the shared DPDK libraries and PMDs, nothing to build with.
    packages=(dpdk iproute2)
fi

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all packages present (${packages[*]})"
    exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
    sudo_cmd=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
