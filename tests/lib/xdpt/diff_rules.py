# SPDX-License-Identifier: GPL-2.0
"""Random rules, chains and rulesets, and their nft text.

Part of tests/lib/difftest.py, the differential test."""
import ipaddress
import random

from xdpt.diff_frames import batch_macs
from xdpt.diff_pools import (
    ADDR4, ADDR6, DMACS, DMAC_MASKS, FAM_TYPE, ICMP, ICMP6, L4_IP, L4_IP6,
    LOW_PROTOS, LOW_TYPES, OTHER_TYPES, PORTS, PREFIX4, PREFIX6,
    PROTO_NAME, SMAC_MASKS, TCP, UDP, band, mac_str)
from xdpt.net import prefix_mask


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
    def __init__(self, name, prio, rules, prefix_family=False):
        self.name = name
        self.prio = prio
        self.rules = rules
        self.prefix_family = prefix_family  # gen_prefix_chain()'s


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


def gen_prefix_chain(rng, n):
    """n rules of one prefix family, for the classifier's merged tables:
    ip or ip6 saddr or daddr prefixes of many lengths around the pool's
    addresses (which frames draw from), nested and overlapping, the same
    address under two lengths, a longer prefix after a shorter one that
    shadows it; some with a port too."""
    fam = rng.choice(("ip", "ip6"))
    pool, nb = (ADDR4, 4) if fam == "ip" else (ADDR6, 16)
    which = rng.choice(("saddr", "daddr"))
    rules = []
    for _ in range(n):
        r = Rule()
        r.order = rng.getrandbits(32)
        r.fam, r.etype = fam, FAM_TYPE[fam]
        r.fam_how = rng.choice(("meta", "ether", None, None))
        prev = getattr(rng.choice(rules), which) if rules else None
        how = rng.random()
        if prev and how < 0.25:         # the same address, another length
            base, plen = prev[0], rng.randint(1, 8 * nb)
        elif prev and how < 0.45:       # inside an earlier prefix
            base = bytes(x | (y & ~m) for x, y, m in zip(
                prev[0], rng.choice(pool), prefix_mask(prev[1], nb)))
            plen = rng.randint(prev[1], 8 * nb)
        else:
            base, plen = rng.choice(pool), rng.randint(1, 8 * nb)
            if rng.random() < 0.3:      # a sibling: one bit of it flipped
                bit = rng.randrange(plen)
                base = bytearray(base)
                base[bit // 8] ^= 0x80 >> (bit % 8)
                base = bytes(base)
        setattr(r, which, (band(base, prefix_mask(plen, nb)), plen))
        if rng.random() < 0.15:
            r.l4 = rng.choice((TCP, UDP))
            r.port = (rng.choice(("sport", "dport")), rng.choice(PORTS))
        r.action = rng.choice(("drop", "accept"))
        rules.append(r)
    return rules


def gen_ruleset(rng, batch_macs, max_chains, max_rules, prefix=0.0):
    """Random chains; with probability prefix, a prefix family's chain
    (gen_prefix_chain()) first, of up to 3 * max_rules rules."""
    if rng.random() < prefix:
        rules = gen_prefix_chain(rng, rng.randint(4, 3 * max_rules))
        for i, r in enumerate(rules):
            r.comment = "r%d" % (i + 1)
        chains = [Chain("c0", rng.choice((1, 10, 100)), rules, True)]
        if rng.random() < 0.5:
            more = gen_ruleset(rng, batch_macs, 1, max_rules)[0]
            for i, r in enumerate(more.rules):
                r.comment = "r%d" % (len(rules) + i + 1)
            chains.append(Chain("c1", 1000, more.rules))
        return chains
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
