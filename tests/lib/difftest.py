#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Differential test of the offload: random rulesets, random frames.

Every ruleset is loaded twice in one nft transaction: with `flags offload`
on the attached device (HW, e.g. eth1) and without it on a twin device (SW,
e.g. eth3).  Every frame is sent, byte for byte the same, to both, from
their peers (e.g. eth0 and eth2, each in a namespace of its own).  Frames
are told apart by their source MAC, unique in a batch.  Software-only
chains record what happened to each frame:

  HW  priority -100      add @arrived  - the frame got past XDP
      offloaded chains   the ruleset, flags offload
      priority 100000    add @survived - no chain dropped it
  SW  priority -100      add @arrived  - the stack handed it to nf_tables
      twin chains        the same rules; each chain ends with
                         add @fall_cN  - no rule of chain N matched
      priority 100000    add @survived

For each frame: the HW verdict (survived or not) must equal the SW one,
and XDP must not drop a frame SW lets through.  For each rule: the nft
counter (packets, bytes) on HW, which nf_tables sums from what software
counted and what the driver reports XDP consumed, must equal the twin
rule's on SW.  Every rule has a counter and a comment "rN" that pairs it
with its twin.  Plain frames (untagged, valid headers, what the XDP parser
handles) that SW drops must all be dropped in XDP already.

Rule fields and frame fields come from small shared pools (addresses,
prefixes, ports, MACs), and most frames are made for one or two rules of
their ruleset, so that rules match often; a third of the frames get
something the XDP parser or the stack treats apart (VLAN tags, 802.3
lengths, bad or truncated headers, IPv6 extension headers, fragments).

With --tc P, a ruleset gets, with probability P, tc flower filters too
(up to 4, one priority each, drop or pass), on the ingress qdiscs of both
devices: offloaded on HW (no skip flag: XDP and software), software only
on SW.  tc runs before every nft chain.  The frame verdicts then are
those of tc and nft together, and each filter's tc -s counters (packets,
bytes) on HW must equal its twin's on SW.  The nft chain "first" runs
after tc: a frame tc dropped is missing from @arrived on both sides.

Before the random rulesets, a planted difference (a twin that differs on
purpose) must be caught: the harness self-check.  On a mismatch, the
frames behind a counter difference are found by sending them again one
group at a time, and the first mismatches are shrunk (chains, rules,
matches) to a minimal reproducer.

Run inside the test guest only (tests/guest/test_differential.sh sets up
the devices).  Prints "# " diagnostics on stdout and writes key=value
results to --summary.
"""
import argparse
import copy
import ctypes
import errno
import fcntl
import ipaddress
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time

# --------------------------------------------------------------------------
# System access: libnftables, namespaces, ethtool, sysfs

NFT_CTX_OUTPUT_JSON = 1 << 4


class Nft:
    """libnftables through ctypes: no process per nft command."""

    def __init__(self, json_out=False):
        lib = ctypes.CDLL("libnftables.so.1", use_errno=True)
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        for name in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p,
                                                 ctypes.c_uint]
        lib.nft_ctx_set_dry_run.argtypes = [ctypes.c_void_p, ctypes.c_bool]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p,
                                                ctypes.c_char_p]
        for name in ("nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
            getattr(lib, name).restype = ctypes.c_char_p
        self.lib = lib
        self.ctx = lib.nft_ctx_new(0)
        lib.nft_ctx_buffer_output(self.ctx)
        lib.nft_ctx_buffer_error(self.ctx)
        if json_out:
            lib.nft_ctx_output_set_flags(self.ctx, NFT_CTX_OUTPUT_JSON)

    def run(self, text, dry_run=False):
        self.lib.nft_ctx_set_dry_run(self.ctx, dry_run)
        rc = self.lib.nft_run_cmd_from_buffer(self.ctx, text.encode())
        out = self.lib.nft_ctx_get_output_buffer(self.ctx) or b""
        err = self.lib.nft_ctx_get_error_buffer(self.ctx) or b""
        self.lib.nft_ctx_set_dry_run(self.ctx, False)
        return rc, out.decode(errors="replace"), err.decode(errors="replace")


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def packet_socket(dev, netns=None):
    """An AF_PACKET socket bound to DEV in NETNS; it stays there after we
    come back to our own namespace.  Protocol 0: it receives nothing."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open("/run/netns/" + netns, os.O_RDONLY) if netns else None
    try:
        if target is not None and _libc.setns(target, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns " + netns)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        s.bind((dev, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    finally:
        if target is not None:
            if _libc.setns(own, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns back")
            os.close(target)
        os.close(own)
    return s


SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1b
ETHTOOL_GSTATS = 0x1d
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1


class Ethtool:
    """ethtool -S through the ioctl, for one device."""

    def __init__(self, dev):
        self.dev = dev
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        buf = ctypes.create_string_buffer(struct.pack(
            "IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
        self._ioctl(buf)
        self.n = struct.unpack_from("I", buf.raw, 16)[0]
        buf = ctypes.create_string_buffer(struct.pack("III", ETHTOOL_GSTRINGS,
                                                      ETH_SS_STATS, self.n)
                                          + bytes(32 * self.n))
        self._ioctl(buf)
        raw = buf.raw[12:]
        self.names = [raw[32 * i:32 * (i + 1)].split(b"\0")[0].decode()
                      for i in range(self.n)]

    def _ioctl(self, buf):
        ifr = struct.pack("16sP", self.dev.encode(), ctypes.addressof(buf))
        fcntl.ioctl(self.sock, SIOCETHTOOL, ifr + bytes(40 - len(ifr)))

    def stats(self):
        buf = ctypes.create_string_buffer(
            struct.pack("II", ETHTOOL_GSTATS, self.n) + bytes(8 * self.n))
        self._ioctl(buf)
        vals = struct.unpack_from("%dQ" % self.n, buf.raw, 8)
        return dict(zip(self.names, vals))

    def sum(self, suffix):
        """A receive counter of virtio-net summed over its queues:
        rx_queue_N_<name> on 6.1, rxN_<name> on 6.12 (whose total,
        rx_<name>, is left out)."""
        return sum(v for k, v in self.stats().items()
                   if re.match(r"rx(_queue_)?[0-9]+" + re.escape(suffix) + "$",
                               k))


def rx_packets(dev):
    """All frames virtio-net took off the ring, XDP drops included."""
    with open("/sys/class/net/%s/statistics/rx_packets" % dev) as f:
        return int(f.read())


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


# --------------------------------------------------------------------------
# Pools shared by rules and frames, so that frames match rules often

def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def band(a, b):
    return bytes(x & y for x, y in zip(a, b))


def bor(a, b):
    return bytes(x | y for x, y in zip(a, b))


def bnot(a):
    return bytes(~x & 0xff for x in a)


DMACS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "02:aa:00:00:00:01",
                          "02:aa:00:00:00:02", "33:33:00:00:00:01",
                          "01:00:5e:00:00:01", "0a:bb:cc:dd:ee:01")]
# Source MACs: one of these prefixes, then 3 bytes unique in the batch.
SMAC_PREFIXES = [bytes.fromhex(p) for p in ("020001", "020002", "0a0000",
                                             "030001")]
SMAC_MASKS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "ff:ff:ff:00:00:00",
                               "ff:ff:ff:00:00:00", "ff:ff:ff:ff:ff:f0",
                               "01:00:00:00:00:00", "00:00:00:00:00:01",
                               "ff:00:00:00:00:03")]
DMAC_MASKS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff",
                               "ff:ff:ff:00:00:00", "01:00:00:00:00:00")]
ADDR4 = [ipaddress.IPv4Address(a).packed for a in
         ("10.0.0.1", "10.0.0.2", "10.0.1.1", "10.1.0.1", "192.168.1.1",
          "192.168.1.130")]
ADDR6 = [ipaddress.IPv6Address(a).packed for a in
         ("fd00::1", "fd00::2", "fd00:0:0:1::1", "fd01::1", "2001:db8::1",
          "fd00::8001")]
