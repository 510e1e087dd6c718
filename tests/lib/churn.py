#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Random nft transactions on one offloaded chain, each checked.

Transactions: add batches of 1 to 3 rules, deletes of 1 to 3 rules by
handle (one batch), a flush of the chain, and batches that nf_tables
aborts at their end (the last rule cannot be offloaded).  Rules come from
a pool of distinct matches, some sharing a mask, so that a rule often
duplicates one already in the chain.

After each transaction the rules XDP holds, as `xdpoff show DEV --json`
lists them, must equal what the chain's rules as `nft -j list chain` gives
them imply: one entry per distinct match, the first rule in the chain with
that match (lowest handle: offloaded chains only append), its verdict and
its match fields, translated here from nft's JSON independently of the
driver.  And the driver's shadow table (debugfs DEV/rules) holds one line
per rule of the chain.

nft runs in this process, through libnftables (python3-nftables), as the
nft command would run it: a command per transaction and a listing after
each would cost two programs started per transaction, most of the test's
time in a TCG guest.

Prints one line: transactions adds refused dels bad.  Diagnostics of the
first few mismatches go to stderr, as KTAP comments.
"""
import argparse
import ipaddress
import json
import random
import subprocess
import sys
import time

import nftables

from xdpt import net

POOL = (["udp dport %d counter drop" % p for p in range(1, 9)] +
        ["ip saddr 10.0.%d.0/24 counter accept" % i for i in range(4)] +
        ["ip daddr 10.0.0.%d tcp dport 22 counter drop" % i for i in range(4)] +
        ["ether saddr 02:00:00:00:00:%02x counter drop" % i for i in range(4)] +
        ["ip6 saddr fd00::%d counter drop" % i for i in range(3)])

ETH_P = {"ip": 0x0800, "ip6": 0x86dd}
IPPROTO = {"tcp": 6, "udp": 17}
VERDICT = {"drop": "drop", "accept": "pass"}


def prefix_mask(family, plen):
    """An IPv4 prefix's mask as nft prints an address."""
    if family != "ip":
        raise ValueError("IPv6 prefixes are not in the pool")
    return str(ipaddress.IPv4Address(net.prefix_mask(plen, 4)))


def expected_match(exprs):
    """xdpoff's match fields for an nft rule of the pool, or None."""
    match = {}
    for e in exprs:
        if "match" not in e:
            continue
        m = e["match"]
        pl = m["left"].get("payload") if isinstance(m["left"], dict) else None
        if m["op"] not in ("==", "in") or not pl:
            return None
        proto, field, right = pl["protocol"], pl["field"], m["right"]
        if proto in ETH_P:
            match["n_proto"] = ETH_P[proto]
        if proto in IPPROTO:
            match["ip_proto"] = IPPROTO[proto]
        if proto == "ether" and field in ("saddr", "daddr"):
            match["smac" if field == "saddr" else "dmac"] = right
        elif proto in ETH_P and field in ("saddr", "daddr"):
            if isinstance(right, dict):
                match[field] = right["prefix"]["addr"]
                match[field + "_mask"] = prefix_mask(proto,
                                                     right["prefix"]["len"])
            else:
                match[field] = right
        elif proto in IPPROTO and field in ("sport", "dport"):
            match[field] = right
        else:
            return None
    return match


def verdict(exprs):
    for e in exprs:
        for v in VERDICT:
            if v in e:
                return VERDICT[v]
    return None


class Chain:
    def __init__(self, family, table, chain, dev, xdpoff):
        self.spec = [family, table, chain]
        self.dev = dev
        self.xdpoff = xdpoff
        self.ctx = nftables.Nftables()
        self.ctx.set_json_output(True)

    def nft(self, script):
        """One transaction, as `nft -f` runs a file: True if it committed."""
        rc, _out, _err = self.ctx.cmd(script)
        return rc == 0

    def rules(self):
        rc, out, err = self.ctx.cmd("list chain " + " ".join(self.spec))
        if rc != 0:
            sys.exit("churn.py: nft list chain: " + err.strip())
        return [i["rule"] for i in json.loads(out)["nftables"]
                if "rule" in i]

    def shown(self):
        out = subprocess.run([self.xdpoff, "show", self.dev, "--json"],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)[0]["rules"]

    def shadow(self):
        with open("/sys/kernel/debug/xdpoff/%s/rules" % self.dev) as f:
            return sum(1 for _ in f)

    def add(self, rules):
        return "".join("add rule %s %s\n" % (" ".join(self.spec), r)
                       for r in rules)


