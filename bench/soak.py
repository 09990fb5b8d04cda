#!/usr/bin/env python3
"""Soak: int-node's whole path under steady load and flow churn, for long.

One int-node process (built with the `lab` feature for its impair stage)
over net_ring ports: the generator role writes UDP flows in turn at the
pace of what it feeds, retiring `--churn` flows after every round for new
ones; a source numbers them (INT 0.5, Host-INT's dialect), an impair stage
drops `--loss` percent, a transit pushes its hop, a sink strips and
reports to `int-tools collect`. Every minute it records the process's RSS,
every pipeline's counters (DPDK telemetry), the exporter's and the
collector's figures (DPDK's telemetry tells a mempool's size, not its use:
the mbufs in use are the node's count at exit). At the end it checks:

- RSS within 5% of its value after the first minute: the memory the
  process owns (anonymous and shared pages; VmRSS less the file-backed
  pages of the binary and libraries, which the kernel drops and reads
  again under page-cache pressure, and which are reported beside it);
- every mbuf back in the pool at exit;
- every hop's counters add up: rx = tx + its counted drops, and what a hop
  sent is what the next received, but for what the ring between them held
  when the workers stopped (at most its size);
- the loss the collector reports is the sink's, and the loss injected
  between source and sink (the impair stage's drops and any ring's) less
  what no later packet of its flow revealed (a flow's trailing losses,
  about loss/(1-loss) per flow that ended), within five standard
  deviations.

Not part of the test command: `python3 bench/soak.py --minutes 30`
(results in bench/results/soak.json).
"""

import argparse
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE = os.environ.get("INT_NODE_BIN", os.path.join(ROOT, "target/release/int-node"))
TOOLS = os.environ.get("INT_TOOLS_BIN", os.path.join(ROOT, "target/release/int-tools"))
TELEMETRY = "/usr/bin/dpdk-telemetry.py"
PREFIX = "int-node-soak"
PIPELINES = ["g", "src", "wan", "tr", "sink"]
RING = 1024  # net_ring's default ring size


def free_port(kind):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(args, collector):
    link = lambda i: {"name": f"r{i}", "device": f"net_ring{i}"}
    pipe = lambda name, role, rx, tx, **extra: {"name": name, "role": role, "lcore": 1,
                                                "rx": {"port": rx}, "tx": {"port": tx}, **extra}
    flows = {"capacity": args.capacity, "idle_timeout_ms": 5000}
    return {
        "node_id": "10.0.0.1",
        "eal": ["--no-huge", "-m", "1024", "--no-pci", "--no-shconf", "--lcores", "0@0,1@1,2@1",
                "--main-lcore", "2", "--file-prefix", PREFIX, "--log-level", "lib.eal:error"],
        "mempool": {"mbufs": 16383},
        "ports": [{"name": "blank", "device": "net_null0"}] + [link(i) for i in range(4)]
                 + [{"name": "out", "device": "net_null1,no-rx=1"}],
        "pipelines": [
            {**pipe("g", "generate", "blank", "r0"), "lcore": 0,
             "generate": {"flows": args.flows, "frame_size": 64, "churn": args.churn}},
            pipe("src", "source", "r0", "r1", source={"flows": flows}),
            pipe("wan", "impair", "r1", "r2", impair={"loss_percent": args.loss}),
            pipe("tr", "transit", "r2", "r3"),
            pipe("sink", "sink", "r3", "out", sink={"flows": flows, "loss": {"timeout_ms": 200}}),
        ],
        "export": {"collector": collector, "rate_limit": 0, "ring_size": 65536},
        "stats": {"interval_ms": 60000},
        "idle_sleep_us": 0,
    }


def telemetry(commands):
    """Each command's answer, by the command (the client answers in order,
    keyed by the command without its parameters)."""
    out = subprocess.run([TELEMETRY, "-f", PREFIX], input="\n".join(commands), capture_output=True,
                         text=True, timeout=60).stdout
    answers = []
    for line in out.splitlines():
        try:
            answers.append(json.loads(line))
        except ValueError:
            pass
    return {command: next(iter(answer.values()), None) for command, answer in zip(commands, answers)}


def memory_kb(pid):
    """VmRSS and its parts: anonymous, shared (DPDK's memory without huge
    pages) and file-backed (the binary and libraries, pages the kernel may
    drop and read again under page-cache pressure)."""
    figures = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "RssAnon", "RssShmem", "RssFile"):
                figures[name] = int(value.split()[0])
    return figures


def owned_kb(sample):
    """The memory the process owns: RSS less its file-backed pages."""
    m = sample["memory_kb"]
    return m.get("RssAnon", 0) + m.get("RssShmem", 0)


def scrape(port):
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    figures = {}
    for line in page.splitlines():
        m = re.match(r"^(int_collect_[a-z_]+) ([0-9.e+]+)$", line)
        if m:
            figures[m.group(1)] = float(m.group(2))
    return figures


def sample(minute, node, metrics_port):
    answers = telemetry([f"/int_node/pipeline,{p}" for p in PIPELINES]
                        + ["/int_node/exporter", "/mempool/list"])
    pools = answers.get("/mempool/list") or []
    pool = telemetry([f"/mempool/info,{pools[0]}"]).get("/mempool/info", {}) if pools else {}
    return {
        "minute": minute,
        "memory_kb": memory_kb(node.pid),
        "mempool": pool,
        "counters": {p: answers.get(f"/int_node/pipeline,{p}") for p in PIPELINES},
        "exporter": answers.get("/int_node/exporter"),
        "collector": scrape(metrics_port),
    }