PREFIX4 = [32, 32, 32, 24, 16, 8, 25, 31]
PREFIX6 = [128, 128, 128, 64, 60, 16, 127, 120]
PORTS = [22, 53, 80, 443, 1234]
OTHER_TYPES = [0x88b5, 0x88cc, 0x9000]
# EtherType/length field below 0x0600: an 802.3 length, not a type.  The
# stack sets skb->protocol (meta protocol) to ETH_P_802_3 (0x0001) when
# the payload starts with ffff, ETH_P_802_2 (0x0004) otherwise.
LOW_TYPES = [0x0100, 0x0040, 0x05dc]
LOW_PROTOS = [0x0004, 0x0001, 0x0100]
TCP, UDP, ICMP, ICMP6, GRE, SCTP, NONE6, HOP = 6, 17, 1, 58, 47, 132, 59, 0
L4_IP = [TCP, TCP, UDP, UDP, ICMP, GRE]
L4_IP6 = [TCP, TCP, UDP, UDP, ICMP6, NONE6, GRE, HOP]
PROTO_NAME = {TCP: "tcp", UDP: "udp", ICMP: "icmp"}
FAM_TYPE = {"ip": 0x0800, "ip6": 0x86dd, "arp": 0x0806}


def prefix_mask(bits, nbytes):
    return ((1 << (8 * nbytes)) - (1 << (8 * nbytes - bits))).to_bytes(nbytes,
                                                                      "big")


# --------------------------------------------------------------------------
# Rules

class Rule:
    """One rule: a set of matches and an action; rendered to nft text."""

    def __init__(self):
        self.smac = None        # (value, mask)
        self.dmac = None
        self.iif = None         # "self" (the chain's device) or "lo"
        self.iiftype = False
        self.fam = None         # "ip", "ip6", "arp", "other", "low"
        self.fam_how = None     # "meta", "ether", None (implied by l3 fields)
        self.etype = None       # the EtherType value matched
        self.saddr = None       # (packed address, prefix length)
        self.daddr = None
        self.l4 = None          # protocol number
        self.l4_how = None      # "ip", "nexthdr", "meta", None (implied)
        self.port = None        # ("sport"|"dport", n)
        self.port_range = None  # tc only: (lo, hi) around port[1]
        self.action = "drop"
        self.comment = None
        self.order = 0          # random seed for the statement order

    def statements(self, dev):
        st = []
        for name, m in (("saddr", self.smac), ("daddr", self.dmac)):
            if m is None:
                continue
            if m[1] == b"\xff" * 6:
                st.append("ether %s %s" % (name, mac_str(m[0])))
            else:
                st.append("ether %s & %s == %s" % (name, mac_str(m[1]),
                                                   mac_str(m[0])))
        if self.iif:
            st.append("meta iif %s" % (dev if self.iif == "self" else "lo"))
        if self.iiftype:
            st.append("meta iiftype ether")
        if self.fam_how:
            what = {"ip": "ip", "ip6": "ip6", "arp": "arp"}.get(
                self.fam, "0x%04x" % self.etype)
            st.append("%s %s" % ("meta protocol" if self.fam_how == "meta"
                                 else "ether type", what))
        for name, a in (("saddr", self.saddr), ("daddr", self.daddr)):
            if a is None:
                continue
            if self.fam == "ip":
                addr = ipaddress.IPv4Address(a[0])
                st.append("ip %s %s%s" % (name, addr,
                                          "" if a[1] == 32 else "/%d" % a[1]))
            else:
                addr = ipaddress.IPv6Address(a[0])
                st.append("ip6 %s %s%s" % (
                    name, addr, "" if a[1] == 128 else "/%d" % a[1]))
        if self.l4_how:
            proto = PROTO_NAME.get(self.l4, str(self.l4))
            st.append({"ip": "ip protocol", "nexthdr": "ip6 nexthdr",
                       "meta": "meta l4proto"}[self.l4_how] + " " + proto)
        if self.port:
            st.append("%s %s %d" % (PROTO_NAME[self.l4], self.port[0],
                                    self.port[1]))
        random.Random(self.order).shuffle(st)
        # An exact ether saddr followed by an ip/ip6 match makes nft take
        # "ether type" as the dependency and merge the two into one 8-byte
        # load, which nf_tables does not offload: put the saddr last.
        if self.smac and self.smac[1] == b"\xff" * 6 and self.fam:
            st.sort(key=lambda x: x.startswith("ether saddr "))
        return st

    def flower(self, dev):
        """tc filter arguments, or None where flower cannot say it."""
        if self.iiftype or self.fam == "low":
            return None
        if self.fam is None and (self.l4 is not None or self.port):
            return None         # flower's ip_proto needs the protocol
        proto = {None: "all", "ip": "ip", "ip6": "ipv6", "arp": "arp"}.get(
            self.fam, "0x%04x" % (self.etype or 0))
        if self.fam == "other":
            proto = "0x%04x" % self.etype
        keys = []
        for name, m in (("src_mac", self.smac), ("dst_mac", self.dmac)):
            if m is not None:
                keys.append("%s %s/%s" % (name, mac_str(m[0]),
                                          mac_str(m[1])))
        if self.iif:
            keys.append("indev %s" % (dev if self.iif == "self" else "lo"))
        for name, a in (("src_ip", self.saddr), ("dst_ip", self.daddr)):
            if a is not None:
                addr = (ipaddress.IPv4Address(a[0]) if self.fam == "ip"
                        else ipaddress.IPv6Address(a[0]))
                keys.append("%s %s/%d" % (name, addr, a[1]))
        if self.l4 is not None:
            keys.append("ip_proto %s" % {TCP: "tcp", UDP: "udp", ICMP: "icmp",
                                         ICMP6: "icmpv6"}.get(
                                             self.l4, str(self.l4)))
        if self.port:
            name = "src_port" if self.port[0] == "sport" else "dst_port"
            if self.port_range:
                keys.append("%s %d-%d" % (name, self.port_range[0],
                                          self.port_range[1]))
            else:
                keys.append("%s %d" % (name, self.port[1]))
        return "protocol %s flower %s action %s" % (
            proto, " ".join(keys), "drop" if self.action == "drop"
            else "pass")

    def render(self, dev, counter=True):
        st = self.statements(dev)
        if counter:
            st.append("counter")
        st.append(self.action)
        if self.comment:
            st.append('comment "%s"' % self.comment)
        return " ".join(st)


