#!/usr/bin/env python3
"""The collector benchmark: reports per second that one `int-tools collect`
takes from several senders on this machine.

1. Records real reports: a sink (int-node, pcap replay of a link with
   jitter and 1% loss, every latency change reported) sends its Host-INT
   latency and Drop-Summary reports to a socket here; their payloads are
   kept.
2. For each socket count asked: `collect --quiet --sockets N` listens;
   `int-lab replay-reports` replays the recorded payloads from several
   senders (threads with sockets of their own, 64 datagrams per system
   call, each numbering its reports as one sink would) for some seconds;
   the collector's summary says what it took, what the kernel dropped, and
   what the senders' sequence gaps say was lost.

With --reports tr20-3hop the load is Telemetry Report 2.0 instead: an INT
2.1 sink's report on every packet of three-hop stacks (int-tools gen's INT
2.1 packets through two int-node transits), each with its whole stack
(tr20-1hop: gen's packets straight to the sink, one-hop stacks); and
each socket count runs twice, with the collector's per-hop ledger (nodes
and links: the default) and without it (--max-nodes 0 --max-links 0:
every hop read and counted, none kept; paths are kept per flow either
way), interleaved, so the ledger's cost is measured in the same run.

With --ipfix each run also exports IPFIX (`--ipfix udp://...`, a 1 s
interval, so several exports fall in each run) to a socket here that
takes and counts the messages, interleaved with the runs without it: the
exporter's cost to the receiving collector, as the ratio of their rates
(docs/ipfix.md's target: at least 0.90).

Collector and senders share this machine's cores: the figure is what one
collector takes while its load is made beside it. Writes
bench/results/collector.json (collector-tr20-3hop.json) and prints a
markdown table.
"""

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE = os.path.join(ROOT, "target", "release", "int-node")
TOOLS = os.path.join(ROOT, "target", "release", "int-tools")
LAB = os.path.join(ROOT, "target", "release", "int-lab")
RESULTS = os.path.join(ROOT, "bench", "results")
EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0-1", "--log-level", "lib.eal:error",
       "--no-telemetry", "--file-prefix", "int-node-collector-bench"]


def record_reports(work, count):
    """A sink's reports, as hex payloads, one per line."""
    subprocess.run([TOOLS, "gen", "--out", "link.pcap", "--packets", str(count), "--flows", "64", "--proto", "udp",
                    "--sizes", "128", "--instrument", "hostint", "--latency-us", "100", "--jitter-us", "400",
                    "--loss", "0.01", "--seed", "9"], cwd=work, check=True, capture_output=True)
    return catch_sink_reports(work, {"clock": "rx-timestamp",
                                     "sink": {"latency": {"mode": "absolute", "threshold_ns": 1},
                                              "loss": {"timeout_ms": 100, "sweep_ms": 50}}})


def catch_sink_reports(work, pipeline):
    """The reports of a sink (its pipeline's settings given) replaying
    link.pcap, caught on a socket here."""
    catcher = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    catcher.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    catcher.bind(("127.0.0.1", 0))
    sink = {"name": "sink", "role": "sink", "lcore": 1, "rx": {"port": "in"}, "tx": {"port": "out"}}
    sink.update(pipeline)
    config = {
        "node_id": "10.0.0.2", "eal": EAL,
        "ports": [{"name": "in", "device": "net_pcap0,rx_pcap=link.pcap", "int_port": 2},
                  {"name": "out", "device": "net_null0,no-rx=1"}],
        "pipelines": [sink],
        "export": {"collector": f"127.0.0.1:{catcher.getsockname()[1]}", "rate_limit": 0, "pace": 0,
                   "ring_size": 65536},
    }
    with open(os.path.join(work, "sink.yaml"), "w") as f:
        json.dump(config, f)
    subprocess.run([NODE, "run", "--config", "sink.yaml", "--exit-on-idle", "500", "--log", "warn"], cwd=work,
                   check=True, capture_output=True)
    catcher.settimeout(0.5)
    payloads = []
    try:
        while True:
            payloads.append(catcher.recv(65536).hex())
    except socket.timeout:
        pass
    path = os.path.join(work, "reports.hex")
    with open(path, "w") as f:
        f.write("\n".join(payloads) + "\n")
    return path, len(payloads)


