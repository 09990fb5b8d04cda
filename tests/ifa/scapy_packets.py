#!/usr/bin/env python3
"""scapy's own IFA test packets, as fixtures for int-core's tests/ifa_scapy.rs.

Builds the 52 packets of scapy pull request 4235's test/contrib/ifa.uts
(refs/pull/4235/head = 739d31492c7931d7d7c8838a82177df825413f4e) exactly as
that file builds them, with IFA's IP protocol set to 253 by bind_layers
(scapy's default is 131), and writes:

- scapy_packets.pcap: the packets as scapy built them, and one more (not
  the .uts's, marked so) whose hop sets every field;
- scapy_originals.pcap: each packet as scapy builds it without its IFA and
  IFAMdHdr layers (every length and checksum computed anew);
- scapy_packets.json: per packet, the IFA fields as scapy dissects them
  (IFA header, metadata header, every hop's fields), the offsets of each
  part, the L4 header's bytes, and what its UDP Length and TCP/UDP
  checksum cover (the metadata or not), measured.

scapy is not installed system-wide; run it from that commit's tree:

    git --git-dir=/path/to/scapy.git archive 739d3149 | tar -x -C /tmp/scapy-ifa
    PYTHONPATH=/tmp/scapy-ifa python3 tests/ifa/scapy_packets.py

With --protocol 131 it checks the .uts's own expected checksums instead
(they hold for 131 only) and writes nothing: proof that the packets are the
.uts's.
"""

import argparse
import json
import os
import struct
import sys

from scapy.all import Ether, IP, IPv6, TCP, UDP, GRE, Raw, raw, wrpcap, bind_layers
from scapy.layers.vxlan import VXLAN
from scapy.contrib.ifa import IFA, IFAMd, IFAMdHdr

HERE = os.path.dirname(os.path.abspath(__file__))


def packets():
    """The .uts's packets, group by group, in its order."""
    oeth = Ether(dst='b6:18:00:33:33:00', src='b6:18:00:22:22:00')
    oip4 = IP(src='172.1.1.0', dst='172.1.3.0', ttl=62)
    oip6 = IPv6(src='1000::1', dst='1000::3', hlim=62)
    ifa = IFA(ver=2, gns=15, flags=4, maxlen=255)
    tri_md = IFAMd(lns=1, device_id=2850, ttl=63, speed=4, dport=25, sport=24)
    src_md = IFAMd(lns=0, device_id=2577, ttl=63, speed=0, dport=25, sport=24)
    ifa_md = IFAMdHdr(request=238, action=192, hoplmt=126, mdstack=[tri_md, src_md])
    vxlan = VXLAN(vni=1000)
    ieth = Ether(dst='b6:18:00:33:33:00', src='b6:18:00:11:11:00')
    iip4 = IP(src='198.1.1.7', dst='198.1.2.8', ttl=63)
    iip6 = IPv6(src='1000::7', dst='1000::8', hlim=63)
    iudp = UDP(sport=1100, dport=2200)
    itcp = TCP(sport=3300, dport=4400)
    payl = Raw([0xff] * 64)

    groups = [('tcp_udp', [
        ieth / iip4 / ifa / iudp / ifa_md / payl,
        ieth / iip4 / ifa / itcp / ifa_md / payl,
        ieth / iip6 / ifa / iudp / ifa_md / payl,
        ieth / iip6 / ifa / itcp / ifa_md / payl,
    ])]
    for name, oip in [('ipv4_gre', oip4), ('ipv6_gre', oip6)]:
        groups.append((name, [
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip4 / payl,
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip4 / iudp / payl,
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip4 / itcp / payl,
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip6 / payl,
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip6 / iudp / payl,
            oeth / oip / ifa / GRE(proto=0x6558) / ifa_md / ieth / iip6 / itcp / payl,
            oeth / oip / ifa / GRE(proto=0x0800) / ifa_md / iip4 / payl,
            oeth / oip / ifa / GRE(proto=0x0800) / ifa_md / iip4 / iudp / payl,
            oeth / oip / ifa / GRE(proto=0x0800) / ifa_md / iip4 / itcp / payl,
            oeth / oip / ifa / GRE(proto=0x86dd) / ifa_md / iip6 / payl,
            oeth / oip / ifa / GRE(proto=0x86dd) / ifa_md / iip6 / iudp / payl,
            oeth / oip / ifa / GRE(proto=0x86dd) / ifa_md / iip6 / itcp / payl,
        ]))
    for name, oip in [('ipv4_vxlan', oip4), ('ipv6_vxlan', oip6)]:
        groups.append((name, [
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip4 / payl,
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip4 / iudp / payl,
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip4 / itcp / payl,
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip6 / payl,
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip6 / iudp / payl,
            oeth / oip / ifa / UDP(dport=4789) / ifa_md / vxlan / ieth / iip6 / itcp / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip4 / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip4 / iudp / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip4 / itcp / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip6 / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip6 / iudp / payl,
            oeth / oip / ifa / UDP(dport=4790) / ifa_md / vxlan / iip6 / itcp / payl,
        ]))
    return groups