def gen_rule(rng, batch_macs):
    while True:
        r = Rule()
        r.order = rng.getrandbits(32)
        if rng.random() < 0.25:
            mask = rng.choice(SMAC_MASKS)
            r.smac = (band(rng.choice(batch_macs), mask), mask)
        if rng.random() < 0.2:
            mask = rng.choice(DMAC_MASKS)
            # nft merges exact daddr and saddr into one 12-byte load,
            # which nf_tables does not offload.
            if r.smac and r.smac[1] == b"\xff" * 6 and mask == b"\xff" * 6:
                mask = DMAC_MASKS[2]
            r.dmac = (band(rng.choice(DMACS), mask), mask)
        if rng.random() < 0.06:
            r.iif = rng.choice(("self", "self", "lo"))
        if rng.random() < 0.04:
            r.iiftype = True
        fam = rng.choices((None, "ip", "ip6", "arp", "other", "low"),
                          (30, 35, 20, 5, 5, 5))[0]
        r.fam = fam
        if fam is None:
            if rng.random() < 0.35:
                r.l4 = rng.choice((TCP, UDP, ICMP, ICMP6))
                r.l4_how = "meta"
            elif rng.random() < 0.15:
                r.l4 = rng.choice((TCP, UDP))
            if r.l4 in (TCP, UDP) and (r.l4_how is None or
                                       rng.random() < 0.5):
                r.port = (rng.choice(("sport", "dport")), rng.choice(PORTS))
        elif fam in ("ip", "ip6"):
            r.etype = FAM_TYPE[fam]
            pool, plens, nb = ((ADDR4, PREFIX4, 4) if fam == "ip"
                               else (ADDR6, PREFIX6, 16))
            for which in ("saddr", "daddr"):
                if rng.random() < 0.45:
                    plen = rng.choice(plens)
                    setattr(r, which, (band(rng.choice(pool),
                                            prefix_mask(plen, nb)), plen))
            if rng.random() < 0.5:
                r.l4 = rng.choice(L4_IP if fam == "ip" else L4_IP6)
                r.l4_how = rng.choice(("ip" if fam == "ip" else "nexthdr",
                                       "meta"))
                if r.l4 in (TCP, UDP) and rng.random() < 0.5:
                    r.port = (rng.choice(("sport", "dport")),
                              rng.choice(PORTS))
            elif rng.random() < 0.2:
                r.l4 = rng.choice((TCP, UDP))
                r.port = (rng.choice(("sport", "dport")), rng.choice(PORTS))
            implied = r.saddr or r.daddr or r.l4_how in ("ip", "nexthdr")
            r.fam_how = rng.choice(("meta", "ether", None, None)
                                   if implied else ("meta", "ether"))
        elif fam == "arp":
            r.etype = FAM_TYPE[fam]
            r.fam_how = rng.choice(("meta", "ether"))
        elif fam == "other":
            r.etype = rng.choice(OTHER_TYPES)
            r.fam_how = rng.choice(("meta", "ether"))
        else:
            r.fam_how = rng.choice(("meta", "ether"))
            r.etype = rng.choice(LOW_PROTOS if r.fam_how == "meta"
                                 else LOW_TYPES)
        # nft merges an exact ether saddr and ether type into one 8-byte
        # load, which nf_tables does not offload.
        if r.fam_how == "ether" and r.smac and r.smac[1] == b"\xff" * 6:
            if r.fam == "low":
                r.etype = rng.choice(LOW_PROTOS)
            r.fam_how = "meta"
        r.action = rng.choice(("drop", "accept"))
        if r.statements("x") or rng.random() < 0.1:
            return r


class Chain:
    def __init__(self, name, prio, rules):
        self.name = name
        self.prio = prio
        self.rules = rules


def gen_tc(rng, batch_macs, n):
    """Up to n tc flower filters, priorities 1.., comments t1.."""
    rules = []
    while len(rules) < n:
        r = gen_rule(rng, batch_macs)
        if r.flower("x") is None:
            continue
        # flower needs the protocol for an L4 protocol number
        if r.l4 is not None and r.fam not in ("ip", "ip6"):
            continue
        if r.port and rng.random() < 0.4:
            lo = max(1, r.port[1] - rng.randint(0, 3))
            r.port_range = (lo, r.port[1] + rng.randint(1, 3))
        r.comment = "t%d" % (len(rules) + 1)
        rules.append(r)
    return rules


def gen_ruleset(rng, batch_macs, max_chains, max_rules):
    nchains = rng.randint(1, max_chains)
    prios = rng.sample((1, 5, 10, 100, 1000, 65535), nchains)
    if nchains > 1 and rng.random() < 0.15:
        prios[1] = prios[0]     # equal priorities: registration order
    chains = []
    n = 0
    for i, prio in enumerate(prios):
        rules = []
        for _ in range(rng.randint(1, max_rules)):
            n += 1
            r = gen_rule(rng, batch_macs)
            r.comment = "r%d" % n
            rules.append(r)
        chains.append(Chain("c%d" % i, prio, rules))
    return chains


ARRIVED_PRIO = -100
SURVIVED_PRIO = 100000


def render_table(table, dev, chains, offload, fall_sets, bare=False):
    """The table of one side.  bare: the chains alone, no recording."""
    out = ["table netdev %s {" % table]
    sets = ["arrived", "survived"]
    if fall_sets:
        sets += ["fall_" + c.name for c in chains]
    for s in sets if not bare else ():
        out.append("\tset %s { type ether_addr; size 65535; flags dynamic; }"
                   % s)
    if not bare:
        out.append("\tchain first { type filter hook ingress device %s "
                   "priority %d; policy accept;\n\t\tadd @arrived "
                   "{ ether saddr }\n\t}" % (dev, ARRIVED_PRIO))
    for c in chains:
        out.append("\tchain %s {" % c.name)
        out.append("\t\ttype filter hook ingress device %s priority %d; "
                   "policy accept;" % (dev, c.prio))
        if offload:
            out.append("\t\tflags offload;")
        for r in c.rules:
            out.append("\t\t" + r.render(dev))
        if fall_sets:
            out.append("\t\tadd @fall_%s { ether saddr }" % c.name)
        out.append("\t}")
    if not bare:
        out.append("\tchain last { type filter hook ingress device %s "
                   "priority %d; policy accept;\n\t\tadd @survived "
                   "{ ether saddr }\n\t}" % (dev, SURVIVED_PRIO))
    out.append("}")
    return "\n".join(out) + "\n"


def ruleset_text(chains, dev):
    """The offloaded side as a reader wants it: chains and rules."""
    out = []
    for c in chains:
        out.append("chain %s priority %d:" % (c.name, c.prio))
        for r in c.rules:
            out.append("  " + r.render(dev))
    return out


# --------------------------------------------------------------------------
# Frames

# Tags that make a frame "not plain": the XDP parser leaves such frames to
# software, or the stack sees them differently (tag stripped, 802.3 length).
NOT_PLAIN = {"vlan", "qinq", "ext6", "bad4", "bad6", "trunc-ip",
             "trunc-l4", "low", "short-vlan"}


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


