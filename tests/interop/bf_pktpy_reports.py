"""For each individual report in a pcap of Telemetry Report 2.0 datagrams,
builds with bf-pktpy's DtelReportV2Hdr the group header and that report's
header and metadata from the field values int-tools decode reads, and
compares bf-pktpy's bytes with the datagram's. DtelReportV2Hdr computes MD
Length from RepMdBits alone; a report with domain specific metadata counts
it too (TR 2.0 section 3.3), so there the field is given, and said.

Usage: bf_pktpy_reports.py REPORTS.pcap INT-TOOLS"""
import json
import struct
import subprocess
import sys
import warnings

import bf_pktpy.packets as packets

warnings.simplefilter("ignore")


def udp_payloads(path):
    data = open(path, "rb").read()
    at, out = 24, []
    while at + 16 <= len(data):
        length = struct.unpack("<I", data[at + 8:at + 12])[0]
        frame = data[at + 16:at + 16 + length]
        at += 16 + length
        ihl = (frame[14] & 0x0F) * 4
        out.append(frame[14 + ihl + 8:])
    return out


def header_fields(group, report):
    int_ = report["int"]
    metadata, bits = int_["metadata"], int(int_["rep_md_bits"], 16)
    fields = dict(ver=2, hw_id=group["hw_id"], sequence_number=group["report_seq"], switch_id=group["report_node"],
                  rep_type=report["rep_type"], in_type=report["in_type"], report_length=report["report_len_words"],
                  dropped=int(report["d"]), congested_queue=int(report["q"]), path_tracking_flow=int(report["f"]),
                  rep_md_bits=bits, domain_specific_id=int_["domain_id"], ds_md_bits=int_["ds_md_bits"],
                  ds_md_status=int_["ds_md_status"])
    if int_["ds_metadata_bytes"]:
        fields["md_length"] = report["md_len_words"]
    for bit, names in [(0x4000, ["l1_ingress_port", "l1_egress_port"]), (0x2000, ["hop_latency"]),
                       (0x0800, ["ingress_timestamp"]), (0x0400, ["egress_timestamp"])]:
        if bits & bit:
            theirs = {"l1_ingress_port": "ingress_port", "l1_egress_port": "egress_port",
                      "hop_latency": "hop_latency", "ingress_timestamp": "timestamp",
                      "egress_timestamp": "egress_tstamp"}
            fields.update({theirs[name]: metadata[name] for name in names})
    return fields


def main(pcap, tools):
    decoded = [json.loads(line) for line in subprocess.check_output([tools, "decode", "--json", pcap]).splitlines()]
    checked = differ = given_md_length = 0
    for payload, record in zip(udp_payloads(pcap), decoded):
        group = record["report"]
        at = 8
        for report in record["report"]["reports"]:
            fields = header_fields(group, report)
            given_md_length += "md_length" in fields
            theirs = bytes(packets.DtelReportV2Hdr(**fields))
            ours = payload[:8] + payload[at:at + len(theirs) - 8]
            checked += 1
            if theirs != ours:
                differ += 1
                print(f"  datagram {group['report_seq']}: bf-pktpy {theirs.hex()}\n{'':>14}int-node {ours.hex()}")
            at += 4 + report["report_len_words"] * 4
    print(f"{pcap}: {checked} individual reports, {differ} differ from bf-pktpy's bytes"
          f" ({given_md_length} with domain specific metadata, MD Length given)")
    return 1 if differ or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