def record_reports21(work, count, transits=("10.0.0.5", "10.0.0.6")):
    """An INT 2.1 sink's reports on every packet of stacks of the source's
    hop and one per transit (`transits`' node ids: two make three-hop
    stacks, none one-hop), as hex payloads, one per line."""
    # Source timestamps of now: the sink (host clock) measures a latency
    # that moves with every packet, and reports each.
    subprocess.run([TOOLS, "gen", "--out", "g.pcap", "--packets", str(count), "--flows", "64", "--proto", "udp",
                    "--sizes", "128", "--instrument", "int21-md", "--start-ns", str(time.time_ns()), "--seed", "9"],
                   cwd=work, check=True, capture_output=True)
    pcaps = ["g.pcap"] + [f"t{i + 1}.pcap" for i in range(len(transits) - 1)] + ["link.pcap"]
    if not transits:
        os.replace(os.path.join(work, "g.pcap"), os.path.join(work, "link.pcap"))
    for node_id, src, dst in zip(transits, pcaps, pcaps[1:]):
        config = {"node_id": node_id, "eal": EAL,
                  "ports": [{"name": "p", "device": f"net_pcap0,rx_pcap={src},tx_pcap={dst}", "mtu": 9000}],
                  "pipelines": [{"name": "t", "role": "transit", "lcore": 1, "rx": {"port": "p"}, "tx": {"port": "p"},
                                 "int": {"version": "2.1"}}]}
        with open(os.path.join(work, "transit.yaml"), "w") as f:
            json.dump(config, f)
        subprocess.run([NODE, "run", "--config", "transit.yaml", "--exit-on-idle", "500", "--log", "warn"], cwd=work,
                       check=True, capture_output=True)
    return catch_sink_reports(work, {"int": {"version": "2.1"},
                                     "sink": {"latency": {"mode": "absolute", "threshold_ns": 1}}})


