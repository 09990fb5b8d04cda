#!/usr/bin/env python3
"""int-node's node benchmark: Mpps per lcore beside dpdk-testpmd, on the same
vdevs (net_pcap infinite_rx=1 -> net_null), in the same run.

Cases: testpmd io and csum (baselines); int-node forward, source (DSCP and
UDP encapsulations), transit, sink with reports on ~0%, ~1% and 100% of
packets; frame sizes and flow counts as asked. Transit and the sink read
INT packets (36 bytes longer): they are compared with testpmd replaying
that same pcap (testpmd-io-int, testpmd-csum-int), the others with testpmd
replaying the plain one. IOAM and IFA 2.0 cases run beside INT 2.1's
same roles. Runs are interleaved
(round-robin over cases, --repeat times) because the machine is shared and
noisy; the table gives the median and the spread (min-max) of each case.

Writes bench/results/results.json and bench/results/mpps.png and prints a
markdown table. Entry point: bench/run.sh.
"""

import argparse
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# INT_NODE_BIN: another build to measure (A/B comparisons of a change).
NODE = os.environ.get("INT_NODE_BIN", os.path.join(ROOT, "target", "release", "int-node"))
TOOLS = os.path.join(ROOT, "target", "release", "int-tools")
RESULTS = os.path.join(ROOT, "bench", "results")
EAL = ["--no-huge", "-m", "{mem}", "--no-pci", "--no-shconf", "-l", "0-1",
       "--log-level", "lib.eal:error", "--no-telemetry"]


LARGE_FLOW_CASES = {"testpmd-io", "testpmd-csum", "testpmd-io-int", "forward", "source-dscp", "sink-1%",
                    "reference-source", "reference-sink", "forward-live", "source-dscp-live", "sink-0%-live",
                    "reference-sink-live", "reference-source-live"}

# The IFA zone of the benchmark's cases: what gen --instrument ifa writes
# (protocol 253, the draft's L4 rule), Device ID 9 (the node id 10.0.0.9
# does not fit in 20 bits).
IFA = {"version": "ifa", "device_id": 9}

# The IOAM domain of the benchmark's cases: what gen --instrument ioam writes.
IOAM = {"version": "ioam", "namespace": 123, "nodes": 8}
# The same domain numbering each flow's packets (the Edge-to-Edge option).
IOAM_NUMBERED = dict(IOAM, sequence=True)

# Each INT case's yardstick: the reference stage of its role (int-core's
# reference module), the least work that role can do on these frames.
REFERENCE = {"source-dscp": "reference-source", "transit": "reference-transit",
             "sink-0%": "reference-sink", "sink-1%": "reference-sink", "sink-100%": "reference-sink",
             "source-dscp-live": "reference-source-live", "transit-live": "reference-transit-live",
             "sink-0%-live": "reference-sink-live",
             "source-int21": "reference-source-int21", "sink-int21-1%": "reference-sink-int21"}


def reads_int(mode, extra):
    """Whether a case replays an INT pcap (transit, the sinks and their
    testpmd baselines; the INT 2.1 sink's is 4 bytes longer than the one
    its baseline replays) rather than the plain one."""
    return mode in ("hostint", "int21", "int21-3hop", "hostint-v6", "int21-v6", "ioam-v6", "ifa") or extra.get("pcap") == "hostint"


def eal(mem):
    return [a.replace("{mem}", str(mem)) for a in EAL]


def gen(path, size, flows, instrument=None, ipv6=False):
    # One packet per flow, at least 1024 packets: the replay cycles through
    # every flow.
    packets = max(flows, 1024)
    args = [TOOLS, "gen", "--out", path, "--packets", str(packets), "--flows", str(flows),
            "--proto", "udp", "--sizes", str(size), "--seed", "1"]
    if instrument:
        args += ["--instrument", instrument]
    if ipv6:
        args += ["--ipv6", "1"]
    subprocess.run(args, check=True, stderr=subprocess.DEVNULL)
    return packets


