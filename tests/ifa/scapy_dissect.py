#!/usr/bin/env python3
"""Dissects a pcap of IFA 2.0 packets with scapy's own IFA layers and prints,
per packet, what scapy read, as JSON (tests/ifa_node.rs,
`scapy_dissects_the_initiators_and_a_transits_ifa`).

scapy's IFA layers are pull request 4235's (secdev/scapy, refs/pull/4235/head
= 739d31492c7931d7d7c8838a82177df825413f4e), not in a scapy release:

    git --git-dir=/path/to/scapy.git archive 739d3149 | tar -x -C /tmp/scapy-ifa
    pip install --no-deps /tmp/scapy-ifa

(or PYTHONPATH=/tmp/scapy-ifa). Their IP protocol is 131; --protocol binds
IFA to another (253 by default, the fabrics' and int-node's), after IPv4,
IPv6 and IPv6's extension headers.

Per packet: `ip` (the protocol or last Next Header that announces IFA,
IPv4's length and whether its header checksum verifies, IPv6's payload
length), `ifa` (IFA header), `md` (metadata header), `hops` (every IFAMd
field, newest first, as scapy names them), `l4` (the L4 header's fields
and bytes as scapy cut them, and the checksum and UDP Length scapy's
builder computes for the packet: its rule covers the metadata),
`after_stack` (hex of the bytes scapy
dissected after the metadata stack) and `layers`.
"""

import argparse
import json
import sys

from scapy.all import IP, IPv6, TCP, UDP, bind_layers, raw, rdpcap, checksum
from scapy.layers.inet6 import IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting
from scapy.contrib.ifa import IFA, IFAMd, IFAMdHdr

HOP_FIELDS = [f.name for f in IFAMd.fields_desc]


def header_bytes(layer):
    """A layer's own bytes, without its payload."""
    whole = raw(layer)
    return whole[: len(whole) - len(raw(layer.payload))]


def read_hop(hop):
    """A hop's every field; what scapy could not read as one (a stack cut
    short by a UDP Length that leaves it out) as its bytes."""
    try:
        return {name: int(hop.getfieldval(name)) for name in HOP_FIELDS}
    except AttributeError:
        return {"unread": raw(hop).hex()}


def dissect(packet, protocol):
    out = {"layers": [layer.__name__ for layer in packet.layers()]}
    if IFA not in packet:
        return out
    if IP in packet:
        ip = packet[IP]
        ihl = ip.ihl * 4
        out["ip"] = {
            "protocol": ip.proto,
            "length": ip.len,
            "checksum_ok": checksum(raw(ip)[:ihl]) == 0,
        }
    else:
        announcer = packet[IFA].underlayer
        out["ip"] = {"protocol": announcer.nh, "payload_length": packet[IPv6].plen}
    ifa = packet[IFA]
    out["ifa"] = {
        "ver": ifa.ver,
        "gns": ifa.gns,
        "nexthdr": ifa.nexthdr,
        "flags": int(ifa.flags),
        "flag_names": str(ifa.flags),
        "maxlen": ifa.maxlen,
    }
    if IFAMdHdr not in packet:
        # A UDP Length that leaves the metadata out entirely (the draft's
        # rule on an empty datagram): scapy reads no metadata header.
        return out
    md = packet[IFAMdHdr]
    out["md"] = {
        "request": md.request,
        "action": int(md.action),
        "hoplmt": md.hoplmt,
        "curlen": md.curlen,
    }
    out["hops"] = [read_hop(hop) for hop in md.mdstack]
    l4 = md.underlayer
    fields = {"name": type(l4).__name__, "sport": l4.sport, "dport": l4.dport, "chksum": l4.chksum}
    if isinstance(l4, UDP):
        fields["len"] = l4.len
    fields["bytes"] = header_bytes(l4).hex()
    # What scapy's own builder writes for this packet's L4 checksum (and
    # UDP Length): its rule covers the metadata (int-node's `l4: cover`).
    # Built anew as its test packets are: with the IP length unset, since
    # scapy's in4_chksum takes the pseudo-header's length from a set IP
    # length (which under IFA counts the IFA header's 4 bytes) and from the
    # segment only when it is unset.
    clone = packet.copy()
    del clone[type(l4)].chksum
    if IP in clone:
        del clone[IP].len
        del clone[IP].chksum
    if isinstance(l4, UDP):
        del clone[UDP].len
    rebuilt = type(packet)(raw(clone))[type(l4)]
    fields["scapy_chksum"] = rebuilt.chksum
    if isinstance(l4, UDP):
        fields["scapy_len"] = rebuilt.len
    out["l4"] = fields
    # The bytes after the stack, Padding included (scapy cuts a UDP payload
    # at the UDP Length, which under the draft's rule leaves out the
    # metadata's 8 + 32n bytes: the rest is Padding).
    out["after_stack"] = raw(md.payload).hex()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pcap")
    parser.add_argument("--protocol", type=int, default=253)
    args = parser.parse_args()
    bind_layers(IP, IFA, proto=args.protocol)
    for layer in (IPv6, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting):
        bind_layers(layer, IFA, nh=args.protocol)
    json.dump([dissect(p, args.protocol) for p in rdpcap(args.pcap)], sys.stdout)


if __name__ == "__main__":
    main()
