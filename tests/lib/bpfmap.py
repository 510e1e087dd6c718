#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The entries of a pinned BPF map, read raw with BPF_MAP_LOOKUP_BATCH.

Usage: bpfmap.py count|dump|first PATH

`bpftool -j map dump` formats every entry through the map's BTF, which
takes the guest (TCG) seconds for the thousands of rules or flows a test
loads, and a hash map dumps in bucket order, which changes when an entry
is deleted and added back.  This reads the map raw, in key order.  Of a
hash map (xdpoff's rules and flows maps) every entry counts: each is an
offloaded rule or flow.  Of an array (masks, meta, filter), the elements
that are not all zero.

  count   how many
  dump    one line each, "KEY VALUE" in hex, in key order (an array's
          keys as numbers, a hash map's as bytes)
  first   the first of them as bpftool's arguments: "key hex .. value hex .."
"""
import ctypes
import os
import struct
import sys

NR_BPF = 321            # x86_64
BPF_OBJ_GET = 7
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_LOOKUP_BATCH = 24
ENOENT = 2
ENOSPC = 28
MAP_TYPE_HASH = 1       # BPF_MAP_TYPE_HASH
MAP_TYPE_ARRAY = 2      # BPF_MAP_TYPE_ARRAY

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    r = libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def open_map(path):
    """fd, type, key size, value size, max entries."""
    attr = ctypes.create_string_buffer(128)
    name = ctypes.create_string_buffer(path.encode())
    struct.pack_into("=Q", attr, 0, ctypes.addressof(name))
    fd = bpf(BPF_OBJ_GET, attr)
    info = ctypes.create_string_buffer(80)
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("=IIQ", attr, 0, fd, len(info), ctypes.addressof(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    mtype, _id, key_size, value_size, max_entries = struct.unpack_from("=5I", info)
    return fd, mtype, key_size, value_size, max_entries


def entries(path):
    """(map type, [(key bytes, value bytes)]) of every entry, in batches."""
    fd, mtype, ks, vs, n = open_map(path)
    if mtype not in (MAP_TYPE_HASH, MAP_TYPE_ARRAY):
        sys.exit("bpfmap.py: %s is neither a hash map nor an array" % path)
    batch = max(n, 1)           # a hash map's buckets never hold more
    keys = ctypes.create_string_buffer(ks * batch)
    vals = ctypes.create_string_buffer(vs * batch)
    pos = ctypes.create_string_buffer(8)    # in and out batch: a u32
    out = []
    first = True
    try:
        while True:
            attr = ctypes.create_string_buffer(128)
            struct.pack_into("=QQQQII", attr, 0,
                             0 if first else ctypes.addressof(pos),
                             ctypes.addressof(pos), ctypes.addressof(keys),
                             ctypes.addressof(vals), batch, fd)
            done = False
            try:
                bpf(BPF_MAP_LOOKUP_BATCH, attr)
            except OSError as e:
                if e.errno != ENOENT:   # ENOENT: the last batch
                    raise
                done = True
            count = struct.unpack_from("=I", attr, 32)[0]
            k, v = keys.raw, vals.raw   # (a copy of the buffer at each use)
            out += [(k[i * ks:(i + 1) * ks], v[i * vs:(i + 1) * vs])
                    for i in range(count)]
            first = False
            if done or not count or len(out) >= n:
                break
    finally:
        os.close(fd)
    return mtype, out


def elements(path):
    """The entries that count, in key order: (key bytes, value bytes)."""
    mtype, es = entries(path)
    if mtype == MAP_TYPE_ARRAY:
        es = [(k, v) for k, v in es if v.count(0) != len(v)]
        es.sort(key=lambda e: struct.unpack("=I", e[0])[0])
    else:
        es.sort()
    return es


def u32(key):
    """An array's key as a number."""
    return struct.unpack("=I", key)[0]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("count", "dump", "first"):
        sys.exit(__doc__.split("\n\n")[1])
    what, path = sys.argv[1:]
    es = elements(path)
    if what == "count":
        print(len(es))
    elif what == "dump":
        for k, v in es:
            print(k.hex(), v.hex())
    elif es:
        k, v = es[0]
        print("key hex", " ".join("%02x" % b for b in k),
              "value hex", " ".join("%02x" % b for b in v))


if __name__ == "__main__":
    main()
