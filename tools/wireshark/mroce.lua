-- Wireshark / tshark dissector for the MRoCE v0.1 wire format (spec_model/SPEC.md sections 2, 3
-- and 4). Load it with
--
--     tshark -X lua_script:tools/wireshark/mroce.lua -r capture.pcap
--
-- or copy it into the personal Lua plugin folder (tools/wireshark/README.md). It decodes the UDP
-- payload of frames to UDP destination port 4793 ([R-ENC-5]) and to the port of the preference
-- mroce.udp_port: BTH, then the extension of the opcode (table 3.2), the payload and the ICRC,
-- which it verifies (CRC-32C, [R-HDR-28]). It runs the transport-level checks 13..23 of [R-VAL-1]
-- in their order and names the first that fails in the field mroce.error with the error kind of
-- section 4. It never raises a Lua error on a malformed or cut frame: a field whose bytes are not
-- in the capture is left out and the packet is flagged.

local DEFAULT_PORT = 4793

---------------------------------------------------------------------------------------------------
-- 32-bit operations: bit32 in Lua 5.2 (Debian 12's tshark), native operators from Lua 5.3 on.
---------------------------------------------------------------------------------------------------

local band, bxor, rshift
if bit32 then
    band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
else
    -- Lua >= 5.3: integers and native operators (compiled at run time so that Lua 5.2 can parse
    -- this file).
    local ops = load("return function(a, b) return (a & b) & 0xFFFFFFFF end, " ..
                     "function(a, b) return (a ~ b) & 0xFFFFFFFF end, " ..
                     "function(a, n) return (a & 0xFFFFFFFF) >> n end")
    band, bxor, rshift = ops()
end

---------------------------------------------------------------------------------------------------
-- CRC-32C ([R-HDR-28]): reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF,
-- one table lookup per byte.
---------------------------------------------------------------------------------------------------

local CRC_TABLE = {}
for n = 0, 255 do
    local c = n
    for _ = 1, 8 do
        if band(c, 1) == 1 then
            c = bxor(rshift(c, 1), 0x82F63B78)
        else
            c = rshift(c, 1)
        end
    end
    CRC_TABLE[n] = c
end

-- CRC-32C of the Lua string s.
local function crc32c(s)
    local crc = 0xFFFFFFFF
    local byte = string.byte
    local n = #s
    local i = 1
    while i <= n do
        local j = i + 255
        if j > n then j = n end
        local chunk = { byte(s, i, j) }
        for k = 1, #chunk do
            crc = bxor(CRC_TABLE[band(bxor(crc, chunk[k]), 0xFF)], rshift(crc, 8))
        end
        i = j + 1
    end
    return bxor(crc, 0xFFFFFFFF)
end

---------------------------------------------------------------------------------------------------
-- Tables: opcodes (3.2), NAK codes (12.3), reasons ([R-HDR-27]).
---------------------------------------------------------------------------------------------------

local OP = {
    SEND = 0x01, WRITE = 0x02, WRITE_IMM = 0x03, READ_REQ = 0x04, READ_RESP = 0x05,
    ACK = 0x10, NAK = 0x11, PROBE = 0x12,
    CONNECT = 0x20, ACCEPT = 0x21, REJECT = 0x22, DISCONNECT = 0x23, DISCONNECT_ACK = 0x24,
}

local OPCODE_NAMES = {
    [0x01] = "SEND", [0x02] = "WRITE", [0x03] = "WRITE_IMM", [0x04] = "READ_REQ",
    [0x05] = "READ_RESP", [0x10] = "ACK", [0x11] = "NAK", [0x12] = "PROBE",
    [0x20] = "CONNECT", [0x21] = "ACCEPT", [0x22] = "REJECT", [0x23] = "DISCONNECT",
    [0x24] = "DISCONNECT_ACK",
}

-- Extension length after the BTH (table 3.2).
local EXT_LEN = {
    [0x01] = 24, [0x02] = 32, [0x03] = 40, [0x04] = 32, [0x05] = 20,
    [0x10] = 48, [0x11] = 8, [0x12] = 0,
    [0x20] = 16, [0x21] = 16, [0x22] = 4, [0x23] = 4, [0x24] = 0,
}

local NAK_CODE_NAMES = { [1] = "RNR", [2] = "RemoteAccess", [3] = "InvalidRequest", [4] = "Length" }

local REASON_NAMES = {
    [0] = "normal close",
    [1] = "no such service / not listening",
    [2] = "resources exhausted",
    [3] = "unsupported parameters",
    [4] = "peer failure detected",
    [5] = "local application abort",
}

local FLAG_AR, FLAG_RETX, FLAG_VOID = 0x8000, 0x4000, 0x2000

local BTH_LEN, ICRC_LEN, MAX_PAYLOAD = 16, 4, 8192

local function is_data(op) return op >= 0x01 and op <= 0x05 end
local function is_control(op) return op >= 0x20 and op <= 0x24 end

local function allowed_flags(op)
    if is_data(op) then return FLAG_AR + FLAG_RETX + FLAG_VOID end
    if op == OP.PROBE then return FLAG_AR end
    return 0
end

local function flags_text(flags)
    local names = {}
    if band(flags, FLAG_AR) ~= 0 then names[#names + 1] = "AR" end
    if band(flags, FLAG_RETX) ~= 0 then names[#names + 1] = "RETX" end
    if band(flags, FLAG_VOID) ~= 0 then names[#names + 1] = "VOID" end
    if #names == 0 then return "-" end
    return table.concat(names, ",")
end

local function hex32(v) return string.format("0x%08x", v) end

---------------------------------------------------------------------------------------------------
-- Protocol, fields, expert infos, preference.
---------------------------------------------------------------------------------------------------

local mroce = Proto("mroce", "MRoCE Transport Protocol")

local F = {
    -- BTH, 3.1
    bth          = ProtoField.none("mroce.bth", "Base Transport Header"),
    dh           = ProtoField.none("mroce.dh", "Data Header"),
    send         = ProtoField.none("mroce.send", "SEND Extension"),
    reth         = ProtoField.none("mroce.reth", "RDMA Extended Transport Header"),
    imm          = ProtoField.none("mroce.imm", "IMM Extension"),
    aeth         = ProtoField.none("mroce.aeth", "ACK Extended Header"),
    nak          = ProtoField.none("mroce.nak", "NAK Header"),
    conn         = ProtoField.none("mroce.conn", "Connection Header"),
    rej          = ProtoField.none("mroce.rej", "Reject Header"),
    bth_version  = ProtoField.uint8("mroce.bth.version", "Version", base.DEC, nil, 0xF0),
    bth_rsvd     = ProtoField.uint8("mroce.bth.rsvd", "Reserved (4 bits)", base.HEX, nil, 0x0F),
    bth_opcode   = ProtoField.uint8("mroce.bth.opcode", "Opcode", base.HEX, OPCODE_NAMES),
    bth_flags    = ProtoField.uint16("mroce.bth.flags", "Flags", base.HEX),
    bth_flag_ar  = ProtoField.bool("mroce.bth.flags.ar", "AR (ACK request)", 16, nil, FLAG_AR),
    bth_flag_retx = ProtoField.bool("mroce.bth.flags.retx", "RETX (retransmission)", 16, nil, FLAG_RETX),
    bth_flag_void = ProtoField.bool("mroce.bth.flags.void", "VOID (PSN voided)", 16, nil, FLAG_VOID),
    bth_flag_rsvd = ProtoField.uint16("mroce.bth.flags.rsvd", "Reserved flags", base.HEX, nil, 0x1FFF),
    bth_dcid     = ProtoField.uint32("mroce.bth.dcid", "Destination Connection ID", base.HEX),
    bth_path     = ProtoField.uint16("mroce.bth.path", "Path ID", base.DEC),
    bth_rsvd2    = ProtoField.uint16("mroce.bth.rsvd2", "Reserved", base.HEX),
    bth_ts       = ProtoField.uint32("mroce.bth.ts", "Timestamp (us)", base.DEC),
    -- DH, 3.3
    dh_psn       = ProtoField.uint32("mroce.dh.psn", "PSN", base.HEX),
    dh_stream    = ProtoField.uint16("mroce.dh.stream", "Stream ID", base.DEC),
    dh_plen      = ProtoField.uint16("mroce.dh.plen", "Payload Length", base.DEC),
    dh_msn       = ProtoField.uint32("mroce.dh.msn", "MSN", base.DEC),
    dh_mlen      = ProtoField.uint32("mroce.dh.mlen", "Message Length", base.DEC),
    dh_moff      = ProtoField.uint32("mroce.dh.moff", "Message Offset", base.DEC),
    -- SEND ext, RETH, IMM ext, 3.4
    send_rsn     = ProtoField.uint32("mroce.send.rsn", "RSN", base.DEC),
    reth_va      = ProtoField.uint64("mroce.reth.va", "Remote Virtual Address", base.HEX),
    reth_rkey    = ProtoField.uint32("mroce.reth.rkey", "Remote Key", base.HEX),
    imm_rsn      = ProtoField.uint32("mroce.imm.rsn", "RSN", base.DEC),
    imm_data     = ProtoField.uint32("mroce.imm.data", "Immediate Data", base.HEX),
    -- AETH, 3.5
    aeth_cpsn    = ProtoField.uint32("mroce.aeth.cpsn", "Cumulative PSN", base.HEX),
    aeth_ce      = ProtoField.uint32("mroce.aeth.ce", "CE Count", base.DEC),
    aeth_tse     = ProtoField.uint32("mroce.aeth.tse", "Timestamp Echo (us)", base.DEC),
    aeth_hint    = ProtoField.uint32("mroce.aeth.hint", "Rate Hint (Mb/s)", base.DEC),
    aeth_sack    = ProtoField.bytes("mroce.aeth.sack", "SACK bitmap"),
    aeth_sack_bits = ProtoField.string("mroce.aeth.sack.bits", "SACK set bits"),
    aeth_sack_count = ProtoField.uint16("mroce.aeth.sack.count", "SACK bits set", base.DEC),
    -- NAKH, 3.6
    nak_psn      = ProtoField.uint32("mroce.nak.psn", "NAKed PSN", base.HEX),
    nak_code     = ProtoField.uint8("mroce.nak.code", "Code", base.DEC, NAK_CODE_NAMES),
    nak_rsvd     = ProtoField.uint8("mroce.nak.rsvd", "Reserved", base.HEX),
    nak_detail   = ProtoField.uint16("mroce.nak.detail", "Detail", base.DEC),
    -- CONN, REJ, 3.8
    conn_scid    = ProtoField.uint32("mroce.conn.scid", "Source Connection ID", base.HEX),
    conn_isn     = ProtoField.uint32("mroce.conn.isn", "Initial PSN", base.HEX),
    conn_paths   = ProtoField.uint16("mroce.conn.paths", "Path Count", base.DEC),
    conn_streams = ProtoField.uint16("mroce.conn.streams", "Stream Count", base.DEC),
    conn_maxpay  = ProtoField.uint16("mroce.conn.maxpay", "Max Payload", base.DEC),
    conn_wcap    = ProtoField.uint16("mroce.conn.wcap", "Window Cap", base.DEC),
    rej_reason   = ProtoField.uint8("mroce.rej.reason", "Reason", base.DEC, REASON_NAMES),
    rej_rsvd     = ProtoField.uint24("mroce.rej.rsvd", "Reserved", base.HEX),
    -- payload, ICRC
    payload      = ProtoField.bytes("mroce.payload", "Payload"),
    payload_off  = ProtoField.uint32("mroce.payload.off", "Payload offset in frame", base.DEC),
    payload_len  = ProtoField.uint32("mroce.payload.len", "Payload length", base.DEC),
    icrc         = ProtoField.uint32("mroce.icrc", "ICRC", base.HEX),
    icrc_calc    = ProtoField.uint32("mroce.icrc.calculated", "ICRC calculated", base.HEX),
    icrc_status  = ProtoField.string("mroce.icrc.status", "ICRC status"),
    -- validation ([R-VAL-1] checks 13..23)
    error        = ProtoField.string("mroce.error", "Validation error"),
}

local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
mroce.fields = field_list

local E = {
    malformed = ProtoExpert.new("mroce.malformed", "Malformed MRoCE packet",
                                expert.group.MALFORMED, expert.severity.ERROR),
    bad_icrc  = ProtoExpert.new("mroce.icrc.bad", "Bad ICRC",
                                expert.group.CHECKSUM, expert.severity.ERROR),
    invalid   = ProtoExpert.new("mroce.invalid", "Packet fails MRoCE validation",
                                expert.group.PROTOCOL, expert.severity.WARN),
    lua_error = ProtoExpert.new("mroce.dissector_bug", "MRoCE dissector failed",
                                expert.group.MALFORMED, expert.severity.ERROR),
}
mroce.experts = { E.malformed, E.bad_icrc, E.invalid, E.lua_error }

mroce.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
    "Additional UDP destination port to decode as MRoCE ([R-ENC-5]); 4793 is always decoded")

---------------------------------------------------------------------------------------------------
-- Dissection.
---------------------------------------------------------------------------------------------------

-- Adds the SACK bitmap and its set bit indices ([R-HDR-20]: bit i is byte i/8, mask 0x80 >> i%8).
local function add_sack(tree, tvb, off, cpsn)
    local item = tree:add(F.aeth_sack, tvb(off, 32))
    local s = tvb:raw(off, 32)
    local bits = {}
    for i = 0, 255 do
        local b = string.byte(s, math.floor(i / 8) + 1)
        if band(b, rshift(0x80, i % 8)) ~= 0 then bits[#bits + 1] = i end
    end
    local text = #bits == 0 and "none" or table.concat(bits, ",")
    item:add(F.aeth_sack_count, tvb(off, 32), #bits):set_generated()
    local bits_item = item:add(F.aeth_sack_bits, tvb(off, 32), text)
    bits_item:set_generated()
    if #bits > 0 then
        local psns = {}
        for k = 1, math.min(#bits, 8) do
            psns[#psns + 1] = hex32((cpsn + 1 + bits[k]) % 4294967296)
        end
        if #bits > 8 then psns[#psns + 1] = "..." end
        bits_item:append_text(" (PSNs " .. table.concat(psns, " ") .. ")")
    end
    return bits
end

local function dissect(tvb, pinfo, tree)
    local cap = tvb:len()               -- bytes present in the capture
    local rep = tvb:reported_len()      -- the UDP payload length on the wire
    pinfo.cols.protocol = "MRoCE"
    local root = tree:add(mroce, tvb())
    local err = nil                     -- first failing check of [R-VAL-1] (13..23)
    local function fail(kind) if err == nil then err = kind end end
    local cut = false                   -- the capture lacks bytes the packet has on the wire
    local function have(off, len)
        if off + len <= cap then return true end
        if off + len <= rep then cut = true end
        return false
    end

    -- check 13: room for BTH + ICRC
    if rep < BTH_LEN + ICRC_LEN then fail("TransportLength") end
    if cap < 2 then
        root:add_proto_expert_info(E.malformed, "Too short for a BTH (" .. cap .. " bytes)")
        if err then root:add(F.error, err):set_generated() end
        pinfo.cols.info = "MRoCE [Malformed: " .. cap .. " bytes]"
        return
    end

    -- BTH, 3.1
    local b0 = tvb(0, 1):uint()
    local op = tvb(1, 1):uint()
    local opname = OPCODE_NAMES[op] or string.format("UNKNOWN(0x%02x)", op)
    local bth_len = math.min(BTH_LEN, cap)
    local bth = root:add(F.bth, tvb(0, bth_len))
    bth:add(F.bth_version, tvb(0, 1))
    bth:add(F.bth_rsvd, tvb(0, 1))
    bth:add(F.bth_opcode, tvb(1, 1))
    local version = rshift(b0, 4)
    if version ~= 1 then fail("Version") end                  -- check 14
    if OPCODE_NAMES[op] == nil then fail("Opcode") end        -- check 15
    root:append_text(", " .. opname)

    local flags, dcid, path = 0, 0, 0
    if have(0, BTH_LEN) then
        flags = tvb(2, 2):uint()
        local fl = bth:add(F.bth_flags, tvb(2, 2))
        fl:append_text(" (" .. flags_text(flags) .. ")")
        fl:add(F.bth_flag_ar, tvb(2, 2))
        fl:add(F.bth_flag_retx, tvb(2, 2))
        fl:add(F.bth_flag_void, tvb(2, 2))
        fl:add(F.bth_flag_rsvd, tvb(2, 2))
        dcid = tvb(4, 4):uint()
        bth:add(F.bth_dcid, tvb(4, 4))
        path = tvb(8, 2):uint()
        bth:add(F.bth_path, tvb(8, 2))
        bth:add(F.bth_rsvd2, tvb(10, 2))
        bth:add(F.bth_ts, tvb(12, 4))
    end

    -- check 16: the UDP payload fits the opcode ([R-HDR-7], [R-HDR-8])
    local ext = EXT_LEN[op] or 0
    local fixed = BTH_LEN + ext + ICRC_LEN
    local payload_len = 0
    if EXT_LEN[op] ~= nil then
        if is_data(op) then
            if rep < fixed then
                fail("TransportLength")
            else
                payload_len = rep - fixed
                if payload_len > MAX_PAYLOAD then fail("TransportLength") end
            end
        elseif rep ~= fixed then
            fail("TransportLength")
        end
    end
    local length_ok = err == nil
    local info = opname .. " path=" .. path

    -- check 17: ICRC over everything before it ([R-HDR-28]). Shown last in the tree.
    local icrc_ok = nil   -- nil: not verified (not all bytes captured)
    local icrc_off, icrc, icrc_calc = nil, nil, nil
    if rep >= BTH_LEN + ICRC_LEN then
        icrc_off = rep - ICRC_LEN
        if have(icrc_off, ICRC_LEN) then
            icrc = tvb(icrc_off, 4):uint()
            icrc_calc = crc32c(tvb:raw(0, icrc_off))
            icrc_ok = icrc_calc == icrc
        end
    end
    if length_ok and icrc_ok == false then fail("Icrc") end

    -- check 18: BTH reserved bits, flags allowed, DCID rule, path ID of control packets
    if have(0, BTH_LEN) and OPCODE_NAMES[op] ~= nil then
        local rsvd_zero = band(b0, 0x0F) == 0 and tvb(10, 2):uint() == 0
        local flags_ok = band(flags, 0xFFFF - allowed_flags(op)) == 0
        local dcid_ok
        if op == OP.CONNECT then dcid_ok = dcid == 0 else dcid_ok = dcid ~= 0 end
        local path_ok = not is_control(op) or path == 0
        if not (rsvd_zero and flags_ok and dcid_ok and path_ok) then fail("Reserved") end
    end

    -- The extension (3.3 .. 3.8), as far as the capture holds it.
    local e = BTH_LEN
    if is_data(op) then
        if have(e, 20) then
            local dh = root:add(F.dh, tvb(e, 20))
            local psn = tvb(e, 4):uint()
            local plen = tvb(e + 6, 2):uint()
            local mlen = tvb(e + 12, 4):uint()
            local moff = tvb(e + 16, 4):uint()
            dh:add(F.dh_psn, tvb(e, 4))
            dh:add(F.dh_stream, tvb(e + 4, 2))
            dh:add(F.dh_plen, tvb(e + 6, 2))
            dh:add(F.dh_msn, tvb(e + 8, 4))
            dh:add(F.dh_mlen, tvb(e + 12, 4))
            dh:add(F.dh_moff, tvb(e + 16, 4))
            info = info .. " psn=" .. hex32(psn)
            if length_ok then
                if plen ~= payload_len then fail("PayloadLength") end          -- check 19
                local range_ok = mlen <= 2147483648 and moff + plen <= mlen    -- check 20
                if op == OP.READ_REQ and (plen ~= 0 or moff ~= 0) then range_ok = false end
                if band(flags, FLAG_VOID) ~= 0 and plen ~= 0 then range_ok = false end
                if not range_ok then fail("Range") end
            end
            info = info .. " msn=" .. tvb(e + 8, 4):uint() .. " off=" .. moff .. " len=" .. plen
        end
        e = e + 20
        if op == OP.SEND then
            if have(e, 4) then
                local se = root:add(F.send, tvb(e, 4))
                se:add(F.send_rsn, tvb(e, 4))
                info = info .. " rsn=" .. tvb(e, 4):uint()
            end
            e = e + 4
        end
        if op == OP.WRITE or op == OP.WRITE_IMM or op == OP.READ_REQ then
            if have(e, 12) then
                local reth = root:add(F.reth, tvb(e, 12))
                reth:add(F.reth_va, tvb(e, 8))
                reth:add(F.reth_rkey, tvb(e + 8, 4))
            end
            e = e + 12
        end
        if op == OP.WRITE_IMM then
            if have(e, 8) then
                local imm = root:add(F.imm, tvb(e, 8))
                imm:add(F.imm_rsn, tvb(e, 4))
                imm:add(F.imm_data, tvb(e + 4, 4))
                info = info .. " rsn=" .. tvb(e, 4):uint() .. string.format(" imm=0x%08x", tvb(e + 4, 4):uint())
            end
            e = e + 8
        end
        if flags ~= 0 then info = info .. " " .. flags_text(flags) end
    elseif op == OP.ACK then
        if have(e, 48) then
            local a = root:add(F.aeth, tvb(e, 48))
            local cpsn = tvb(e, 4):uint()
            a:add(F.aeth_cpsn, tvb(e, 4))
            a:add(F.aeth_ce, tvb(e + 4, 4))
            a:add(F.aeth_tse, tvb(e + 8, 4))
            a:add(F.aeth_hint, tvb(e + 12, 4))
            local bits = add_sack(a, tvb, e + 16, cpsn)
            if length_ok and #bits > 0 and bits[1] == 0 then fail("SackBase") end   -- check 21
            info = info .. " cpsn=" .. hex32(cpsn)
            if #bits > 0 then
                local shown = {}
                for k = 1, math.min(#bits, 8) do shown[k] = "+" .. bits[k] end
                if #bits > 8 then shown[#shown + 1] = "..." end
                info = info .. " sack=" .. table.concat(shown, ",")
            end
            info = info .. " ce=" .. tvb(e + 4, 4):uint() .. " tse=" .. tvb(e + 8, 4):uint() ..
                   " hint=" .. tvb(e + 12, 4):uint()
        end
    elseif op == OP.NAK then
        if have(e, 8) then
            local n = root:add(F.nak, tvb(e, 8))
            local code = tvb(e + 4, 1):uint()
            local detail = tvb(e + 6, 2):uint()
            n:add(F.nak_psn, tvb(e, 4))
            n:add(F.nak_code, tvb(e + 4, 1))
            n:add(F.nak_rsvd, tvb(e + 5, 1))
            n:add(F.nak_detail, tvb(e + 6, 2))
            if length_ok then                                                    -- check 22
                local ok = code >= 1 and code <= 4 and tvb(e + 5, 1):uint() == 0 and
                           (code == 1 or detail == 0)
                if not ok then fail("Reserved") end
            end
            info = info .. " psn=" .. hex32(tvb(e, 4):uint()) .. " code=" ..
                   (NAK_CODE_NAMES[code] or tostring(code)) .. " detail=" .. detail
        end
    elseif op == OP.PROBE then
        if flags ~= 0 then info = info .. " " .. flags_text(flags) end
    elseif op == OP.CONNECT or op == OP.ACCEPT then
        if have(e, 16) then
            local c = root:add(F.conn, tvb(e, 16))
            c:add(F.conn_scid, tvb(e, 4))
            c:add(F.conn_isn, tvb(e + 4, 4))
            c:add(F.conn_paths, tvb(e + 8, 2))
            c:add(F.conn_streams, tvb(e + 10, 2))
            c:add(F.conn_maxpay, tvb(e + 12, 2))
            c:add(F.conn_wcap, tvb(e + 14, 2))
            local scid = tvb(e, 4):uint()
            local paths, streams = tvb(e + 8, 2):uint(), tvb(e + 10, 2):uint()
            local maxpay, wcap = tvb(e + 12, 2):uint(), tvb(e + 14, 2):uint()
            if length_ok then                                                    -- check 23
                local ok = scid ~= 0 and paths >= 1 and paths <= 256 and streams >= 1 and
                           maxpay >= 256 and maxpay <= 8192 and maxpay % 64 == 0 and
                           wcap >= 1 and wcap <= 256
                if not ok then fail("Range") end
            end
            info = string.format("%s dcid=0x%08x scid=0x%08x isn=0x%08x paths=%d streams=%d maxpay=%d wcap=%d",
                                 opname, dcid, scid, tvb(e + 4, 4):uint(), paths, streams, maxpay, wcap)
        end
    elseif op == OP.REJECT or op == OP.DISCONNECT then
        if have(e, 4) then
            local r = root:add(F.rej, tvb(e, 4))
            local reason = tvb(e, 1):uint()
            r:add(F.rej_reason, tvb(e, 1))
            r:add(F.rej_rsvd, tvb(e + 1, 3))
            if length_ok and (reason > 5 or tvb(e + 1, 3):uint() ~= 0) then      -- check 23
                fail("Reserved")
            end
            info = string.format("%s dcid=0x%08x reason=%d (%s)", opname, dcid, reason,
                                 REASON_NAMES[reason] or "reserved")
        end
    elseif op == OP.DISCONNECT_ACK then
        info = string.format("%s dcid=0x%08x", opname, dcid)
    end

    -- Payload of a data packet (READ_REQ included, length 0).
    if is_data(op) and length_ok then
        local frame_off = tvb:offset() + e
        local pitem
        if payload_len > 0 and have(e, payload_len) then
            pitem = root:add(F.payload, tvb(e, payload_len))
        else
            pitem = root
        end
        pitem:add(F.payload_off, frame_off):set_generated()
        pitem:add(F.payload_len, payload_len):set_generated()
    end

    -- ICRC, 3.9
    if icrc_ok ~= nil then
        local item = root:add(F.icrc, tvb(icrc_off, 4))
        item:append_text(icrc_ok and " [good]" or " [bad]")
        item:add(F.icrc_calc, tvb(icrc_off, 4), icrc_calc):set_generated()
        item:add(F.icrc_status, tvb(icrc_off, 4), icrc_ok and "good" or "bad"):set_generated()
        if not icrc_ok then
            item:add_proto_expert_info(E.bad_icrc,
                string.format("Bad ICRC: 0x%08x on the wire, 0x%08x calculated", icrc, icrc_calc))
        end
    else
        root:add(F.icrc_status, "unverified"):set_generated()
    end

    -- Summary.
    if err ~= nil then
        root:add(F.error, err):set_generated()
        if err == "TransportLength" then
            root:add_proto_expert_info(E.malformed,
                string.format("UDP payload of %d bytes does not fit %s (%d bytes of headers and ICRC)",
                              rep, opname, fixed))
        elseif err ~= "Icrc" then
            root:add_proto_expert_info(E.invalid, "Validation error " .. err)
        end
        info = info .. " [ERROR " .. err .. "]"
    end
    if cut then
        root:add_proto_expert_info(E.malformed,
            string.format("Cut short: %d of %d bytes captured", cap, rep))
    end
    if cut or err == "TransportLength" then info = info .. " [Malformed]" end
    if icrc_ok == false then info = info .. " [BAD ICRC]" end
    pinfo.cols.info = info
end

function mroce.dissector(tvb, pinfo, tree)
    -- The dissector guards every read itself; pcall is the last line of defence so that a bug
    -- still shows as a flagged packet rather than a Lua error.
    local ok, msg = pcall(dissect, tvb, pinfo, tree)
    if not ok then
        tree:add_proto_expert_info(E.lua_error, "MRoCE dissector failed: " .. tostring(msg))
    end
    return tvb:len()
end

---------------------------------------------------------------------------------------------------
-- Registration: UDP port 4793 always, plus the port of the preference.
---------------------------------------------------------------------------------------------------

local udp_table = DissectorTable.get("udp.port")
udp_table:add(DEFAULT_PORT, mroce)
local extra_port = 0

local function register_pref_port()
    local port = mroce.prefs.udp_port
    if port == extra_port then return end
    if extra_port ~= 0 and extra_port ~= DEFAULT_PORT then udp_table:remove(extra_port, mroce) end
    extra_port = port
    if port ~= 0 and port ~= DEFAULT_PORT and port <= 65535 then udp_table:add(port, mroce) end
end

function mroce.prefs_changed()
    register_pref_port()
end
