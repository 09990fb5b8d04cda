#!/usr/bin/env python3
"""What an inline node's restart costs the traffic through it, measured.

As root, from the repository root, after
`cargo build --workspace --features int-node/lab`:

    python3 bench/restart.py [--node src|sink] [--rate 20000] [--seconds 12]

Brings up the basic lab (config/lab/basic.yaml: client -> source node ->
WAN node -> sink node -> server) with `int-lab lab --keep`, starts its three
nodes again by hand, sends numbered UDP packets from the client to the
server at a steady rate (`int-lab send`) and, a third of the way in, does
to one node what an operator or systemd does:

- reload: SIGHUP (`systemctl reload`, the unit's ExecReload);
- restart: SIGTERM, then `int-node check` and `int-node run` at once, as
  `systemctl restart` runs ExecStop, ExecStartPre and ExecStart;
- crash: SIGKILL, then the unit's RestartSec (2 s), check and run, as
  Restart=on-failure does.

For each it prints the packets lost (indices that never arrived), the
outage (the last packet before to the first after, at the server) and how
long the new process took from its start to the first packet through it.
docs/deployment.md has the figures.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = "intlab"
SERVER = ("10.10.0.2", 5002)
RESTART_SEC = 2.0  # config/systemd/int-node@.service

# Runs in the server's namespace: every datagram's index (its first 8
# bytes) and arrival time (CLOCK_MONOTONIC: one clock for every namespace),
# written out on SIGINT, which comes once the sender is done.
RECEIVER = r"""
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("ready", flush=True)
got = []
try:
    while True:
        data = s.recv(2048)
        got.append((struct.unpack(">Q", data[:8])[0], time.monotonic_ns()))
except KeyboardInterrupt:
    pass
with open(sys.argv[2], "w") as out:
    for i, t in got:
        out.write(f"{i} {t}\n")
"""


def netns(host, args, **kw):
    return subprocess.Popen(["ip", "netns", "exec", f"{LAB}-{host}", *args], **kw)


def bins():
    debug = os.path.join(ROOT, "target", "debug")
    return {name: os.path.join(debug, name) for name in ("int-node", "int-lab", "int-tools")}


class Node:
    """One lab node started by hand, as the unit would: check, then run."""

    def __init__(self, exe, host, workdir):
        self.exe, self.host, self.workdir = exe, host, workdir
        self.config = os.path.join(workdir, f"node-{host}.yaml")
        self.proc = None

    def start(self):
        subprocess.run(["ip", "netns", "exec", f"{LAB}-{self.host}", self.exe, "check",
                        "--config", self.config], check=True, stdout=subprocess.DEVNULL)
        log = open(os.path.join(self.workdir, f"restart-node-{self.host}.log"), "a")
        self.proc = netns(self.host, [self.exe, "run", "--config", self.config],
                          stdout=log, stderr=subprocess.STDOUT)

    def stop(self, sig):
        """Seconds from the signal to the process's exit."""
        asked = time.monotonic()
        self.proc.send_signal(sig)
        self.proc.wait()
        return time.monotonic() - asked


def lab_up(tools, workdir):
    topology = os.path.join(ROOT, "config", "lab", "basic.yaml")
    subprocess.run([tools["int-lab"], "lab", "--topology", topology, "--keep",
                    "--workdir", workdir], check=True, stdout=subprocess.DEVNULL)


def lab_down(tools, workdir):
    topology = os.path.join(ROOT, "config", "lab", "basic.yaml")
    subprocess.run([tools["int-lab"], "lab", "--topology", topology, "--down",
                    "--workdir", workdir], check=False)


def wait_for_path():
    """The path forwards once a ping from client to server answers."""
    for _ in range(200):
        ping = subprocess.run(["ip", "netns", "exec", f"{LAB}-client", "ping", "-c1", "-W1",
                               SERVER[0]], stdout=subprocess.DEVNULL)
        if ping.returncode == 0:
            return
    sys.exit("restart: the lab's path never carried a ping")


def one_run(tools, nodes, action, args, workdir):
    """Numbered packets through the lab while `action` hits one node."""
    out = os.path.join(workdir, f"restart-{action}.txt")
    receiver = netns("server", ["python3", "-c", RECEIVER, str(SERVER[1]), out],
                     stdout=subprocess.PIPE, text=True)
    receiver.stdout.readline()
    packets = int(args.rate * args.seconds)
    sender = netns("client", [tools["int-lab"], "send", "--to", f"{SERVER[0]}:{SERVER[1]}",
                              "--from", "10.10.0.1:40000", "--packets", str(packets),
                              "--rate", str(args.rate)], stdout=subprocess.DEVNULL)
    time.sleep(args.seconds / 3)
    node = nodes[args.node]
    hit = time.monotonic_ns()
    started, stopping = hit, 0.0
    if action == "reload":
        node.proc.send_signal(signal.SIGHUP)
    elif action != "none":
        stopping = node.stop(signal.SIGTERM if action == "restart" else signal.SIGKILL)
        if action == "crash":
            time.sleep(RESTART_SEC)
        started = time.monotonic_ns()
        node.start()
    sender.wait()
    time.sleep(0.5)  # what is still on its way through the lab
    receiver.send_signal(signal.SIGINT)
    receiver.wait()
    return {**summarise(action, out, packets, hit, started), "stop_s": round(stopping, 3)}


def summarise(action, out, packets, hit, started):
    got = [tuple(map(int, line.split())) for line in open(out)]
    seen = {i for i, _ in got}
    before = [t for _, t in got if t < hit]
    after = [t for _, t in got if t >= started]
    gap = round((min(after) - max(before)) / 1e9, 3) if before and after else None
    first = round((min(after) - started) / 1e9, 3) if after else None
    return {"action": action, "sent": packets, "lost": packets - len(seen),
            "outage_s": gap, "start_to_first_packet_s": first}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--node", choices=["src", "wan", "sink"], default="src")
    parser.add_argument("--rate", type=float, default=20000)
    parser.add_argument("--seconds", type=float, default=12)
    parser.add_argument("--workdir", default=os.path.join(ROOT, "target", "lab-restart"))
    args = parser.parse_args()
    tools = bins()
    workdir = os.path.join(args.workdir, LAB)
    lab_up(tools, args.workdir)
    nodes = {h: Node(tools["int-node"], h, workdir) for h in ("src", "wan", "sink")}
    try:
        for node in nodes.values():
            node.start()
        wait_for_path()
        for action in ("none", "reload", "restart", "crash"):
            print(json.dumps(one_run(tools, nodes, action, args, workdir)), flush=True)
    finally:
        for node in nodes.values():
            if node.proc and node.proc.poll() is None:
                node.stop(signal.SIGTERM)
        lab_down(tools, args.workdir)


if __name__ == "__main__":
    main()
