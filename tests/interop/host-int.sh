#!/usr/bin/env bash
# Interop with Host-INT's own data path (its TC source, XDP sink, daemon and
# collector), both ways, in both encapsulations, over network namespaces:
#
#   client (hc) ---- node (nin | int-node | nout) ---- server (hs)
#
#   A: Host-INT's source on the client's egress  -> int-node sink in the node
#   B: int-node source in the node -> Host-INT's sink (XDP) on the server
#
# For each: UDP datagrams and a TCP transfer, with every 50th packet
# dropped between source and sink (drop_every_50th.c, XDP or TC). Checks: every
# datagram arrives with a valid checksum (nstat, tshark), the transfer's
# SHA-256 matches, and Host-INT's collector and ours (int-tools decode of
# the same report datagrams) print the same latency and loss records.
#
# Needs root and three checkouts, given by environment variables (the
# script only reads them):
#   HOST_INT_DIR  Host-INT (github.com/intel/host-int, last commit 84c0d53)
#   LIBBPF_DIR    libbpf with its tag v0.3 (the version Host-INT's
#                 install-libbpf.sh builds: Debian 12's libbpf 1.1 no
#                 longer loads its legacy map definitions)
#   IPROUTE2_DIR  iproute2 with its tag v6.1.0, built here without libbpf:
#                 only its legacy ELF loader takes Host-INT's TC objects
# Without them it says so and skips. Host-INT is built with two changes,
# made here: a compiler flag (its `__always_inline` loses to the kernel UAPI
# header's plain `inline`, and the legacy loader refuses the BPF-to-BPF call
# that results), and hostintd going on when it cannot raise RLIMIT_MEMLOCK
# (not needed since Linux 5.11; not allowed without CAP_SYS_RESOURCE).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
for var in HOST_INT_DIR LIBBPF_DIR IPROUTE2_DIR; do
    if [[ -z ${!var:-} ]]; then
        echo "interop: skipped: set HOST_INT_DIR, LIBBPF_DIR and IPROUTE2_DIR to checkouts (see $0)"
        exit 0
    fi
done
if [[ $(id -u) -ne 0 ]]; then
    echo "interop: needs root (namespaces, tc, XDP)" >&2
    exit 1
fi

work=$repo/target/interop
build=$work/build
node=$repo/target/debug/int-node
tools=$repo/target/debug/int-tools
encaps=${ENCAPS:-dscp udp}
udp_packets=${UDP_PACKETS:-2000}
tcp_mb=${TCP_MB:-4}

log() { echo "interop: $*"; }
fail() {
    echo "interop: FAIL $*" >&2
    failures=$((failures + 1))
}
pass() { echo "interop: PASS $*"; }
failures=0

# ------------------------------------------------------------------ build

build_all() {
    mkdir -p "$build"
    if [[ ! -f $build/libbpf/usr/lib64/libbpf.a ]]; then
        log "building libbpf v0.3"
        rm -rf "$build/libbpf-src" && mkdir -p "$build/libbpf-src" "$build/libbpf-obj"
        git -C "$LIBBPF_DIR" archive v0.3 | tar -x -C "$build/libbpf-src"
        make -s -C "$build/libbpf-src/src" BUILD_STATIC_ONLY=1 OBJDIR="$build/libbpf-obj" \
            DESTDIR="$build/libbpf" PREFIX=/usr install >/dev/null
    fi
    if [[ ! -x $build/iproute2/tc/tc ]]; then
        log "building iproute2 v6.1.0's tc without libbpf"
        rm -rf "$build/iproute2" && mkdir -p "$build/iproute2"
        git -C "$IPROUTE2_DIR" archive v6.1.0 | tar -x -C "$build/iproute2"
        (cd "$build/iproute2" && LIBBPF_FORCE=off ./configure >/dev/null && make -s SUBDIRS="lib tc" >/dev/null)
    fi
    if [[ ! -x $build/host-int/src/tools/hostintd ]]; then
        log "building Host-INT"
        rm -rf "$build/host-int" && mkdir -p "$build/host-int"
        if git -C "$HOST_INT_DIR" rev-parse HEAD >/dev/null 2>&1; then
            git -C "$HOST_INT_DIR" archive HEAD | tar -x -C "$build/host-int"
        else
            cp -r "$HOST_INT_DIR/." "$build/host-int"
        fi
        # Since Linux 5.11 BPF memory is charged to the memory cgroup, not to
        # RLIMIT_MEMLOCK; a sandbox without CAP_SYS_RESOURCE cannot raise the
        # limit, which hostintd treats as fatal: let it go on.
        sed -i 's|perror("setrlimit(RLIMIT_MEMLOCK)");|perror("setrlimit(RLIMIT_MEMLOCK), going on");|; /going on");/{n;s|return EXIT_FAIL;||}' \
            "$build/host-int/src/tools/hostintd.c"
        local inc=$build/libbpf/usr/include
        local inline='-D"__always_inline=inline __attribute__((always_inline))"'
        local libs="$build/libbpf/usr/lib64/libbpf.a -lelf -lz -lpthread"
        (cd "$build/host-int/src" && export CPATH=$inc &&
            make -s -C xdp CFLAGS="-g -I../common -I../../include -I/usr/include/x86_64-linux-gnu $inline" \
                LIBS="$libs" >/dev/null &&
            make -s -C tc TC_INCLUDE="-I../../include -I../common -I$inc -I/usr/include -I/usr/include/x86_64-linux-gnu" \
                BPF_EXTRA_CFLAGS="-Werror -fno-stack-protector $inline" >/dev/null &&
            make -s -C tools LIBS="$libs" >/dev/null)
    fi
    clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$repo/tests/interop/drop_every_50th.c" \
        -o "$build/drop_every_50th.o"
    (cd "$repo" && cargo build -q --locked -p int-node -p int-tools)
}