class Frame:
    """A frame description; build() gives its bytes, kinds says what is
    special about it."""

    def __init__(self):
        self.dmac = DMACS[0]
        self.smac = bytes(6)
        self.tags = []          # VLAN tags: (tpid, tci)
        self.etype = 0x0800
        self.l3 = "ipv4"        # ipv4, ipv6, arp, raw
        self.src = self.dst = None
        self.proto = TCP
        self.ver = None         # IP version field, None: the right one
        self.ihl = 5
        self.frag = 0           # IPv4 flags/offset field
        self.len_delta = 0      # added to IPv4 total / IPv6 payload length
        self.ext6 = []          # IPv6 extension headers before proto
        self.sport = self.dport = 0
        self.payload = b""
        self.cut = None         # truncate the frame to this many bytes
        self.l4cut = None       # keep this many bytes of the l4 header
        self.pad = 0            # bytes after the IP packet
        self.kinds = set()      # descriptive tags
        self.target = None      # comment of the rule it was made for

    def l4_bytes(self):
        if self.l3 == "ipv6" and self.ext6 and self.ext6[-1] == "frag-later":
            return self.payload or b"\xab" * 8
        if self.l3 == "ipv4" and self.frag & 0x1fff:
            return self.payload or b"\xab" * 8
        p = self.proto
        if p == TCP:
            h = struct.pack("!HHIIBBHHH", self.sport, self.dport, 1, 0, 5 << 4,
                            0x02, 65535, 0, 0)
        elif p == UDP:
            h = struct.pack("!HHHH", self.sport, self.dport,
                            8 + len(self.payload), 0)
        elif p in (ICMP, ICMP6):
            h = struct.pack("!BBHHH", 8 if p == ICMP else 128, 0, 0, 1, 1)
        elif p == NONE6:
            return b""
        else:
            h = b"\x00\x00\x08\x00"
        if self.l4cut is not None:
            return h[:self.l4cut]
        return h + self.payload

    def build(self):
        eth = self.dmac + self.smac
        for tpid, tci in self.tags:
            eth += struct.pack("!HH", tpid, tci)
        eth += struct.pack("!H", self.etype)
        if self.l3 == "ipv4":
            l4 = self.l4_bytes()
            opts = b"\x01" * (self.ihl * 4 - 20) if self.ihl > 5 else b""
            hlen = 20 + len(opts)
            ver = 4 if self.ver is None else self.ver
            ip = struct.pack("!BBHHHBBH4s4s", (ver << 4) | (self.ihl & 0xf),
                             0, (hlen + len(l4) + self.len_delta) & 0xffff,
                             0x1234, self.frag, 64, self.proto, 0, self.src,
                             self.dst) + opts
            ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
            body = ip + l4
        elif self.l3 == "ipv6":
            l4 = self.l4_bytes()
            ext = b""
            chain = self.ext6 + [None]
            nh_of = {"hop": HOP, "dst": 60, "rt": 43, "frag-first": 44,
                     "frag-later": 44}
            for i, e in enumerate(self.ext6):
                nxt = self.proto if chain[i + 1] is None else \
                    nh_of[chain[i + 1]]
                if e in ("hop", "dst"):
                    ext += struct.pack("!BB", nxt, 0) + b"\x01\x04\0\0\0\0"
                elif e == "rt":
                    ext += struct.pack("!BBBB", nxt, 0, 0, 0) + b"\0" * 4
                else:
                    off = 0 if e == "frag-first" else 185 << 3
                    ext += struct.pack("!BBHI", nxt, 0, off | 1, 0x1234)
            first = nh_of[self.ext6[0]] if self.ext6 else self.proto
            ver = 6 if self.ver is None else self.ver
            plen = (len(ext) + len(l4) + self.len_delta) & 0xffff
            body = struct.pack("!IHBB16s16s", ver << 28, plen, first, 64,
                               self.src, self.dst) + ext + l4
        elif self.l3 == "arp":
            body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1,
                               self.smac, self.src, bytes(6), self.dst)
        else:
            body = self.payload
        data = eth + body + b"\0" * self.pad
        if self.cut is not None:
            data = data[:self.cut]
        return data

    def describe(self):
        parts = []
        for tpid, tci in self.tags:
            parts.append("vlan(%04x,%d)" % (tpid, tci & 0xfff))
        if self.l3 in ("ipv4", "ipv6"):
            af = 4 if self.l3 == "ipv4" else 6
            ctor = ipaddress.IPv4Address if af == 4 else ipaddress.IPv6Address
            parts.append("%s %s > %s" % (self.l3, ctor(self.src),
                                         ctor(self.dst)))
            if self.ext6:
                parts.append("ext " + ",".join(self.ext6))
            parts.append("proto %d" % self.proto)
            if self.proto in (TCP, UDP):
                parts.append("ports %d > %d" % (self.sport, self.dport))
        elif self.l3 == "arp":
            parts.append("arp")
        else:
            parts.append("ethertype 0x%04x" % self.etype)
        parts.append("smac %s dmac %s" % (mac_str(self.smac),
                                          mac_str(self.dmac)))
        if self.kinds:
            parts.append("[%s]" % ",".join(sorted(self.kinds)))
        if self.target:
            parts.append("made for %s" % self.target)
        return " ".join(parts)

    def plain(self, tc=False):
        """tc: flower reads no transport header of any IPv4 fragment, so
        a tc rule on one leaves fragments to software."""
        return not (self.kinds & (NOT_PLAIN | ({"frag", "mf"} if tc
                                               else set())))


def random_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def masked_pick(rng, pool, value, plen, nbytes):
    """An address in value/plen, most often from the pool."""
    mask = prefix_mask(plen, nbytes)
    base = rng.choice(pool) if rng.random() < 0.8 else \
        bytes(rng.getrandbits(8) for _ in range(nbytes))
    return bor(band(value, mask), band(base, bnot(mask)))


def base_frame(rng, smac):
    f = Frame()
    f.smac = smac
    f.dmac = rng.choice(DMACS) if rng.random() < 0.9 else \
        bytes([rng.getrandbits(8) & 0xfe] + [rng.getrandbits(8)
                                            for _ in range(5)])
    kind = rng.choices(("ipv4", "ipv6", "arp", "other", "low", "tiny"),
                       (55, 27, 6, 5, 4, 3))[0]
    f.l3 = kind if kind in ("ipv4", "ipv6", "arp") else "raw"
    if kind == "ipv4":
        f.etype = 0x0800
        f.src, f.dst = [rng.choice(ADDR4) if rng.random() < 0.85 else
                        bytes(rng.getrandbits(8) for _ in range(4))
                        for _ in range(2)]
        f.proto = rng.choices((TCP, UDP, ICMP, GRE, SCTP),
                              (40, 35, 13, 6, 6))[0]
    elif kind == "ipv6":
        f.etype = 0x86dd
        f.src, f.dst = [rng.choice(ADDR6) if rng.random() < 0.85 else
                        bytes(rng.getrandbits(8) for _ in range(16))
                        for _ in range(2)]
        f.proto = rng.choices((TCP, UDP, ICMP6, NONE6, GRE, SCTP),
                              (38, 34, 12, 6, 5, 5))[0]
    elif kind == "arp":
        f.etype = 0x0806
        f.src, f.dst = rng.choice(ADDR4), rng.choice(ADDR4)
    elif kind == "other":
        f.etype = rng.choice(OTHER_TYPES)
        f.payload = random_bytes(rng, rng.randint(2, 46))
    elif kind == "low":
        set_low(rng, f, None)
    else:
        f.etype = rng.choice((0x0800, 0x86dd, 0x0806, 0x88b5))
        f.payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 3)))
        if f.etype in (0x0800, 0x86dd):
            f.kinds.add("trunc-ip")
    f.sport = rng.choice(PORTS) if rng.random() < 0.7 else \
        rng.randint(1, 65535)
    f.dport = rng.choice(PORTS) if rng.random() < 0.8 else \
        rng.randint(1, 65535)
    f.payload = f.payload or bytes(rng.getrandbits(8)
                                   for _ in range(rng.choice((0, 0, 4, 16))))
    return f


def set_low(rng, f, proto):
    """An 802.3 frame: the type field is a length (< 0x600)."""
    f.l3 = "raw"
    f.kinds.add("low")
    f.etype = rng.choice(LOW_TYPES)
    if proto is not None and proto < 0x0600 and proto not in (1, 4):
        f.etype = proto                 # ether type 0x0100: the field itself
    raw = proto == 0x0001 or (proto is None and rng.random() < 0.3)
    head = b"\xff\xff" if raw else b"\xaa\xaa\x03"
    f.payload = head + bytes(rng.getrandbits(8)
                             for _ in range(rng.randint(2, 40)))


def apply_rule(rng, f, r, first=None):
    """Make frame F match rule R, as far as its fields go."""
    f.target = r.comment if first is None else "%s+%s" % (first, r.comment)
    if r.dmac:
        f.dmac = bor(r.dmac[0], band(rng.choice(DMACS), bnot(r.dmac[1])))
    fam = r.fam
    if fam is None and r.l4 is not None:
        fam = {ICMP: "ip", ICMP6: "ip6"}.get(r.l4, rng.choice(("ip", "ip6")))
    if fam in ("ip", "ip6") and f.l3 != ("ipv4" if fam == "ip" else "ipv6"):
        g = base_frame(rng, f.smac)
        while g.l3 != ("ipv4" if fam == "ip" else "ipv6"):
            g = base_frame(rng, f.smac)
        g.dmac, g.target = f.dmac, f.target
        f = g
    if fam == "arp":
        f.l3, f.etype = "arp", 0x0806
        f.src, f.dst = rng.choice(ADDR4), rng.choice(ADDR4)
    elif fam == "other":
        f.l3, f.etype = "raw", r.etype
        f.payload = random_bytes(rng, rng.randint(2, 46))
    elif fam == "low":
        set_low(rng, f, r.etype)
    if fam in ("ip", "ip6"):
        pool, nb = (ADDR4, 4) if fam == "ip" else (ADDR6, 16)
        if r.saddr:
            f.src = masked_pick(rng, pool, r.saddr[0], r.saddr[1], nb)
        if r.daddr:
            f.dst = masked_pick(rng, pool, r.daddr[0], r.daddr[1], nb)
        if r.l4 is not None:
            if r.l4 == HOP:
                f.ext6 = ["hop"]
                f.kinds.add("ext6")
                f.proto = rng.choice((TCP, UDP))
            else:
                f.proto = r.l4
        if r.port:
            setattr(f, r.port[0], r.port[1])
    return f


