#!/usr/bin/env bash
# The README's demo: INT source -> sink on pcap files, with a collector.
#   1. installs DPDK & co. if missing, builds int-node and int-tools (release)
#   2. generates test traffic (20 flows, UDP and TCP, some VLAN, TCP options)
#   3. runs the source: every packet leaves with Host-INT's INT 0.5 headers
#   4. decodes one instrumented packet
#   5. runs the sink with a collector listening: reports are printed
#   6. checks that the sink's output equals the original traffic, byte for byte
#   7. shows latency and loss on a recorded link (150 us, 2% loss)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cargo build --release --locked -p int-node -p int-tools
node=target/release/int-node
tools=target/release/int-tools
mkdir -p demo
rm -f demo/*.pcap

echo "== 1. traffic: 2000 packets, 20 flows"
$tools gen --out demo/traffic.pcap --packets 2000 --flows 20 --proto mix --sizes 64,512,1400 \
    --tcp-options --vlan 0.1 --seed 42

echo "== 2. configs (each checked once its input pcap exists)"
$node check --config config/demo-source.yaml

echo "== 3. source: demo/traffic.pcap -> demo/int.pcap"
$node run --config config/demo-source.yaml --exit-on-idle 500 --log warn
$node check --config config/demo-sink.yaml

echo "== 4. the first instrumented packet"
$tools decode demo/int.pcap | head -n 6 || true

echo "== 5. sink with a collector on 127.0.0.1:32766"
$tools collect --listen 127.0.0.1:32766 --duration 4 --interval 0 > demo/collector.txt &
collector=$!
trap 'kill $collector 2>/dev/null || true' EXIT
sleep 0.3
$node run --config config/demo-sink.yaml --exit-on-idle 500 --log warn
wait $collector || true
head -n 6 demo/collector.txt
echo "..."
tail -n 4 demo/collector.txt

echo "== 6. restored exactly?"
if cmp -s <(tcpdump -nn -t -xx -r demo/traffic.pcap 2>/dev/null) <(tcpdump -nn -t -xx -r demo/out.pcap 2>/dev/null); then
    echo "demo/out.pcap == demo/traffic.pcap: $(tcpdump -nn -r demo/out.pcap 2>/dev/null | wc -l) packets, every byte"
else
    echo "demo/out.pcap differs from demo/traffic.pcap" >&2
    exit 1
fi

echo "== 7. a recorded link: 150 us one-way latency, 2% of INT packets lost"
$tools gen --out demo/link.pcap --packets 5000 --flows 4 --proto udp --sizes 200 --instrument hostint --loss 0.02 --latency-us 150 --seed 7
$tools collect --listen 127.0.0.1:32766 --duration 3 --interval 0 > demo/collector-loss.txt &
collector=$!
sleep 0.3
$node run --config config/demo-sink-recorded.yaml --exit-on-idle 500 --log warn
wait $collector || true
grep -A 3 "Drop Summary" demo/collector-loss.txt | head -n 4
tail -n 5 demo/collector-loss.txt
