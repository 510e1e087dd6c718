# SPDX-License-Identifier: GPL-2.0
"""System access for the differential test: libnftables, namespaces,
ethtool, sysfs.

Part of tests/lib/difftest.py, the differential test."""
import ctypes
import fcntl
import os
import re
import socket
import struct


NFT_CTX_OUTPUT_JSON = 1 << 4


class Nft:
    """libnftables through ctypes: no process per nft command."""

    def __init__(self, json_out=False):
        lib = ctypes.CDLL("libnftables.so.1", use_errno=True)
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        for name in ("nft_ctx_buffer_output", "nft_ctx_buffer_error"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
        lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p,
                                                 ctypes.c_uint]
        lib.nft_ctx_set_dry_run.argtypes = [ctypes.c_void_p, ctypes.c_bool]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p,
                                                ctypes.c_char_p]
        for name in ("nft_ctx_get_output_buffer", "nft_ctx_get_error_buffer"):
            getattr(lib, name).argtypes = [ctypes.c_void_p]
            getattr(lib, name).restype = ctypes.c_char_p
        self.lib = lib
        self.ctx = lib.nft_ctx_new(0)
        lib.nft_ctx_buffer_output(self.ctx)
        lib.nft_ctx_buffer_error(self.ctx)
        if json_out:
            lib.nft_ctx_output_set_flags(self.ctx, NFT_CTX_OUTPUT_JSON)

    def run(self, text, dry_run=False):
        self.lib.nft_ctx_set_dry_run(self.ctx, dry_run)
        rc = self.lib.nft_run_cmd_from_buffer(self.ctx, text.encode())
        out = self.lib.nft_ctx_get_output_buffer(self.ctx) or b""
        err = self.lib.nft_ctx_get_error_buffer(self.ctx) or b""
        self.lib.nft_ctx_set_dry_run(self.ctx, False)
        return rc, out.decode(errors="replace"), err.decode(errors="replace")


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def packet_socket(dev, netns=None):
    """An AF_PACKET socket bound to DEV in NETNS; it stays there after we
    come back to our own namespace.  Protocol 0: it receives nothing."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open("/run/netns/" + netns, os.O_RDONLY) if netns else None
    try:
        if target is not None and _libc.setns(target, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), "setns " + netns)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        s.bind((dev, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    finally:
        if target is not None:
            if _libc.setns(own, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns back")
            os.close(target)
        os.close(own)
    return s


SIOCETHTOOL = 0x8946
ETHTOOL_GSTRINGS = 0x1b
ETHTOOL_GSTATS = 0x1d
ETHTOOL_GSSET_INFO = 0x37
ETH_SS_STATS = 1


class Ethtool:
    """ethtool -S through the ioctl, for one device."""

    def __init__(self, dev):
        self.dev = dev
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        buf = ctypes.create_string_buffer(struct.pack(
            "IIQI", ETHTOOL_GSSET_INFO, 0, 1 << ETH_SS_STATS, 0))
        self._ioctl(buf)
        self.n = struct.unpack_from("I", buf.raw, 16)[0]
        buf = ctypes.create_string_buffer(struct.pack("III", ETHTOOL_GSTRINGS,
                                                      ETH_SS_STATS, self.n)
                                          + bytes(32 * self.n))
        self._ioctl(buf)
        raw = buf.raw[12:]
        self.names = [raw[32 * i:32 * (i + 1)].split(b"\0")[0].decode()
                      for i in range(self.n)]

    def _ioctl(self, buf):
        ifr = struct.pack("16sP", self.dev.encode(), ctypes.addressof(buf))
        fcntl.ioctl(self.sock, SIOCETHTOOL, ifr + bytes(40 - len(ifr)))

    def stats(self):
        buf = ctypes.create_string_buffer(
            struct.pack("II", ETHTOOL_GSTATS, self.n) + bytes(8 * self.n))
        self._ioctl(buf)
        vals = struct.unpack_from("%dQ" % self.n, buf.raw, 8)
        return dict(zip(self.names, vals))

    def sum(self, suffix):
        """A receive counter of virtio-net summed over its queues:
        rx_queue_N_<name> on 6.1, rxN_<name> on 6.12 (whose total,
        rx_<name>, is left out)."""
        return sum(v for k, v in self.stats().items()
                   if re.match(r"rx(_queue_)?[0-9]+" + re.escape(suffix) + "$",
                               k))


def rx_packets(dev):
    """All frames virtio-net took off the ring, XDP drops included."""
    with open("/sys/class/net/%s/statistics/rx_packets" % dev) as f:
        return int(f.read())


def read_text(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""