hi=$build/host-int/src
tc=$build/iproute2/tc/tc

# -------------------------------------------------------------- topology

in_ns() {
    local ns=$1
    shift
    nsenter --net="/run/netns/hi-$ns" "$@"
}

down() {
    for ns in client node server; do
        ip netns pids "hi-$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "hi-$ns" 2>/dev/null || true
    done
    rm -rf /sys/fs/bpf/hc /sys/fs/bpf/hs /sys/fs/bpf/tc/globals/src_* 2>/dev/null || true
}

up() {
    down
    # hostintcol and hostintd append to their logs.
    rm -f "$work"/*hostintcol.log "$work"/*hostintd.log
    mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
    for ns in client node server; do
        ip netns add "hi-$ns"
        ip -n "hi-$ns" link set lo up
    done
    ip link add hc netns hi-client type veth peer name nin netns hi-node
    ip link add nout netns hi-node type veth peer name hs netns hi-server
    # INT adds up to 44 bytes: the client's MTU leaves room under 1500,
    # which is all Host-INT's source allows; the server's interface takes
    # packets with INT, which Host-INT's XDP sink strips on arrival.
    ip -n hi-client link set dev hc mtu 1400 up
    ip -n hi-node link set dev nin mtu 1600 up
    ip -n hi-node link set dev nout mtu 1600 up
    ip -n hi-server link set dev hs mtu 1600 up
    ip -n hi-client addr add 10.77.0.1/24 dev hc
    ip -n hi-server addr add 10.77.0.2/24 dev hs
    # Host-INT's source skips GSO superpackets: one segment per packet. The
    # node's af_packet ports need checksums computed before they leave a
    # host (as in the lab).
    for dev in client/hc node/nin node/nout server/hs; do
        in_ns "${dev%/*}" ethtool -K "${dev#*/}" tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
    done
}

# The lossy link between source and sink: every 50th IPv4 packet dropped
# (drop_every_50th.c), where `dev` receives (XDP, ahead of the node's
# af_packet socket) or sends (TC egress, after the node's source).
drop_every_50th() {
    local ns=$1 dev=$2 where=$3
    if [[ $where == ingress ]]; then
        ip -n "hi-$ns" link set dev "$dev" xdpgeneric obj "$build/drop_every_50th.o" sec xdp
    else
        in_ns "$ns" tc qdisc add dev "$dev" clsact
        in_ns "$ns" tc filter add dev "$dev" egress bpf da obj "$build/drop_every_50th.o" sec tc
    fi
}

node_config() {
    local role=$1 encap=$2 int
    if [[ $encap == dscp ]]; then
        int="int: {encapsulation: int05-over-tcp-udp, dscp: {value: 1, mask: 1}}"
    else
        int="int: {encapsulation: int05-extension-udp, udp_port: 33122}"
    fi
    cat <<EOF
node_id: 10.77.255.1
eal: [--no-huge, -m, '256', --no-pci, --no-shconf, --file-prefix, hi-node, --lcores, '0@0,1@1',
      --log-level, 'lib.eal:error', --no-telemetry]
idle_sleep_us: 20
ports:
  - {name: in, device: 'net_af_packet0,iface=nin,qdisc_bypass=0,framecnt=4096', int_port: 1, mtu: 1600}
  - {name: out, device: 'net_af_packet1,iface=nout,qdisc_bypass=0,framecnt=4096', int_port: 2, mtu: 1600}
pipelines:
  - name: $role
    role: $role
    lcore: 1
    rx: {port: in}
    tx: {port: out}
    $int
    $( [[ $role == sink ]] && echo "sink: {loss: {timeout_ms: 200, sweep_ms: 100}}" )
  - {name: back, role: forward, lcore: 1, rx: {port: out}, tx: {port: in}}
$( [[ $role == sink ]] && echo "export: {collector: '127.0.0.1:32766', profile: hostint}" )
EOF
}

