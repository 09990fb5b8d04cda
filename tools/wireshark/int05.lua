-- Wireshark dissector for INT 0.5 over TCP/UDP over IPv4 or IPv6 (shim Types 1, 2 and 3 with
-- Host-INT's sequence number), and for telemetry reports: Telemetry Report
-- 0.5 (NProto 0-2) and Host-INT's INT/IPv4 latency (NProto 4) and
-- Drop-Summary (NProto 3) reports. Part of int-node.
--
--   tshark -X lua_script:tools/wireshark/int05.lua -r int.pcap -V
--   wireshark -X lua_script:tools/wireshark/int05.lua int.pcap
--
-- Preferences (Edit > Preferences > Protocols > INT05): the DSCP value and
-- mask that mark INT, the extension UDP port (33122), the report port
-- (32766) and whether TCP packets carry INT after their options (INT 0.5)
-- or after the first 20 bytes (Host-INT; Wireshark's TCP dissector then
-- reads the INT block as TCP options, so only UDP and after-options TCP are
-- dissected as INT). INT in the DSCP encapsulation is found by a heuristic
-- on the TCP/UDP payload: set "Try heuristic sub-dissectors first" for TCP
-- and UDP (-o tcp.try_heuristic_first:TRUE -o udp.try_heuristic_first:TRUE)
-- so that a port-based dissector (HTTP on port 80...) does not claim it,
-- and -o tcp.analyze_sequence_numbers:FALSE: TCP's analysis counts the INT
-- bytes as payload and would flag the next segment as a retransmission.

local int05 = Proto("int05", "In-band Network Telemetry 0.5")
local report = Proto("intreport", "INT Telemetry Report")

int05.prefs.dscp_value = Pref.uint("DSCP value", 1, "DSCP value that marks INT")
int05.prefs.dscp_mask = Pref.uint("DSCP mask", 1, "DSCP bits that mark INT")
int05.prefs.udp_port = Pref.uint("Extension UDP port", 33122, "INT_05_EXTENSION_UDP destination port")
int05.prefs.report_port = Pref.uint("Report UDP port", 32766, "Telemetry report destination port")
int05.prefs.sink_id = Pref.enum("Sink id word in latency reports", 2, "Host-INT's sink node id word",
    { { 1, "absent", 0 }, { 2, "detect", 2 }, { 3, "present", 1 } })

local shim_types = { [1] = "hop-by-hop", [2] = "destination", [3] = "Host-INT hop-by-hop with sequence number" }
local nprotos = { [0] = "Ethernet", [1] = "Drop header + Ethernet", [2] = "Switch-local header + Ethernet",
    [3] = "Drop-Summary (Host-INT)", [4] = "INT/IPv4 (Host-INT)" }
local ip_protos = { [6] = "TCP", [17] = "UDP" }

local f = int05.fields
f.shim_type = ProtoField.uint8("int05.shim.type", "Type", base.DEC, shim_types)
f.shim_rsvd1 = ProtoField.uint8("int05.shim.reserved1", "Reserved", base.HEX)
f.shim_len = ProtoField.uint8("int05.shim.length", "Length (words)", base.DEC)
f.shim_rsvd2 = ProtoField.uint8("int05.shim.reserved2", "Reserved", base.HEX)
f.md_ver = ProtoField.uint8("int05.md.ver", "Ver", base.DEC, nil, 0xf0)
f.md_rep = ProtoField.uint8("int05.md.rep", "Rep", base.DEC, nil, 0x0c)
f.md_c = ProtoField.bool("int05.md.c", "C (copy)", 8, nil, 0x02)
f.md_e = ProtoField.bool("int05.md.e", "E (max hop count exceeded)", 8, nil, 0x01)
f.md_ins_cnt = ProtoField.uint8("int05.md.ins_cnt", "Ins Cnt", base.DEC, nil, 0x1f)
f.md_max_hop = ProtoField.uint8("int05.md.max_hop_cnt", "Max Hop Cnt", base.DEC)
f.md_total_hop = ProtoField.uint8("int05.md.total_hop_cnt", "Total Hop Cnt", base.DEC)
f.md_bitmap = ProtoField.uint16("int05.md.instructions", "Instruction Bitmap", base.HEX)
f.md_b0 = ProtoField.bool("int05.md.instructions.switch_id", "bit 0: switch id", 16, nil, 0x8000)
f.md_b1 = ProtoField.bool("int05.md.instructions.port_ids", "bit 1: ingress + egress port ids", 16, nil, 0x4000)
f.md_b2 = ProtoField.bool("int05.md.instructions.hop_latency", "bit 2: hop latency", 16, nil, 0x2000)
f.md_b3 = ProtoField.bool("int05.md.instructions.queue_occupancy", "bit 3: queue id + occupancy", 16, nil, 0x1000)
f.md_b4 = ProtoField.bool("int05.md.instructions.ingress_timestamp", "bit 4: ingress timestamp", 16, nil, 0x0800)
f.md_b5 = ProtoField.bool("int05.md.instructions.egress_timestamp", "bit 5: egress timestamp", 16, nil, 0x0400)
f.md_b6 = ProtoField.bool("int05.md.instructions.queue_congestion", "bit 6: queue id + congestion", 16, nil, 0x0200)
f.md_b7 = ProtoField.bool("int05.md.instructions.tx_utilization", "bit 7: egress port tx utilization", 16, nil, 0x0100)
f.md_rsvd = ProtoField.uint16("int05.md.reserved", "Reserved", base.HEX)
f.hop = ProtoField.bytes("int05.hop", "Hop")
f.hop_switch_id = ProtoField.uint32("int05.hop.switch_id", "Switch id", base.DEC_HEX)
f.hop_ingress_port = ProtoField.uint16("int05.hop.ingress_port", "Ingress port id", base.DEC)
f.hop_egress_port = ProtoField.uint16("int05.hop.egress_port", "Egress port id", base.DEC)
f.hop_latency = ProtoField.uint32("int05.hop.hop_latency", "Hop latency", base.DEC)
f.hop_queue_id = ProtoField.uint8("int05.hop.queue_id", "Queue id", base.DEC)
f.hop_queue_occupancy = ProtoField.uint24("int05.hop.queue_occupancy", "Queue occupancy", base.DEC)
f.hop_ingress_ts = ProtoField.uint32("int05.hop.ingress_timestamp", "Ingress timestamp", base.DEC)
f.hop_egress_ts = ProtoField.uint32("int05.hop.egress_timestamp", "Egress timestamp", base.DEC)
f.hop_congestion = ProtoField.uint24("int05.hop.queue_congestion", "Queue congestion status", base.DEC)
f.hop_tx_util = ProtoField.uint32("int05.hop.tx_utilization", "Egress port tx utilization", base.DEC)
f.hop_reserved = ProtoField.uint32("int05.hop.reserved_word", "Word of a reserved instruction", base.HEX)
f.seq = ProtoField.uint32("int05.sequence", "Flow sequence number", base.DEC)
f.tail_proto = ProtoField.uint8("int05.tail.proto", "Proto", base.DEC, ip_protos)
f.tail_dport = ProtoField.uint16("int05.tail.dst_port", "Destination port", base.DEC)
f.tail_dscp = ProtoField.uint8("int05.tail.dscp", "Reserved/DSCP", base.DEC)
f.ext_udp = ProtoField.bytes("int05.extension_udp", "Extension UDP header")

local r = report.fields
r.ver = ProtoField.uint8("intreport.ver", "Ver", base.DEC, nil, 0xf0)
r.nproto = ProtoField.uint8("intreport.nproto", "NProto", base.DEC, nprotos, 0x0f)
r.d = ProtoField.bool("intreport.d", "D (dropped)", 8, nil, 0x80)
r.q = ProtoField.bool("intreport.q", "Q (congested queue)", 8, nil, 0x40)
r.f = ProtoField.bool("intreport.f", "F (tracked flow)", 8, nil, 0x20)
r.hw_id = ProtoField.uint8("intreport.hw_id", "hw_id", base.DEC, nil, 0x3f)
r.seq = ProtoField.uint32("intreport.seq", "Sequence number", base.DEC)
r.ts = ProtoField.uint32("intreport.timestamp", "Timestamp", base.DEC)
r.sink_id = ProtoField.uint32("intreport.sink_id", "Sink node id", base.DEC_HEX)
r.ip_src = ProtoField.ipv4("intreport.ip.src", "Source address")
r.ip_dst = ProtoField.ipv4("intreport.ip.dst", "Destination address")
r.ip_proto = ProtoField.uint8("intreport.ip.proto", "Protocol", base.DEC, ip_protos)
r.sport = ProtoField.uint16("intreport.src_port", "Source port", base.DEC)
r.dport = ProtoField.uint16("intreport.dst_port", "Destination port", base.DEC)
r.latency = ProtoField.uint32("intreport.latency_ns", "One-way latency (sink - source ingress, ns)", base.DEC)
r.src_node = ProtoField.uint32("intreport.drop.source_node", "Source node id", base.DEC_HEX)
r.sink_node = ProtoField.uint32("intreport.drop.sink_node", "Sink node id", base.DEC_HEX)
r.src_port_id = ProtoField.uint16("intreport.drop.source_port", "Ingress port: source", base.DEC)
r.sink_port_id = ProtoField.uint16("intreport.drop.sink_port", "Egress port: sink", base.DEC)
r.gap_ts = ProtoField.uint32("intreport.drop.gap_timestamp", "Gap timestamp", base.DEC)
r.gap_seq = ProtoField.uint32("intreport.drop.gap_sequence", "Gap sequence number", base.DEC)
r.gap_count = ProtoField.uint32("intreport.drop.gap_count", "Gap count", base.DEC)
r.switch_id = ProtoField.uint32("intreport.switch_id", "Switch id", base.DEC_HEX)
r.ingress_port = ProtoField.uint16("intreport.ingress_port", "Ingress port id", base.DEC)
r.egress_port = ProtoField.uint16("intreport.egress_port", "Egress port id", base.DEC)
r.queue_id = ProtoField.uint8("intreport.queue_id", "Queue id", base.DEC)
r.drop_reason = ProtoField.uint8("intreport.drop_reason", "Drop reason", base.DEC)
r.queue_occupancy = ProtoField.uint24("intreport.queue_occupancy", "Queue occupancy", base.DEC)
r.egress_ts = ProtoField.uint32("intreport.egress_timestamp", "Egress timestamp", base.DEC)

local e_malformed = ProtoExpert.new("int05.malformed", "Malformed INT block", expert.group.MALFORMED, expert.severity.ERROR)
int05.experts = { e_malformed }

local ip_dsfield = Field.new("ip.dsfield.dscp")
local ipv6_dscp = Field.new("ipv6.tclass.dscp")
local eth = Dissector.get("eth_withoutfcs")
local ip_table = DissectorTable.get("ip.proto")

local function popcount16(v)
    local n = 0
    while v > 0 do
        n = n + (v % 2)
        v = math.floor(v / 2)
    end
    return n
end

-- One hop's words, named by the bitmap (bit 0 = MSB first).
local function dissect_hop(buf, offset, bitmap, tree, index, hop_len)
    local hop = tree:add(f.hop, buf(offset, hop_len))
    hop:set_text(string.format("Hop %d", index))
    local at = offset
    for bit = 15, 0, -1 do
        local mask = 2 ^ bit
        if math.floor(bitmap / mask) % 2 == 1 then
            local word = buf(at, 4)
            if bit == 15 then hop:add(f.hop_switch_id, word)
            elseif bit == 14 then
                hop:add(f.hop_ingress_port, buf(at, 2))
                hop:add(f.hop_egress_port, buf(at + 2, 2))
            elseif bit == 13 then hop:add(f.hop_latency, word)
            elseif bit == 12 then
                hop:add(f.hop_queue_id, buf(at, 1))
                hop:add(f.hop_queue_occupancy, buf(at + 1, 3))
            elseif bit == 11 then hop:add(f.hop_ingress_ts, word)
            elseif bit == 10 then hop:add(f.hop_egress_ts, word)
            elseif bit == 9 then
                hop:add(f.hop_queue_id, buf(at, 1))
                hop:add(f.hop_congestion, buf(at + 1, 3))
            elseif bit == 8 then hop:add(f.hop_tx_util, word)
            else hop:add(f.hop_reserved, word) end
            at = at + 4
        end
    end
end

-- The INT block at `offset`; `with_tail` is false inside a latency report.
-- Returns the block length, or nil when it is not a well-formed block.
local function dissect_block(buf, pinfo, tree, offset, with_tail)
    if buf:len() < offset + 12 then return nil end
    local shim_type = buf(offset, 1):uint()
    local length = buf(offset + 2, 1):uint() * 4
    if shim_type < 1 or shim_type > 3 or length < 12 or buf:len() < offset + length then return nil end
    local bitmap = buf(offset + 8, 2):uint()
    local ins_cnt = buf(offset + 5, 1):uint() % 32
    local total = buf(offset + 7, 1):uint()
    local fixed = 12 + (shim_type == 3 and 4 or 0) + (with_tail and 4 or 0)
    local subtree = tree:add(int05, buf(offset, length))
    subtree:add(f.shim_type, buf(offset, 1))
    subtree:add(f.shim_rsvd1, buf(offset + 1, 1))
    subtree:add(f.shim_len, buf(offset + 2, 1))
    subtree:add(f.shim_rsvd2, buf(offset + 3, 1))
    local md = subtree:add(buf(offset + 4, 8), "Metadata header")
    md:add(f.md_ver, buf(offset + 4, 1))
    md:add(f.md_rep, buf(offset + 4, 1))
    md:add(f.md_c, buf(offset + 4, 1))
    md:add(f.md_e, buf(offset + 4, 1))
    md:add(f.md_ins_cnt, buf(offset + 5, 1))
    md:add(f.md_max_hop, buf(offset + 6, 1))
    md:add(f.md_total_hop, buf(offset + 7, 1))
    local bits = md:add(f.md_bitmap, buf(offset + 8, 2))
    for _, field in ipairs({ f.md_b0, f.md_b1, f.md_b2, f.md_b3, f.md_b4, f.md_b5, f.md_b6, f.md_b7 }) do
        bits:add(field, buf(offset + 8, 2))
    end
    md:add(f.md_rsvd, buf(offset + 10, 2))
    local hop_len = ins_cnt * 4
    if ins_cnt ~= popcount16(bitmap) or fixed + hop_len * total ~= length then
        subtree:add_proto_expert_info(e_malformed, "Ins Cnt x Total Hop Cnt does not match the shim Length")
        return length
    end
    local at = offset + 12
    for hop = 0, total - 1 do
        dissect_hop(buf, at, bitmap, subtree, hop, hop_len)
        at = at + hop_len
    end
    if shim_type == 3 then
        subtree:add(f.seq, buf(at, 4))
        at = at + 4
    end
    if with_tail then
        local tail = subtree:add(buf(at, 4), "Tail")
        tail:add(f.tail_proto, buf(at, 1))
        tail:add(f.tail_dport, buf(at + 1, 2))
        tail:add(f.tail_dscp, buf(at + 3, 1))
    end
    subtree:append_text(string.format(", %s, %d hop(s)", shim_types[shim_type], total))
    return length
end

-- INT right after a UDP header or TCP options (DSCP encapsulation).
local function heuristic(buf, pinfo, tree)
    -- The innermost IP header decides (IPv4's DSCP, or IPv6's in its
    -- Traffic Class); a second one means a packet inside a Telemetry
    -- Report 0.5 flow report, whose INT block has no tail.
    local all = { ip_dsfield() }
    for _, dscp in ipairs({ ipv6_dscp() }) do all[#all + 1] = dscp end
    local dscp = all[#all]
    if dscp == nil then return false end
    local mask = int05.prefs.dscp_mask
    if bit32.band(dscp.value, mask) ~= bit32.band(int05.prefs.dscp_value, mask) then return false end
    local length = dissect_block(buf, pinfo, tree, 0, #all == 1)
    if length == nil then return false end
    pinfo.cols.protocol:append("/INT")
    if buf:len() > length then
        Dissector.get("data"):call(buf(length):tvb(), pinfo, tree)
    end
    return true
end

-- INT_05_EXTENSION_UDP: the block, then the original L4 header (protocol
-- from the tail).
function int05.dissector(buf, pinfo, tree)
    local length = dissect_block(buf, pinfo, tree, 0, true)
    if length == nil then return 0 end
    pinfo.cols.protocol = "INT05"
    local proto = buf(length - 4, 1):uint()
    local inner = ip_table:get_dissector(proto)
    if inner ~= nil and buf:len() > length then
        inner:call(buf(length):tvb(), pinfo, tree)
    end
    return buf:len()
end

local function looks_like_ipv4(buf, offset)
    if buf:len() < offset + 20 then return false end
    local vihl = buf(offset, 1):uint()
    local proto = buf(offset + 9, 1):uint()
    return math.floor(vihl / 16) == 4 and vihl % 16 >= 5 and (proto == 6 or proto == 17)
end

-- One report at the start of buf; returns the bytes it took (all of buf
-- where its length is not known: a report ending in a whole packet).
local function dissect_report(buf, pinfo, tree)
    if buf:len() < 12 then return buf:len() end
    pinfo.cols.protocol = "INT report"
    local subtree = tree:add(report, buf())
    subtree:add(r.ver, buf(0, 1))
    subtree:add(r.nproto, buf(0, 1))
    subtree:add(r.d, buf(1, 1))
    subtree:add(r.q, buf(1, 1))
    subtree:add(r.f, buf(1, 1))
    subtree:add(r.hw_id, buf(3, 1))
    subtree:add(r.seq, buf(4, 4))
    subtree:add(r.ts, buf(8, 4))
    local nproto = buf(0, 1):uint() % 16
    local at = 12
    if nproto == 4 then
        local mode = int05.prefs.sink_id
        if mode == 1 or (mode == 2 and not looks_like_ipv4(buf, 12)) then
            subtree:add(r.sink_id, buf(at, 4))
            at = at + 4
        end
        local ihl = (buf(at, 1):uint() % 16) * 4
        local proto = buf(at + 9, 1):uint()
        local ip = subtree:add(buf(at, ihl), "IPv4 header (as received)")
        ip:add(r.ip_src, buf(at + 12, 4))
        ip:add(r.ip_dst, buf(at + 16, 4))
        ip:add(r.ip_proto, buf(at + 9, 1))
        at = at + ihl
        local l4 = proto == 6 and 20 or 8
        local ports = subtree:add(buf(at, l4), proto == 6 and "TCP header (first 20 bytes)" or "UDP header")
        ports:add(r.sport, buf(at, 2))
        ports:add(r.dport, buf(at + 2, 2))
        at = at + l4
        local length = dissect_block(buf, pinfo, subtree, at, false)
        if length ~= nil and buf(at + 7, 1):uint() >= 2 then
            -- Sink hop first, source hop last: ingress timestamps (bit 4).
            local bitmap = buf(at + 8, 2):uint()
            local hop_len = (buf(at + 5, 1):uint() % 32) * 4
            local total = buf(at + 7, 1):uint()
            if math.floor(bitmap / 2048) % 2 == 1 then
                local above = popcount16(math.floor(bitmap / 4096))
                local sink_ts = buf(at + 12 + above * 4, 4):uint()
                local source_ts = buf(at + 12 + (total - 1) * hop_len + above * 4, 4):uint()
                subtree:add(r.latency, buf(at + 12 + above * 4, 4), (sink_ts - source_ts) % 4294967296)
            end
        end
        pinfo.cols.info = string.format("Latency report seq %d", buf(4, 4):uint())
        return length ~= nil and at + length or buf:len()
    elseif nproto == 3 then
        subtree:add(r.src_node, buf(at, 4))
        subtree:add(r.sink_node, buf(at + 4, 4))
        subtree:add(r.src_port_id, buf(at + 8, 2))
        subtree:add(r.sink_port_id, buf(at + 10, 2))
        subtree:add(r.gap_ts, buf(at + 12, 4))
        subtree:add(r.gap_seq, buf(at + 16, 4))
        subtree:add(r.gap_count, buf(at + 20, 4))
        at = at + 24
        local ip = subtree:add(buf(at, 20), "IPv4 header (synthesised)")
        ip:add(r.ip_src, buf(at + 12, 4))
        ip:add(r.ip_dst, buf(at + 16, 4))
        ip:add(r.ip_proto, buf(at + 9, 1))
        subtree:add(r.sport, buf(at + 20, 2))
        subtree:add(r.dport, buf(at + 22, 2))
        pinfo.cols.info = string.format("Drop-Summary seq %d: %d lost from flow seq %d",
            buf(4, 4):uint(), buf(at - 4, 4):uint(), buf(at - 8, 4):uint())
        -- The synthesised IPv4 header, then the L4 header: TCP's 20
        -- bytes or UDP's 8.
        return at + 20 + (buf(at + 9, 1):uint() == 6 and 20 or 8)
    else
        if nproto == 1 and buf:len() >= at + 12 then
            local drop = subtree:add(buf(at, 12), "Drop report header")
            drop:add(r.switch_id, buf(at, 4))
            drop:add(r.ingress_port, buf(at + 4, 2))
            drop:add(r.egress_port, buf(at + 6, 2))
            drop:add(r.queue_id, buf(at + 8, 1))
            drop:add(r.drop_reason, buf(at + 9, 1))
            at = at + 12
        elseif nproto == 2 and buf:len() >= at + 16 then
            local sl = subtree:add(buf(at, 16), "Switch local report header")
            sl:add(r.switch_id, buf(at, 4))
            sl:add(r.ingress_port, buf(at + 4, 2))
            sl:add(r.egress_port, buf(at + 6, 2))
            sl:add(r.queue_id, buf(at + 8, 1))
            sl:add(r.queue_occupancy, buf(at + 9, 3))
            sl:add(r.egress_ts, buf(at + 12, 4))
            at = at + 16
        end
        if buf:len() > at then
            eth:call(buf(at):tvb(), pinfo, tree)
        end
    end
    return buf:len()
end

-- A datagram of one report, or of several of one length back to back: a
-- GSO send captured on the sending host, before the kernel cut it.
function report.dissector(buf, pinfo, tree)
    local one = dissect_report(buf, pinfo, tree)
    if one <= 0 or one >= buf:len() or buf:len() % one ~= 0 then return buf:len() end
    for at = one, buf:len() - one, one do
        dissect_report(buf(at, one):tvb(), pinfo, tree)
    end
    pinfo.cols.info = string.format("%d reports (one GSO send)", buf:len() / one)
    return buf:len()
end

int05:register_heuristic("udp", heuristic)
int05:register_heuristic("tcp", heuristic)
DissectorTable.get("udp.port"):add(int05.prefs.udp_port, int05)
DissectorTable.get("udp.port"):add(int05.prefs.report_port, report)