def pushed_hops(src, dst, mem):
    """`src`'s INT 2.1 packets after two int-node transit hops (nodes
    10.0.0.5 and 10.0.0.6): three-hop stacks, as a sink behind two switches
    reads them."""
    for node_id, out in (("10.0.0.5", dst + ".1"), ("10.0.0.6", dst)):
        config = {
            "node_id": node_id, "eal": eal(mem),
            "ports": [{"name": "p", "device": f"net_pcap0,rx_pcap={src},tx_pcap={out}", "mtu": 9000}],
            "pipelines": [{"name": "t", "role": "transit", "lcore": 1, "rx": {"port": "p"}, "tx": {"port": "p"},
                           "int": {"version": "2.1"}}],
        }
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            json.dump(config, f)
        subprocess.run([NODE, "run", "--config", f.name, "--exit-on-idle", "500"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.unlink(f.name)
        src = out
    os.unlink(dst + ".1")


def testpmd(mode, pcap, seconds, mbufs, mem, workers=1):
    lcores = eal(mem) if workers == 1 else [a for a in eal(mem) if a not in ("-l", "0-1")] + lcores_for(workers)
    queues = [f"--nb-cores={workers}", f"--rxq={workers}", f"--txq={workers}"] if workers > 1 else []
    cmd = ["dpdk-testpmd"] + lcores + [
        "--vdev", "net_pcap0," + f"rx_pcap={pcap}," * workers + "infinite_rx=1", "--vdev", "net_null0,no-rx=1", "--",
        f"--forward-mode={mode}", "--no-flush-rx", f"--total-num-mbufs={mbufs}", "--stats-period", "1"] + queues
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Large pcaps take a while to load into mbufs before forwarding starts:
    # count seconds from the first second that forwarded anything.
    rates = []
    deadline = time.time() + 120 + mbufs / 20_000
    for line in proc.stdout:
        m = re.search(r"Rx-pps:\s+(\d+)", line)
        if m and int(m.group(1)) > 0:
            rates.append(int(m.group(1)))
            if len(rates) > seconds:
                break
        if time.time() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    # Skip the first (partial) second.
    return statistics.median(rates[1:] or rates) / 1e6 if rates else 0.0, {}


def node_config(role, pcap, extra, mbufs, mem):
    pipeline = {"name": "p", "role": role, "lcore": 1, "rx": {"port": "in"}, "tx": {"port": "out"}}
    pipeline.update(extra.get("pipeline", {}))
    config = {
        "node_id": "10.0.0.9",
        "eal": eal(mem),
        "mempool": {"mbufs": mbufs, "cache": 256},
        "ports": [{"name": "in", "device": f"net_pcap0,rx_pcap={pcap},infinite_rx=1"},
                  {"name": "out", "device": "net_null0,no-rx=1"}],
        "pipelines": [pipeline],
        "stats": {"interval_ms": 1000},
    }
    if "live" in extra:
        live(config, pipeline, extra["live"])
    if extra.get("lcores") == 2:
        two_lcores(config, pipeline, pcap)
    if extra.get("workers", 1) > 1:
        n_workers(config, pipeline, pcap, extra["workers"])
    if role in ("sink", "postcard"):
        config["export"] = {"collector": f"127.0.0.1:{COLLECTOR.getsockname()[1]}", "rate_limit": 0, "pace": 0,
                            "ring_size": 65536}
    return config


def live(config, pipeline, generator):
    """Feeds the stage from int-node's generator instead of a pcap replay:
    the generator (lcore 0) writes flows in turn, numbered as on a live
    link, over blank net_null mbufs (a working set that does not grow with
    the flows) and hands them over a net_ring (pointers, no copy) to the
    stage on lcore 1, at the stage's pace. The main lcore shares CPU 1
    with the stage (it sleeps 0.5 ms between its rounds): beside the
    generator, the generator's rate swung between two modes from run to
    run (bench/README.md)."""
    config["eal"] = [a for a in config["eal"] if a not in ("-l", "0-1")]
    config["eal"] += ["--lcores", "0@0,1@1,2@1", "--main-lcore", "2"]
    config["mempool"]["mbufs"] = 16383
    config["ports"] = [{"name": "blank", "device": "net_null0"}, {"name": "link", "device": "net_ring0"},
                       {"name": "out", "device": "net_null1,no-rx=1"}]
    pipeline["rx"] = {"port": "link"}
    config["pipelines"].insert(0, {"name": "g", "role": "generate", "lcore": 0, "rx": {"port": "blank"},
                                   "tx": {"port": "link"}, "generate": generator})


def two_lcores(config, pipeline, pcap):
    """The stage on two workers: the pcap vdev gets a second RX queue (its
    own replay of the same pcap), the null port a second TX queue, and a
    second pipeline on lcore 0 serves them. The main lcore shares CPU 1
    with the first pipeline (it sleeps 0.5 ms between its rounds)."""
    config["eal"] = [a for a in config["eal"] if a not in ("-l", "0-1")]
    config["eal"] += ["--lcores", "0@0,1@1,2@1", "--main-lcore", "2"]
    config["ports"][0].update(device=f"net_pcap0,rx_pcap={pcap},rx_pcap={pcap},infinite_rx=1", rx_queues=2)
    config["ports"][1]["tx_queues"] = 2
    second = json.loads(json.dumps(pipeline))
    second.update(name="p2", lcore=0, rx={"port": "in", "queue": 1}, tx={"port": "out", "queue": 1})
    config["pipelines"].append(second)


def lcores_for(workers):
    """EAL lcores for `workers` workers and the main lcore: one CPU each
    where the host has them; on a smaller host the workers spread over its
    CPUs and the main lcore (which sleeps 0.5 ms between rounds) shares
    the last worker's."""
    cpus = os.cpu_count() or 1
    if cpus > workers:
        return ["-l", f"0-{workers}"]
    mapping = [f"0@{(workers - 1) % cpus}"] + [f"{k}@{(k - 1) % cpus}" for k in range(1, workers + 1)]
    return ["--lcores", ",".join(mapping)]


def n_workers(config, pipeline, pcap, workers):
    """The stage on `workers` workers, as a NIC's RSS would spread it: the
    pcap vdev opened as that many RX queues (each its own replay of the
    pcap), the null port as that many TX queues, a pipeline per queue."""
    config["eal"] = [a for a in config["eal"] if a not in ("-l", "0-1")] + lcores_for(workers)
    config["ports"][0].update(device="net_pcap0," + f"rx_pcap={pcap}," * workers + "infinite_rx=1",
                              rx_queues=workers)
    config["ports"][1]["tx_queues"] = workers
    for k in range(2, workers + 1):
        more = json.loads(json.dumps(pipeline))
        more.update(name=f"p{k}", lcore=k, rx={"port": "in", "queue": k - 1}, tx={"port": "out", "queue": k - 1})
        config["pipelines"].append(more)


def int_node(role, pcap, seconds, extra, mbufs, mem, node=NODE):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        json.dump(node_config(role, pcap, extra, mbufs, mem), f)  # JSON is YAML
        path = f.name
    stats = path + ".json"
    cmd = [node, "run", "--config", path, "--duration", str(seconds + 1 + mbufs // 80_000), "--stats-json", stats]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rss_kb = 0
    deadline = time.time() + seconds + 60 + mbufs // 50_000
    while proc.poll() is None and time.time() < deadline:
        try:
            with open(f"/proc/{proc.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        rss_kb = max(rss_kb, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=120)
    rates = [float(m) for m in re.findall(r"\] p: ([0-9.]+) Mpps", out)]
    # Skip the seconds spent loading the pcap (no packets yet).
    rates = [r for r in rates if r > 0]
    for k in range(2, 65):
        more = [float(m) for m in re.findall(rf"\] p{k}: ([0-9.]+) Mpps", out)]
        more = [r for r in more if r > 0]
        if not more:
            break
        # More workers: their rates, second by second, added.
        rates = [a + b for a, b in zip(rates, more)]
    info = {"rss_mb": round(rss_kb / 1024, 1)}
    m = re.search(r"flow state of (\d+) bytes per flow; flow table of (\d+) bytes per flow", out)
    if m:
        info["state_bytes_per_flow"] = int(m.group(1))
        info["table_bytes_per_flow"] = int(m.group(2))
    try:
        with open(stats) as f:
            js = json.load(f)
        counters = js["pipelines"]["p"]
        rx = counters["rx_packets"] or 1
        if "g" in js["pipelines"]:
            g = js["pipelines"]["g"]
            info["generator_drop_share"] = round(g.get("tx_dropped", 0) / max(g.get("generated", 1), 1), 5)
        if role == "reference-sink":
            info["in_order_share"] = round(1 - counters.get("seq_out_of_order", 0) / rx, 4)
        if role == "sink":
            # Packets whose number simply followed their flow's last (a
            # replay repeats its numbers: see bench/README.md).
            off_path = sum(counters.get(k, 0) for k in
                           ("seq_duplicates", "seq_reordered", "seq_late", "seq_restarts", "seq_implausible"))
            info["in_order_share"] = round(1 - off_path / rx, 4)
        reports = sum(counters.get(k, 0) for k in ("reports_latency", "reports_xd", "reports_ring_full"))
        info["reports_per_packet"] = round(reports / rx, 4)
        if counters.get("cloned"):
            info["clones_per_packet"] = round(counters["cloned"] / rx, 4)
        if js.get("export"):
            info["exported_per_s"] = round(js["export"]["reports_sent"] / js["elapsed_s"])
        os.unlink(stats)
    except (OSError, KeyError, ValueError):
        pass
    os.unlink(path)
    return (statistics.median(rates[1:] or rates) if rates else 0.0), info


# The sinks' reports go to a bound socket that nobody reads: the kernel
# takes every datagram (and drops it once the buffer is full) without the
# ICMP errors a closed port would send back.
COLLECTOR = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
COLLECTOR.bind(("127.0.0.1", 0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,512,1500",
                    help="frame sizes, and imix for gen's mix (64/576/1500 in 7:4:1)")
    ap.add_argument("--flows", default="1,1000", help="flow counts; above 1000 only the baselines, forward, source-dscp and sink-1%% run")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="all", help="comma list of case names, or all")
    ap.add_argument("--tag", default="", help="suffix of the result files (results<tag>.json, mpps<tag>.png)")
    ap.add_argument("--workers", default="", help="comma list of worker counts (e.g. 1,2,4): testpmd io, the source and the sink on N RX queues, N pipelines, beside testpmd with N cores (the scaling table)")
    ap.add_argument("--compare", default="", help="another int-node build: each int-node case runs with it too, as CASE@B, interleaved (A/B of a change)")
    args = ap.parse_args()
    sizes = [s if s == "imix" else int(s) for s in args.sizes.split(",")]
    flow_counts = [int(f) for f in args.flows.split(",")]
    os.makedirs(RESULTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="int-node-bench-")

    # Report shares for the sink: absolute threshold T means a flow reports
    # when its latency (which grows with wall time during a replay) moved
    # more than T since its last report, i.e. 1e9/T reports per flow per s.
    # max_skew_ms 0: a replayed timestamp ages past what a signed 32-bit
    # difference tells from skew; read every difference as a latency.
    cases = [
        ("testpmd-io", "testpmd", "io", {}),
        ("testpmd-csum", "testpmd", "csum", {}),
        ("testpmd-io-int", "testpmd", "io", {"pcap": "hostint"}),
        ("testpmd-csum-int", "testpmd", "csum", {"pcap": "hostint"}),
        ("forward", "forward", None, {}),
        ("source-dscp", "source", None, {}),
        ("source-udp", "source", None, {"pipeline": {"int": {"encapsulation": "int05-extension-udp"}}}),
        ("transit", "transit", "hostint", {}),
        ("sink-0%", "sink", "hostint", {"pipeline": {"sink": {"latency": {"mode": "absolute", "threshold_ns": 4000000000, "refresh_ms": 0, "max_skew_ms": 0}}}}),
        ("sink-1%", "sink", "hostint", {"report_share": 0.01}),
        ("sink-100%", "sink", "hostint", {"pipeline": {"sink": {"latency": {"mode": "absolute", "threshold_ns": 0, "refresh_ms": 0, "max_skew_ms": 0}}}}),
        # The yardsticks: int-core's reference stages, on the same pcaps.
        ("reference-source", "reference-source", None, {}),
        ("reference-transit", "reference-transit", "hostint", {}),
        ("reference-sink", "reference-sink", "hostint", {}),
        # Live traffic: int-node's generator feeds the stage over a
        # net_ring, flows in turn, numbered as on a link (see live()).
        # Two workers on two RX queues (see two_lcores()).
        ("source-dscp-2lcores", "source", None, {"lcores": 2}),
        ("sink-1%-2lcores", "sink", "hostint", {"lcores": 2, "report_share": 0.01}),
        ("forward-live", "forward", "live", {"live": {"instrument": "none"}}),
        ("source-dscp-live", "source", "live", {"live": {"instrument": "none"}}),
        ("reference-source-live", "reference-source", "live", {"live": {"instrument": "none"}}),
        ("transit-live", "transit", "live", {"live": {"instrument": "hostint"}}),
        ("reference-transit-live", "reference-transit", "live", {"live": {"instrument": "hostint"}}),
        ("sink-0%-live", "sink", "live", {"live": {"instrument": "hostint"}, "pipeline": {"sink": {"latency": {"mode": "absolute", "threshold_ns": 4000000000, "refresh_ms": 0, "max_skew_ms": 0}}}}),
        ("reference-sink-live", "reference-sink", "live", {"live": {"instrument": "hostint"}}),
        # An INT 2.1 domain (INT-MD, DSCP 0x17): the source on the plain
        # pcap, the transit and the sink on gen's INT 2.1 pcap (40 bytes of INT).
        ("source-int21", "source", None, {"pipeline": {"int": {"version": "2.1"}}}),
        ("transit-int21", "transit", "int21", {"pipeline": {"int": {"version": "2.1"}}}),
        ("sink-int21-1%", "sink", "int21", {"pipeline": {"int": {"version": "2.1"}}, "report_share": 0.01}),
        ("reference-source-int21", "reference-source", None, {"pipeline": {"int": {"version": "2.1"}}}),
        ("reference-sink-int21", "reference-sink", "int21", {"pipeline": {"int": {"version": "2.1"}}}),
        # Three-hop stacks: the path rule only (the default), and every hop
        # rule on (latency and queue classes, a queue alert).
        ("sink-int21-3hop", "sink", "int21-3hop", {"pipeline": {"int": {"version": "2.1"}}, "report_share": 0.01}),
        ("sink-int21-3hop-rules", "sink", "int21-3hop", {"pipeline": {"int": {"version": "2.1"}, "sink": {"hops": {
            "latency_ns": [10000, 100000, 1000000], "queue": [1000, 10000], "queue_alert": 50000}}},
            "report_share": 0.01}),
        # The same stacks with no rule reading hops (path_changes off, no
        # class, no alert: the sink digests nothing), the baseline of the
        # two above; and both rule sets fed one packet in 16 per flow.
        ("sink-int21-3hop-off", "sink", "int21-3hop", {"pipeline": {"int": {"version": "2.1"}, "sink": {"path_changes": False}},
            "report_share": 0.01}),
        ("sink-int21-3hop-s16", "sink", "int21-3hop", {"pipeline": {"int": {"version": "2.1"}, "sink": {"hops": {"sample": 16}}},
            "report_share": 0.01}),
        ("sink-int21-3hop-rules-s16", "sink", "int21-3hop", {"pipeline": {"int": {"version": "2.1"}, "sink": {"hops": {
            "latency_ns": [10000, 100000, 1000000], "queue": [1000, 10000], "queue_alert": 50000, "sample": 16}}},
            "report_share": 0.01}),
        # IPv6 UDP (no extension headers) of the same frame sizes, the DSCP
        # marking (Host-INT's, or INT 2.1's) in the Traffic Class.
        ("source-dscp-v6", "source", "v6", {}),
        ("transit-v6", "transit", "hostint-v6", {}),
        ("sink-1%-v6", "sink", "hostint-v6", {"report_share": 0.01}),
        ("source-int21-v6", "source", "v6", {"pipeline": {"int": {"version": "2.1"}}}),
        # INT-XD (role postcard) beside forward: a postcard on each flow's
        # first packet only (report: change without classes), and on one
        # packet in 100 of each flow (1% of packets reported). A cloning
        # source beside the plain INT 2.1 source: one copy in 8, per
        # original packet.
        ("postcard-change", "postcard", None, {"pipeline": {"int": {"version": "2.1"}, "postcard": {"report": "change"}}}),
        ("postcard-1%", "postcard", None, {"pipeline": {"int": {"version": "2.1"}, "postcard": {"report": "every", "every": 100}}}),
        ("source-int21-clone8", "source", None, {"pipeline": {"int": {"version": "2.1"}, "source": {"clone": {"every": 8}}}}),
        ("sink-int21-1%-v6", "sink", "int21-v6", {"pipeline": {"int": {"version": "2.1"}}, "report_share": 0.01}),
        # The INT 2.1 transit on the IPv6 flows of the INT 2.1 sink's
        # case: the yardstick of the IOAM transit below (issue 62).
        ("transit-int21-v6", "transit", "int21-v6", {"pipeline": {"int": {"version": "2.1"}}}),
        # IOAM beside the INT 2.1 source and sink over IPv6: encapsulation
        # (a Hop-by-Hop header with 8 slots of 4 words, the first filled),
        # a transit filling the next slot, decapsulation with 1% reports,
        # on gen's IOAM pcap (144 bytes of trace).
        ("ioam-encap-v6", "source", "v6", {"pipeline": {"int": IOAM}}),
        ("ioam-encap-numbered-v6", "source", "v6", {"pipeline": {"int": IOAM_NUMBERED}}),
        ("ioam-transit-v6", "transit", "ioam-v6", {"pipeline": {"int": IOAM}}),
        ("ioam-decap-1%-v6", "sink", "ioam-v6", {"pipeline": {"int": IOAM}, "report_share": 0.01}),
        # IFA 2.0 beside INT 2.1's same roles: the initiator on the plain
        # pcap (40 bytes added: IFA header, metadata header, one hop), the
        # transit and the terminator (1% reported) on gen's IFA pcap (one
        # hop, 40 bytes of IFA, as long as the INT 2.1 pcap's 40 of INT).
        ("ifa-source", "source", None, {"pipeline": {"int": IFA}}),
        ("ifa-transit", "transit", "ifa", {"pipeline": {"int": IFA}}),
        ("ifa-sink-1%", "sink", "ifa", {"pipeline": {"int": IFA}, "report_share": 0.01}),
    ]
    if args.workers:
        # The scaling table: each case on N workers, named CASE-wN.
        scaled = [c for c in cases if c[0] in ("testpmd-io", "source-dscp", "sink-1%")]
        cases = [(f"{name}-w{n}", kind, mode, dict(extra, workers=n))
                 for n in map(int, args.workers.split(",")) for name, kind, mode, extra in scaled]
    if args.cases != "all":
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c[0] in wanted]

    results = {}
    for size in sizes:
        for flows in flow_counts:
            plain = os.path.join(work, f"plain-{size}-{flows}.pcap")
            packets = gen(plain, size, flows)
            with_int = os.path.join(work, f"int-{size}-{flows}.pcap")
            # INT packets of the same size after the sink strips them (an
            # IMIX pcap's frames have the mix's sizes with INT inside).
            grown = lambda extra: size if size == "imix" or size + extra > 1514 else size + extra
            gen(with_int, grown(36), flows, "hostint")
            with_int21 = os.path.join(work, f"int21-{size}-{flows}.pcap")
            if any(mode == "int21" for _, _, mode, _ in cases):
                gen(with_int21, grown(40), flows, "int21-md")
            with_ifa = os.path.join(work, f"ifa-{size}-{flows}.pcap")
            if any(mode == "ifa" for _, _, mode, _ in cases):
                gen(with_ifa, grown(40), flows, "ifa")
            with_3hops = os.path.join(work, f"int21-3hop-{size}-{flows}.pcap")
            if any(mode == "int21-3hop" for _, _, mode, _ in cases):
                # 40 bytes of INT and two hops of 24 more each.
                gen(with_int21, grown(40), flows, "int21-md")
                pushed_hops(with_int21, with_3hops, 512)
            plain_v6 = os.path.join(work, f"plain6-{size}-{flows}.pcap")
            with_int_v6 = os.path.join(work, f"int6-{size}-{flows}.pcap")
            with_int21_v6 = os.path.join(work, f"int21v6-{size}-{flows}.pcap")
            with_ioam_v6 = os.path.join(work, f"ioam6-{size}-{flows}.pcap")
            if any(mode in ("v6", "hostint-v6", "int21-v6", "ioam-v6") for _, _, mode, _ in cases):
                gen(plain_v6, size, flows, ipv6=True)
                gen(with_int_v6, grown(36), flows, "hostint", ipv6=True)
                gen(with_int21_v6, grown(40), flows, "int21-md", ipv6=True)
                # A 144-byte trace and a 16-byte Edge-to-Edge option.
                gen(with_ioam_v6, grown(160), flows, "ioam", ipv6=True)
            mbufs = max(8191, packets + 65536)
            # --no-huge memory: about 8 KB per mbuf is what EAL needs here.
            mem = max(512, (mbufs * 8) // 1024 + 256)
            # Many flows: the baselines, forward, source and a 1%-report sink.
            run_cases = cases if flows <= 1000 else [c for c in cases if c[0] in LARGE_FLOW_CASES]
            for flow_cap in [max(flows, 1024)]:
                for repeat in range(args.repeat):
                    for name, kind, mode, extra in run_cases:
                        extra = json.loads(json.dumps(extra))
                        if "live" in extra:
                            if size == "imix":
                                continue
                            extra["live"].update(flows=flows, frame_size=size)
                        pipe = extra.setdefault("pipeline", {})
                        if kind.removeprefix("reference-") in ("source", "sink"):
                            section = kind.removeprefix("reference-")
                            pipe.setdefault(section, {}).setdefault("flows", {})["capacity"] = flow_cap
                        if "report_share" in extra:
                            share = extra.pop("report_share")
                            # Reports/s wanted: share x ~10 Mpps; per flow:
                            per_flow = max(share * 10e6 / flows, 0.01)
                            # threshold_ns is 32-bit: with very many flows the
                            # share comes out higher (see reports_per_packet).
                            threshold = min(int(1e9 / per_flow), 4_000_000_000)
                            pipe.setdefault("sink", {})["latency"] = {"mode": "absolute", "threshold_ns": threshold, "refresh_ms": 0, "max_skew_ms": 0}
                        pcap = {"int21": with_int21, "int21-3hop": with_3hops, "v6": plain_v6, "hostint-v6": with_int_v6,
                                "int21-v6": with_int21_v6, "ioam-v6": with_ioam_v6, "ifa": with_ifa}.get(mode)
                        pcap = pcap or (with_int if reads_int(mode, extra) else plain)
                        builds = [("", NODE)] + ([("@B", args.compare)] if args.compare and kind != "testpmd" else [])
                        # A/B: the order alternates round by round.
                        for tag, node in builds if repeat % 2 == 0 else builds[::-1]:
                            if kind == "testpmd":
                                mpps, info = testpmd(mode, pcap, args.seconds, mbufs, mem, extra.get("workers", 1))
                            else:
                                mpps, info = int_node(kind, pcap, args.seconds, extra, mbufs, mem, node)
                            case = name + tag
                            results.setdefault(f"{case}|{size}|{flows}", {"case": case, "size": size, "flows": flows, "mpps": [], "info": {}})
                            results[f"{case}|{size}|{flows}"]["mpps"].append(round(mpps, 3))
                            results[f"{case}|{size}|{flows}"]["info"].update(info)
                            print(f"  {case:13s} {size!s:>5} B {flows:8d} flows  run {repeat + 1}: {mpps:7.3f} Mpps {info}", flush=True)

    # Each case against testpmd on the pcap it read: the INT pcap for transit
    # and the sink, the plain one for the rest.
    int_cases = {name for name, kind, mode, extra in cases if reads_int(mode, extra)}
    rows = []
    for key, r in results.items():
        suffix = "-int" if r["case"].removesuffix("@B") in int_cases else ""
        io = results.get(f"testpmd-io{suffix}|{r['size']}|{r['flows']}")
        if r["case"].endswith("-live"):
            # Live cases against forward-live: bounded by the generator,
            # it is what a stage that does nothing gets from it.
            io = results.get(f"forward-live|{r['size']}|{r['flows']}")
        csum = results.get(f"testpmd-csum{suffix}|{r['size']}|{r['flows']}")
        median = statistics.median(r["mpps"])
        io_median = statistics.median(io["mpps"]) if io else 0
        csum_median = statistics.median(csum["mpps"]) if csum else 0
        ns = 1e3 / median if median else None
        row = dict(r, median_mpps=median, min_mpps=min(r["mpps"]), max_mpps=max(r["mpps"]),
                   ns_per_packet=round(ns, 1) if ns else None,
                   # The stage's own time per packet: what it adds to the
                   # replay and the null TX that testpmd io also pays.
                   ns_over_io=round(ns - 1e3 / io_median, 1) if ns and io_median else None,
                   baseline_pcap="live" if r["case"].endswith("-live") else "int" if suffix else "plain",
                   vs_io=round(median / io_median, 3) if io_median and median else None,
                   # Own work per packet as a multiple of the reference
                   # stage's (filled in below).
                   vs_reference=None,
                   vs_csum=round(median / csum_median, 3) if csum_median and median else None)
        rows.append(row)
    for row in rows:
        ref = next((r for r in rows if r["case"] == REFERENCE.get(row["case"])
                    and (r["size"], r["flows"]) == (row["size"], row["flows"])), None)
        if ref and ref["ns_over_io"] and row["ns_over_io"]:
            row["vs_reference"] = round(row["ns_over_io"] / ref["ns_over_io"], 2)
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    dpdk = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True, text=True).stdout.strip()
    meta = {"cpu": cpu, "cores": os.cpu_count(), "dpdk": dpdk, "kernel": platform.release(),
            "seconds": args.seconds, "repeat": args.repeat, "date": time.strftime("%Y-%m-%d")}
    with open(os.path.join(RESULTS, f"results{args.tag}.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)

    print(f"\nDPDK {dpdk}, {cpu}, {os.cpu_count()} cores; {args.repeat} interleaved runs of {args.seconds} s; one lcore each, N for CASE-wN\n")
    print("| case | size | flows | Mpps median | spread | ns/packet | ns over io | x reference | vs testpmd io | vs csum | baseline pcap | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        notes = ", ".join(f"{k} {v}" for k, v in r["info"].items())
        print(f"| {r['case']} | {r['size']} | {r['flows']} | {r['median_mpps']:.2f} | {r['min_mpps']:.2f}-{r['max_mpps']:.2f} "
              f"| {r['ns_per_packet']} | {r['ns_over_io']} | {r['vs_reference'] or ''} | {r['vs_io']} | {r['vs_csum']} | {r['baseline_pcap']} | {notes} |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        # Sizes in order, IMIX last.
        groups = sorted({(r["size"], r["flows"]) for r in rows},
                        key=lambda g: (g[0] == "imix", 0 if g[0] == "imix" else g[0], g[1]))
        names = [c[0] for c in cases]
        fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(groups) * 1.2), 5))
        width = 0.8 / max(len(names), 1)
        for i, name in enumerate(names):
            values = []
            errors = [[], []]
            for g in groups:
                r = next((x for x in rows if x["case"] == name and (x["size"], x["flows"]) == g), None)
                m = r["median_mpps"] if r else 0
                values.append(m)
                errors[0].append(m - (r["min_mpps"] if r else 0))
                errors[1].append((r["max_mpps"] if r else 0) - m)
            xs = [j + i * width for j in range(len(groups))]
            ax.bar(xs, values, width, yerr=errors, label=name, capsize=2)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
        ax.set_xticklabels([f"{s} B, {f} flows" for s, f in groups])
        ax.set_ylabel("Mpps per lcore (median, min-max)")
        ax.set_title(f"int-node vs dpdk-testpmd, net_pcap infinite_rx -> net_null, DPDK {dpdk}")
        ax.legend(fontsize=8, ncol=3)
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, f"mpps{args.tag}.png"), dpi=110)
        print(f"\nwrote {RESULTS}/results{args.tag}.json and {RESULTS}/mpps{args.tag}.png")
    except ImportError:
        print(f"\nwrote {RESULTS}/results{args.tag}.json (no matplotlib: pip install matplotlib for the plot)")


if __name__ == "__main__":
    sys.exit(main())