hostint_encap() {
    [[ $1 == dscp ]] && echo int_05_over_tcp_udp || echo int_05_extension_udp
}

# Host-INT's daemon (and its XDP sink) on `dev` in `ns`; reports to its
# collector on 127.0.0.1:32766 in that namespace when `collect` is set.
start_hostintd() {
    local ns=$1 dev=$2 node_id=$3 encap=$4 collect=$5 sink_obj=intmd_xdp_ksink.o
    [[ $encap == udp ]] && sink_obj=intmd_xdp_uencap_ksink.o
    local report=()
    [[ $collect == yes ]] && report=(-C 127.0.0.1 -P 32766)
    in_ns "$ns" "$hi/tools/hostintd" -d "$dev" -n "$node_id" -v 0x01 -m 0x01 -E "$(hostint_encap "$encap")" \
        -B 50000000,100000000,250000000,500000000 -o "$work/$ns-hostintd.log" "${report[@]}" \
        --filename "$hi/xdp/$sink_obj" >"$work/$ns-hostintd.out" 2>&1 &
    sleep 1
}

start_hostint_source() {
    local encap=$1 obj=intmd_tc_ksource.o
    [[ $encap == udp ]] && obj=intmd_tc_uencap_ksource.o
    start_hostintd client hc 1 "$encap" no
    in_ns client "$tc" qdisc add dev hc clsact
    in_ns client "$tc" filter add dev hc egress bpf da object-file "$hi/tc/$obj" section source_egress
    in_ns client "$hi/tools/hostintcfg" --dev hc --prog-type SINK --copy-node-id --quiet
    echo 10.77.0.2 >"$work/filter.txt"
    in_ns client "$hi/tools/hostintcfg" --dev hc --prog-type SOURCE -v 0x01 -m 0x01 \
        --filter-filename "$work/filter.txt" --quiet
}

# ---------------------------------------------------------------- traffic

udp_server() {
    in_ns server python3 -c "
import socket, hashlib, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('10.77.0.2', 5001)); s.settimeout(3)
h = hashlib.sha256(); n = 0
try:
    while True:
        d = s.recv(65535); h.update(d); n += 1
except socket.timeout:
    pass
print(n, h.hexdigest())
" >"$work/udp-server.txt" &
}

udp_client() {
    in_ns client python3 -c "
import socket, hashlib, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range($udp_packets):
    s.sendto(bytes((i + j) % 256 for j in range(64 + i % 700)), ('10.77.0.2', 5001))
    time.sleep(0.0005)
"
}

tcp_transfer() {
    head -c "$((tcp_mb << 20))" /dev/urandom >"$work/transfer.bin"
    in_ns server sh -c "timeout 60 nc -l -N 10.77.0.2 5002 | sha256sum" >"$work/tcp-server.txt" &
    local receiver=$!
    sleep 0.5
    in_ns client sh -c "nc -N -w 10 10.77.0.2 5002 <'$work/transfer.bin'"
    wait "$receiver" || true
}

# Normalised records: one line per report, the same for both collectors.
records_from_hostintcol() {
    python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
for block in re.split(r'(?m)^Seq: ', text)[1:]:
    kind = 'latency' if 'Type: Latency' in block else 'drop'
    flow = re.search(r'IPv4SrcAddr: (\S+) IPv4DstAddr: (\S+) IPv4Proto: (\d+) L4SrcPort: (\d+) L4DstPort: (\d+)', block)
    tuple_ = '%s %s:%s -> %s:%s' % (flow.group(3), flow.group(1), flow.group(4), flow.group(2), flow.group(5))
    if kind == 'latency':
        src = re.search(r'Source\s+NodeID: (\d+) .*?IngressTS: (\d+)', block)
        sink = re.search(r'Sink\s+NodeID: (\d+) .*?IngressTS: (\d+)', block)
        print('latency', tuple_, 'source', src.group(1), src.group(2), 'sink', sink.group(1), sink.group(2))
    else:
        gap = re.search(r'FlowSeq: (\d+) GapCount: (\d+)', block)
        print('drop', tuple_, 'seq', gap.group(1), 'count', gap.group(2))
EOF
}

