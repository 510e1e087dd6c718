#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The used elements of a pinned BPF array, read in one BPF_MAP_LOOKUP_BATCH.

Usage: bpfmap.py count|dump|first|slots PATH

xdpoff's rules array and index have a slot per possible rule (16384 by
default), the flows array and flow index one per possible flow (4096),
almost all of them free: `bpftool -j map dump` formats every one, which
takes the guest (TCG) most of a minute.  This reads them raw and keeps the
used ones: rules whose mask id is not 0, flows whose family is not 0 (a
free slot's other bytes mean nothing, see xdpoff/xdpoff.h), elements of
other arrays that are not all zero.

  count   how many are used
  dump    one line per used element, "KEY VALUE" in hex, in key order
  first   the first used one as bpftool's arguments: "key hex .. value hex .."
  slots   their keys (u32), one per line
"""
import ctypes
import os
import struct
import sys

NR_BPF = 321            # x86_64
BPF_OBJ_GET = 7
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_LOOKUP_BATCH = 24
RULE_MASK_ID = 60       # offsetof(struct xdpoff_rule_val, mask_id)
FLOW_FAMILY = 36        # offsetof(struct xdpoff_flow_entry, key.family)

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    r = libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def open_map(path):
    attr = ctypes.create_string_buffer(128)
    name = ctypes.create_string_buffer(path.encode())
    struct.pack_into("=Q", attr, 0, ctypes.addressof(name))
    fd = bpf(BPF_OBJ_GET, attr)
    info = ctypes.create_string_buffer(80)
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("=IIQ", attr, 0, fd, len(info), ctypes.addressof(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    _type, _id, key_size, value_size, max_entries = struct.unpack_from("=5I", info)
    return fd, key_size, value_size, max_entries


def elements(path):
    fd, ks, vs, n = open_map(path)
    if ks != 4:
        sys.exit("bpfmap.py: %s is not an array" % path)
    keys = ctypes.create_string_buffer(4 * n)
    vals = ctypes.create_string_buffer(vs * n)
    out = ctypes.create_string_buffer(8)
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("=QQQQII", attr, 0, 0, ctypes.addressof(out),
                     ctypes.addressof(keys), ctypes.addressof(vals), n, fd)
    try:
        bpf(BPF_MAP_LOOKUP_BATCH, attr)
    except OSError as e:
        if e.errno != 2:        # ENOENT: the last batch
            raise
    count = struct.unpack_from("=I", attr, 32)[0]
    os.close(fd)
    name = os.path.basename(path)
    zero = bytes(vs)
    raw = vals.raw      # (a copy of the whole buffer at each use)
    for i in range(count):
        v = raw[i * vs:(i + 1) * vs]
        if name == "xdpoff_rules":
            used = v[RULE_MASK_ID:RULE_MASK_ID + 4] != b"\0\0\0\0"
        elif name == "xdpoff_flows":
            used = v[FLOW_FAMILY] != 0
        else:
            used = v != zero
        if used:
            yield struct.unpack_from("=I", keys, 4 * i)[0], v


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("count", "dump", "first", "slots"):
        sys.exit(__doc__.split("\n\n")[1])
    what, path = sys.argv[1:]
    used = sorted(elements(path))
    if what == "count":
        print(len(used))
    elif what == "dump":
        for k, v in used:
            print(struct.pack("=I", k).hex(), v.hex())
    elif what == "slots":
        for k, _ in used:
            print(k)
    elif used:
        k, v = used[0]
        print("key hex", " ".join("%02x" % b for b in struct.pack("=I", k)),
              "value hex", " ".join("%02x" % b for b in v))


if __name__ == "__main__":
    main()
