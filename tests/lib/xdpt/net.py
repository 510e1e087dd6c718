# SPDX-License-Identifier: GPL-2.0
"""Checksums, MAC addresses and prefix masks of the frames tests build."""
import struct


def csum(data):
    """The Internet checksum (RFC 1071) of @data, odd lengths padded."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def mac(s):
    """"02:00:00:00:00:01" as 6 bytes."""
    return bytes(int(x, 16) for x in s.split(":"))


def prefix_mask(bits, nbytes):
    """The mask of a @bits-bit prefix of an @nbytes-byte address, as bytes."""
    return ((1 << (8 * nbytes)) - (1 << (8 * nbytes - bits))).to_bytes(
        nbytes, "big")
