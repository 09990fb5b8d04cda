#!/usr/bin/env bash
# Makes the small pcap files the example configs read, with int-tools gen:
#   config/pcaps/  traffic, empty, west-in, east-in, traffic6, ioam-in, ifa-in
#                  (int05-extension-udp.yaml, int21.yaml, transit.yaml,
#                  ioam.yaml; their outputs go there too)
#   demo/          traffic, int, link  (the demo-*.yaml configs; scripts/demo.sh
#                  makes the same files as it goes)
# Paths in a config are relative to its own directory, so every example then
# passes `int-node check` (and runs) from any working directory.
#
#   bash config/make-pcaps.sh [INT_TOOLS]   # default: target/release, target/debug, then PATH
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${1:-}
for candidate in "$tools" target/release/int-tools target/debug/int-tools "$(command -v int-tools || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then tools=$candidate; break; fi
done
[ -x "$tools" ] || { echo "make-pcaps: no int-tools (cargo build -p int-tools, or give its path)" >&2; exit 1; }
gen() { "$tools" gen "$@" >/dev/null; }

mkdir -p config/pcaps demo
gen --out config/pcaps/traffic.pcap --packets 200 --flows 4 --proto mix --sizes 64,512 --seed 1
gen --out config/pcaps/empty.pcap --packets 0
# transit.yaml: INT 0.5 traffic both ways; int21.yaml: plain traffic going
# east, INT 2.1 (DSCP 0x17) coming back.
gen --out config/pcaps/west-in.pcap --packets 200 --flows 4 --proto udp --sizes 128 --instrument hostint --seed 2
gen --out config/pcaps/east-in.pcap --packets 200 --flows 4 --proto udp --sizes 128 --instrument int21-md --seed 3
# ioam.yaml: IPv6 traffic going east, traced (IOAM namespace 123) coming back.
gen --out config/pcaps/traffic6.pcap --packets 200 --flows 4 --proto mix --sizes 64,512 --ipv6 1.0 --seed 4
gen --out config/pcaps/ioam-in.pcap --packets 200 --flows 4 --proto udp --sizes 128 --ipv6 1.0 --instrument ioam --seed 5
gen --out config/pcaps/ifa-in.pcap --packets 200 --flows 4 --proto mix --sizes 128 --instrument ifa --ifa-hops 2 --seed 6
gen --out demo/traffic.pcap --packets 2000 --flows 20 --proto mix --sizes 64,512,1400 --tcp-options --vlan 0.1 --seed 42
gen --out demo/int.pcap --packets 2000 --flows 20 --proto mix --sizes 64,512,1400 --instrument hostint --seed 42
gen --out demo/link.pcap --packets 5000 --flows 4 --proto udp --sizes 200 --instrument hostint --loss 0.02 --latency-us 150 --seed 7
echo "make-pcaps: config/pcaps/ and demo/ ready ($tools)"
