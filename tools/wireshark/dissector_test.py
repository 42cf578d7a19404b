#!/usr/bin/env python3
"""Tests of the MRoCE Wireshark dissector (tools/wireshark/mroce.lua) against the reference codec.

For every frame of a capture, the appendix-C canonical line printed by the reference codec
(canonical_lines, built on mroce::ref::decode / mroce::ref::canonical) must equal the line this
script rebuilds from the fields tshark dissects with mroce.lua (PDML output). Frames the reference
codec rejects must be flagged: the transport-level error kinds ([R-VAL-1] checks 13..23) must be
named by the dissector's field mroce.error, a bad ICRC must show as mroce.icrc.status "bad" with
its expert info, a frame cut short must carry the mroce.malformed expert info, and no frame may
ever show a Lua error.

Subcommands (ctest registers one test per subcommand, tools/wireshark/CMakeLists.txt):
  fixed              the checked-in capture testdata/mroce_all_opcodes.pcap
  testdata-current   the checked-in capture is what make_testdata writes today
  port               frames re-encoded to UDP port 5793, dissected with -o mroce.udp_port:5793
  live               captures of `mroce perf loopback --pcap` (mixed Send/Write-imm with loss, Read)
  mutations          seeded random mutations of the fixed capture's valid frames (bytes flipped,
                     UDP payload shortened or extended, capture cut), with and without a
                     recomputed ICRC: the dissector must name the reference codec's error kind
  canary             broken copies of the dissector must be caught by the comparison

Exit status: 0 pass, 1 fail, 77 skipped (tshark not installed). Python standard library only.
"""

import argparse
import ipaddress
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

OPCODES = {
    0x01: "SEND", 0x02: "WRITE", 0x03: "WRITE_IMM", 0x04: "READ_REQ", 0x05: "READ_RESP",
    0x10: "ACK", 0x11: "NAK", 0x12: "PROBE",
    0x20: "CONNECT", 0x21: "ACCEPT", 0x22: "REJECT", 0x23: "DISCONNECT", 0x24: "DISCONNECT_ACK",
}
DATA_OPCODES = {0x01, 0x02, 0x03, 0x04, 0x05}
NAK_CODES = {1: "RNR", 2: "RemoteAccess", 3: "InvalidRequest", 4: "Length"}
# Error kinds of [R-VAL-1] that the dissector itself decides (checks 13..23, on the UDP payload).
TRANSPORT_ERRORS = {"TransportLength", "Version", "Opcode", "Icrc", "Reserved", "PayloadLength",
                    "Range", "SackBase"}
MROCE_EXPERTS = {"mroce.malformed", "mroce.icrc.bad", "mroce.invalid", "mroce.dissector_bug"}
ALT_PORT = 5793