def run_case(payloads, sockets, senders, seconds, extra=(), tools=TOOLS):
    collect = subprocess.Popen([tools, "collect", "--listen", "127.0.0.1:0", "--quiet", "--json", "--interval", "0",
                                "--sockets", str(sockets), "--rcvbuf", str(32 << 20), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # collect names its servers (--http, --metrics) and its socket, in turn.
    line = collect.stderr.readline()
    while "listening on " not in line:
        line = collect.stderr.readline()
    port = int(line.split("listening on ")[1].split(" ")[0].rsplit(":", 1)[1])
    sent = json.loads(subprocess.run([LAB, "replay-reports", "--to", f"127.0.0.1:{port}", "--payloads", payloads,
                                      "--senders", str(senders), "--seconds", str(seconds)],
                                     check=True, capture_output=True, text=True).stdout)
    time.sleep(0.3)
    # The senders were reaped: what the children's CPU time grows by now
    # is collect's own (it shares the CPUs with them).
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    collect.send_signal(2)
    out, _ = collect.communicate(timeout=30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    summary = json.loads(out.strip().splitlines()[-1])["summary"]
    return {"sockets": sockets, "senders": senders, "seconds": sent["seconds"], "sent": sent["sent"],
            "received": summary["reports"], "datagrams": summary["datagrams"], "collect_cpu_s": round(cpu_s, 3), "received_per_s": round(summary["reports"] / sent["seconds"]),
            "kernel_drops": summary["kernel_drops"], "lost_reports": summary["lost_reports"],
            "malformed": summary["malformed"], "latency_reports": summary["all_flows"]["latency_reports"],
            # With --nats: datagrams (records) the stream acknowledged, and
            # those the full buffer dropped or never acknowledged.
            "published": summary.get("nats", {}).get("acked", 0), "publish_dropped": summary.get("nats", {}).get("dropped", 0),
            "publish_lost": summary.get("nats", {}).get("lost", 0),
            "publish_resent": summary.get("nats", {}).get("resent", 0),
            # With --ipfix: data records sent, observations refused (by
            # the queue builds before issue 48 had; 0 since), flows, hops
            # and links past its limit.
            "ipfix_records": summary.get("ipfix", {}).get("records", 0),
            "ipfix_dropped": summary.get("ipfix", {}).get("dropped", 0),
            "ipfix_unrecorded": summary.get("ipfix", {}).get("unrecorded", 0),
            # A TR 2.0 datagram holds several reports: what they carried.
            "latency_reports_per_s": round(summary["all_flows"]["latency_reports"] / sent["seconds"])}


def start_ipfix_sink():
    """A UDP socket on a free loopback port that takes collect's IPFIX
    messages and counts them (a thread drains it, as a collector would)."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sink.bind(("127.0.0.1", 0))
    taken = {"messages": 0, "bytes": 0}

    def drain():
        while True:
            taken["bytes"] += len(sink.recv(65536))
            taken["messages"] += 1

    threading.Thread(target=drain, daemon=True).start()
    return f"udp://127.0.0.1:{sink.getsockname()[1]}", taken


def start_nats(work):
    """nats-server with JetStream on a free port, its store in `work`."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(["nats-server", "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", os.path.join(work, "js")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return server, f"nats://127.0.0.1:{port}"


def consumer_caught_up(url, stream, consumer):
    """Whether the stream's consumer has been given, and has acknowledged,
    every message (nats-py)."""
    import asyncio
    import nats

    async def ask():
        connection = await nats.connect(url)
        try:
            info = await connection.jetstream().consumer_info(stream, consumer)
            return info.num_pending == 0 and info.num_ack_pending == 0 and info.delivered.stream_seq > 0
        except Exception:
            return False
        finally:
            await connection.close()
    return asyncio.run(ask())


def aggregate(url, stream, prefix):
    """An aggregator reading the whole stream (batches or JSON records):
    its reports per second, from its start to the moment its consumer has
    every message acknowledged."""
    started = time.time()
    collect = subprocess.Popen([TOOLS, "collect", "--from-nats", url, "--nats-stream", stream, "--nats-prefix", prefix,
                                "--nats-consumer", "bench", "--quiet", "--json", "--interval", "0", "--duration", "900"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not consumer_caught_up(url, stream, "bench"):
        time.sleep(0.05)
    seconds = time.time() - started
    collect.send_signal(2)
    out, _ = collect.communicate(timeout=60)
    summary = json.loads(out.strip().splitlines()[-1])["summary"]
    return {"stream": stream, "reports": summary["reports"], "seconds": round(seconds, 2),
            "reports_per_s": round(summary["reports"] / seconds), "malformed": summary["malformed"],
            "messages": summary["nats_consumer"]["messages"]}


def partitions_caught_up(url, stream, consumers, partitions):
    """Waits until every partition's consumer of each of `consumers`
    (`NAME-p<k>`) exists and has been given, and has acknowledged, every
    message of its partition (nats-py, one connection, asked every 100 ms)."""
    import asyncio
    import nats

    async def ask():
        connection = await nats.connect(url)
        js = connection.jetstream()
        try:
            while True:
                done = True
                for name in (f"{c}-p{k}" for c in consumers for k in range(partitions)):
                    try:
                        info = await js.consumer_info(stream, name)
                    except Exception:
                        done = False
                        break
                    if info.num_pending or info.num_ack_pending:
                        done = False
                        break
                if done:
                    return
                await asyncio.sleep(0.1)
        finally:
            await connection.close()
    asyncio.run(ask())


def cpu_seconds(pid):
    """A process's CPU time so far (user and system), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def aggregate_partitions(url, stream, prefix, partitions, owned, consumer, server):
    """Aggregators, one for each of `owned` (their `--partitions`: auto, or
    a list), under one consumer name (so they divide the partitions)
    reading a partitioned stream filled beforehand: their reports per
    second together, from their start to the moment every partition's
    consumer has every message acknowledged; their CPU time and the
    server's (`server`: its pid) meanwhile."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = cpu_seconds(server)
    started = time.time()
    children = [subprocess.Popen([TOOLS, "collect", "--from-nats", url, "--nats-stream", stream, "--nats-prefix", prefix,
                                  "--nats-consumer", consumer, "--nats-partitions", str(partitions), "--partitions",
                                  listed, "--quiet", "--json", "--interval", "0", "--duration", "900"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for listed in owned]
    partitions_caught_up(url, stream, [consumer], partitions)
    seconds = time.time() - started
    server_cpu = cpu_seconds(server) - server_before
    summaries = []
    for child in children:
        child.send_signal(2)
    for child in children:
        out, _ = child.communicate(timeout=60)
        summaries.append(json.loads(out.strip().splitlines()[-1])["summary"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    reports = sum(s["reports"] for s in summaries)
    return {"aggregators": " ".join(owned), "reports": reports, "each": [s["reports"] for s in summaries],
            "messages": sum(s["nats_consumer"]["messages"] for s in summaries), "seconds": round(seconds, 2),
            "reports_per_s": round(reports / seconds), "load_average": os.getloadavg()[0],
            # CPU per report: the aggregators' (reaped children) and the
            # server's.
            "aggregators_cpu_s": round(cpu, 2), "server_cpu_s": round(server_cpu, 2),
            "aggregators_cpu_ns_per_report": round(1e9 * cpu / max(reports, 1)),
            "server_cpu_ns_per_report": round(1e9 * server_cpu / max(reports, 1))}


def partitioned(payloads, nats, args):
    """The partitioned aggregators' case: receivers with
    `--nats-partitions 16` fill a stream of its own; then, in interleaved
    rounds, one aggregator and two read it whole, each round under new
    consumer names (so from the stream's start)."""
    server, url = nats[0].pid, nats[1]
    fill = run_case(payloads, 1, args.senders, args.fill_seconds,
                    ("--nats", url, "--nats-stream", "PARTS", "--nats-prefix", "parts", "--nats-partitions", "16"))
    print(json.dumps(dict(fill, view="partitioned-fill")), file=sys.stderr)
    # One aggregator, two dividing the partitions by leases, and two given
    # half each (no lease taken from the other: the reading alone).
    cases = [("auto",), ("auto", "auto"), ("0-7", "8-15")]
    rounds = []
    for repeat in range(args.repeat):
        for owned in (cases if repeat % 2 == 0 else cases[::-1]):
            result = aggregate_partitions(url, "PARTS", "parts", 16, owned, f"part{repeat}x{len(rounds)}", server)
            print(json.dumps(result), file=sys.stderr)
            rounds.append(result)

    def median(owned):
        rates = sorted(r["reports_per_s"] for r in rounds if r["aggregators"] == " ".join(owned))
        return rates[len(rates) // 2]
    one, two, halves = (median(owned) for owned in cases)
    print(f"partitioned: one aggregator {one:,} reports/s, two (auto) {two:,}: {two / max(one, 1):.2f}x (target >= 1.5x), "
          f"two (0-7, 8-15) {halves:,}: {halves / max(one, 1):.2f}x (medians of {args.repeat}); stream filled with "
          f"{fill['published']:,} datagrams; load average {', '.join(f'{l:.1f}' for l in os.getloadavg())}",
          file=sys.stderr)
    return {"fill": fill, "rounds": rounds, "one_per_s": one, "two_per_s": two, "ratio": round(two / max(one, 1), 2),
            "two_listed_per_s": halves, "ratio_listed": round(halves / max(one, 1), 2)}


def server_ceiling(url, seconds, size=256 << 10, window=64):
    """What nats-server takes here: acknowledged publishes of the batch
    format's message size (256 KiB), `window` in flight, for `seconds`
    (nats-py on one core beside it)."""
    import asyncio
    import nats

    async def run():
        connection = await nats.connect(url)
        js = connection.jetstream()
        await js.add_stream(name="CEILING", subjects=["ceiling.>"], max_bytes=1 << 30)
        payload, sent, end = b"x" * size, 0, time.time() + seconds
        started = time.time()
        while time.time() < end:
            await asyncio.gather(*(js.publish("ceiling.x", payload) for _ in range(window)))
            sent += window
        took = time.time() - started
        await js.delete_stream("CEILING")
        await connection.close()
        return {"messages_per_s": round(sent / took), "mbytes_per_s": round(sent * size / took / 1e6)}
    return asyncio.run(run())


def main():
    global NODE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sockets", default="1,2")
    parser.add_argument("--senders", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reports", choices=["hostint", "tr20-1hop", "tr20-3hop"], default="hostint")
    parser.add_argument("--node", default=NODE,
                        help="the int-node that records the sink's reports (any build: only its reports are used)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries in target/release as they are")
    parser.add_argument("--http", action="store_true",
                        help="each run also with the web view on (--http), interleaved: the view's cost")
    parser.add_argument("--nats", action="store_true",
                        help="each run also with --nats (batch format, and --nats-format json) to a nats-server -js "
                             "started here, interleaved; then an aggregator (--from-nats) reads each stream: its "
                             "reports per second; and what the server takes of the batch's message size")
    parser.add_argument("--case", action="append", default=[], metavar="NAME=ARGS",
                        help="one more view: collect with ARGS (space-separated), interleaved with the rest; e.g. "
                             "'gro-off=--gro off' (repeatable)")
    parser.add_argument("--partitioned", action="store_true",
                        help="a stream filled beforehand by a receiving collector with --nats-partitions 16 (a "
                             "nats-server -js started here), then read whole by one aggregator and by two "
                             "(--partitions auto), interleaved, --repeat rounds: reports/s each (docs/scale-out.md)")
    parser.add_argument("--fill-seconds", type=float, default=10.0,
                        help="with --partitioned, how long the senders fill the stream")
    parser.add_argument("--no-nats-json", action="store_true",
                        help="with --nats, the batch format only (the JSON stream's aggregator takes minutes)")
    parser.add_argument("--ipfix", action="store_true",
                        help="each run also with --ipfix (UDP, a 1 s interval) to a socket here, interleaved: the "
                             "exporter's cost, as its rate over the rate without it")
    parser.add_argument("--congestion", action="store_true",
                        help="also run each case with the congestion bookkeeping off (--congestion-queues 0), "
                             "interleaved: its cost (docs/congestion.md)")
    parser.add_argument("--compare", default="",
                        help="another int-tools build: each case runs with it too, as VIEW@B, interleaved (A/B of a "
                             "change; the senders and the recorded reports are this tree's)")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "int-node", "-p", "int-tools", "-p", "int-lab"],
                       cwd=ROOT, check=True)
    NODE = os.path.abspath(args.node)
    work = tempfile.mkdtemp(prefix="int-collector-bench-")
    if args.reports == "tr20-3hop":
        payloads, recorded = record_reports21(work, 20000)
    elif args.reports == "tr20-1hop":
        payloads, recorded = record_reports21(work, 20000, transits=())
    else:
        payloads, recorded = record_reports(work, 20000)
    print(f"recorded {recorded} report datagrams of a sink", file=sys.stderr)
    # The per-hop view on (the default), and off where the reports carry hops.
    views = [("hops", ())] + ([("no-hops", ("--max-nodes", "0", "--max-links", "0"))]
                              if args.reports.startswith("tr20") else [])
    if args.congestion:
        # The congestion bookkeeping off (--congestion-queues 0), interleaved
        # with the default (on): its cost per report in the same run.
        views.append(("no-congestion", ("--congestion-queues", "0")))
    if args.http:
        views.append(("http", ("--http", "127.0.0.1:0")))
    nats = start_nats(work) if args.nats or args.partitioned else None
    parts = partitioned(payloads, nats, args) if args.partitioned else None
    if args.nats:
        views.append(("nats", ("--nats", nats[1])))
        if not args.no_nats_json:
            views.append(("nats-json", ("--nats", nats[1], "--nats-format", "json", "--nats-stream", "JSON",
                                        "--nats-prefix", "json")))
    for case in args.case:
        name, _, extra = case.partition("=")
        views.append((name, tuple(extra.split())))
    ipfix = start_ipfix_sink() if args.ipfix else None
    if ipfix:
        views.append(("ipfix", ("--ipfix", ipfix[0], "--ipfix-interval", "1")))
    builds = [("", TOOLS)] + ([("@B", args.compare)] if args.compare else [])
    views = [(view + suffix, extra, tools) for view, extra in views for suffix, tools in builds]
    results = []
    for repeat in range(args.repeat):
        for sockets in [int(s) for s in args.sockets.split(",") if s]:
            for view, extra, tools in views if repeat % 2 == 0 else views[::-1]:
                result = dict(run_case(payloads, sockets, args.senders, args.seconds, extra, tools), view=view,
                              load=os.getloadavg()[0])
                print(json.dumps(result), file=sys.stderr)
                results.append(result)
    aggregated = None
    if args.nats:
        aggregated = [aggregate(nats[1], "INT", "int")]
        if not args.no_nats_json:
            aggregated.append(aggregate(nats[1], "JSON", "json"))
        aggregated.append({"server_ceiling": server_ceiling(nats[1], args.seconds)})
    if nats:
        nats[0].kill()
        print(f"aggregators, server: {aggregated}", file=sys.stderr)
    os.makedirs(RESULTS, exist_ok=True)
    name = "collector.json" if args.reports == "hostint" else f"collector-{args.reports}.json"
    with open(os.path.join(RESULTS, name), "w") as f:
        json.dump({"cpus": os.cpu_count(), "reports": args.reports, "recorded_datagrams": recorded, "runs": results,
                   "aggregator": aggregated, "partitioned": parts, "ipfix_sink": ipfix[1] if ipfix else None}, f, indent=1)
    # With UDP GRO the kernel counts a dropped train (up to 64 datagrams of
    # a GSO send) as one drop: what was sent and not taken says the rest.
    print("| reports | per-hop view / output | sockets | senders | datagrams/s (median, min-max) | latency reports/s (median) | kernel drops (median share) | not taken (median share) | collect CPU ns/datagram (median) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sockets in sorted({r["sockets"] for r in results}):
        for view, _, _ in views:
            runs = [r for r in results if r["sockets"] == sockets and r["view"] == view]
            rates = sorted(r["received_per_s"] for r in runs)
            drops = sorted(r["kernel_drops"] / max(r["sent"], 1) for r in runs)
            carried = sorted(r["latency_reports_per_s"] for r in runs)
            cost = sorted(1e9 * r["collect_cpu_s"] / max(r["datagrams"], 1) for r in runs)
            missed = sorted(max(r["sent"] - r["datagrams"], 0) / max(r["sent"], 1) for r in runs)
            print(f"| {args.reports} | {view} | {sockets} | {args.senders} | {rates[len(rates) // 2] / 1e6:.2f}M "
                  f"({rates[0] / 1e6:.2f}-{rates[-1] / 1e6:.2f}) | {carried[len(carried) // 2] / 1e6:.2f}M "
                  f"| {100 * drops[len(drops) // 2]:.1f}% | {100 * missed[len(missed) // 2]:.1f}% | {cost[len(cost) // 2]:.0f} |")

    if ipfix:
        print_ipfix_cost(results)
    if nats:
        print_nats_cost(results, [suffix for suffix, _ in builds])


def print_nats_cost(results, suffixes):
    """The publisher's cost: per socket count and build, collect's median
    CPU a datagram without an output over its median with `--nats` (the
    rate `--nats` leaves one core, as a share of the rate without), the
    rates' ratio, and what the full queue dropped and was sent again, run
    by run."""
    def runs(view, sockets):
        return [r for r in results if r["view"] == view and r["sockets"] == sockets]

    def median(values):
        values = sorted(values)
        return values[len(values) // 2]

    for sockets in sorted({r["sockets"] for r in results}):
        for suffix in suffixes:
            plain, nats = runs("hops" + suffix, sockets), runs("nats" + suffix, sockets)
            if not plain or not nats:
                continue
            cpu = [1e9 * r["collect_cpu_s"] / max(r["datagrams"], 1) for r in plain]
            cpu_nats = [1e9 * r["collect_cpu_s"] / max(r["datagrams"], 1) for r in nats]
            by_cpu = median(cpu) / max(median(cpu_nats), 1)
            by_rate = median(r["received_per_s"] for r in nats) / max(median(r["received_per_s"] for r in plain), 1)
            print(f"nats{suffix}, {sockets} socket(s): {by_cpu:.2f}x by CPU ({median(cpu):.0f} / "
                  f"{median(cpu_nats):.0f} ns, runs {sorted(round(c) for c in cpu_nats)}), {by_rate:.2f}x by rate; "
                  f"dropped {[r['publish_dropped'] for r in nats]}, resent {[r['publish_resent'] for r in nats]}, "
                  f"acked {[r['published'] for r in nats]}")


def print_ipfix_cost(results):
    """The exporter's cost: per socket count, the median rate with --ipfix
    over the median without (the default view), run for run in one run."""
    def median(view, sockets):
        rates = sorted(r["received_per_s"] for r in results if r["view"] == view and r["sockets"] == sockets)
        return rates[len(rates) // 2]

    for sockets in sorted({r["sockets"] for r in results}):
        ratio = median("ipfix", sockets) / max(median("hops", sockets), 1)
        runs = [r for r in results if r["view"] == "ipfix" and r["sockets"] == sockets]
        print(f"ipfix, {sockets} socket(s): {ratio:.2f}x the rate without it (target >= 0.90); "
              f"{sum(r['ipfix_records'] for r in runs)} records sent, {sum(r['ipfix_dropped'] for r in runs)} "
              f"observations dropped, {sum(r['ipfix_unrecorded'] for r in runs)} unrecorded")


if __name__ == "__main__":
    main()
