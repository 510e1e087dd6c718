#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A model of xdpoff's rule index, from xdpoff/xdpoff.h, against the maps.

Usage: keyindex.py check PINDIR
       keyindex.py same-bucket PINDIR SLOT N

PINDIR is a device's pin directory (/sys/fs/bpf/xdpoff/DEV).

  check        every used rule's key hash, computed here from its mask id,
               its mask's words and its fields (xdpoff_key_hash()), names
               the rule's slot in the right bucket of the index, every
               used index entry names a rule, and every active mask's
               hash_start is xdpoff_hash_start() of the seed and its id;
               prints "N rules" or the differences, one per line, and fails
  same-bucket  N destination ports (not the rule's own) that, put in place
               of the dport of the rule in SLOT, give keys of its bucket,
               with top bits no used entry has; one line, space-separated
"""
import os
import struct
import sys

import bpfmap

MUL = 0x9e3779b97f4a7c15
U64 = (1 << 64) - 1
SLOT_BITS = 0xffffff
TAG = U64 & ~SLOT_BITS
FIELDS = 64             # offsetof(struct xdpoff_rule_val, fields)
FIELDS_LEN = 72         # sizeof(struct xdpoff_fields)
DPORT = 6               # offsetof(struct xdpoff_fields, dport)
HASH_START = FIELDS_LEN + 40    # offsetof(struct xdpoff_mask, hash_start)


def hash_word(h, w):
    h = ((h ^ w) * MUL) & U64
    return h ^ (h >> 32)


def hash_start(seed, mask_id):
    return ((seed ^ mask_id) * MUL) & U64


def key_hash(seed, mask_id, words, fields):
    h = hash_start(seed, mask_id)
    for i in reversed(range(FIELDS_LEN // 8)):
        if words & (1 << i):
            h = hash_word(h, struct.unpack_from("<Q", fields, 8 * i)[0])
    return hash_word(h, 0)      # xdpoff_hash_end()


class Maps:
    def __init__(self, pindir):
        meta = dict(bpfmap.elements(os.path.join(pindir, "xdpoff_meta")))[0]
        self.seed, self.index_mask = struct.unpack_from("<QI", meta, 24)
        self.words = {}
        self.starts = {}        # active slot: (mask id, its hash_start)
        for slot, m in bpfmap.elements(os.path.join(pindir, "xdpoff_masks")):
            mask_id, active = struct.unpack_from("<II", m, FIELDS_LEN)
            words, = struct.unpack_from("<I", m, FIELDS_LEN + 20)
            if active or mask_id not in self.words:
                self.words[mask_id] = words
            if active:
                self.starts[slot] = (mask_id,
                                     struct.unpack_from("<Q", m, HASH_START)[0])
        self.rules = dict(bpfmap.elements(os.path.join(pindir, "xdpoff_rules")))
        self.index = {b: struct.unpack("<8Q", v) for b, v in
                      bpfmap.elements(os.path.join(pindir, "xdpoff_index"))}

    def rule_hash(self, val, fields=None):
        mask_id, = struct.unpack_from("<I", val, FIELDS - 4)
        if fields is None:
            fields = val[FIELDS:FIELDS + FIELDS_LEN]
        return key_hash(self.seed, mask_id, self.words[mask_id], fields)

    def bucket(self, h):
        return h & self.index_mask


def check(m):
    diffs = []
    named = set()
    for slot, val in sorted(m.rules.items()):
        h = m.rule_hash(val)
        b, want = m.bucket(h), (h & TAG) | (slot + 1)
        entries = m.index.get(b, ())
        if want not in entries:
            diffs.append("slot %d: hash %016x, no entry %016x in bucket %d: %s"
                         % (slot, h, want, b,
                            " ".join("%016x" % e for e in entries)))
        named.add((b, want))
    for b, entries in sorted(m.index.items()):
        for e in entries:
            if e and (b, e) not in named:
                diffs.append("bucket %d: entry %016x names no rule" % (b, e))
    for slot, (mask_id, start) in sorted(m.starts.items()):
        if start != hash_start(m.seed, mask_id):
            diffs.append("mask slot %d (id %d): hash_start %016x, not %016x"
                         % (slot, mask_id, start, hash_start(m.seed, mask_id)))
    return diffs


def same_bucket(m, slot, n):
    val = m.rules[slot]
    fields = bytearray(val[FIELDS:FIELDS + FIELDS_LEN])
    own, = struct.unpack_from("!H", fields, DPORT)
    b = m.bucket(m.rule_hash(val))
    tags = {e & TAG for e in m.index.get(b, ()) if e}
    ports = []
    for port in range(1, 65536):
        if port == own:
            continue
        struct.pack_into("!H", fields, DPORT, port)
        h = m.rule_hash(val, bytes(fields))
        if m.bucket(h) == b and h & TAG and h & TAG not in tags:
            ports.append(port)
            tags.add(h & TAG)
            if len(ports) == n:
                return ports
    sys.exit("keyindex.py: fewer than %d ports for bucket %d" % (n, b))


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
    elif a[:1] == ["same-bucket"] and len(a) == 4:
        print(" ".join(map(str, same_bucket(Maps(a[1]), int(a[2]), int(a[3])))))
    else:
        sys.exit(__doc__.split("\n\n")[1])


if __name__ == "__main__":
    main()