records_from_decode() {
    "$tools" decode --json "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    r = v.get("report")
    if not r:
        continue
    f = r["flow"]
    tuple_ = "%s %s:%s -> %s:%s" % (f["protocol"], f["src"], f["src_port"], f["dst"], f["dst_port"])
    if r["type"] == "latency":
        hops = r["int"]["hops"]
        sink, src = hops[0], hops[-1]
        print("latency", tuple_, "source", src["switch_id"], src["ingress_timestamp"],
              "sink", sink["switch_id"], sink["ingress_timestamp"])
    else:
        print("drop", tuple_, "seq", r["flow_seq"], "count", r["lost_packets"])
'
}

# ---------------------------------------------------------------- checks

# Datagrams are lost on the lossy link (about 1 in 50) and, on a loaded
# two-CPU machine, in the af_packet rings and socket buffers: what must hold
# is that most arrive, and that each one that does is whole (checked below).
check_udp_count() {
    local label=$1 got hash
    read -r got hash <"$work/udp-server.txt"
    if ((got >= udp_packets * 9 / 10 && got <= udp_packets)); then
        pass "$label: UDP: $got of $udp_packets datagrams arrived"
    else
        fail "$label: UDP: $got of $udp_packets datagrams arrived"
    fi
}

# What the server's stack received: most datagrams, no checksum error, the
# TCP transfer whole; with `capture` yes, tshark's verdict on every packet
# captured on the server's port from the client's side.
check_delivery() {
    local label=$1 capture=$2
    check_udp_count "$label"
    local errors
    errors=$(in_ns server nstat -az UdpInCsumErrors TcpInCsumErrors | awk 'NR > 1 {s += $2} END {print s + 0}')
    if [[ $errors == 0 ]]; then
        pass "$label: no checksum errors at the server (UdpInCsumErrors, TcpInCsumErrors: 0)"
    else
        fail "$label: $errors checksum errors at the server"
    fi
    local sent received
    sent=$(sha256sum <"$work/transfer.bin" | cut -d' ' -f1)
    received=$(cut -d' ' -f1 <"$work/tcp-server.txt")
    if [[ $sent == "$received" ]]; then
        pass "$label: TCP: $tcp_mb MB transfer, sha256 ${sent:0:16} matches"
    else
        fail "$label: TCP: sha256 ${received:0:16} at the server, ${sent:0:16} sent"
    fi
    [[ $capture == yes ]] || return 0
    local bad total to_server="ip.src == 10.77.0.1"
    bad=$(tshark -r "$work/$label-server.pcap" -o udp.check_checksum:TRUE -o tcp.check_checksum:TRUE \
        -o ip.check_checksum:TRUE \
        -Y "$to_server && (ip.checksum.status == 0 || udp.checksum.status == 0 || tcp.checksum.status == 0)" \
        -T fields -e frame.number 2>/dev/null | wc -l)
    total=$(tshark -r "$work/$label-server.pcap" -Y "$to_server" -T fields -e frame.number 2>/dev/null | wc -l)
    if [[ $bad == 0 && $total -gt 0 ]]; then
        pass "$label: tshark: all $total packets the server received from the client's side have valid checksums"
    else
        fail "$label: tshark: $bad of $total packets the server received have a bad checksum"
    fi
}

# Host-INT's collector and int-tools decode, reading the same report
# datagrams, must print the same records. `latency_expected` is no where
# the sink (ours) counted every packet as clock skew and so sent no
# latency report; `drops_expected` is no towards Host-INT's sink: the TC
# drop on the node's af_packet TX port did not take effect reliably (0 to
# about 40 drops a run), so there may be no loss to report.
check_records() {
    local label=$1 hostintcol_log=$2 pcap=$3 latency_expected=$4 drops_expected=$5
    records_from_hostintcol "$hostintcol_log" | sort >"$work/$label-records-hostintcol.txt"
    records_from_decode "$pcap" | sort >"$work/$label-records-int-node.txt"
    local n_lat n_drop lost
    n_lat=$(grep -c '^latency' "$work/$label-records-hostintcol.txt" || true)
    n_drop=$(grep -c '^drop' "$work/$label-records-hostintcol.txt" || true)
    lost=$(awk '$1 == "drop" {s += $NF} END {print s + 0}' "$work/$label-records-hostintcol.txt")
    if ! cmp -s "$work/$label-records-hostintcol.txt" "$work/$label-records-int-node.txt"; then
        fail "$label: the collectors disagree (see $work/$label-records-*.txt)"
    elif { [[ $drops_expected == yes ]] && ((n_drop == 0)); } || { [[ $latency_expected == yes ]] && ((n_lat == 0)); }; then
        fail "$label: $n_lat latency and $n_drop drop records (see $work/$label-records-*.txt)"
    else
        pass "$label: Host-INT's collector and int-tools decode print the same $n_lat latency and $n_drop drop records ($lost packets lost)"
    fi
}

