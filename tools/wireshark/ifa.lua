-- Wireshark dissector for IFA 2.0 (Inband Flow Analyzer,
-- draft-kumar-ippm-ifa-08) as int-node speaks it (docs/ifa.md): over IPv4
-- and IPv6, the IFA header, the L4 header (TCP, UDP or GRE), the metadata
-- header and the stack of Broadcom's 32-byte LNS 1 hops, then the payload
-- to Wireshark's own dissectors (VXLAN, VXLAN-GPE, Geneve by UDP port; the
-- Ethernet, IPv4 or IPv6 inside GRE). Part of int-node; load it beside
-- int05.lua and int21.lua or alone.
--
--   tshark -X lua_script:tools/wireshark/ifa.lua -r ifa.pcap -V
--   tshark -X lua_script:tools/wireshark/ifa.lua -o ifa.ip_protocol:131 -r scapy.pcap
--
-- Preferences (Protocols > IFA): the IP protocol that marks IFA (253, the
-- deployed switches' and SONiC's choice), and whether scapy's default 131
-- is read as IFA too.
--
-- The L4 header sits between the IFA header and the metadata, and its UDP
-- Length and TCP/UDP checksum may or may not cover the metadata
-- (docs/ifa.md, "The L4 length and checksum"), so Wireshark's TCP and UDP
-- dissectors, which would take the metadata for payload, are not called:
-- this dissector shows the L4 header's fields itself (ifa.udp.*,
-- ifa.tcp.*, ifa.gre.*) and gives what follows the stack to the dissector
-- that the L4 header names: UDP by destination port, then source port
-- (udp.port: vxlan on 4789...); GRE by protocol (gre.proto: Ethernet
-- 0x6558, IPv4, IPv6); a TCP payload as data (TCP's port dissectors expect
-- the TCP dissector's conversation and reassembly state).
--
-- What int-core refuses (docs/ifa.md, Decisions) is shown as expert info
-- named by int-core's counter (ifa_global_name_space...); the headers are
-- shown as far as they can be read, the rest as data.

local ifa = Proto("ifa", "Inband Flow Analyzer 2.0")

ifa.prefs.ip_protocol = Pref.uint("IP protocol", 253,
    "IP protocol number that marks IFA (253: the deployed switches' and SONiC's)")
ifa.prefs.also_131 = Pref.bool("Also IP protocol 131", false, "Read IP protocol 131 (scapy's default) as IFA too")

local HEADER_LEN, MD_HEADER_LEN, HOP_LEN = 4, 4, 32
local next_headers = { [6] = "TCP", [17] = "UDP", [47] = "GRE" }
local speeds = { [0] = "10 Gb/s", [1] = "25 Gb/s", [2] = "40 Gb/s", [3] = "50 Gb/s", [4] = "100 Gb/s",
    [5] = "200 Gb/s", [6] = "400 Gb/s" }
local speed_gbps = { [0] = 10, [1] = 25, [2] = 40, [3] = 50, [4] = 100, [5] = 200, [6] = 400 }
local ethertypes = { [0x6558] = "Transparent Ethernet Bridging", [0x0800] = "IPv4", [0x86dd] = "IPv6" }

local f = ifa.fields
f.version = ProtoField.uint8("ifa.version", "Version", base.DEC, nil, 0xf0)
f.gns = ProtoField.uint8("ifa.gns", "GNS (Global Name Space)", base.DEC, { [15] = "none: local name spaces" }, 0x0f)
f.next_header = ProtoField.uint8("ifa.next_header", "Next Header", base.DEC, next_headers)
f.flags = ProtoField.uint8("ifa.flags", "Flags", base.HEX)
f.mf = ProtoField.bool("ifa.flags.mf", "MF (metadata fragment)", 8, nil, 0x10)
f.ts = ProtoField.bool("ifa.flags.ts", "TS (tail stamp)", 8, nil, 0x08)
f.i = ProtoField.bool("ifa.flags.i", "I (inband; clear: a probe copy)", 8, nil, 0x04)
f.ta = ProtoField.bool("ifa.flags.ta", "TA (turn around)", 8, nil, 0x02)
f.c = ProtoField.bool("ifa.flags.c", "C (checksum header)", 8, nil, 0x01)
f.max_length = ProtoField.uint8("ifa.max_length", "Max Length (words)", base.DEC)
f.max_length_bytes = ProtoField.uint16("ifa.max_length_bytes", "Max Length (bytes)", base.DEC)

f.udp_srcport = ProtoField.uint16("ifa.udp.srcport", "Source Port", base.DEC)
f.udp_dstport = ProtoField.uint16("ifa.udp.dstport", "Destination Port", base.DEC)
f.udp_length = ProtoField.uint16("ifa.udp.length", "Length", base.DEC)
f.udp_checksum = ProtoField.uint16("ifa.udp.checksum", "Checksum", base.HEX)
f.tcp_srcport = ProtoField.uint16("ifa.tcp.srcport", "Source Port", base.DEC)
f.tcp_dstport = ProtoField.uint16("ifa.tcp.dstport", "Destination Port", base.DEC)
f.tcp_seq = ProtoField.uint32("ifa.tcp.seq", "Sequence Number (raw)", base.DEC)
f.tcp_ack = ProtoField.uint32("ifa.tcp.ack", "Acknowledgment Number (raw)", base.DEC)
f.tcp_hdr_len = ProtoField.uint8("ifa.tcp.hdr_len", "Data Offset (words)", base.DEC, nil, 0xf0)
f.tcp_flags = ProtoField.uint16("ifa.tcp.flags", "Flags", base.HEX, nil, 0x0fff)
f.tcp_window = ProtoField.uint16("ifa.tcp.window", "Window", base.DEC)
f.tcp_checksum = ProtoField.uint16("ifa.tcp.checksum", "Checksum", base.HEX)
f.tcp_urgent = ProtoField.uint16("ifa.tcp.urgent_pointer", "Urgent Pointer", base.DEC)
f.tcp_options = ProtoField.bytes("ifa.tcp.options", "Options")
f.gre_flags = ProtoField.uint16("ifa.gre.flags", "Flags and Version", base.HEX)
f.gre_c = ProtoField.bool("ifa.gre.flags.c", "C (checksum present)", 16, nil, 0x8000)
f.gre_k = ProtoField.bool("ifa.gre.flags.k", "K (key present)", 16, nil, 0x2000)
f.gre_s = ProtoField.bool("ifa.gre.flags.s", "S (sequence number present)", 16, nil, 0x1000)
f.gre_version = ProtoField.uint16("ifa.gre.version", "Version", base.DEC, nil, 0x0007)
f.gre_protocol = ProtoField.uint16("ifa.gre.protocol", "Protocol Type", base.HEX, ethertypes)
f.gre_checksum = ProtoField.uint16("ifa.gre.checksum", "Checksum", base.HEX)
f.gre_key = ProtoField.uint32("ifa.gre.key", "Key", base.HEX)
f.gre_sequence = ProtoField.uint32("ifa.gre.sequence", "Sequence Number", base.DEC)

f.request = ProtoField.uint8("ifa.md.request_vector", "Request Vector", base.HEX)
f.action = ProtoField.uint8("ifa.md.action_vector", "Action Vector", base.HEX)
f.action_l = ProtoField.bool("ifa.md.action.l", "L (loss)", 8, nil, 0x80)
f.action_c = ProtoField.bool("ifa.md.action.c", "C (colour)", 8, nil, 0x40)
f.hop_limit = ProtoField.uint8("ifa.md.hop_limit", "Hop Limit", base.DEC)
f.current_length = ProtoField.uint8("ifa.md.current_length", "Current Length (words)", base.DEC)
f.current_length_bytes = ProtoField.uint16("ifa.md.current_length_bytes", "Current Length (bytes)", base.DEC)
f.hop_count = ProtoField.uint8("ifa.md.hop_count", "Hops", base.DEC)

f.hop = ProtoField.bytes("ifa.hop", "Hop")
f.lns = ProtoField.uint32("ifa.hop.lns", "LNS (Local Name Space)", base.DEC, nil, 0xf0000000)
f.device_id = ProtoField.uint32("ifa.hop.device_id", "Device ID", base.DEC, nil, 0x0fffff00)
f.ttl = ProtoField.uint32("ifa.hop.ttl", "IP TTL", base.DEC, nil, 0x000000ff)
f.speed = ProtoField.uint32("ifa.hop.port_speed", "Egress port speed", base.DEC, speeds, 0xf0000000)
f.speed_gbps = ProtoField.uint16("ifa.hop.port_speed_gbps", "Egress port speed (Gb/s)", base.DEC)
f.congestion = ProtoField.uint32("ifa.hop.congestion", "Congestion", base.DEC, nil, 0x0c000000)
f.queue_id = ProtoField.uint32("ifa.hop.queue_id", "Queue ID", base.DEC, nil, 0x03f00000)
f.rx_seconds = ProtoField.uint32("ifa.hop.rx_seconds", "RX timestamp, seconds (low 20 bits)", base.DEC, nil,
    0x000fffff)
f.egress_port = ProtoField.uint16("ifa.hop.egress_port", "Egress system port", base.DEC)
f.ingress_port = ProtoField.uint16("ifa.hop.ingress_port", "Ingress system port", base.DEC)
f.rx_nanoseconds = ProtoField.uint32("ifa.hop.rx_nanoseconds", "RX timestamp, nanoseconds", base.DEC)
f.residence = ProtoField.uint32("ifa.hop.residence_ns", "Residence time (ns)", base.DEC)
f.opaque = ProtoField.uint32("ifa.hop.opaque", "Opaque word", base.HEX)

-- Refusals, named by int-core's counters (`Refusal::name`): layouts no
-- text read defines are undecoded (a warning), lying lengths malformed.
local undecoded, malformed = expert.group.UNDECODED, expert.group.MALFORMED
local refusals = {
    truncated = { "truncated", "IFA packet cut short", malformed },
    version = { "unknown_version", "IFA version not 2", undecoded },
    gns = { "global_name_space", "GNS not 15: a global name space's layout is not read", undecoded },
    mf = { "metadata_fragment", "MF set: a metadata fragment header follows, not read", undecoded },
    ts = { "tail_stamp", "TS set: the metadata is at the end of the packet, not read", undecoded },
    c = { "checksum_header", "C set: a checksum header follows, not read", undecoded },
    next_header = { "next_header", "Next Header neither TCP, UDP nor GRE", undecoded },
    l4 = { "l4_malformed", "The L4 header under IFA lies", malformed },
    not_hops = { "length_not_hops", "Current Length is not whole 32-byte hops", malformed },
    past_max = { "length_past_max", "Current Length above Max Length", malformed },
    past_packet = { "stack_past_packet", "The stack runs past the IP packet", malformed },
}
local experts = {}
for _, r in pairs(refusals) do
    r.text = r[2] .. " (ifa_" .. r[1] .. ")"
    r.expert = ProtoExpert.new("ifa.refused." .. r[1], r.text, r[3],
        r[3] == malformed and expert.severity.ERROR or expert.severity.WARN)
    experts[#experts + 1] = r.expert
end
ifa.experts = experts

-- The packet's refusal, for the Info column.
local refused_as = nil

-- Marks `item` with a refusal, its counter's name and what was read.
local function refuse(item, key, detail)
    local r = refusals[key]
    refused_as = "ifa_" .. r[1]
    item:add_proto_expert_info(r.expert, detail and r.text .. ": " .. detail or r.text)
end

local udp_table = DissectorTable.get("udp.port")
local gre_table = DissectorTable.get("gre.proto")
local data = Dissector.get("data")

-- Calls a dissector of Wireshark's own. An exception in it (a malformed
-- packet inside the payload) is shown by Wireshark as Malformed Packet,
-- then raised by Dissector:call as a Lua error: it is the payload's, so
-- it is caught here.
local function call(dissector, tvb, pinfo, tree)
    pcall(function() dissector:call(tvb, pinfo, tree) end)
end

-- `len` bytes of buf at `at`, or nil where they are not all captured.
local function span(buf, at, len)
    if at < 0 or len < 0 or at + len > buf:len() then return nil end
    return buf(at, len)
end

-- The IFA header; true when its version, GNS and flags are read.
local function dissect_header(buf, tree)
    local item = tree:add(buf(0, HEADER_LEN), "IFA header")
    item:add(f.version, buf(0, 1)); item:add(f.gns, buf(0, 1))
    item:add(f.next_header, buf(1, 1))
    local flags = item:add(f.flags, buf(2, 1))
    for _, field in ipairs({ f.mf, f.ts, f.i, f.ta, f.c }) do flags:add(field, buf(2, 1)) end
    item:add(f.max_length, buf(3, 1))
    item:add(f.max_length_bytes, buf(3, 1), buf(3, 1):uint() * 4):set_generated()
    local version, gns, bits = math.floor(buf(0, 1):uint() / 16), buf(0, 1):uint() % 16, buf(2, 1):uint()
    if version ~= 2 then refuse(item, "version", string.format("version %d", version))
    elseif gns ~= 15 then refuse(item, "gns", string.format("GNS %d", gns))
    elseif bit32.band(bits, 0x10) ~= 0 then refuse(flags, "mf")
    elseif bit32.band(bits, 0x08) ~= 0 then refuse(flags, "ts")
    elseif bit32.band(bits, 0x01) ~= 0 then refuse(flags, "c")
    else return true end
    return false
end

local function dissect_udp(buf, at, item)
    if span(buf, at, 8) == nil then return nil end
    item:add(f.udp_srcport, buf(at, 2)); item:add(f.udp_dstport, buf(at + 2, 2))
    item:add(f.udp_length, buf(at + 4, 2)); item:add(f.udp_checksum, buf(at + 6, 2))
    item:set_text(string.format("UDP header, %d -> %d", buf(at, 2):uint(), buf(at + 2, 2):uint()))
    return { len = 8, label = "UDP", sport = buf(at, 2):uint(), dport = buf(at + 2, 2):uint() }
end

local function dissect_tcp(buf, at, item)
    if span(buf, at, 20) == nil then return nil end
    local len = math.floor(buf(at + 12, 1):uint() / 16) * 4
    item:add(f.tcp_srcport, buf(at, 2)); item:add(f.tcp_dstport, buf(at + 2, 2))
    item:add(f.tcp_seq, buf(at + 4, 4)); item:add(f.tcp_ack, buf(at + 8, 4))
    local offset = item:add(f.tcp_hdr_len, buf(at + 12, 1))
    item:add(f.tcp_flags, buf(at + 12, 2)); item:add(f.tcp_window, buf(at + 14, 2))
    item:add(f.tcp_checksum, buf(at + 16, 2)); item:add(f.tcp_urgent, buf(at + 18, 2))
    item:set_text(string.format("TCP header, %d -> %d", buf(at, 2):uint(), buf(at + 2, 2):uint()))
    if len < 20 then
        refuse(offset, "l4", string.format("TCP Data Offset %d bytes", len))
        return false
    end
    if span(buf, at, len) == nil then return nil end
    if len > 20 then item:add(f.tcp_options, buf(at + 20, len - 20)) end
    return { len = len, label = "TCP", sport = buf(at, 2):uint(), dport = buf(at + 2, 2):uint() }
end

local function dissect_gre(buf, at, item)
    if span(buf, at, 4) == nil then return nil end
    local bits = buf(at, 2):uint()
    local flags = item:add(f.gre_flags, buf(at, 2))
    for _, field in ipairs({ f.gre_c, f.gre_k, f.gre_s, f.gre_version }) do flags:add(field, buf(at, 2)) end
    item:add(f.gre_protocol, buf(at + 2, 2))
    item:set_text(string.format("GRE header, protocol 0x%04x", buf(at + 2, 2):uint()))
    -- int-core's GRE: RFC 2784 with RFC 2890's key and sequence; version,
    -- routing and the other reserved bits refused.
    if bit32.band(bits, 0x0007) ~= 0 or bit32.band(bits, 0x4c00) ~= 0 then
        refuse(flags, "l4", string.format("GRE flags and version 0x%04x", bits))
        return false
    end
    local len = 4
    for _, opt in ipairs({ { 0x8000, f.gre_checksum, 2 }, { 0x2000, f.gre_key, 4 }, { 0x1000, f.gre_sequence, 4 } }) do
        if bit32.band(bits, opt[1]) ~= 0 then
            if span(buf, at + len, 4) == nil then return nil end
            item:add(opt[2], buf(at + len, opt[3]))
            len = len + 4
        end
    end
    return { len = len, label = "GRE", protocol = buf(at + 2, 2):uint() }
end

-- The L4 header Next Header names, at `at`: its shape (len, label, ports
-- or protocol), false where refused, nil where cut short.
local function dissect_l4(buf, at, next_header, tree)
    local readers = { [6] = dissect_tcp, [17] = dissect_udp, [47] = dissect_gre }
    local reader = readers[next_header]
    if reader == nil then
        refuse(tree, "next_header", string.format("Next Header %d", next_header))
        return false
    end
    local item = tree:add(buf(at, math.min(buf:len() - at, 20)), next_headers[next_header] .. " header")
    local shape = reader(buf, at, item)
    if shape then item:set_len(shape.len) end
    if shape == nil then refuse(item, "truncated", "in the L4 header") end
    return shape
end

-- One 32-byte hop at `at`, Broadcom's LNS 1 layout.
local function dissect_hop(buf, at, tree, index, last)
    local item = tree:add(f.hop, buf(at, HOP_LEN))
    local device = bit32.band(buf(at, 4):uint(), 0x0fffff00) / 256
    item:set_text(string.format("Hop %d%s: device %d", index, last and " (initiator)" or "", device))
    item:add(f.lns, buf(at, 4)); item:add(f.device_id, buf(at, 4)); item:add(f.ttl, buf(at, 4))
    local code = math.floor(buf(at + 4, 1):uint() / 16)
    item:add(f.speed, buf(at + 4, 4))
    if speed_gbps[code] ~= nil then item:add(f.speed_gbps, buf(at + 4, 1), speed_gbps[code]):set_generated() end
    item:add(f.congestion, buf(at + 4, 4)); item:add(f.queue_id, buf(at + 4, 4)); item:add(f.rx_seconds, buf(at + 4, 4))
    item:add(f.egress_port, buf(at + 8, 2)); item:add(f.ingress_port, buf(at + 10, 2))
    item:add(f.rx_nanoseconds, buf(at + 12, 4)); item:add(f.residence, buf(at + 16, 4))
    for word = 0, 2 do item:add(f.opaque, buf(at + 20 + word * 4, 4)) end
    return device
end

-- The metadata header at `at` and the stack after it, checked as int-core
-- checks it; where the payload begins (nil: refused or cut), and the
-- devices read, newest first.
local function dissect_metadata(buf, at, max_length, tree)
    local md = span(buf, at, MD_HEADER_LEN)
    if md == nil then
        refuse(tree, "truncated", "in the metadata header")
        return nil, {}
    end
    local item = tree:add(md, "Metadata header")
    item:add(f.request, buf(at, 1))
    local action = item:add(f.action, buf(at + 1, 1))
    action:add(f.action_l, buf(at + 1, 1)); action:add(f.action_c, buf(at + 1, 1))
    item:add(f.hop_limit, buf(at + 2, 1))
    local words = buf(at + 3, 1):uint()
    local length = item:add(f.current_length, buf(at + 3, 1))
    item:add(f.current_length_bytes, buf(at + 3, 1), words * 4):set_generated()
    local stack_at, stack_len = at + MD_HEADER_LEN, words * 4
    local refused = true
    if stack_len % HOP_LEN ~= 0 then
        refuse(length, "not_hops", string.format("%d words, %d bytes", words, stack_len))
    elseif words > max_length then
        refuse(length, "past_max", string.format("%d words, Max Length %d", words, max_length))
    elseif stack_at + stack_len > buf:reported_len() then
        refuse(length, "past_packet", string.format("%d bytes of stack, %d in the packet", stack_len,
            buf:reported_len() - stack_at))
    elseif stack_at + stack_len > buf:len() then
        refuse(length, "truncated", "the stack, in the capture")
    else
        refused = false
    end
    -- A refused stack still shows the hops its Current Length claims that
    -- are wholly in the packet (none called the initiator's).
    local count = math.floor(math.min(stack_len, buf:len() - stack_at) / HOP_LEN)
    item:add(f.hop_count, buf(at + 3, 1), count):set_generated()
    local devices = {}
    if count > 0 then
        local stack = tree:add(buf(stack_at, count * HOP_LEN), string.format("Metadata stack: %d hop(s), newest first",
            count))
        for index = 0, count - 1 do
            local last = not refused and index == count - 1
            devices[#devices + 1] = dissect_hop(buf, stack_at + index * HOP_LEN, stack, index, last)
        end
    end
    if refused then return nil, devices end
    return stack_at + stack_len, devices
end

-- What follows the stack, to the dissector the L4 header names (the
-- Info column keeps IFA's text before the payload's).
local function dissect_payload(payload, l4, pinfo, tree)
    local dissector = nil
    if l4.label == "UDP" then
        dissector = udp_table:get_dissector(l4.dport) or udp_table:get_dissector(l4.sport)
    elseif l4.label == "GRE" then
        dissector = gre_table:get_dissector(l4.protocol)
    end
    if dissector == nil then
        call(data, payload, pinfo, tree)
        return
    end
    pinfo.cols.info:append(" | ")
    pinfo.cols.info:fence()
    call(dissector, payload, pinfo, tree)
end

-- The rest of the packet after a refusal, as data.
local function rest_as_data(buf, at, pinfo, tree)
    if at < buf:len() then call(data, buf(at):tvb(), pinfo, tree) end
end

function ifa.dissector(buf, pinfo, tree)
    pinfo.cols.protocol = "IFA"
    refused_as = nil
    local subtree = tree:add(ifa, buf())
    if buf:len() < HEADER_LEN then
        refuse(subtree, "truncated", "in the IFA header")
        pinfo.cols.info = "IFA 2.0, refused: " .. refused_as
        return buf:len()
    end
    local l4 = dissect_header(buf, subtree) and dissect_l4(buf, HEADER_LEN, buf(1, 1):uint(), subtree)
    if not l4 then
        pinfo.cols.info = "IFA 2.0, refused: " .. (refused_as or "")
        rest_as_data(buf, HEADER_LEN, pinfo, tree)
        return buf:len()
    end
    local md_at = HEADER_LEN + l4.len
    local payload_at, devices = dissect_metadata(buf, md_at, buf(3, 1):uint(), subtree)
    subtree:set_len(payload_at or buf:len())
    subtree:append_text(string.format(", %s, %d hop(s)", l4.label, #devices))
    local ports = l4.sport and string.format(" %d -> %d", l4.sport, l4.dport) or ""
    local info = string.format("IFA 2.0, %s%s, %d hop(s)", l4.label, ports, #devices)
    if #devices > 0 then info = info .. ": devices " .. table.concat(devices, ", ") end
    pinfo.cols.info = refused_as and info .. ", refused: " .. refused_as or info
    if payload_at == nil then
        rest_as_data(buf, md_at, pinfo, tree)
    elseif payload_at < buf:len() then
        dissect_payload(buf(payload_at):tvb(), l4, pinfo, tree)
    end
    return buf:len()
end

local ip_proto = DissectorTable.get("ip.proto")
local registered = {}

-- The IP protocols of the preferences; what the last call registered is
-- removed first.
local function register()
    for proto in pairs(registered) do ip_proto:remove(proto, ifa) end
    registered = {}
    local wanted = { ifa.prefs.ip_protocol }
    if ifa.prefs.also_131 then wanted[#wanted + 1] = 131 end
    for _, proto in ipairs(wanted) do
        -- 0 is IPv6's Hop-by-Hop Options header, never IFA's.
        if proto >= 1 and proto <= 255 then
            ip_proto:add(proto, ifa)
            registered[proto] = true
        end
    end
end

function ifa.prefs_changed() register() end

register()