def mutate(rng, f):
    """Now and then, something the XDP parser or the stack treats apart."""
    if rng.random() > 0.33:
        return
    what = rng.choices(("vlan", "qinq", "ext6", "frag", "mf", "opts", "bad4",
                        "bad6", "trunc-ip", "trunc-l4", "pad", "short-vlan"),
                       (22, 4, 12, 8, 4, 5, 8, 5, 4, 6, 6, 2))[0]
    if what in ("vlan", "qinq"):
        tpid = 0x8100 if what == "vlan" and rng.random() < 0.8 else 0x88a8
        f.tags = [(tpid, rng.randint(1, 4094))]
        if what == "qinq":
            f.tags.append((0x8100, rng.randint(1, 4094)))
        f.kinds.add(what)
    elif what == "short-vlan":
        f.tags = [(0x8100, 5)]
        f.cut = 14 + rng.randint(2, 5)
        f.kinds.add(what)
    elif f.l3 == "ipv4":
        if what == "frag":
            f.frag = rng.randint(1, 200) | (0x2000 if rng.random() < 0.5
                                            else 0)
            f.kinds.add("frag")
        elif what == "mf":
            f.frag = 0x2000
            f.kinds.add("mf")
        elif what == "opts":
            f.ihl = rng.choice((6, 7, 15))
            f.kinds.add("opts")
        elif what == "bad4":
            how = rng.choice(("ver", "ihl", "long", "short"))
            if how == "ver":
                f.ver = rng.choice((0, 5, 6))
            elif how == "ihl":
                f.ihl = rng.choice((0, 3, 4))
            elif how == "long":
                f.len_delta = rng.randint(1, 100)
            else:
                f.len_delta = -len(f.l4_bytes()) - rng.randint(1, 19)
            f.kinds.add("bad4")
        elif what == "trunc-ip":
            f.cut = 14 + len(f.tags) * 4 + rng.randint(1, 19)
            f.kinds.add("trunc-ip")
        elif what == "trunc-l4" and f.proto in (TCP, UDP):
            f.l4cut = rng.randint(4, (20 if f.proto == TCP else 8) - 1)
            f.payload = b""
            f.kinds.add("trunc-l4")
        elif what == "pad":
            f.pad = rng.randint(1, 30)
            if rng.random() < 0.3 and f.proto in (TCP, UDP):
                # the l4 header lies past the IP total length
                f.len_delta = -len(f.l4_bytes())
            f.kinds.add("pad")
    elif f.l3 == "ipv6":
        if what in ("ext6", "frag", "mf", "opts"):
            f.ext6 = [rng.choice(("hop", "dst", "rt", "frag-first",
                                  "frag-later"))] + f.ext6
            f.kinds.add("ext6")
        elif what in ("bad4", "bad6"):
            how = rng.choice(("ver", "long"))
            if how == "ver":
                f.ver = rng.choice((0, 4, 7))
            else:
                f.len_delta = rng.randint(1, 100)
            f.kinds.add("bad6")
        elif what == "trunc-ip":
            f.cut = 14 + len(f.tags) * 4 + rng.randint(1, 39)
            f.kinds.add("trunc-ip")
        elif what == "trunc-l4" and f.proto in (TCP, UDP):
            f.l4cut = rng.randint(4, (20 if f.proto == TCP else 8) - 1)
            f.payload = b""
            f.kinds.add("trunc-l4")
        elif what == "pad":
            f.pad = rng.randint(1, 30)
            f.kinds.add("pad")


def smac_matches(r, smac):
    return r.smac is None or band(smac, r.smac[1]) == r.smac[0]


def gen_frames(rng, chains, macs):
    rules = [r for c in chains for r in c.rules]
    frames = []
    for smac in macs:
        f = base_frame(rng, smac)
        if rules and rng.random() < 0.6:
            fits = [r for r in rules if smac_matches(r, smac)]
            if fits:
                f = apply_rule(rng, f, rng.choice(fits))
                # Now and then a second rule on top: frames that two rules
                # want are where rule order and chain order show.
                if rng.random() < 0.3:
                    f = apply_rule(rng, f, rng.choice(fits), f.target)
        mutate(rng, f)
        frames.append(f)
    return frames


def batch_macs(rng, n, serial):
    """N source MACs, unique: a pool prefix and a 24-bit serial number."""
    return [rng.choice(SMAC_PREFIXES) + (serial + i).to_bytes(3, "big")
            for i in range(n)]


# --------------------------------------------------------------------------
# Running a batch: load, send, read back, compare

class Setup:
    def __init__(self, args):
        self.hw, self.sw = args.hw, args.sw
        tx_hw, _, ns_hw = args.hw_tx.partition("@")
        tx_sw, _, ns_sw = args.sw_tx.partition("@")
        self.s_hw = packet_socket(tx_hw, ns_hw or None)
        self.s_sw = packet_socket(tx_sw, ns_sw or None)
        self.nft = Nft()
        self.nft_json = Nft(json_out=True)
        # Generic XDP: no driver counts its drops.
        self.ethtool = None if args.no_xdp_counter else Ethtool(self.hw)
        self.last_error_path = \
            "/sys/kernel/debug/xdpoff/%s/last_error" % self.hw
        self.tc_rules = []
        self.tc_sw_rules = None     # canary only: SW's differ
        self.tc_loaded = False
        if args.tc:
            for dev in (self.hw, self.sw):
                subprocess.run(["tc", "qdisc", "del", "dev", dev, "ingress"],
                               stderr=subprocess.DEVNULL)
                subprocess.run(["tc", "qdisc", "add", "dev", dev, "ingress"],
                               check=True)


def tc_load(st, rules, sw_rules=None):
    """The filters of one ruleset on both devices (tc -batch)."""
    cmds = []
    for dev, rs in ((st.hw, rules), (st.sw, sw_rules or rules)):
        cmds.append("filter del dev %s ingress" % dev)
        for i, r in enumerate(rs):
            cmds.append("filter add dev %s ingress prio %d %s" %
                        (dev, i + 1, r.flower(dev)))
    p = subprocess.run(["tc", "-force", "-batch", "-"], input="\n".join(cmds)
                       + "\n", capture_output=True, text=True)
    return p.returncode == 0, p.stderr


def tc_counters(st, rules):
    """{(table, comment): (packets, bytes)} of the filters, HW and SW."""
    out = {}
    for table, dev in (("xdt_hw", st.hw), ("xdt_sw", st.sw)):
        p = subprocess.run(["tc", "-s", "-j", "filter", "show", "dev", dev,
                            "ingress"], capture_output=True, text=True,
                           check=True)
        for f in json.loads(p.stdout or "[]"):
            o = f.get("options")
            if not o or not 1 <= f.get("pref", 0) <= len(rules):
                continue
            stats = o["actions"][0]["stats"]
            out[(table, rules[f["pref"] - 1].comment)] = (
                stats["packets"], stats["bytes"])
            if table == "xdt_hw" and not o.get("in_hw"):
                out[("not_in_hw", rules[f["pref"] - 1].comment)] = 1
    return out


class Result:
    pass


def load(st, hw_chains, sw_chains):
    text = "flush ruleset\n" + \
        render_table("xdt_hw", st.hw, hw_chains, True, False) + \
        render_table("xdt_sw", st.sw, sw_chains, False, True)
    rc, _, err = st.nft.run(text)
    if rc == 0 and st.tc_rules is not None and (st.tc_rules or
                                                 st.tc_loaded):
        ok, tc_err = tc_load(st, st.tc_rules, st.tc_sw_rules)
        st.tc_loaded = bool(st.tc_rules)
        if not ok:
            return False, "tc: " + tc_err, text
    return rc == 0, err, text