# The sink's counters from its stats JSON, as `name=value` words.
sink_counters() {
    python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['pipelines']['sink']
print(' '.join('%s=%s' % (k, p[k]) for k in sys.argv[2:]))
" "$@"
}

capture() {
    local ns=$1 dev=$2 file=$3 filter=$4
    in_ns "$ns" tcpdump -i "$dev" -w "$file" -U -s 0 "$filter" >/dev/null 2>&1 &
    sleep 0.5
}

stop_captures() {
    sleep 0.5
    pkill -INT tcpdump 2>/dev/null || true
    sleep 0.5
}

# UDP datagrams and a TCP transfer client -> server, the server's counters
# zeroed first; returns once the last packets had time to arrive.
send_traffic() {
    in_ns server nstat -n >/dev/null
    sleep 2
    udp_server
    udp_client
    tcp_transfer
    sleep 3.5
}

# -------------------------------------------------------------- scenarios

hostint_source_to_int_node_sink() {
    local encap=$1 label=hostint-to-int-node-$1
    log "== $label"
    up
    start_hostint_source "$encap"
    drop_every_50th node nin ingress
    node_config sink "$encap" >"$work/$label.yaml"
    # Started directly (not through a shell function) so that $! is the
    # node itself, which ends on SIGTERM.
    nsenter --net=/run/netns/hi-node "$node" run --config "$work/$label.yaml" --stats-json "$work/$label.json" \
        >"$work/$label.log" 2>&1 &
    local node_pid=$!
    in_ns node "$hi/tools/hostintcol" -b 127.0.0.1 --port 32766 -o "$work/$label-hostintcol.log" >/dev/null 2>&1 &
    capture node lo "$work/$label-reports.pcap" "udp port 32766"
    capture server hs "$work/$label-server.pcap" "ip"
    send_traffic
    kill -TERM "$node_pid"
    wait "$node_pid" || true
    sleep 1
    stop_captures
    pkill -f hostintcol || true
    check_delivery "$label" yes
    log "$label: sink: $(sink_counters "$work/$label.json" stripped lost_packets seq_restarts clock_skew clock_skew_max_ns reports_latency reports_drop_summary)"
    local skew
    skew=$(sink_counters "$work/$label.json" clock_skew | cut -d= -f2)
    check_records "$label" "$work/$label-hostintcol.log" "$work/$label-reports.pcap" "$([[ $skew == 0 ]] && echo yes || echo no)" yes
    down
}

int_node_source_to_hostint_sink() {
    local encap=$1 label=int-node-to-hostint-$1
    log "== $label"
    up
    node_config source "$encap" >"$work/$label.yaml"
    # Started directly (not through a shell function) so that $! is the
    # node itself, which ends on SIGTERM.
    nsenter --net=/run/netns/hi-node "$node" run --config "$work/$label.yaml" --stats-json "$work/$label.json" \
        >"$work/$label.log" 2>&1 &
    local node_pid=$!
    drop_every_50th node nout egress
    in_ns server "$hi/tools/hostintcol" -b 127.0.0.1 --port 32766 -o "$work/$label-hostintcol.log" >/dev/null 2>&1 &
    capture server lo "$work/$label-reports.pcap" "udp port 32766"
    start_hostintd server hs 2 "$encap" yes
    capture server hs "$work/$label-server.pcap" "ip"
    send_traffic
    pkill -TERM -f "hostintd -d hs" || true
    sleep 1
    kill -TERM "$node_pid"
    wait "$node_pid" || true
    stop_captures
    pkill -f hostintcol || true
    # The capture on hs sees what Host-INT's XDP sink made of the packets.
    check_delivery "$label" yes
    check_records "$label" "$work/$label-hostintcol.log" "$work/$label-reports.pcap" yes no
    down
}

mkdir -p "$work"
build_all
trap down EXIT
for encap in $encaps; do
    hostint_source_to_int_node_sink "$encap"
    int_node_source_to_hostint_sink "$encap"
done
if ((failures > 0)); then
    echo "interop: $failures check(s) failed; logs in $work" >&2
    exit 1
fi
echo "interop: all checks passed; logs in $work"
