#!/usr/bin/env bash
# Installs what int-node needs to build and test, from Debian 12's packages:
# DPDK 22.11 (libdpdk-dev, and dpdk-dev for dpdk-testpmd), clang/libclang for
# bindgen, pkg-config, and the tools the tests and the lab use (tcpdump,
# iproute2 with tc/netem, ping, netcat, ethtool; the Prometheus and InfluxDB
# servers the metrics tests scrape and the collector writes to; the font
# collect --plot draws its text with; systemd-analyze, which checks the
# service unit; nats-server, the JetStream collect publishes to; nfdump and
# pmacct, IPFIX's readers, and jq, which docs/ipfix.md's pmacct line uses;
# openssl, curl and apache2-utils' htpasswd, which make and judge the web
# view's certificates and users, int-tools/tests/service.rs; chromium,
# chromium-driver and selenium from PyPI, the browser test of collect's web
# view, int-tools/tests/view.rs; scapy with its IFA layers, from scapy's pull
# request 4235, tests/ifa_scapy_node.rs).
# Idempotent: packages already present are left alone, and apt is not touched
# when nothing is missing. Used by the README, .ci/run and docker/Dockerfile.
set -euo pipefail

packages=(libdpdk-dev dpdk dpdk-dev dpkg-dev lintian help2man pkg-config clang libclang-dev iproute2 iputils-ping tcpdump ca-certificates netcat-openbsd ethtool tshark prometheus influxdb fonts-dejavu-core systemd nats-server nfdump pmacct jq openssl curl apache2-utils chromium chromium-driver python3 python3-pip)
if [[ "${INT_NODE_RUNTIME_ONLY:-0}" == "1" ]]; then
    # Runtime image: the DPDK libraries int-node links, the bus and mempool
    # drivers EAL loads, and the PMDs it is used with (vdevs and common
    # NICs); nothing to build with. (Debian's `dpdk` package only
    # recommends the PMDs, and recommends are not installed here.)
    packages=(librte-eal23 librte-ethdev23 librte-mbuf23 librte-mempool23 librte-mempool-ring23
              librte-bus-vdev23 librte-bus-pci23 librte-net-pcap23 librte-net-null23 librte-net-ring23
              librte-net-af-packet23 librte-net-i40e23 librte-net-ice23 librte-net-iavf23 librte-net-ixgbe23
              librte-net-mlx5-23 librte-net-virtio23 librte-net-e1000-23 iproute2)
fi

# selenium drives the view's browser test (tests/view/browser.py); nats-py
# runs the stream consumer of docs/scale-out.md (tests/stream.rs); the
# runtime image has no tests. Debian's own python3 refuses pip without
# --break-system-packages (PEP 668); a python3 of its own (pyenv, venv) does not.
python_packages() {
    [[ "${INT_NODE_RUNTIME_ONLY:-0}" == "1" ]] && return 0
    local module package
    # scapy.contrib.ifa: scapy pull request 4235's IFA layers, in no
    # release yet; tests/ifa_scapy_node.rs dissects the node's IFA with them.
    local scapy_ifa="scapy @ git+https://github.com/secdev/scapy.git@739d31492c7931d7d7c8838a82177df825413f4e"
    for pair in selenium:selenium nats:nats-py "scapy.contrib.ifa:$scapy_ifa"; do
        module=${pair%%:*} package=${pair#*:}
        python3 -c "import $module" 2>/dev/null && continue
        echo "install-deps: installing $package (pip)"
        python3 -m pip install --quiet "$package" 2>/dev/null \
            || python3 -m pip install --quiet --break-system-packages "$package"
    done
}

missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-deps: all packages present (${packages[*]})"
    python_packages
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
python_packages