class Failure(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Running the tools
# ---------------------------------------------------------------------------------------------

def tool_env(workdir):
    # An empty home: no personal preferences or plugins (a copy of mroce.lua there would be
    # loaded twice) change what tshark does.
    env = dict(os.environ)
    home = os.path.join(workdir, "home")
    os.makedirs(home, exist_ok=True)
    env["HOME"] = home
    env["XDG_CONFIG_HOME"] = os.path.join(home, ".config")
    env.pop("WIRESHARK_CONFIG_DIR", None)
    return env


def run(cmd, workdir, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env(workdir))
    if check and p.returncode != 0:
        raise Failure("command failed (exit %d): %s\n%s%s" % (
            p.returncode, " ".join(cmd), p.stdout.decode(errors="replace")[-4000:],
            p.stderr.decode(errors="replace")[-4000:]))
    return p


def reference_lines(args, pcap, port=None):
    cmd = [args.canonical_lines]
    if port is not None:
        cmd += ["--udp-port", str(port)]
    out = run(cmd + [pcap], args.workdir).stdout.decode()
    lines = {}
    for row in out.splitlines():
        num, _, line = row.partition("\t")
        lines[int(num)] = line
    return lines


class Frame:
    """The fields of one dissected frame: name -> list of PDML attribute dicts, in tree order."""

    def __init__(self):
        self.num = None
        self.length = None
        self.caplen = None
        self.fields = {}
        self.protos = set()
        self.info = None

    def all(self, name):
        return self.fields.get(name, [])

    def has(self, name):
        return name in self.fields

    def show(self, name):
        f = self.fields.get(name)
        if not f:
            raise Failure("frame %s: field %s missing" % (self.num, name))
        return f[0].get("show", "")

    def showname(self, name):
        f = self.fields.get(name)
        if not f:
            raise Failure("frame %s: field %s missing" % (self.num, name))
        return f[0].get("showname", "")

    def int(self, name):
        s = self.show(name)
        try:
            return int(s, 0)
        except ValueError:
            if s in ("True", "False"):
                return 1 if s == "True" else 0
            raise Failure("frame %s: field %s is not a number: %r" % (self.num, name, s))

    def experts(self):
        """(severity text, message) of every expert info of the frame."""
        out = []
        for e in self.all("_ws.expert"):
            out.append(e.get("showname", ""))
        return out


def tshark_cmd(args, pcap, lua, options):
    cmd = [args.tshark, "-n", "-X", "lua_script:" + lua, "-r", pcap]
    for o in options:
        cmd += ["-o", o]
    return cmd


def check_stderr(stderr, what):
    for line in stderr.splitlines():
        if "Running as user" in line:
            continue
        if re.search(r"lua|error|invalid|unknown", line, re.IGNORECASE):
            raise Failure("tshark reported on %s: %s" % (what, stderr.strip()))


def dissect(args, pcap, lua=None, options=()):
    lua = lua or args.lua
    pdml = os.path.join(args.workdir, "dissected.pdml")
    with open(pdml, "wb") as out:
        p = subprocess.run(tshark_cmd(args, pcap, lua, options) + ["-T", "pdml"], stdout=out,
                           stderr=subprocess.PIPE, env=tool_env(args.workdir))
    if p.returncode != 0:
        raise Failure("tshark failed (exit %d) on %s: %s" % (
            p.returncode, pcap, p.stderr.decode(errors="replace")))
    check_stderr(p.stderr.decode(errors="replace"), pcap)
    frames = {}
    for _, pkt in ET.iterparse(pdml, events=("end",)):
        if pkt.tag != "packet":
            continue
        fr = Frame()
        for el in pkt.iter():
            if el.tag == "proto":
                fr.protos.add(el.get("name"))
            elif el.tag == "field":
                name = el.get("name")
                if name is None:
                    continue
                fr.fields.setdefault(name, []).append(dict(el.attrib))
        fr.num = fr.int("num")
        fr.length = fr.int("len")
        fr.caplen = fr.int("caplen")
        frames[fr.num] = fr
        pkt.clear()
    os.unlink(pdml)
    # The Info column is not in PDML: a second, light run.
    p = run(tshark_cmd(args, pcap, lua, options) +
            ["-T", "fields", "-E", "separator=\t", "-e", "frame.number", "-e", "_ws.col.Info"],
            args.workdir)
    for row in p.stdout.decode(errors="replace").splitlines():
        num, _, info = row.partition("\t")
        if num.strip().isdigit() and int(num) in frames:
            frames[int(num)].info = info
    return frames


# ---------------------------------------------------------------------------------------------
# The canonical line from the dissected fields (appendix C)
# ---------------------------------------------------------------------------------------------

def ipv6_text(s):
    return ":".join("%x" % int(g, 16) for g in ipaddress.IPv6Address(s).exploded.split(":"))


def value_name(fr, name, label):
    """The value-string name of a field from its display text, e.g. 'Opcode: ACK (0x10)'."""
    m = re.match(r"^%s: (.+) \((0x[0-9a-fA-F]+|\d+)\)$" % re.escape(label), fr.showname(name))
    if not m:
        raise Failure("frame %s: cannot read the name of %s from %r" % (
            fr.num, name, fr.showname(name)))
    return m.group(1)


def flags_text(fr):
    names = [n for n, f in (("AR", "ar"), ("RETX", "retx"), ("VOID", "void"))
             if fr.int("mroce.bth.flags." + f)]
    return ",".join(names) if names else "-"


def sack_checks(fr):
    """The SACK bitmap hex (appendix C) and a check of the listed bit indices against it."""
    raw = fr.all("mroce.aeth.sack")[0].get("value", "").lower()
    if not re.fullmatch(r"[0-9a-f]{64}", raw):
        raise Failure("frame %s: SACK bitmap %r is not 32 bytes" % (fr.num, raw))
    bits = [i for i in range(256) if int(raw[2 * (i // 8):2 * (i // 8) + 2], 16) & (0x80 >> (i % 8))]
    listed = fr.show("mroce.aeth.sack.bits")
    want = ",".join(str(b) for b in bits) if bits else "none"
    if listed != want:
        raise Failure("frame %s: SACK set bits listed as %r, the bitmap %s has %r" % (
            fr.num, listed, raw, want))
    if fr.int("mroce.aeth.sack.count") != len(bits):
        raise Failure("frame %s: SACK count %d, the bitmap has %d bits set" % (
            fr.num, fr.int("mroce.aeth.sack.count"), len(bits)))
    return raw


def dissected_line(fr):
    """The appendix-C line rebuilt from the dissected fields, "ERROR <kind>" when the dissector
    names a validation error, None when the frame was not dissected as MRoCE."""
    if "mroce" not in fr.protos:
        return None
    if fr.has("mroce.error"):
        return "ERROR " + fr.show("mroce.error")
    parts = ["ETH dst=%s src=%s type=0x%04x" % (
        fr.show("eth.dst").lower(), fr.show("eth.src").lower(), fr.int("eth.type"))]
    if "ipv6" in fr.protos:
        parts.append("IPV6 src=%s dst=%s dscp=%d ecn=%d flow=0x%05x hlim=%d" % (
            ipv6_text(fr.show("ipv6.src")), ipv6_text(fr.show("ipv6.dst")),
            fr.int("ipv6.tclass.dscp"), fr.int("ipv6.tclass.ecn"), fr.int("ipv6.flow"),
            fr.int("ipv6.hlim")))
    else:
        parts.append("IPV4 src=%s dst=%s dscp=%d ecn=%d id=0x%04x df=%d ttl=%d" % (
            fr.show("ip.src"), fr.show("ip.dst"), fr.int("ip.dsfield.dscp"),
            fr.int("ip.dsfield.ecn"), fr.int("ip.id"), fr.int("ip.flags.df"), fr.int("ip.ttl")))
    parts.append("UDP sport=%d dport=%d len=%d csum=0x%04x" % (
        fr.int("udp.srcport"), fr.int("udp.dstport"), fr.int("udp.length"),
        fr.int("udp.checksum")))
    op = fr.int("mroce.bth.opcode")
    parts.append("BTH ver=%d op=%s flags=%s dcid=0x%08x path=%d ts=%d" % (
        fr.int("mroce.bth.version"), value_name(fr, "mroce.bth.opcode", "Opcode"),
        flags_text(fr), fr.int("mroce.bth.dcid"), fr.int("mroce.bth.path"),
        fr.int("mroce.bth.ts")))
    if op in DATA_OPCODES:
        parts.append("DH psn=0x%08x stream=%d plen=%d msn=%d mlen=%d moff=%d" % (
            fr.int("mroce.dh.psn"), fr.int("mroce.dh.stream"), fr.int("mroce.dh.plen"),
            fr.int("mroce.dh.msn"), fr.int("mroce.dh.mlen"), fr.int("mroce.dh.moff")))
    if op == 0x01:
        parts.append("SEND rsn=%d" % fr.int("mroce.send.rsn"))
    if op in (0x02, 0x03, 0x04):
        parts.append("RETH va=0x%016x rkey=0x%08x" % (
            fr.int("mroce.reth.va"), fr.int("mroce.reth.rkey")))
    if op == 0x03:
        parts.append("IMM rsn=%d imm=0x%08x" % (fr.int("mroce.imm.rsn"), fr.int("mroce.imm.data")))
    if op == 0x10:
        parts.append("AETH cpsn=0x%08x ce=%d tse=%d hint=%d sack=%s" % (
            fr.int("mroce.aeth.cpsn"), fr.int("mroce.aeth.ce"), fr.int("mroce.aeth.tse"),
            fr.int("mroce.aeth.hint"), sack_checks(fr)))
    if op == 0x11:
        parts.append("NAK psn=0x%08x code=%s detail=%d" % (
            fr.int("mroce.nak.psn"), value_name(fr, "mroce.nak.code", "Code"),
            fr.int("mroce.nak.detail")))
    if op in (0x20, 0x21):
        parts.append("CONN scid=0x%08x isn=0x%08x paths=%d streams=%d maxpay=%d wcap=%d" % (
            fr.int("mroce.conn.scid"), fr.int("mroce.conn.isn"), fr.int("mroce.conn.paths"),
            fr.int("mroce.conn.streams"), fr.int("mroce.conn.maxpay"), fr.int("mroce.conn.wcap")))
    if op in (0x22, 0x23):
        parts.append("REJ reason=%d" % fr.int("mroce.rej.reason"))
    if op in DATA_OPCODES:
        off, length = fr.int("mroce.payload.off"), fr.int("mroce.payload.len")
        if length > 0:
            if not fr.has("mroce.payload"):
                raise Failure("frame %s: payload of %d bytes not shown" % (fr.num, length))
            pos = int(fr.all("mroce.payload")[0].get("pos", "-1"))
            if pos != off:
                raise Failure("frame %s: payload shown at byte %d, mroce.payload.off says %d" % (
                    fr.num, pos, off))
        parts.append("PAYLOAD off=%d len=%d" % (off, length))
    parts.append("ICRC 0x%08x" % fr.int("mroce.icrc"))
    return " | ".join(parts)


# ---------------------------------------------------------------------------------------------
# Comparison of one capture
# ---------------------------------------------------------------------------------------------

def has_error_expert(fr):
    """Whether Wireshark flags the frame: an error or warning expert info, a malformed packet
    exception, or "packet size limited during capture"."""
    return (fr.has("_ws.malformed") or "_ws.malformed" in fr.protos or "_ws.short" in fr.protos or
            any("(Error/" in e or "(Warning/" in e for e in fr.experts()))


def empty_udp_payload(fr):
    # Wireshark's UDP dissector calls no subdissector for a UDP datagram without payload.
    return "mroce" not in fr.protos and fr.has("udp.length") and fr.int("udp.length") == 8


def compare(args, pcap, lua=None, options=(), port=None, expect_all_ok=False):
    """Compares every frame; returns (problems, stats). problems: list of text, first first."""
    ref = reference_lines(args, pcap, port)
    frames = dissect(args, pcap, lua, options)
    problems = []
    stats = {"frames": len(ref), "ok": 0, "errors": {}, "opcodes": set(), "nak_codes": set(),
             "flags": set()}
    if set(ref) != set(frames):
        problems.append("tshark and the reference codec disagree on the frames present: %s" % (
            sorted(set(frames) ^ set(ref))[:10]))
    for num in sorted(ref):
        want = ref[num]
        fr = frames.get(num)
        if fr is None:
            continue
        try:
            for name in ("_ws.lua.error", "mroce.dissector_bug"):
                if fr.has(name):
                    raise Failure("frame %d: Lua error: %s" % (num, fr.all(name)[0].get("showname")))
            if any("Lua Error" in e for e in fr.experts()):
                raise Failure("frame %d: Lua error: %s" % (num, fr.experts()))
            cut = fr.caplen < fr.length
            if want.startswith("ERROR "):
                kind = want[len("ERROR "):]
                stats["errors"][kind] = stats["errors"].get(kind, 0) + 1
                got = dissected_line(fr) if kind in TRANSPORT_ERRORS else None
                if kind == "TransportLength" and empty_udp_payload(fr):
                    got = want
                if kind in TRANSPORT_ERRORS and got != want:
                    raise Failure("frame %d differs:\n  reference: %s\n  dissected: %s" % (
                        num, want, got or "(not dissected as MRoCE)"))
                if kind == "Icrc":
                    if fr.show("mroce.icrc.status") != "bad" or not fr.has("mroce.icrc.bad"):
                        raise Failure("frame %d: bad ICRC not flagged (status %r)" % (
                            num, fr.show("mroce.icrc.status")))
                    if not fr.info or "[BAD ICRC]" not in fr.info:
                        raise Failure("frame %d: Info column %r lacks [BAD ICRC]" % (num, fr.info))
                if "mroce" in fr.protos and cut and not fr.has("mroce.malformed"):
                    raise Failure("frame %d: cut short (%d of %d bytes) but not flagged malformed"
                                  % (num, fr.caplen, fr.length))
                if "mroce" in fr.protos and kind == "TransportLength" and not fr.has("mroce.malformed"):
                    raise Failure("frame %d: %s but not flagged malformed" % (num, want))
                if "mroce" in fr.protos and fr.has("mroce.malformed") and (
                        not fr.info or "Malformed" not in fr.info):
                    raise Failure("frame %d: Info column %r does not say Malformed" % (num, fr.info))
                if not has_error_expert(fr) and not empty_udp_payload(fr):
                    raise Failure("frame %d (%s) carries no error or warning expert info: %s" % (
                        num, want, fr.experts()))
                continue
            got = dissected_line(fr)
            if got != want:
                raise Failure("frame %d differs:\n  reference: %s\n  dissected: %s" % (
                    num, want, got or "(not dissected as MRoCE)"))
            if fr.show("mroce.icrc.status") != "good":
                raise Failure("frame %d: ICRC status %r on an intact frame" % (
                    num, fr.show("mroce.icrc.status")))
            bad = [e for e in MROCE_EXPERTS if fr.has(e)]
            if bad:
                raise Failure("frame %d: intact frame flagged %s" % (num, bad))
            op = fr.int("mroce.bth.opcode")
            name = OPCODES[op]
            info_prefix = name + " "
            if op in DATA_OPCODES or op in (0x10, 0x11, 0x12):
                info_prefix += "path=%d" % fr.int("mroce.bth.path")
            if not fr.info or not fr.info.startswith(info_prefix):
                raise Failure("frame %d: Info column %r does not start with %r" % (
                    num, fr.info, info_prefix))
            if op in DATA_OPCODES and "psn=0x%08x" % fr.int("mroce.dh.psn") not in fr.info:
                raise Failure("frame %d: Info column %r lacks the PSN" % (num, fr.info))
            if op == 0x10 and "cpsn=0x%08x" % fr.int("mroce.aeth.cpsn") not in fr.info:
                raise Failure("frame %d: Info column %r lacks the CPSN" % (num, fr.info))
            flags = flags_text(fr)
            if flags != "-" and not fr.info.endswith(" " + flags):
                raise Failure("frame %d: Info column %r does not end with the flags %s" % (
                    num, fr.info, flags))
            stats["ok"] += 1
            stats["opcodes"].add(name)
            if flags != "-":
                stats["flags"].update(flags.split(","))
            if op == 0x11:
                stats["nak_codes"].add(value_name(fr, "mroce.nak.code", "Code"))
        except Failure as e:
            problems.append(str(e))
    if expect_all_ok and stats["errors"]:
        problems.append("the reference codec rejects frames of %s: %s" % (pcap, stats["errors"]))
    return problems, stats


def report(name, pcap, problems, stats):
    print("%s: %s: %d frames, %d intact, rejected by kind %s" % (
        name, pcap, stats["frames"], stats["ok"], stats["errors"] or "{}"))
    print("  opcodes: %s" % " ".join(o for o in OPCODES.values() if o in stats["opcodes"]))
    if stats["flags"]:
        print("  flags: %s" % ",".join(sorted(stats["flags"])))
    if problems:
        print("FAIL: %d frame(s) with problems; the first:\n%s" % (len(problems), problems[0]))
        for p in problems[1:4]:
            print("next: %s" % p)
        raise Failure("%s: %d problem(s)" % (pcap, len(problems)))


# ---------------------------------------------------------------------------------------------
# Subcommands
# ---------------------------------------------------------------------------------------------

def cmd_fixed(args):
    problems, stats = compare(args, args.testdata)
    report("fixed", args.testdata, problems, stats)
    missing = [o for o in OPCODES.values() if o not in stats["opcodes"]]
    if missing:
        raise Failure("the fixed capture lacks intact frames of %s" % missing)
    if set(NAK_CODES.values()) - stats["nak_codes"]:
        raise Failure("the fixed capture lacks NAK codes %s" % (
            set(NAK_CODES.values()) - stats["nak_codes"]))
    for kind in TRANSPORT_ERRORS:
        if kind not in stats["errors"]:
            raise Failure("the fixed capture lacks a frame with error %s" % kind)
    print("PASS")


def cmd_testdata_current(args):
    regen = os.path.join(args.workdir, "regenerated.pcap")
    run([args.make_testdata, regen], args.workdir)
    with open(regen, "rb") as a, open(args.testdata, "rb") as b:
        if a.read() != b.read():
            raise Failure("%s is not what make_testdata writes today: regenerate it with "
                          "`ninja -C <build> wireshark_testdata` and check it in" % args.testdata)
    size = os.path.getsize(args.testdata)
    if size > 200 * 1024:
        raise Failure("%s is %d bytes, above the 200 KiB budget" % (args.testdata, size))
    print("PASS: %s (%d bytes) is current" % (args.testdata, size))


def cmd_port(args):
    alt = os.path.join(args.workdir, "port%d.pcap" % ALT_PORT)
    run([args.make_testdata, "--reencode", args.testdata, alt, str(ALT_PORT)], args.workdir)
    # The reference codec: valid for the other port, UdpPort for the default.
    default_view = reference_lines(args, alt)
    if any(l != "ERROR UdpPort" for l in default_view.values()):
        raise Failure("re-encoded frames are not all UdpPort errors for port 4793")
    problems, stats = compare(args, alt, options=["mroce.udp_port:%d" % ALT_PORT], port=ALT_PORT,
                              expect_all_ok=True)
    report("port", alt, problems, stats)
    # Without the preference, the frames are not MRoCE.
    frames = dissect(args, alt)
    dissected = [n for n, fr in frames.items() if "mroce" in fr.protos]
    if dissected:
        raise Failure("frames %s to port %d dissected as MRoCE without the preference" % (
            dissected[:5], ALT_PORT))
    # And the default port keeps working while the preference names another one.
    problems, stats = compare(args, args.testdata, options=["mroce.udp_port:%d" % ALT_PORT])
    report("port (default port with the preference set)", args.testdata, problems, stats)
    print("PASS")


def cmd_live(args):
    if not args.mroce:
        raise Failure("live needs --mroce")
    runs = [
        ("mixed", ["--op", "mixed", "-s", "65536", "-n", "16", "--loss", "1"]),
        ("read", ["--op", "read", "-s", "65536", "-n", "8"]),
        ("write", ["--op", "write", "-s", "8192", "-n", "64", "-m", "1024", "--loss", "2"]),
    ]
    seen = set()
    for name, opts in runs:
        pcap = os.path.join(args.workdir, "live_%s.pcap" % name)
        if os.path.exists(pcap):
            os.unlink(pcap)
        p = run([args.mroce, "perf", "loopback", "-q", "--pcap", pcap] + opts, args.workdir,
                check=False)
        if p.returncode != 0 or not os.path.exists(pcap):
            raise Failure("mroce perf loopback %s failed (exit %d):\n%s%s" % (
                " ".join(opts), p.returncode, p.stdout.decode(errors="replace")[-3000:],
                p.stderr.decode(errors="replace")[-3000:]))
        problems, stats = compare(args, pcap, expect_all_ok=True)
        report("live " + name, pcap, problems, stats)
        seen |= stats["opcodes"]
    need = {"SEND", "WRITE_IMM", "READ_REQ", "READ_RESP", "ACK", "CONNECT", "ACCEPT"}
    if need - seen:
        raise Failure("the live captures lack %s" % sorted(need - seen))
    print("PASS: live opcodes %s" % " ".join(o for o in OPCODES.values() if o in seen))


# ---------------------------------------------------------------------------------------------
# Mutations: a small seeded differential fuzzer of the dissector's validation
# ---------------------------------------------------------------------------------------------

def read_pcap(path):
    """[(captured bytes, wire length)] of a classic little- or big-endian pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, caplen, length = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append((bytearray(data[off + 16:off + 16 + caplen]), length))
        off += 16 + caplen
    return frames


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (b, length) in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i // 1000, (i % 1000) * 1000, len(b), length))
            f.write(bytes(b))


CRC32C_TABLE = []
for _n in range(256):
    _c = _n
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    CRC32C_TABLE.append(_c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC32C_TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def transport_start(f):
    return 14 + (40 if f[12:14] == b"\x86\xdd" else 20) + 8


def fix_lengths(f):
    """IP and UDP lengths from the frame's size, UDP checksum 0, IPv4 header checksum."""
    ipv6 = f[12:14] == b"\x86\xdd"
    udp = 14 + (40 if ipv6 else 20)
    udp_len = len(f) - udp
    struct.pack_into(">H", f, udp + 4, udp_len)
    struct.pack_into(">H", f, udp + 6, 0)
    if ipv6:
        struct.pack_into(">H", f, 18, udp_len)
    else:
        struct.pack_into(">H", f, 16, len(f) - 14)
        struct.pack_into(">H", f, 24, 0)
        s = sum(struct.unpack(">10H", bytes(f[14:34])))
        while s > 0xFFFF:
            s = (s & 0xFFFF) + (s >> 16)
        struct.pack_into(">H", f, 24, ~s & 0xFFFF)


def fix_icrc(f):
    t = transport_start(f)
    if len(f) - t >= 4:
        struct.pack_into(">I", f, len(f) - 4, crc32c(bytes(f[t:len(f) - 4])))


def mutate(rng, f):
    """One random mutation of a valid frame: (bytes, wire length)."""
    f = bytearray(f)
    t = transport_start(f)
    kind = rng.randrange(6)
    if kind == 0:  # flip bytes of the BTH or the extension, keep or repair the ICRC
        for _ in range(rng.randint(1, 3)):
            i = t + rng.randrange(min(len(f) - t, 96))
            f[i] ^= 1 << rng.randrange(8)
        fix_lengths(f)
        if rng.random() < 0.8:
            fix_icrc(f)
    elif kind == 1:  # a small random value in a 16- or 32-bit field of the headers
        width = rng.choice((2, 4))
        i = t + rng.randrange(max(1, min(len(f) - t, 96) - width))
        f[i:i + width] = rng.randrange(0, 300).to_bytes(width, "big")
        fix_lengths(f)
        fix_icrc(f)
    elif kind == 2:  # the UDP payload shortened, lengths consistent
        del f[t + rng.randrange(len(f) - t):]
        fix_lengths(f)
        if rng.random() < 0.7:
            fix_icrc(f)
    elif kind == 3:  # the UDP payload extended by a few bytes
        f[len(f) - 4:len(f) - 4] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        fix_lengths(f)
        if rng.random() < 0.8:
            fix_icrc(f)
    elif kind == 4:  # the opcode replaced, ICRC repaired
        f[t + 1] = rng.choice((0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x11, 0x12, 0x13,
                                0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0xff))
        fix_lengths(f)
        fix_icrc(f)
    else:  # cut by the snap length somewhere in the UDP payload
        length = len(f)
        return bytearray(f[:t + rng.randrange(len(f) - t)]), length
    return f, len(f)


def cmd_mutations(args):
    ref = reference_lines(args, args.testdata)
    valid = [f for i, (f, length) in enumerate(read_pcap(args.testdata), 1)
             if not ref[i].startswith("ERROR") and len(f) == length]
    rng = random.Random(args.seed)
    frames = [mutate(rng, rng.choice(valid)) for _ in range(args.count)]
    pcap = os.path.join(args.workdir, "mutations.pcap")
    write_pcap(pcap, frames)
    problems, stats = compare(args, pcap)
    report("mutations (seed %d)" % args.seed, pcap, problems, stats)
    print("PASS")


# Each mutation breaks one thing of the dissector; the comparison must catch every one.
CANARIES = [
    ("PSN read one byte off", "dh:add(F.dh_psn, tvb(e, 4))", "dh:add(F.dh_psn, tvb(e + 1, 4))"),
    ("CRC-32C polynomial", "bxor(rshift(c, 1), 0x82F63B78)", "bxor(rshift(c, 1), 0x82F63B79)"),
    ("SACK bit order", "band(b, rshift(0x80, i % 8))", "band(b, rshift(0x01, i % 8))"),
    ("RETH remote key offset", "reth:add(F.reth_rkey, tvb(e + 8, 4))",
     "reth:add(F.reth_rkey, tvb(e + 4, 4))"),
]


def cmd_canary(args):
    with open(args.lua) as f:
        source = f.read()
    for what, old, new in CANARIES:
        if source.count(old) != 1:
            raise Failure("canary %r: %r occurs %d times in %s (update CANARIES)" % (
                what, old, source.count(old), args.lua))
        broken = os.path.join(args.workdir, "canary.lua")
        with open(broken, "w") as f:
            f.write(source.replace(old, new))
        problems, stats = compare(args, args.testdata, lua=broken)
        if not problems:
            raise Failure("canary %r: the broken dissector passed the comparison" % what)
        print("caught %s: %d frame(s); first: %s" % (what, len(problems), problems[0]))
    print("PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tshark", default="tshark")
    ap.add_argument("--lua", required=True)
    ap.add_argument("--canonical-lines", required=True)
    ap.add_argument("--make-testdata", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mroce")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("command", choices=["fixed", "testdata-current", "port", "live", "mutations",
                                        "canary"])
    args = ap.parse_args()
    if args.command != "testdata-current":
        tshark = shutil.which(args.tshark)
        if tshark is None:
            print("SKIP: tshark not found (%s)" % args.tshark)
            return 77
        args.tshark = tshark
    if not os.path.isfile(args.testdata):
        print("FAIL: %s is missing (it is checked in; note that .gitignore ignores *.pcap, "
              "so it must be added with `git add -f` or whitelisted there)" % args.testdata)
        return 1
    args.workdir = os.path.join(args.workdir, args.command)
    os.makedirs(args.workdir, exist_ok=True)
    try:
        {"fixed": cmd_fixed, "testdata-current": cmd_testdata_current, "port": cmd_port,
         "live": cmd_live, "mutations": cmd_mutations, "canary": cmd_canary}[args.command](args)
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