def classify_refusal(st, text, chains):
    """Who refused: nf_tables (a dry run fails too) or the driver."""
    rc, _, err2 = st.nft.run(text, dry_run=True)
    if rc == 0:
        return "driver: " + (read_text(st.last_error_path) or "(no reason)"), \
            "(refused at commit)"
    lines = err2.splitlines()
    why = next((l for l in lines if l.startswith("Error")), err2.strip()[:80])
    for c in chains:
        for r in c.rules:
            probe = render_table("xdt_probe", st.hw, [Chain("p", 1, [r])],
                                 True, False, bare=True)
            if st.nft.run(probe, dry_run=True)[0]:
                return "nf_tables: " + why, r.render(st.hw)
    return "nf_tables: " + why, "(no single rule)"


def send(st, frames):
    for data in frames:
        for s in (st.s_hw, st.s_sw):
            while True:
                try:
                    s.send(data)
                    break
                except OSError as e:
                    if e.errno != errno.ENOBUFS:    # the queue is full
                        raise
                    time.sleep(0.002)


def wait_rx(st, rx0, n, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        got = (rx_packets(st.hw) - rx0[0], rx_packets(st.sw) - rx0[1])
        if got[0] >= n and got[1] >= n:
            return got
        if time.monotonic() > deadline:
            return got
        time.sleep(0.005)


def read_state(st):
    rc, out, err = st.nft_json.run("list ruleset")
    if rc:
        raise RuntimeError("nft list ruleset: " + err)
    state = {"sets": {}, "counters": {}}
    for item in json.loads(out)["nftables"]:
        if "set" in item:
            s = item["set"]
            elems = s.get("elem", [])
            state["sets"][(s["table"], s["name"])] = {
                e if isinstance(e, str) else e.get("elem", {}).get("val", "")
                for e in elems}
        elif "rule" in item:
            r = item["rule"]
            if not r.get("comment"):
                continue
            for e in r["expr"]:
                if "counter" in e:
                    state["counters"][(r["table"], r["comment"])] = (
                        e["counter"]["packets"], e["counter"]["bytes"])
    if st.tc_rules:
        state["counters"].update(tc_counters(st, st.tc_rules))
        state["tc_rules"] = st.tc_rules
    return state


def outcome(state, table, m):
    sets = state["sets"]
    if m in sets.get((table, "survived"), ()):
        return "pass"
    if m in sets.get((table, "arrived"), ()):
        return "drop"
    return "xdp" if table == "xdt_hw" else "gone"


def sw_path(state, chains, m):
    """What each SW chain did with the frame (in priority order): no rule
    matched, or one did (or an earlier chain dropped the frame)."""
    sets = state["sets"]
    return ["%s:%s" % (c.name, "no match" if m in sets.get(
        ("xdt_sw", "fall_" + c.name), ()) else "hit")
        for c in sorted(chains, key=lambda c: c.prio)]


def compare(state, frames, chains, base=None):
    """Per-frame decisions and per-rule counters, HW against SW."""
    res = Result()
    res.decisions = []      # (frame index, hw outcome, sw outcome)
    res.counters = []       # (comment, hw (pkts, bytes), sw (pkts, bytes))
    res.outcomes = []
    for i, f in enumerate(frames):
        m = mac_str(f.smac)
        hw, sw = outcome(state, "xdt_hw", m), outcome(state, "xdt_sw", m)
        res.outcomes.append((hw, sw))
        if (hw == "pass") != (sw == "pass"):
            res.decisions.append((i, hw, sw))
    tc = state.get("tc_rules", [])
    for c in chains + ([Chain("tc", 0, tc)] if tc else []):
        for r in c.rules:
            hw = state["counters"].get(("xdt_hw", r.comment), (None, None))
            sw = state["counters"].get(("xdt_sw", r.comment), (None, None))
            if base:
                hw = tuple(a - b for a, b in zip(hw, base["counters"].get(
                    ("xdt_hw", r.comment))))
                sw = tuple(a - b for a, b in zip(sw, base["counters"].get(
                    ("xdt_sw", r.comment))))
            if hw != sw:
                res.counters.append((r.comment, hw, sw))
    return res


class Timer:
    """Seconds spent per phase, for the report."""

    def __init__(self):
        self.t = {}

    def add(self, what, since):
        now = time.monotonic()
        self.t[what] = self.t.get(what, 0.0) + now - since
        return now


def run_batch(st, hw_chains, sw_chains, frames, timer=None):
    """Load, send, read back, compare.  None if nft refused the ruleset."""
    timer = timer or Timer()
    t = time.monotonic()
    ok, err, text = load(st, hw_chains, sw_chains)
    t = timer.add("load", t)
    if not ok:
        return None, err, text
    datas = [f.build() for f in frames]
    rx0 = (rx_packets(st.hw), rx_packets(st.sw))
    drops0 = st.ethtool.sum("_xdp_drops") if st.ethtool else 0
    send(st, datas)
    got = wait_rx(st, rx0, len(datas))
    time.sleep(0.02)
    t = timer.add("send", t)
    state = read_state(st)
    res = compare(state, frames, sw_chains)
    if res.decisions or res.counters:
        # Frames still on their way through the chains?  Look again.
        time.sleep(0.3)
        state = read_state(st)
        res = compare(state, frames, sw_chains)
    timer.add("read", t)
    res.state = state
    res.rx = got
    res.xdp_drops = (st.ethtool.sum("_xdp_drops") - drops0
                     if st.ethtool else 0)
    return res, None, None


# --------------------------------------------------------------------------
# Diagnostics: find the frames behind a counter mismatch, shrink a ruleset

def culprit_frames(st, chains, frames, limit, deadline):
    """Resend frames (the ruleset is loaded) and find which ones move the
    HW and SW counters differently: groups first, then one by one."""
    found = []
    base = read_state(st)

    def differs(group):
        nonlocal base
        rx0 = (rx_packets(st.hw), rx_packets(st.sw))
        send(st, [frames[i].build() for i in group])
        wait_rx(st, rx0, len(group))
        time.sleep(0.02)
        now = read_state(st)
        res = compare(now, frames, chains, base)
        base = now
        return res.counters

    idx = list(range(len(frames)))
    for g in [idx[i:i + 16] for i in range(0, len(idx), 16)]:
        if len(found) >= limit or time.monotonic() > deadline:
            break
        if not differs(g):
            continue
        for i in g:
            if len(found) >= limit or time.monotonic() > deadline:
                break
            c = differs([i])
            if c:
                found.append((i, c))
    return found


def copy_chains(chains, keep):
    out = []
    for c in chains:
        rules = [r for r in c.rules if keep(r)]
        if rules:
            out.append(Chain(c.name, c.prio, rules))
    return out


def minimize(st, chains, frame, kind, deadline):
    """Greedy: drop chains, then rules, while FRAME still shows a mismatch
    of KIND ("decisions" or "counters")."""
    def bad(cand):
        res, _, _ = run_batch(st, cand, cand, [frame])
        return res is not None and bool(getattr(res, kind))

    cur = copy_chains(chains, lambda r: True)
    for c in list(cur):
        if time.monotonic() > deadline or len(cur) == 1:
            break
        cand = [x for x in cur if x is not c]
        if bad(cand):
            cur = cand
    for r in [r for c in cur for r in c.rules]:
        if time.monotonic() > deadline:
            break
        cand = copy_chains(cur, lambda rr: rr is not r)
        if cand and bad(cand):
            cur = cand
    # Then the matches of the rules left; a candidate nft refuses is no
    # reproducer, so dependencies take care of themselves.
    for c in cur:
        for i in range(len(c.rules)):
            for change in REDUCTIONS:
                if time.monotonic() > deadline:
                    break
                r = copy.copy(c.rules[i])
                if not change(r) or r.render("x") == c.rules[i].render("x"):
                    continue
                old, c.rules[i] = c.rules[i], r
                if not bad(cur):
                    c.rules[i] = old
    res, _, _ = run_batch(st, cur, cur, [frame])
    return cur, res


def _drop_l3(r):
    if r.fam is None:
        return False
    r.fam = r.fam_how = r.etype = r.saddr = r.daddr = None
    if r.l4_how in ("ip", "nexthdr"):
        r.l4_how = "meta"
    return True


def _drop_l4(r):
    if r.l4 is None:
        return False
    r.l4 = r.l4_how = r.port = None
    return True


def _drop(field, empty=None):
    def change(r):
        if getattr(r, field) in (None, False):
            return False
        setattr(r, field, empty)
        return True
    return change


def _implied_fam(r):
    if r.fam_how is None or not (r.saddr or r.daddr or
                                 r.l4_how in ("ip", "nexthdr")):
        return False
    r.fam_how = None
    return True


REDUCTIONS = [_drop("smac"), _drop("dmac"), _drop("iif"),
              _drop("iiftype", False), _drop("saddr"), _drop("daddr"),
              _drop("port"), _implied_fam, _drop_l4, _drop_l3]


# --------------------------------------------------------------------------

def diag(*lines):
    for line in lines:
        print("# " + line)
    sys.stdout.flush()


HW_SAYS = {"xdp": "dropped in XDP", "drop": "dropped by nf_tables",
           "pass": "passed"}
SW_SAYS = {"gone": "never reached nf_tables", "drop": "dropped",
           "pass": "passed"}


def show_frame(f, indent="  "):
    diag(indent + "frame: " + f.describe(),
         indent + "bytes: " + f.build().hex())


# The tc filters that went with a ruleset (its chains list), for reports.
TC_OF = {}


def show_ruleset(chains, dev):
    diag("  ruleset (offloaded side; the twin on the other device is the "
         "same):")
    for i, r in enumerate(TC_OF.get(id(chains), [])):
        diag("    tc filter add dev %s ingress prio %d %s  # %s" %
             (dev, i + 1, r.flower(dev), r.comment))
    for line in ruleset_text(chains, dev):
        diag("    " + line)


def show_counters(st, counters):
    return "; ".join("%s %s %s, %s %s" % (c, st.hw, hw, st.sw, sw)
                     for c, hw, sw in counters)


# The planted differences: three source MAC prefixes, a rule per prefix.
CANARY_PREFIXES = [b"\x02\x00\x01", b"\x02\x00\x02", b"\x0a\x00\x00"]


def canary_rule(i, action, comment):
    r = Rule()
    r.smac = (CANARY_PREFIXES[i] + b"\0\0\0", mac("ff:ff:ff:00:00:00"))
    r.action = action
    r.comment = comment
    return r


def canary_run(st, rng, serial, hw, sw):
    """4, 3 and 5 frames of the three prefixes through HW and SW:
    (decision mismatches, counter mismatches, refusal)."""
    frames = []
    for prefix, n in zip(CANARY_PREFIXES, (4, 3, 5)):
        for _ in range(n):
            frames.append(plain_frame(rng, prefix + serial.to_bytes(3, "big")))
            serial += 1
    res, err, _ = run_batch(st, hw, sw, frames)
    if res is None:
        return None, None, err
    return len(res.decisions), len(res.counters), None


def canary(st, rng, serial):
    """A planted difference the comparison must catch: the twin of r1
    accepts what the offloaded r1 drops (decisions differ), r2 and r3 swap
    their matches on the twin (decisions agree, counters differ)."""
    hw = [Chain("c0", 10, [canary_rule(0, "drop", "r1"),
                           canary_rule(1, "drop", "r2"),
                           canary_rule(2, "drop", "r3")])]
    sw = [Chain("c0", 10, [canary_rule(0, "accept", "r1"),
                           canary_rule(2, "drop", "r2"),
                           canary_rule(1, "drop", "r3")])]
    return canary_run(st, rng, serial, hw, sw)


def tc_canary(st, rng, serial):
    """The same for tc: t1 drops on HW and passes on SW (decisions and
    its counter differ), t2 matches other frames on the twin."""
    st.tc_rules = [canary_rule(0, "drop", "t1"), canary_rule(1, "accept", "t2")]
    st.tc_sw_rules = [canary_rule(0, "accept", "t1"),
                      canary_rule(2, "accept", "t2")]
    try:
        return canary_run(st, rng, serial, [], [])
    finally:
        st.tc_rules, st.tc_sw_rules = [], None


def plain_frame(rng, smac):
    f = base_frame(rng, smac)
    while not f.plain():
        f = base_frame(rng, smac)
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hw", default="eth1")
    ap.add_argument("--sw", default="eth3")
    ap.add_argument("--hw-tx", default="eth0", help="DEV[@NETNS]")
    ap.add_argument("--sw-tx", default="eth2", help="DEV[@NETNS]")
    ap.add_argument("--pairs", type=int, default=5120)
    ap.add_argument("--frames", type=int, default=128,
                    help="frames per ruleset")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-chains", type=int, default=3)
    ap.add_argument("--max-rules", type=int, default=15)
    ap.add_argument("--plain-only", action="store_true",
                    help="only frames the XDP parser takes in full")
    ap.add_argument("--examples", type=int, default=3,
                    help="mismatches shown in full")
    ap.add_argument("--minimize", type=int, default=1,
                    help="1: shrink the first mismatches to a reproducer")
    ap.add_argument("--diag-budget", type=float, default=90,
                    help="seconds for culprit search and minimization")
    ap.add_argument("--tc", type=float, default=0.0,
                    help="share of rulesets with tc flower filters too")
    ap.add_argument("--summary", required=True)
    ap.add_argument("--no-xdp-counter", action="store_true",
                    help="HW's driver counts no XDP drops (generic XDP): "
                    "no check against its counter")
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else \
        int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    st = Setup(args)
    t0 = time.monotonic()
    diag("seed %d (XDPOFF_DIFF_SEED=%d repeats this run), %d pairs, %d "
         "frames per ruleset%s" % (seed, seed, args.pairs, args.frames,
                                   ", plain frames only"
                                   if args.plain_only else ""))

    summary = {"seed": seed}
    serial = 1
    cd, cc, err = canary(st, random.Random(seed ^ 0x5a5a), serial)
    serial += 64
    summary["canary"] = "%s,%s" % (cd, cc)
    if err:
        diag("canary ruleset refused: " + err.strip().splitlines()[0])
    if args.tc:
        cd, cc, err = tc_canary(st, random.Random(seed ^ 0xa5a5), serial)
        serial += 64
        summary["tc_canary"] = "%s,%s" % (cd, cc)
        if err:
            diag("tc canary refused: " + err.strip().splitlines()[0])

    timer = Timer()
    rulesets = pairs = draws = lost = xdp_drops_total = 0
    tc_rulesets = tc_filters = tc_not_in_hw = 0
    refused = {}
    dec_mm = cnt_pkts = cnt_bytes = 0
    dec_examples, cnt_examples, early_missed = [], [], []
    dec_by_kind = {}
    mix = {"sw drop": 0, "sw accept": 0, "sw no match": 0, "stack drop": 0,
           "xdp drop": 0}
    kinds = {}
    plain = {"frames": 0, "sw drops": 0, "xdp drops": 0}
    while pairs < args.pairs:
        draws += 1
        n = min(args.frames, args.pairs - pairs)
        macs = batch_macs(rng, n, serial)
        serial += n
        chains = gen_ruleset(rng, macs, args.max_chains, args.max_rules)
        st.tc_rules = gen_tc(rng, macs, rng.randint(1, 4)) \
            if rng.random() < args.tc else []
        frames = gen_frames(rng, chains + (
            [Chain("tc", 0, st.tc_rules)] if st.tc_rules else []), macs)
        TC_OF[id(chains)] = st.tc_rules
        if args.plain_only:
            frames = [f if f.plain() else plain_frame(rng, f.smac)
                      for f in frames]
        res, err, text = run_batch(st, chains, chains, frames, timer)
        if res is None:
            why, example = classify_refusal(st, text, chains)
            if why not in refused:
                diag("refused: %s, e.g. %s" % (why, example))
            refused[why] = refused.get(why, 0) + 1
            if draws > 20 and sum(refused.values()) > draws // 2:
                diag("more than half of the rulesets refused, giving up")
                break
            continue
        rulesets += 1
        pairs += n
        if st.tc_rules:
            tc_rulesets += 1
            tc_filters += len(st.tc_rules)
            tc_not_in_hw += sum(1 for k in res.state["counters"]
                                if k[0] == "not_in_hw")
        xdp_drops_total += res.xdp_drops
        if res.rx != (n, n):
            lost += 1
            diag("ruleset %d: frames seen by %s/%s: %d/%d of %d" %
                 (rulesets, st.hw, st.sw, res.rx[0], res.rx[1], n))
        # Frames missing from HW's arrived set were dropped in XDP, or by
        # the stack before nf_tables (then SW misses them too).
        gone = sum(1 for hw, sw in res.outcomes if sw == "gone")
        xdp = sum(1 for hw, sw in res.outcomes if hw == "xdp")
        if st.ethtool and not xdp - gone <= res.xdp_drops <= xdp:
            lost += 1
            diag("ruleset %d: %d frames missing past XDP, %d missing on %s "
                 "too, but virtio-net counted %d XDP drops" %
                 (rulesets, xdp, gone, st.sw, res.xdp_drops))
        sets = res.state["sets"]
        # A tc filter not in hw runs in software only, and XDP takes no
        # verdict from its priority on: those frames may go up.
        sw_only = any(k[0] == "not_in_hw" for k in res.state["counters"])
        for f, (hw, sw) in zip(frames, res.outcomes):
            m = mac_str(f.smac)
            for k in f.kinds or {"plain"}:
                kinds[k] = kinds.get(k, 0) + 1
            if sw == "gone":
                mix["stack drop"] += 1
            elif sw == "drop":
                mix["sw drop"] += 1
            elif any(m not in sets.get(("xdt_sw", "fall_" + c.name), ())
                     for c in chains):
                mix["sw accept"] += 1
            else:
                mix["sw no match"] += 1
            if hw == "xdp":
                mix["xdp drop"] += 1
            if f.plain(tc=bool(st.tc_rules)) and not sw_only:
                plain["frames"] += 1
                if sw == "drop":
                    plain["sw drops"] += 1
                    if hw == "xdp":
                        plain["xdp drops"] += 1
                    else:
                        early_missed.append((rulesets, chains, f))
        dec_mm += len(res.decisions)
        for i, hw, sw in res.decisions:
            k = "%s/%s %s" % (hw, sw, ",".join(sorted(frames[i].kinds))
                              or "plain")
            dec_by_kind[k] = dec_by_kind.get(k, 0) + 1
            if len(dec_examples) < args.examples:
                dec_examples.append((rulesets, chains, frames[i], hw, sw,
                                     res))
        cnt_pkts += sum(1 for c, hw, sw in res.counters if hw[0] != sw[0])
        cnt_bytes += sum(1 for c, hw, sw in res.counters if hw[0] == sw[0])
        # Counter mismatches of a ruleset without decision mismatches: the
        # ruleset is still loaded, find the frames behind them.
        if res.counters and len(cnt_examples) < args.examples:
            culprits = []
            if not res.decisions and not any(len(x[4]) for x in cnt_examples):
                culprits = culprit_frames(
                    st, chains, frames, 3,
                    time.monotonic() + args.diag_budget / 3)
            cnt_examples.append((rulesets, chains, frames, res, culprits))

    elapsed = time.monotonic() - t0
    diag("%d rulesets x %d frames = %d pairs in %.0f s (nft load %.0f s, "
         "send %.0f s, read %.0f s); %d draws refused" %
         (rulesets, args.frames, pairs, elapsed, timer.t.get("load", 0),
          timer.t.get("send", 0), timer.t.get("read", 0),
          sum(refused.values())))
    for why, n in sorted(refused.items(), key=lambda x: -x[1]):
        diag("  refused %dx: %s" % (n, why))
    if args.tc:
        diag("tc: %d rulesets with %d flower filters, %d of them not in hw "
             "(software only)" % (tc_rulesets, tc_filters, tc_not_in_hw))
    diag("decisions: %s" % ", ".join("%s %d" % kv for kv in mix.items()))
    diag("frames: %s" % ", ".join("%s %d" % kv for kv in sorted(
        kinds.items(), key=lambda x: -x[1])))
    diag("plain frames: %d, dropped by SW %d, of which in XDP %d" %
         (plain["frames"], plain["sw drops"], plain["xdp drops"]))
    if dec_by_kind:
        diag("decision mismatches (%s/%s frame kind): %s" % (
            st.hw, st.sw, ", ".join("%s %d" % kv for kv in sorted(
                dec_by_kind.items(), key=lambda x: -x[1]))))
    if cnt_pkts or cnt_bytes:
        diag("counter mismatches: %d in packets, %d in bytes only" %
             (cnt_pkts, cnt_bytes))

    for rs, chains, f, hw, sw, res in dec_examples:
        diag("DECISION MISMATCH in ruleset %d: %s %s, %s %s (%s chains: %s)"
             % (rs, st.hw, HW_SAYS[hw], st.sw, SW_SAYS[sw], st.sw,
                " ".join(sw_path(res.state, chains, mac_str(f.smac)))))
        show_frame(f)
        show_ruleset(chains, st.hw)
    for rs, chains, frames, res, culprits in cnt_examples:
        diag("COUNTER MISMATCH in ruleset %d%s: %s" % (
            rs, " (with decision mismatches)" if res.decisions else "",
            show_counters(st, res.counters)))
        show_ruleset(chains, st.hw)
        for i, c in culprits:
            diag("  a frame behind it: " + show_counters(st, c))
            show_frame(frames[i], "    ")
    for rs, chains, f in early_missed[:args.examples]:
        diag("NOT DROPPED EARLY in ruleset %d: a plain frame SW drops, XDP "
             "passed it up" % rs)
        show_frame(f)
        show_ruleset(chains, st.hw)

    # Minimal reproducers: the first decision mismatch, the first frame
    # behind a counter mismatch.
    todo = []
    if dec_examples:
        todo.append(("decisions", dec_examples[0][1], dec_examples[0][2]))
    for rs, chains, frames, res, culprits in cnt_examples:
        if culprits:
            todo.append(("counters", chains, frames[culprits[0][0]]))
            break
    for kind, chains, f in todo if args.minimize else ():
        st.tc_rules = TC_OF.get(id(chains), [])
        for i, r in enumerate(st.tc_rules):
            diag("  with tc filter prio %d %s" % (i + 1, r.flower(st.hw)))
        chains, res = minimize(st, chains, f, kind, time.monotonic() +
                               args.diag_budget / 3)
        if res is None or not getattr(res, kind):
            diag("the %s mismatch did not come back on its own" % kind[:-1])
            continue
        diag("MINIMAL REPRODUCER (%s mismatch): offloaded on %s, the same "
             "without flags offload on %s" % (kind[:-1], st.hw, st.sw))
        for line in render_table("x", st.hw, chains, True, False,
                                 bare=True).splitlines():
            diag("    " + line)
        show_frame(f)
        for i, hw, sw in res.decisions:
            diag("  decision: %s %s, %s %s" % (st.hw, HW_SAYS[hw], st.sw,
                                               SW_SAYS[sw]))
        if res.counters:
            diag("  counters: " + show_counters(st, res.counters))

    summary.update({
        "rulesets": rulesets, "pairs": pairs, "seconds": int(elapsed),
        "refused": sum(refused.values()), "decision_mismatches": dec_mm,
        "counter_mismatches": cnt_pkts + cnt_bytes, "xdp_drops":
        xdp_drops_total, "xdp_dropped_frames": mix["xdp drop"],
        "sw_drops": mix["sw drop"], "plain_sw_drops": plain["sw drops"],
        "plain_not_early": len(early_missed), "lost": lost,
        "tc_rulesets": tc_rulesets, "tc_filters": tc_filters,
        "tc_not_in_hw": tc_not_in_hw,
    })
    with open(args.summary, "w") as f:
        for k, v in summary.items():
            f.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
