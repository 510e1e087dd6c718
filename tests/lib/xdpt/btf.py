# SPDX-License-Identifier: GPL-2.0
"""A pinned map's key or value layout, read from the map's BTF.

Layout(path, "value")["mask_id"] is the member's (offset, size) in bytes,
as bpftool dumps the BTF the XDP program gave the map (bpf/xdpoff_btf.h),
so a test reads a raw entry (xdpt.bpf) by member name, not at offsets
that a change of xdpoff/xdpoff.h would leave behind.
"""
import functools
import json
import struct
import subprocess

# Kinds whose size is that of the type they refer to.
_REFS = ("TYPEDEF", "VOLATILE", "CONST", "RESTRICT", "TYPE_TAG")


@functools.lru_cache(maxsize=None)    # a map's whole BTF, once a process
def _dump(*src):
    out = subprocess.run(["bpftool", "-j", "btf", "dump"] + list(src),
                         stdout=subprocess.PIPE, check=True).stdout
    return json.loads(out)["types"]


class Layout:
    def __init__(self, path, which):
        """The members of the key (@which "key") or value of the map
        pinned at @path."""
        if which not in ("key", "value"):
            raise ValueError("which: key or value")
        top, = _dump("map", "pinned", path, which)
        self.types = {t["id"]: t for t in _dump("map", "pinned", path, "all")}
        self.name = top.get("name", "")
        self.size = self.sizeof(top["id"])
        self.members = {}
        for m in self.types[self._resolve(top["id"])].get("members", []):
            if m["bits_offset"] % 8:
                continue        # a bitfield: read the member holding it
            self.members[m["name"]] = (m["bits_offset"] // 8,
                                       self.sizeof(m["type_id"]))

    def _resolve(self, tid):
        while self.types[tid]["kind"] in _REFS:
            tid = self.types[tid]["type_id"]
        return tid

    def sizeof(self, tid):
        t = self.types[self._resolve(tid)]
        if t["kind"] == "ARRAY":
            return t["nr_elems"] * self.sizeof(t["type_id"])
        if t["kind"] == "PTR":
            return 8
        return t["size"]

    def __getitem__(self, name):
        return self.members[name]

    def raw(self, data, name):
        """Member @name's bytes in the entry @data."""
        off, size = self.members[name]
        return data[off:off + size]

    def int(self, data, name):
        """Member @name of @data, an integer in host order."""
        off, size = self.members[name]
        fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[size]
        return struct.unpack_from("=" + fmt, data, off)[0]
