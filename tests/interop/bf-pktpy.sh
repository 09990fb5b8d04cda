#!/usr/bin/env bash
# Interop with Intel's bf-pktpy (the packet library of P4 Studio's PTF
# tests, whose DtelReportV2Hdr is how Tofino switch tests build the
# Telemetry Report 2.0 reports they expect): an INT 2.1 sink node replays
# the pcaps the end-to-end tests left (latency and loss reports of an INT-MD
# domain, reports of an INT-MX domain), exports to a DPDK port, and for
# every individual report bf-pktpy builds the group and individual headers
# and metadata from the report's field values; its bytes must equal ours.
#
# Needs a checkout of p4lang/open-p4studio (checked at 1f97778f), given by
# OPEN_P4STUDIO_DIR (the script only reads it), and the pcaps of
# `cargo test --test int21` under target/tmp/e2e. bf-pktpy imports helper
# packages (getmac, scapy_helper, psutil, netifaces, tabulate) its report
# headers do not use: the script puts minimal stand-ins for them on the
# path of its own run.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ -z "${OPEN_P4STUDIO_DIR:-}" ]]; then
    echo "bf-pktpy interop: skipped (set OPEN_P4STUDIO_DIR to a p4lang/open-p4studio checkout)"
    exit 0
fi
BF_PKTPY="$OPEN_P4STUDIO_DIR/pkgsrc/ptf-modules/bf-pktpy"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --locked -q -p int-node -p int-tools
mkdir -p "$work/stand-ins"
cat > "$work/stand-ins/scapy_helper.py" <<'PY'
import ipaddress
def int2mac(value): return ":".join("%02x" % ((value >> (8 * i)) & 0xff) for i in reversed(range(6)))
def mac2int(mac): return int(mac.replace(":", ""), 16)
def int2ip(value): return str(ipaddress.IPv4Address(value))
def ip2int(ip): return int(ipaddress.IPv4Address(ip))
PY
echo 'def get_mac_address(*a, **k): return "00:00:00:00:00:00"' > "$work/stand-ins/getmac.py"
for module in psutil netifaces tabulate; do : > "$work/stand-ins/$module.py"; done
python3 -c "import struct; open('$work/empty.pcap', 'wb').write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))"

failed=0
for case in int21-loss/int.pcap int21-mx/int2.pcap int21-dscp/int2.pcap; do
    input="target/tmp/e2e/$case"
    [[ -f $input ]] || { echo "bf-pktpy interop: $input missing (cargo test --test int21 first)"; exit 1; }
    name=${case%%/*}
    cat > "$work/$name.yaml" <<YAML
node_id: 10.0.0.2
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, -l, '0-1', --log-level, 'lib.eal:error', --no-telemetry]
ports:
  - {name: data, device: 'net_pcap0,rx_pcap=$PWD/$input,tx_pcap=$work/out-$name.pcap', int_port: 3}
  - {name: mgmt, device: 'net_pcap1,rx_pcap=$work/empty.pcap,tx_pcap=$work/reports-$name.pcap'}
pipelines:
  - {name: sink, role: sink, lcore: 1, clock: rx-timestamp, int: {version: 2.1}, rx: {port: data}, tx: {port: data}}
export:
  collector: 192.0.2.9:32766
  path: {port: mgmt, src_mac: '02:00:00:00:00:02', dst_mac: '02:00:00:00:00:09', src_ip: 192.0.2.2}
YAML
    target/debug/int-node run --config "$work/$name.yaml" --exit-on-idle 500 >/dev/null 2>&1
    PYTHONPATH="$work/stand-ins:$BF_PKTPY" python3 tests/interop/bf_pktpy_reports.py \
        "$work/reports-$name.pcap" target/debug/int-tools || failed=1
done
exit $failed
