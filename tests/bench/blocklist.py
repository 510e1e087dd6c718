#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The blocklist of make bench's blocklist modes, as an nft table.

Usage: blocklist.py DEV OFFLOAD LAST NONE [V4 V6]

V4 (10,000) IPv4 source prefixes of random lengths /8 to /32 and V6
(1,000) IPv6 source prefixes /16 to /128, each `ip saddr P drop` or
`ip6 saddr P drop`, in one chain of table netdev bench on DEV (flags
offload if OFFLOAD is 1), then `ip saddr LAST counter drop`: the frame
from LAST matches the last rule, the frame from NONE no rule (no prefix
covers LAST or NONE).  The prefixes come from a random generator seeded
by XDPOFF_BENCH_SEED (default 1), which the table's comment names: the
same seed gives the same rules.
"""
import ipaddress
import os
import random
import sys


def prefixes(rng, n, bits, lo, hi, avoid):
    """n random prefixes of lengths lo..hi, none covering an address of
    avoid (the frames' sources): such a draw is drawn again."""
    out = []
    while len(out) < n:
        plen = rng.randint(lo, hi)
        net = rng.getrandbits(bits) >> (bits - plen) << (bits - plen)
        if any(a >> (bits - plen) << (bits - plen) == net for a in avoid):
            continue
        out.append((net, plen))
    return out


def main():
    if len(sys.argv) not in (5, 7):
        sys.exit(__doc__)
    dev, offload, last, none = sys.argv[1:5]
    v4, v6 = (int(x) for x in sys.argv[5:7]) if len(sys.argv) == 7 \
        else (10000, 1000)
    seed = int(os.environ.get("XDPOFF_BENCH_SEED", "1"))
    rng = random.Random(seed)
    avoid = [int(ipaddress.IPv4Address(a)) for a in (last, none)]
    out = ["table netdev bench {",
           '\tcomment "blocklist.py: XDPOFF_BENCH_SEED=%d, %d IPv4 and %d '
           'IPv6 prefixes"' % (seed, v4, v6),
           "\tchain ingress {",
           "\t\ttype filter hook ingress device %s priority 10; "
           "policy accept;" % dev]
    if offload == "1":
        out.append("\t\tflags offload;")
    for net, plen in prefixes(rng, v4, 32, 8, 32, avoid):
        out.append("\t\tip saddr %s/%d drop" % (ipaddress.IPv4Address(net),
                                                plen))
    for net, plen in prefixes(rng, v6, 128, 16, 128, []):
        out.append("\t\tip6 saddr %s/%d drop" % (ipaddress.IPv6Address(net),
                                                 plen))
    out.append("\t\tip saddr %s counter drop" % last)
    out += ["\t}", "}"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
