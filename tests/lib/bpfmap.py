#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The entries of a pinned BPF map, read raw with BPF_MAP_LOOKUP_BATCH.

Usage: bpfmap.py count|dump PATH
       bpfmap.py first PATH [MEMBER=N]...
       bpfmap.py member PATH MEMBER

`bpftool -j map dump` formats every entry through the map's BTF, which
takes the guest (TCG) seconds for the thousands of rules or flows a test
loads, and a hash map dumps in bucket order, which changes when an entry
is deleted and added back.  This reads the map raw, in key order (the
members named through the map's BTF: xdpt.btf).  Of a hash map (xdpoff's
rules and flows maps) every entry counts: each is an offloaded rule or
flow.  Of an array (masks, meta, filter), the elements that are not all
zero.

  count   how many
  dump    one line each, "KEY VALUE" in hex, in key order (an array's
          keys as numbers, a hash map's as bytes)
  first   the first of them as bpftool's arguments: "key hex .. value hex
          ..", with each value MEMBER given set to N
  member  the value's MEMBER of each, one number a line
"""
import sys

from xdpt.bpf import elements
from xdpt.btf import Layout


def set_members(layout, val, assignments):
    """@val with each "MEMBER=N" of @assignments written in."""
    val = bytearray(val)
    for a in assignments:
        name, n = a.split("=", 1)
        off, size = layout[name]
        val[off:off + size] = int(n, 0).to_bytes(size, sys.byteorder)
    return bytes(val)


def main():
    a = sys.argv[1:]
    if not (a[:1] in (["count"], ["dump"]) and len(a) == 2 or
            a[:1] == ["first"] and len(a) >= 2 or
            a[:1] == ["member"] and len(a) == 3):
        sys.exit(__doc__.split("\n\n")[1])
    what, path = a[:2]
    es = elements(path)
    if what == "count":
        print(len(es))
    elif what == "dump":
        for k, v in es:
            print(k.hex(), v.hex())
    elif what == "member":
        layout = Layout(path, "value")
        for _, v in es:
            print(layout.int(v, a[2]))
    elif es:
        k, v = es[0]
        v = set_members(Layout(path, "value"), v, a[2:]) if a[2:] else v
        print("key hex", " ".join("%02x" % b for b in k),
              "value hex", " ".join("%02x" % b for b in v))


if __name__ == "__main__":
    main()
