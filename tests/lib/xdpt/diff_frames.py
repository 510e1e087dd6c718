# SPDX-License-Identifier: GPL-2.0
"""Random frames, most made to match a rule of their ruleset.

Part of tests/lib/difftest.py, the differential test."""
import ipaddress
import struct

from xdpt.diff_pools import (
    ADDR4, ADDR6, DMACS, GRE, HOP, ICMP, ICMP6, LOW_TYPES, NONE6,
    OTHER_TYPES, PORTS, SCTP, SMAC_PREFIXES, TCP, UDP, band, bnot, bor,
    mac_str)
from xdpt.net import csum, prefix_mask


# Tags that make a frame "not plain": the XDP parser leaves such frames to
# software, or the stack sees them differently (tag stripped, 802.3 length).
NOT_PLAIN = {"vlan", "qinq", "ext6", "bad4", "bad6", "trunc-ip",
             "trunc-l4", "low", "short-vlan"}


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


def truncate(rng, f, what, l3_cut_max):
    """trunc-ip (the frame cut 1 to @l3_cut_max bytes into the network
    header) and trunc-l4 (a TCP or UDP header cut short) of either family;
    False for another @what."""
    if what == "trunc-ip":
        f.cut = 14 + len(f.tags) * 4 + rng.randint(1, l3_cut_max)
        f.kinds.add("trunc-ip")
    elif what == "trunc-l4" and f.proto in (TCP, UDP):
        f.l4cut = rng.randint(4, (20 if f.proto == TCP else 8) - 1)
        f.payload = b""
        f.kinds.add("trunc-l4")
    else:
        return False
    return True


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
        elif truncate(rng, f, what, 19):
            pass
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
        elif truncate(rng, f, what, 39):
            pass
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
