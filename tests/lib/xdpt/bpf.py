# SPDX-License-Identifier: GPL-2.0
"""The bpf() system call: pinned maps read raw (BPF_MAP_LOOKUP_BATCH),
programs' info."""
import ctypes
import os
import struct

NR_BPF = 321            # x86_64
BPF_OBJ_GET = 7
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_MAP_LOOKUP_BATCH = 24
ENOENT = 2
MAP_TYPE_HASH = 1       # BPF_MAP_TYPE_HASH
MAP_TYPE_ARRAY = 2      # BPF_MAP_TYPE_ARRAY

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    r = libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def obj_get(path):
    """An fd of the pinned object at @path."""
    attr = ctypes.create_string_buffer(128)
    name = ctypes.create_string_buffer(path.encode())
    struct.pack_into("=Q", attr, 0, ctypes.addressof(name))
    return bpf(BPF_OBJ_GET, attr)


def obj_info(fd, size):
    """The first @size bytes of BPF_OBJ_GET_INFO_BY_FD's struct for @fd."""
    info = ctypes.create_string_buffer(size)
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("=IIQ", attr, 0, fd, len(info), ctypes.addressof(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)
    return info


def open_map(path):
    """fd, type, key size, value size, max entries."""
    fd = obj_get(path)
    info = obj_info(fd, 80)
    mtype, _id, key_size, value_size, max_entries = struct.unpack_from("=5I", info)
    return fd, mtype, key_size, value_size, max_entries


def entries(path):
    """(map type, [(key bytes, value bytes)]) of every entry, in batches."""
    fd, mtype, ks, vs, n = open_map(path)
    if mtype not in (MAP_TYPE_HASH, MAP_TYPE_ARRAY):
        raise ValueError("%s is neither a hash map nor an array" % path)
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
