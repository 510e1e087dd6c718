#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A model of xdpoff's rules map keys, from xdpoff/xdpoff.h, against the maps.

Usage: keyindex.py check PINDIR
       keyindex.py collide PINDIR N

PINDIR is a device's pin directory (/sys/fs/bpf/xdpoff/DEV).

  check    every entry of the rules map is keyed by the low 32 bits of
           its key hash, computed here from its table (mask id), the
           table mask's words and its fields & the table's mask
           (xdpoff_key_hash()), and a dup below its active table's dups;
           its own mask is within its table's (xdpoff_mask_within()) and
           its fields within its own mask; no two entries of a table
           have the same key (fields & the table's mask); every active
           table's hash_start is xdpoff_hash_start() of the seed and its
           id; prints "N rules" or the differences, one per line, and
           fails
  collide  N pairs of variations of the first rule of the rules map (in
           key order) in its IPv4 source address and destination port,
           within its mask, whose keys have the same hash under the
           device's seed: one line each, "saddrA dportA saddrB dportB"
           (build/tests/keycollide searches; tests/lib/keycollide.c)
"""
import os
import struct
import subprocess
import sys

from xdpt.bpf import elements, u32
from xdpt.btf import Layout

MUL = 0x9e3779b97f4a7c15
U64 = (1 << 64) - 1
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
KEYCOLLIDE = os.path.join(ROOT, "build", "tests", "keycollide")


def hash_word(h, w):
    h = ((h ^ w) * MUL) & U64
    return h ^ (h >> 32)


def hash_start(seed, mask_id):
    return ((seed ^ mask_id) * MUL) & U64


def key_hash(seed, mask_id, words, fields):
    h = hash_start(seed, mask_id)
    for i in reversed(range(len(fields) // 8)):
        if words & (1 << i):
            h = hash_word(h, struct.unpack_from("<Q", fields, 8 * i)[0])
    return h


class Maps:
    """The maps of PINDIR, read raw; their members found through BTF."""

    def __init__(self, pindir):
        paths = {m: os.path.join(pindir, "xdpoff_" + m)
                 for m in ("meta", "masks", "rules")}
        meta_l = Layout(paths["meta"], "value")
        self.mask_l = Layout(paths["masks"], "value")
        self.rule_l = Layout(paths["rules"], "value")
        key_l = Layout(paths["rules"], "key")
        meta = dict(elements(paths["meta"]))
        self.seed = meta_l.int(meta[struct.pack("=I", 0)], "seed")
        self.words = {}         # mask id: words (of an active slot first)
        self.masks = {}         # mask id: its active slot's value
        self.starts = {}        # active slot: (mask id, its hash_start)
        ml = self.mask_l
        for k, m in elements(paths["masks"]):
            mask_id, active = ml.int(m, "id"), ml.int(m, "active")
            if active or mask_id not in self.words:
                self.words[mask_id] = ml.int(m, "words")
            if active:
                self.masks[mask_id] = m
                self.starts[u32(k)] = (mask_id, ml.int(m, "hash_start"))
        # [((hash, dup), value)], in key order
        self.rules = [((key_l.int(k, "hash"), key_l.int(k, "dup")), v)
                      for k, v in elements(paths["rules"])]

    def mask_id(self, val):
        return self.rule_l.int(val, "mask_id")

    def fields(self, val):
        return self.rule_l.raw(val, "fields")

    def own_mask(self, val):
        return self.rule_l.raw(val, "mask")

    def table_mask(self, mask_id):
        m = self.masks.get(mask_id)
        return self.mask_l.raw(m, "mask") if m is not None else None

    def table_key(self, val):
        """The entry's fields & its table's mask."""
        tm = self.table_mask(self.mask_id(val)) or bytes(len(self.fields(val)))
        return band(self.fields(val), tm)

    def rule_hash(self, val):
        mask_id = self.mask_id(val)
        return key_hash(self.seed, mask_id, self.words.get(mask_id, 0),
                        self.table_key(val))


def band(a, b):
    return bytes(x & y for x, y in zip(a, b))


# xdpoff_mask_within(): the bytes of saddr and daddr (8..40) a subset,
# the others equal.
ADDR = range(8, 40)


def within(t, r):
    return all((t[i] & ~r[i]) == 0 if i in ADDR else t[i] == r[i]
               for i in range(len(t)))


def check(m):
    diffs = []
    keys = set()
    rules = {}
    for (h, dup), val in m.rules:
        mask_id, fields = m.mask_id(val), m.fields(val)
        name = "entry %08x dup %d (mask id %d)" % (h, dup, mask_id)
        want = m.rule_hash(val) & 0xffffffff
        if h != want:
            diffs.append("%s: key hash %08x, not %08x" % (name, h, want))
        if (h, dup) in keys:
            diffs.append("%s: a second entry of that key" % name)
        keys.add((h, dup))
        mask = m.masks.get(mask_id)
        if mask is None:
            diffs.append("%s: no active mask of that id" % name)
            continue
        own, tkey = m.own_mask(val), m.table_key(val)
        if not within(m.table_mask(mask_id), own):
            diffs.append("%s: its mask %s is not within its table's %s"
                         % (name, own.hex(), m.table_mask(mask_id).hex()))
        if band(fields, own) != fields:
            diffs.append("%s: fields outside its mask" % name)
        if (mask_id, tkey) in rules:
            diffs.append("%s: has the table and key of entry %08x dup %d"
                         % ((name,) + rules[mask_id, tkey]))
        rules[mask_id, tkey] = (h, dup)
        dups = m.mask_l.int(mask, "dups")
        if dup >= dups:
            diffs.append("%s: dup not below its mask's dups, %d" % (name, dups))
    for slot, (mask_id, start) in sorted(m.starts.items()):
        if start != hash_start(m.seed, mask_id):
            diffs.append("mask slot %d (id %d): hash_start %016x, not %016x"
                         % (slot, mask_id, start, hash_start(m.seed, mask_id)))
    return diffs


def collide(m, n):
    if not m.rules:
        sys.exit("keyindex.py: no rule in the rules map")
    val = m.rules[0][1]
    mask_id = m.mask_id(val)
    if mask_id not in m.masks:
        sys.exit("keyindex.py: the first rule's mask %d is not active" % mask_id)
    r = subprocess.run([KEYCOLLIDE, str(m.seed), str(mask_id),
                        m.mask_l.raw(m.masks[mask_id], "mask").hex(),
                        m.fields(val).hex(), str(n)],
                       stdout=subprocess.PIPE, check=False)
    sys.stdout.write(r.stdout.decode())
    if r.returncode:
        sys.exit(r.returncode)


def main():
    a = sys.argv[1:]
    if a[:1] == ["check"] and len(a) == 2:
        m = Maps(a[1])
        diffs = check(m)
        for d in diffs:
            print(d)
        if diffs:
            sys.exit(1)
        print("%d rules" % len(m.rules))
    elif a[:1] == ["collide"] and len(a) == 3:
        collide(Maps(a[1]), int(a[2]))
    else:
        sys.exit(__doc__.split("\n\n")[1])


if __name__ == "__main__":
    main()