def canon(entry):
    return json.dumps(entry, sort_keys=True)


def compare(chain, rules):
    """Differences between what the driver holds and what nft has."""
    want = {}
    for r in sorted(rules, key=lambda r: r["handle"]):
        m = expected_match(r["expr"])
        if m is None:
            return ["rule %d: not from the pool: %s" % (r["handle"],
                                                        json.dumps(r["expr"]))]
        key = canon(m)
        if key not in want:
            want[key] = {"handle": r["handle"], "action": verdict(r["expr"]),
                         "match": m}
    have = {}
    for r in chain.shown():
        if r.get("hook") != "nft":
            return ["a rule not from nft in xdpoff show: %s" % canon(r)]
        have[canon(r["match"])] = {"handle": r["handle"],
                                   "action": r["action"], "match": r["match"]}
    diffs = []
    for key in sorted(set(want) | set(have)):
        w, h = want.get(key), have.get(key)
        if w != h:
            diffs.append("nft implies %s, xdpoff shows %s" %
                         (canon(w) if w else "nothing",
                          canon(h) if h else "nothing"))
    n = chain.shadow()
    if n != len(rules):
        diffs.append("shadow table: %d rules, the chain %d" % (n, len(rules)))
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chain", required=True, help="FAMILY:TABLE:CHAIN")
    ap.add_argument("--dev", required=True)
    ap.add_argument("--xdpoff", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--transactions", type=int, default=1000000,
                    help="0: compare the present state only")
    ap.add_argument("--seconds", type=float, default=None,
                    help="stop after this long, once MIN_ADDS add batches ran")
    ap.add_argument("--min-adds", type=int, default=0)
    ap.add_argument("--mixed", action="store_true",
                    help="with --seconds: go on until at least one add "
                    "batch failed and one loaded (random injected "
                    "failures), for at most ten times as long")
    ap.add_argument("--show", type=int, default=3,
                    help="mismatches to describe")
    a = ap.parse_args()

    chain = Chain(*a.chain.split(":"), a.dev, a.xdpoff)
    rng = random.Random(a.seed)
    print("# seed %d" % a.seed, file=sys.stderr)
    start = time.monotonic()
    i = adds = refused = dels = bad = 0
    rules = chain.rules()
    while i < a.transactions:
        if a.seconds:
            t = time.monotonic() - start
            done = adds >= a.min_adds and \
                (not a.mixed or 0 < refused < adds)
            if t >= a.seconds * 10 or (t >= a.seconds and done):
                break
        i += 1
        k = rng.random()
        if k < 0.45:
            op = "add"
            adds += 1
            if not chain.nft(chain.add(rng.sample(POOL, rng.randint(1, 3)))):
                refused += 1
        elif k < 0.9:
            victims = rng.sample(rules, min(len(rules), rng.randint(1, 3)))
            op = "delete %d" % len(victims)
            if victims and chain.nft("".join(
                    "delete rule %s handle %d\n" % (" ".join(chain.spec),
                                                    r["handle"])
                    for r in victims)):
                dels += len(victims)
        elif k < 0.95:
            op = "flush"
            chain.nft("flush chain %s\n" % " ".join(chain.spec))
        else:
            # Aborted at its end: nothing of it may stay.
            op = "aborted add"
            chain.nft(chain.add([rng.choice(POOL),
                                 "ip saddr 10.9.9.9 dup to lo"]))
        rules = chain.rules()
        diffs = compare(chain, rules)
        if diffs:
            bad += 1
            if bad <= a.show:
                for d in ["after #%d (%s), %d rules:" % (i, op, len(rules))] + \
                         diffs[:4]:
                    print("# " + d, file=sys.stderr)
    if a.transactions == 0:
        diffs = compare(chain, rules)
        bad = 1 if diffs else 0
        for d in diffs[:4]:
            print("# " + d, file=sys.stderr)
    print(i, adds, refused, dels, bad)


if __name__ == "__main__":
    main()
