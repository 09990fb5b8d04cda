#!/usr/bin/env python3
"""CPU time a packet, for A/B runs on a shared host.

    bench/cpu_time.py LABEL REAL-BINARY ARGS...

Runs REAL-BINARY (int-node, or dpdk-testpmd) with ARGS, passes its output
and its exit code through, and appends to $CPU_TIME_LOG (default
bench/results/cpu_time.jsonl) one line: LABEL, what the run was (the
node's role, INT version, sink settings and pcap; testpmd's pcap and
mode), the packets it received and its busiest thread's CPU time (the
worker's: it polls). CPU ns a packet is what a second job on the host
moves far less than the wall-clock rates bench.py prints: a worker that
loses its CPU for part of a second loses rate, not CPU time a packet.

Used through two one-line shell wrappers, given to bench.py as the
build under test and as `--compare`, and one named dpdk-testpmd first in
PATH for the baselines, e.g.

    printf '#!/bin/sh\\nexec bench/cpu_time.py A target/release/int-node "$@"\\n' > /tmp/node-A
    printf '#!/bin/sh\\nexec bench/cpu_time.py B /tmp/old/int-node "$@"\\n' > /tmp/node-B
    printf '#!/bin/sh\\nexec bench/cpu_time.py testpmd /usr/bin/dpdk-testpmd "$@"\\n' > /tmp/bin/dpdk-testpmd
    PATH=/tmp/bin:$PATH INT_NODE_BIN=/tmp/node-A python3 bench/bench.py ... --compare /tmp/node-B

(RSS in bench.py's notes is then the wrapper's, not the node's.)
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOG = os.environ.get("CPU_TIME_LOG", os.path.join(ROOT, "bench", "results", "cpu_time.jsonl"))


def what(args):
    """The run's case as far as its arguments tell it."""
    if "--config" not in args:
        return " ".join(os.path.basename(a) if "pcap" in a else a for a in args if "pcap" in a or "forward-mode" in a)
    try:
        with open(args[args.index("--config") + 1]) as f:
            config = json.load(f)  # bench.py writes its configs as JSON
        pipeline = config["pipelines"][0]
        pcap = re.search(r"rx_pcap=([^,]+)", config["ports"][0]["device"]).group(1)
        return json.dumps({"role": pipeline.get("role"), "int": pipeline.get("int"), "sink": pipeline.get("sink"),
                           "pcap": os.path.basename(pcap)}, sort_keys=True)
    except (OSError, ValueError, KeyError, IndexError, AttributeError) as e:
        return f"unknown config: {e}"


def packets(args, output):
    """Packets received: the node's stats file, or testpmd's totals."""
    if "--stats-json" in args:
        try:
            with open(args[args.index("--stats-json") + 1]) as f:
                return json.load(f)["pipelines"]["p"]["rx_packets"]
        except (OSError, ValueError, KeyError):
            return 0
    counts = [int(n) for n in re.findall(r"RX-packets:\s+(\d+)", output)]
    return max(counts, default=0)


def main():
    label, real, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    case = what(args)
    child = subprocess.Popen([real] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # bench.py stops testpmd with SIGINT: pass it on.
    signal.signal(signal.SIGINT, lambda *_: child.send_signal(signal.SIGINT))
    lines = []

    def pump():
        for line in child.stdout:
            lines.append(line)
            sys.stdout.write(line)
            sys.stdout.flush()

    reader = threading.Thread(target=pump)
    reader.start()
    ticks = {}
    while child.poll() is None:
        try:
            for tid in os.listdir(f"/proc/{child.pid}/task"):
                with open(f"/proc/{child.pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                ticks[tid] = int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
        time.sleep(0.01)
    reader.join()
    received = packets(args, "".join(lines))
    busiest = max((t for tid, t in ticks.items() if tid != str(child.pid)), default=0)
    cpu_s = busiest / os.sysconf("SC_CLK_TCK")
    os.makedirs(os.path.dirname(LOG), exist_ok=True)
    with open(LOG, "a") as f:
        f.write(json.dumps({"label": label, "case": case, "packets": received, "cpu_s": cpu_s,
                            "cpu_ns_per_packet": cpu_s * 1e9 / received if received else None}) + "\n")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