def checks(first, last, stats, exit_log, args):
    results = []
    check = lambda name, ok, detail: results.append({"check": name, "ok": bool(ok), "detail": detail})
    grown = owned_kb(last) / owned_kb(first) - 1
    check("rss", abs(grown) <= 0.05,
          f"anonymous + shared {owned_kb(first)} kB after minute 1, {owned_kb(last)} kB at the end ({grown:+.2%}); "
          f"VmRSS {first['memory_kb'].get('VmRSS')} -> {last['memory_kb'].get('VmRSS')} kB")
    m = re.search(r"mempool: (\d+) of (\d+) mbufs in use at exit", exit_log)
    check("mbufs", m and m.group(1) == "0", m.group(0) if m else "no mempool line")
    c = stats["pipelines"]
    get = lambda p, k: c[p].get(k, 0)
    drops = {"src": ["tx_dropped"], "wan": ["tx_dropped", "impaired_dropped"], "tr": ["tx_dropped"],
             "sink": ["tx_dropped", "malformed_dropped", "discarded"]}
    for p, names in drops.items():
        counted = get(p, "tx_packets") + sum(get(p, n) for n in names)
        check(f"{p} adds up", get(p, "rx_packets") == counted,
              f"rx {get(p, 'rx_packets')} = tx {get(p, 'tx_packets')} + " + " + ".join(f"{n} {get(p, n)}" for n in names))
    for a, b in [("g", "src"), ("src", "wan"), ("wan", "tr"), ("tr", "sink")]:
        left = get(a, "tx_packets") - get(b, "rx_packets")
        check(f"{a} -> {b}", 0 <= left <= RING, f"{a} sent {get(a, 'tx_packets')}, {b} received {get(b, 'rx_packets')}: {left} left in the ring")
    injected = get("wan", "impaired_dropped") + get("wan", "tx_dropped") + get("tr", "tx_dropped") + get("src", "tx_dropped")
    declared = get("sink", "lost_packets")
    collected = last["collector"].get("int_collect_lost_packets_total", -1)
    received, sent = last["collector"].get("int_collect_reports_total", -1), stats.get("export", {}).get("reports_sent")
    check("collector = sink", collected == declared and received == sent,
          f"the sink declared {declared} lost in {sent} reports sent; the collector counted {collected:.0f} in {received:.0f} received")
    p = args.loss / 100
    ended = get("g", "generated") // args.flows * args.churn + args.flows
    tails = ended * p / (1 - p)
    hidden = injected - declared
    bound = 5 * math.sqrt(tails) + 10
    check("loss = injected", abs(hidden - tails) <= bound,
          f"injected {injected}, declared {declared}: {hidden} hidden, as the trailing losses of {ended} flows that ended are ({tails:.0f} +- {bound:.0f})")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=int, default=30)
    parser.add_argument("--flows", type=int, default=20000)
    parser.add_argument("--churn", type=int, default=20)
    parser.add_argument("--capacity", type=int, default=1 << 20)
    parser.add_argument("--loss", type=float, default=1.0)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench/results/soak.json"))
    args = parser.parse_args()
    udp, metrics = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    output = ["--json"] if os.environ.get("SOAK_COLLECTOR_JSON") else ["--quiet"]
    collector = subprocess.Popen([TOOLS, "collect", "--listen", f"127.0.0.1:{udp}", *output, "--interval", "3600",
                                  "--rcvbuf", "67108864",
                                  "--metrics", f"127.0.0.1:{metrics}"], stderr=subprocess.PIPE, text=True)
    assert "listening" in collector.stderr.readline()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        json.dump(config(args, f"127.0.0.1:{udp}"), f)
    stats_path = f.name + ".json"
    log = open(f.name + ".log", "w+")
    node = subprocess.Popen([NODE, "run", "--config", f.name, "--stats-json", stats_path],
                            stdout=log, stderr=subprocess.STDOUT)
    samples = []
    started = time.time()
    try:
        for minute in range(1, args.minutes + 1):
            time.sleep(max(0.0, started + 60 * minute - time.time()))
            samples.append(sample(minute, node, metrics))
            s = samples[-1]
            g, sink = s["counters"]["g"] or {}, s["counters"]["sink"] or {}
            print(f"minute {minute}: memory {s['memory_kb']} kB, generated {g.get('generated')}, "
                  f"sink rx {sink.get('rx_packets')} lost {sink.get('lost_packets')} flows {sink.get('flows_created')}, "
                  f"collector lost {s['collector'].get('int_collect_lost_packets_total')}", flush=True)
    finally:
        node.send_signal(signal.SIGINT)
        node.wait(timeout=300)
    log.seek(0)
    exit_log = log.read()
    with open(stats_path) as f:
        stats = json.load(f)
    # The node is gone, every report sent: once the collector has them all
    # (a report is a datagram), its last word.
    sent = stats.get("export", {}).get("reports_sent", 0)
    deadline = time.time() + 120
    while scrape(metrics).get("int_collect_reports_total", 0) < sent and time.time() < deadline:
        time.sleep(0.2)
    final = {"collector": scrape(metrics)}
    collector.send_signal(signal.SIGINT)
    collector.wait(timeout=60)
    results = checks(samples[0], {**samples[-1], **final}, stats, exit_log, args)
    for r in results:
        print(f"{'PASS' if r['ok'] else 'FAIL'} {r['check']}: {r['detail']}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"args": vars(args), "samples": samples, "final": stats, "checks": results}, f, indent=1)
    sys.exit(0 if all(r["ok"] for r in results) else 1)


if __name__ == "__main__":
    main()