def every_field():
    """Not the .uts's: one packet whose hop sets every IFAMd field, so that
    each field's bits are checked (the .uts's hops leave most at 0)."""
    hop = IFAMd(lns=1, device_id=0xabcde, ttl=64, speed=6, ecn=3, qid=42, rx_sec=0xf1234,
                dport=0x0102, sport=0x0304, rx_nsec=0x05060708, latency=0x090a0b0c,
                qbytes=0x11111111, rsvd0=0x2222, qcells=0x2222, rsvd1=0x33333333)
    md = IFAMdHdr(request=1, action=0x80, hoplmt=5, mdstack=[hop])
    eth = Ether(dst='02:00:00:00:00:02', src='02:00:00:00:00:01')
    ifa = IFA(ver=2, gns=15, flags=2, maxlen=8)
    return [('every_field', [eth / IP(src='10.0.0.1', dst='10.0.0.2') / ifa / UDP(sport=1, dport=4789)
                             / md / VXLAN(vni=1) / eth / Raw(b'x' * 8)])]


# The .uts's expected values (with scapy's protocol 131), in its order.
UTS_CHECKS = {
    'tcp_udp': [
        {'UDP.chksum': 0x7219, 'IP.chksum': 0xebc4},
        {'TCP.chksum': 0xf171, 'IP.chksum': 0xebb8},
        {'UDP.chksum': 0xe11c},
        {'TCP.chksum': 0x6075},
    ],
    'ipv4_gre': [{'IP.chksum': v} for v in [
        0x1fb6, 0x1fae, 0x1fa2, 0x1fa2, 0x1f9a, 0x1f8e,
        0x1fc4, 0x1fbc, 0x1fb0, 0x1fb0, 0x1fa8, 0x1f9c]],
    'ipv6_gre': [{}] * 12,
    'ipv4_vxlan': [{'IP.chksum': v} for v in [
        0x1faa, 0x1fa2, 0x1f96, 0x1f96, 0x1f8e, 0x1f82,
        0x1fb8, 0x1fb0, 0x1fa4, 0x1fa4, 0x1f9c, 0x1f90]],
    'ipv6_vxlan': [{}] * 12,
}


def without_ifa(pkt):
    """The packet as it was before IFA: the IFA and IFAMdHdr layers taken
    out, every length and checksum scapy computes computed anew. What a
    terminator restores."""
    pkt = pkt.copy()
    ifa = pkt[IFA]
    md = pkt[IFAMdHdr]
    ip, l4, after = ifa.underlayer, ifa.payload, md.payload
    # Under IFA the L4 header takes no field from the layer after it; the
    # original must not either (scapy's VXLAN would set UDP's sport).
    for field in l4.fields_desc:
        if field.name not in ('len', 'chksum'):
            l4.setfieldval(field.name, l4.getfieldval(field.name))
    md.underlayer.remove_payload()
    ip.remove_payload()
    l4.add_payload(after)
    ip.add_payload(l4)
    return pkt


def check_uts(groups):
    """The .uts's own asserts: the summary survives dissection, curlen is
    16 and each expected checksum holds."""
    count = 0
    for name, pkts in groups:
        for pkt, chk in zip(pkts, UTS_CHECKS[name]):
            newpkt = Ether(raw(pkt))
            assert newpkt.summary() == pkt.summary(), name
            for key, exp_val in dict(chk, **{'IFAMdHdr.curlen': 16}).items():
                layer, field = key.split('.')
                value = newpkt[layer].fields[field]
                assert value == exp_val, f'{name}: {key} 0x{value:x} != 0x{exp_val:x}'
            count += 1
    return count


