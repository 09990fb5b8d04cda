#!/usr/bin/env bash
# With arguments: int-node ARGS (run, check), or int-tools ARGS (decode,
# collect, gen) when the first argument is int-tools.
# Without: the pcap demo on /data: /data/in.pcap (generated if missing)
# through an INT source and sink, to /data/int.pcap and /data/out.pcap,
# reports printed by a collector.
set -euo pipefail
if [[ ${1:-} == int-tools ]]; then
    exec "$@"
elif [[ $# -gt 0 ]]; then
    exec int-node "$@"
fi
cd /data
mkdir -p demo
[[ -f in.pcap ]] || int-tools gen --out in.pcap --packets 2000 --flows 20 --seed 42
cp in.pcap demo/traffic.pcap
int-node run --config /etc/int-node/demo-source.yaml --exit-on-idle 500 --log warn
int-tools collect --listen 127.0.0.1:32766 --duration 4 --interval 0 &
sleep 0.3
int-node run --config /etc/int-node/demo-sink.yaml --exit-on-idle 500 --log warn
wait
cp demo/int.pcap int.pcap
cp demo/out.pcap out.pcap
echo "in.pcap -> int.pcap (INT added) -> out.pcap (INT removed) in /data"
