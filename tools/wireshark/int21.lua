-- Wireshark dissector for INT 2.1 over TCP/UDP (INT-MD and INT-MX blocks
-- after the L4 header, marked by DSCP (IPv4's or IPv6's) or behind a UDP
-- port), INT 2.1 in VXLAN-GPE (Next Protocol 0x82: the INT shim, the block,
-- then the shim's Next Protocol) and in Geneve options of class 0x0103, and
-- Telemetry Report 2.0 (group header, individual reports, RepType 1
-- metadata, the IPv4 or IPv6 packet inside).
-- Part of int-node; load it beside int05.lua or alone.
--
--   tshark -X lua_script:tools/wireshark/int21.lua -o udp.try_heuristic_first:TRUE \
--          -o tcp.try_heuristic_first:TRUE -r int21.pcap -V
--
-- Preferences (Protocols > INT21): the DSCP value and mask marking INT 2.1
-- (0x17/0x3f as in the spec's examples), the INT UDP port (0: none), the
-- report port (32766), and where INT sits in TCP (before or after the
-- options). Both protocols are heuristics on UDP/TCP payloads: enable
-- "Try heuristic sub-dissectors first" so that port-based dissectors do
-- not claim the packets first.

local int21 = Proto("int21", "In-band Network Telemetry 2.1")
local int21_gpe = Proto("int21gpe", "In-band Network Telemetry 2.1 in VXLAN-GPE")
local tr20 = Proto("tr20", "Telemetry Report 2.0")

int21.prefs.dscp_value = Pref.uint("DSCP value", 0x17, "DSCP value that marks INT 2.1")
int21.prefs.dscp_mask = Pref.uint("DSCP mask", 0x3f, "DSCP bits that mark INT 2.1")
int21.prefs.udp_port = Pref.uint("INT UDP port", 0, "UDP destination port that marks INT 2.1 (0: none)")
int21.prefs.report_port = Pref.uint("Report UDP port", 32766, "Telemetry report destination port")
int21.prefs.domain_id = Pref.uint("Domain Specific ID", 0x4944,
    "Domain Specific ID under which DS Instruction bit 0 is a source-only 4-byte packet number (0: none)")

local header_types = { [1] = "INT-MD", [2] = "destination", [3] = "INT-MX" }
local npts = { [0] = "DSCP (original DSCP kept)", [1] = "UDP port (original port kept)",
    [2] = "IP protocol (original L4 header follows)" }
local rep_types = { [0] = "Inner only", [1] = "INT", [2] = "IOAM" }
local in_types = { [0] = "None", [1] = "TLV", [2] = "Domain specific extension data", [3] = "Ethernet",
    [4] = "IPv4", [5] = "IPv6" }

local f = int21.fields
f.type = ProtoField.uint8("int21.shim.type", "Type", base.DEC, header_types, 0xf0)
f.npt = ProtoField.uint8("int21.shim.npt", "NPT", base.DEC, npts, 0x0c)
f.length = ProtoField.uint8("int21.shim.length", "Length (words after the shim)", base.DEC)
f.next = ProtoField.uint16("int21.shim.next", "UDP port, IP protocol or DSCP", base.DEC)
f.ver = ProtoField.uint8("int21.md.ver", "Ver", base.DEC, nil, 0xf0)
f.sequence = ProtoField.uint32("int21.source_only.sequence", "Packet number (source-only)", base.DEC)
f.d = ProtoField.bool("int21.md.d", "D (discard)", 8, nil, 0x08)
f.e = ProtoField.bool("int21.md.e", "E (max hop count exceeded)", 8, nil, 0x04)
f.m = ProtoField.bool("int21.md.m", "M (MTU exceeded)", 8, nil, 0x02)
f.hop_ml = ProtoField.uint8("int21.md.hop_ml", "Hop ML (words)", base.DEC, nil, 0x1f)
f.rhc = ProtoField.uint8("int21.md.remaining_hop_cnt", "Remaining Hop Count", base.DEC)
f.bitmap = ProtoField.uint16("int21.instructions", "Instruction Bitmap", base.HEX)
f.domain = ProtoField.uint16("int21.domain_id", "Domain Specific ID", base.HEX)
f.ds_ins = ProtoField.uint16("int21.ds_instructions", "DS Instruction", base.HEX)
f.ds_flags = ProtoField.uint16("int21.ds_flags", "DS Flags", base.HEX)
f.hop = ProtoField.bytes("int21.hop", "Hop")
f.node_id = ProtoField.uint32("int21.hop.node_id", "Node id", base.DEC_HEX)
f.l1_in = ProtoField.uint16("int21.hop.l1_ingress_port", "Level 1 ingress interface", base.DEC)
f.l1_out = ProtoField.uint16("int21.hop.l1_egress_port", "Level 1 egress interface", base.DEC)
f.hop_latency = ProtoField.uint32("int21.hop.hop_latency", "Hop latency", base.DEC)
f.queue = ProtoField.uint32("int21.hop.queue", "Queue id + occupancy", base.HEX)
f.ingress_ts = ProtoField.uint64("int21.hop.ingress_timestamp", "Ingress timestamp", base.DEC)
f.egress_ts = ProtoField.uint64("int21.hop.egress_timestamp", "Egress timestamp", base.DEC)
f.l2 = ProtoField.bytes("int21.hop.l2_ports", "Level 2 ingress + egress interfaces")
f.word = ProtoField.uint32("int21.hop.word", "Word", base.HEX)

local r = tr20.fields
r.ver = ProtoField.uint32("tr20.ver", "Ver", base.DEC, nil, 0xf0000000)
r.hw_id = ProtoField.uint32("tr20.hw_id", "hw_id", base.DEC, nil, 0x0fc00000)
r.seq = ProtoField.uint32("tr20.seq", "Sequence number", base.DEC, nil, 0x003fffff)
r.node_id = ProtoField.uint32("tr20.node_id", "Node id", base.DEC_HEX)
r.rep_type = ProtoField.uint8("tr20.rep_type", "RepType", base.DEC, rep_types, 0xf0)
r.in_type = ProtoField.uint8("tr20.in_type", "InType", base.DEC, in_types, 0x0f)
r.rep_len = ProtoField.uint8("tr20.report_length", "Report Length (words)", base.DEC)
r.md_len = ProtoField.uint8("tr20.md_length", "MD Length (words)", base.DEC)
r.flags = ProtoField.uint8("tr20.flags", "D Q F I", base.HEX, nil, 0xf0)
r.rep_md_bits = ProtoField.uint16("tr20.rep_md_bits", "RepMdBits", base.HEX)
r.domain = ProtoField.uint16("tr20.domain_id", "Domain Specific ID", base.HEX)
r.ds_md_bits = ProtoField.uint16("tr20.ds_md_bits", "DSMdBits", base.HEX)
r.ds_md_status = ProtoField.uint16("tr20.ds_md_status", "DSMdstatus", base.HEX)
r.drop = ProtoField.uint32("tr20.drop", "Queue id + drop reason", base.HEX)
-- Drop reasons: p4lang/switch's codes (the ones TR 2.0 cites) and
-- int-node's own (200-202).
local drop_reasons = { [0] = "unknown", [10] = "outer src mac zero", [11] = "outer src mac multicast",
    [12] = "outer dst mac zero", [13] = "outer ethernet miss", [14] = "src mac zero", [15] = "src mac multicast",
    [16] = "dst mac zero", [25] = "outer ip version invalid", [26] = "outer ip ttl zero",
    [27] = "outer ip src multicast", [28] = "outer ip src loopback", [29] = "outer ip miss",
    [30] = "ip version invalid", [31] = "ip ttl zero", [32] = "ip src multicast", [33] = "ip src loopback",
    [40] = "port vlan mapping miss", [41] = "stp state learning", [42] = "stp state blocking",
    [43] = "same ifindex", [44] = "multicast snooping enabled", [50] = "mtu check fail", [51] = "traffic manager",
    [60] = "acl deny", [61] = "racl deny", [62] = "urpf check fail", [63] = "ipsg miss", [64] = "ifindex",
    [200] = "int block malformed", [201] = "marked at the int domain's edge",
    [202] = "discard asked by the int header" }
r.drop_reason = ProtoField.uint8("tr20.drop_reason", "Drop reason", base.DEC, drop_reasons)
-- int-node's loss report (DSMdBits 0xE000 under the domain's ID).
r.loss_first = ProtoField.uint32("tr20.loss.first_sequence", "First packet number lost", base.DEC)
r.loss_count = ProtoField.uint32("tr20.loss.count", "Packets lost", base.DEC)
r.loss_source = ProtoField.uint32("tr20.loss.source_node", "Source node", base.DEC_HEX)

local ip_dsfield = Field.new("ip.dsfield.dscp")
local ipv6_dscp = Field.new("ipv6.tclass.dscp")
local udp_dstport = Field.new("udp.dstport")

local function bit_set(value, bit) return math.floor(value / 2 ^ (15 - bit)) % 2 == 1 end

-- One hop's metadata by the bitmap: bits 0-14 in order (4-6 are 8 bytes),
-- then the domain specific words, then the checksum complement (bit 15).
-- The same layout carries a report's RepMdBits metadata (bit 0 reserved).
local function dissect_metadata(buf, at, bitmap, tree, fields)
    for bit = 0, 14 do
        if bit_set(bitmap, bit) then
            if bit == 0 then tree:add(fields.node_id, buf(at, 4)); at = at + 4
            elseif bit == 1 then tree:add(fields.l1_in, buf(at, 2)); tree:add(fields.l1_out, buf(at + 2, 2)); at = at + 4
            elseif bit == 2 then tree:add(fields.hop_latency, buf(at, 4)); at = at + 4
            elseif bit == 3 then tree:add(fields.queue, buf(at, 4)); at = at + 4
            elseif bit == 4 then tree:add(fields.ingress_ts, buf(at, 8)); at = at + 8
            elseif bit == 5 then tree:add(fields.egress_ts, buf(at, 8)); at = at + 8
            elseif bit == 6 then tree:add(fields.l2, buf(at, 8)); at = at + 8
            else tree:add(fields.word, buf(at, 4)); at = at + 4 end
        end
    end
    return at
end

-- The header type and length of a block (a 4-byte shim, TCP/UDP's or
-- VXLAN-GPE's, then the header) at the start of `buf`, or nil.
local function block_shape(buf)
    if buf:len() < 16 then return nil end
    local htype = math.floor(buf(0, 1):uint() / 16)
    local length = 4 + buf(1, 1):uint() * 4
    if htype < 1 or htype > 3 or math.floor(buf(4, 1):uint() / 16) ~= 2 or buf:len() < length then return nil end
    return htype, length
end

-- The INT-MD or INT-MX header and stack after the 4-byte shim of a block
-- of `length` bytes at the start of `buf`, into `subtree`.
local function dissect_body(buf, subtree, htype, length)
    subtree:add(f.ver, buf(4, 1)); subtree:add(f.d, buf(4, 1))
    local bitmap = buf(8, 2):uint()
    if htype == 1 then
        subtree:add(f.e, buf(4, 1)); subtree:add(f.m, buf(4, 1))
        subtree:add(f.hop_ml, buf(6, 1)); subtree:add(f.rhc, buf(7, 1))
    end
    subtree:add(f.bitmap, buf(8, 2)); subtree:add(f.domain, buf(10, 2))
    subtree:add(f.ds_ins, buf(12, 2)); subtree:add(f.ds_flags, buf(14, 2))
    local hop_len = (buf(6, 1):uint() % 32) * 4
    -- The packet number sits below the hops, where the domain defines it.
    local numbered = htype == 1 and int21.prefs.domain_id ~= 0 and buf(10, 2):uint() == int21.prefs.domain_id
        and bit32.band(buf(12, 2):uint(), 0x8000) ~= 0 and length >= 20
    local stack_end = numbered and length - 4 or length
    if numbered then subtree:add(f.sequence, buf(stack_end, 4)) end
    if htype == 1 and hop_len > 0 then
        local at, index = 16, 0
        while at + hop_len <= stack_end do
            local hop = subtree:add(f.hop, buf(at, hop_len))
            hop:set_text(string.format("Hop %d", index))
            dissect_metadata(buf, at, bitmap, hop, f)
            at, index = at + hop_len, index + 1
        end
        subtree:append_text(string.format(", INT-MD, %d hop(s)", index))
    end
    return length
end

-- The block at the start of `buf`; its length, or nil when it is not one.
local function dissect_block(buf, tree)
    local htype, length = block_shape(buf)
    if htype == nil then return nil end
    local subtree = tree:add(int21, buf(0, length))
    subtree:add(f.type, buf(0, 1)); subtree:add(f.npt, buf(0, 1))
    subtree:add(f.length, buf(1, 1)); subtree:add(f.next, buf(2, 2))
    return dissect_body(buf, subtree, htype, length)
end
-- The DSCP of the innermost IP header, IPv4's or IPv6's.
local function innermost_dscp()
    local all = { ip_dsfield() }
    for _, dscp in ipairs({ ipv6_dscp() }) do all[#all + 1] = dscp end
    return all[#all]
end

local function heuristic(buf, pinfo, tree)
    local dscp = innermost_dscp()
    local port = udp_dstport()
    local by_dscp = dscp ~= nil and bit32.band(dscp.value, int21.prefs.dscp_mask) ==
        bit32.band(int21.prefs.dscp_value, int21.prefs.dscp_mask)
    local by_port = port ~= nil and int21.prefs.udp_port ~= 0 and port.value == int21.prefs.udp_port
    if not (by_dscp or by_port) then return false end
    local length = dissect_block(buf, tree)
    if length == nil then return false end
    pinfo.cols.protocol:append("/INT2.1")
    if buf:len() > length then
        Dissector.get("data"):call(buf(length):tvb(), pinfo, tree)
    end
    return true
end

-- One group: its header, then each individual report.
local function dissect_group(buf, pinfo, tree)
    local subtree = tree:add(tr20, buf())
    subtree:add(r.ver, buf(0, 4)); subtree:add(r.hw_id, buf(0, 4)); subtree:add(r.seq, buf(0, 4))
    subtree:add(r.node_id, buf(4, 4))
    local at = 8
    while buf:len() >= at + 4 do
        local rep_len = buf(at + 1, 1):uint()
        local body = rep_len == 255 and buf:len() - at - 4 or rep_len * 4
        if buf:len() < at + 4 + body then break end
        local report = subtree:add(buf(at, 4 + body), "Individual report")
        report:add(r.rep_type, buf(at, 1)); report:add(r.in_type, buf(at, 1))
        report:add(r.rep_len, buf(at + 1, 1)); report:add(r.md_len, buf(at + 2, 1)); report:add(r.flags, buf(at + 3, 1))
        local inner = at + 4
        if math.floor(buf(at, 1):uint() / 16) == 1 and body >= 8 then
            local bits = buf(at + 4, 2):uint()
            report:add(r.rep_md_bits, buf(at + 4, 2)); report:add(r.domain, buf(at + 6, 2))
            report:add(r.ds_md_bits, buf(at + 8, 2)); report:add(r.ds_md_status, buf(at + 10, 2))
            local md_at = dissect_metadata(buf, at + 12, bits - bits % 2, report, f)
            if bits % 2 == 1 then
                report:add(r.drop, buf(md_at, 4)); report:add(r.drop_reason, buf(md_at + 1, 1))
                md_at = md_at + 4
            end
            local ds_id, ds_bits = buf(at + 6, 2):uint(), buf(at + 8, 2):uint()
            if ds_id ~= 0 and ds_id == int21.prefs.domain_id and ds_bits == 0xe000 and buf:len() >= md_at + 12 then
                report:add(r.loss_first, buf(md_at, 4)); report:add(r.loss_count, buf(md_at + 4, 4))
                report:add(r.loss_source, buf(md_at + 8, 4))
            end
            inner = at + 12 + buf(at + 2, 1):uint() * 4
        end
        -- The packet inside, to Wireshark's own dissectors: from its IP
        -- header (InType 4, 5) or its Ethernet header (3, a drop report's).
        local in_type = buf(at, 1):uint() % 16
        local inner_dissectors = { [3] = "eth_withoutfcs", [4] = "ip", [5] = "ipv6" }
        if inner_dissectors[in_type] ~= nil and at + 4 + body > inner then
            local packet = buf(inner, at + 4 + body - inner):tvb()
            Dissector.get(inner_dissectors[in_type]):call(packet, pinfo, tree)
        end
        at = at + 4 + body
    end
    pinfo.cols.info = string.format("Telemetry Report 2.0 seq %d node %d", buf(0, 4):uint() % 4194304, buf(4, 4):uint())
end

-- The length of each group where buf holds several of one length back to
-- back (a GSO send captured on the sending host, before the kernel cut
-- it): the fewest segments whose every start reads as a group header of
-- version 2 from the same node. nil for one group.
local function gso_segment(buf)
    local len = buf:len()
    for segments = 2, 64 do
        if len % segments == 0 and len / segments >= 12 then
            local one = len / segments
            local all = true
            for at = one, len - one, one do
                if math.floor(buf(at, 1):uint() / 16) ~= 2 or buf(at + 4, 4):uint() ~= buf(4, 4):uint() then
                    all = false
                    break
                end
            end
            if all then return one end
        end
    end
    return nil
end

local function report_heuristic(buf, pinfo, tree)
    local port = udp_dstport()
    if port == nil or port.value ~= int21.prefs.report_port or buf:len() < 12 then return false end
    if math.floor(buf(0, 1):uint() / 16) ~= 2 then return false end
    pinfo.cols.protocol = "TR 2.0"
    local one = gso_segment(buf)
    if one == nil then
        dissect_group(buf, pinfo, tree)
        return true
    end
    for at = 0, buf:len() - one, one do
        dissect_group(buf(at, one):tvb(), pinfo, tree)
    end
    pinfo.cols.info = string.format("Telemetry Report 2.0: %d groups (one GSO send)", buf:len() / one)
    return true
end

-- INT 2.1 in VXLAN-GPE: the INT shim (Type, Length, G, Next Protocol),
-- the block, then what the shim's Next Protocol names.
local g = int21_gpe.fields
g.type = ProtoField.uint8("int21gpe.type", "Type", base.DEC, header_types, 0xf0)
g.length = ProtoField.uint8("int21gpe.length", "Length (words after the shim)", base.DEC)
g.g = ProtoField.bool("int21gpe.g", "G (original packet was plain VXLAN)", 8, nil, 0x80)
g.next = ProtoField.uint8("int21gpe.next_protocol", "Next Protocol", base.HEX,
    { [1] = "IPv4", [2] = "IPv6", [3] = "Ethernet", [4] = "NSH", [0x82] = "INT" })
local gpe_next = { [1] = "ip", [2] = "ipv6", [3] = "eth_withoutfcs" }

function int21_gpe.dissector(buf, pinfo, tree)
    local htype, length = block_shape(buf)
    if htype == nil then return 0 end
    local subtree = tree:add(int21_gpe, buf(0, length))
    subtree:add(g.type, buf(0, 1)); subtree:add(g.length, buf(1, 1))
    subtree:add(g.g, buf(2, 1)); subtree:add(g.next, buf(3, 1))
    dissect_body(buf, subtree, htype, length)
    pinfo.cols.protocol:append("/INT2.1")
    local next_protocol = buf(3, 1):uint()
    if buf:len() > length then
        local rest = buf(length):tvb()
        if next_protocol == 0x82 then
            int21_gpe.dissector(rest, pinfo, tree)
        else
            Dissector.get(gpe_next[next_protocol] or "data"):call(rest, pinfo, tree)
        end
    end
    return buf:len()
end

DissectorTable.get("vxlan.next_proto"):add(0x82, int21_gpe)

-- INT 2.1 in a Geneve option of class 0x0103 (Type: the INT header type):
-- Wireshark's Geneve dissector shows the option as data, so this
-- postdissector reads the options it found.
local int21_geneve = Proto("int21geneve", "In-band Network Telemetry 2.1 in Geneve")
local geneve_option = Field.new("geneve.option")
local gv = int21_geneve.fields
gv.type = ProtoField.uint8("int21geneve.type", "Type", base.DEC, header_types, 0x7f)
gv.length = ProtoField.uint8("int21geneve.length", "Length (words after the option header)", base.DEC, nil, 0x1f)

function int21_geneve.dissector(_, pinfo, tree)
    for _, option in ipairs({ geneve_option() }) do
        local range = option.range
        if range:len() >= 16 and range(0, 2):uint() == 0x0103 then
            local htype = bit32.band(range(2, 1):uint(), 0x7f)
            local length = 4 + bit32.band(range(3, 1):uint(), 0x1f) * 4
            if (htype == 1 or htype == 3) and range:len() >= length then
                local subtree = tree:add(int21_geneve, range(0, length))
                subtree:add(gv.type, range(2, 1)); subtree:add(gv.length, range(3, 1))
                dissect_body(range:tvb(), subtree, htype, length)
                pinfo.cols.protocol:append("/INT2.1")
            end
        end
    end
end

register_postdissector(int21_geneve)
int21:register_heuristic("udp", heuristic)
int21:register_heuristic("tcp", heuristic)
tr20:register_heuristic("udp", report_heuristic)