def ones_sum(data):
    if len(data) % 2:
        data += b'\0'
    total = sum(struct.unpack(f'!{len(data) // 2}H', data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return total


def l4_checksum(ip, proto, segment):
    """RFC 768/793 checksum of `segment` (its checksum field zero)."""
    if isinstance(ip, IP):
        pseudo = raw(ip)[12:20] + struct.pack('!BBH', 0, proto, len(segment))
    else:
        pseudo = raw(ip)[8:40] + struct.pack('!I3xB', len(segment), proto)
    value = 0xffff - ones_sum(pseudo + segment)
    return 0xffff if value == 0 and proto == 17 else value


def coverage(pkt, data, off):
    """What the outer UDP Length and TCP/UDP checksum cover: the two
    candidates (with the metadata header and stack, without them) and the
    value the packet carries."""
    ip = pkt[IP] if IP in pkt and pkt.getlayer(IP) is pkt.payload else pkt[IPv6]
    l4 = data[off['l4']:off['md']]
    rest_with = data[off['md']:off['ip_end']]
    rest_without = data[off['payload']:off['ip_end']]
    kind = off['l4_kind']
    if kind == 'gre':
        return None
    field = 6 if kind == 'udp' else 16
    carried = struct.unpack('!H', l4[field:field + 2])[0]
    out = {'carried_checksum': carried}
    cands = {}
    for name, rest in [('covering', rest_with), ('not_covering', rest_without)]:
        hdr = bytearray(l4)
        hdr[field:field + 2] = b'\0\0'
        if kind == 'udp':
            hdr[4:6] = struct.pack('!H', len(l4) + len(rest))
            cands[name + '_length'] = len(l4) + len(rest)
        proto = 17 if kind == 'udp' else 6
        cands[name + '_checksum'] = l4_checksum(ip, proto, bytes(hdr) + rest)
    out.update(cands)
    if kind == 'udp':
        out['carried_length'] = struct.unpack('!H', l4[4:6])[0]
    return out


def hop_fields(md):
    return {f: md.getfieldval(f) for f in [
        'lns', 'device_id', 'ttl', 'speed', 'ecn', 'qid', 'rx_sec', 'dport', 'sport',
        'rx_nsec', 'latency', 'qbytes', 'rsvd0', 'qcells', 'rsvd1']}


def describe(name, index, pkt):
    """Every IFA field scapy dissects, and where each part lies."""
    data = raw(pkt)
    dis = Ether(data)
    ifa = dis[IFA]
    md = dis[IFAMdHdr]
    l4 = ifa.payload
    ip = ifa.underlayer
    off = {
        'ip': len(data) - len(ip),
        'ifa': len(data) - len(ifa),
        'l4': len(data) - len(l4),
        'md': len(data) - len(md),
        'stack': len(data) - len(md) + 4,
        'payload': len(data) - len(md) + 4 + 4 * md.curlen,
        'ip_end': len(data),
        'l4_kind': {TCP: 'tcp', UDP: 'udp', GRE: 'gre'}[type(l4)],
    }
    assert off['payload'] == len(data) - len(md.payload), name
    return {
        'group': name,
        'uts': name != 'every_field',
        'index': index,
        'summary': dis.summary(),
        'ip_version': 4 if isinstance(ip, IP) else 6,
        'ip_protocol': ip.proto if isinstance(ip, IP) else ip.nh,
        'ifa': {f: ifa.getfieldval(f) if f != 'flags' else int(ifa.flags)
                for f in ['ver', 'gns', 'nexthdr', 'flags', 'maxlen']},
        'md': {'request': md.request, 'action': int(md.action), 'hoplmt': md.hoplmt,
               'curlen': md.curlen},
        'hops': [hop_fields(h) for h in md.mdstack],
        'after_stack': type(md.payload).__name__,
        'offsets': off,
        'l4_bytes': data[off['l4']:off['md']].hex(),
        'l4_coverage': coverage(dis, data, off),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--protocol', type=int, default=253)
    parser.add_argument('--out', default=HERE)
    args = parser.parse_args()
    bind_layers(IP, IFA, proto=args.protocol)
    bind_layers(IPv6, IFA, nh=args.protocol)
    groups = packets()
    if args.protocol == 131:
        print(f'{check_uts(groups)} packets pass the .uts checks')
        return 0
    flat = [(name, i, p) for name, pkts in groups + every_field() for i, p in enumerate(pkts)]
    records = [describe(name, i, p) for name, i, p in flat]
    assert all(r['ip_protocol'] == args.protocol for r in records)
    originals = [without_ifa(p) for _, _, p in flat]
    for i, (_, _, p) in enumerate(flat):
        p.time = originals[i].time = i  # the same file from every run
    wrpcap(os.path.join(args.out, 'scapy_packets.pcap'), [p for _, _, p in flat])
    for original in originals:
        assert IFA not in Ether(raw(original)), original.summary()
    wrpcap(os.path.join(args.out, 'scapy_originals.pcap'), originals)
    with open(os.path.join(args.out, 'scapy_packets.json'), 'w') as out:
        json.dump({'scapy_commit': '739d31492c7931d7d7c8838a82177df825413f4e',
                   'ip_protocol': args.protocol, 'packets': records}, out, indent=1)
        out.write('\n')
    print(f'{len(records)} packets written')
    return 0


if __name__ == '__main__':
    sys.exit(main())
