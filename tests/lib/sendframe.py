#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Send crafted Ethernet/IPv4/TCP|UDP frames out of one interface.

Raw AF_PACKET frames: no routing, no ARP, the frame on the wire is exactly
the one described.  Used inside the test guest only.

  sendframe.py DEV --dmac MAC --saddr A --daddr B [--proto tcp|udp]
               [--sport N] [--dport N] [--count N] [--flags syn]
"""
import argparse
import socket
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def l4(args, saddr, daddr):
    if args.proto == "tcp":
        flags = 0x02 if args.flags == "syn" else 0x10
        hdr = struct.pack("!HHIIBBHHH", args.sport, args.dport, 1, 0,
                          5 << 4, flags, 65535, 0, 0)
        proto = socket.IPPROTO_TCP
    else:
        hdr = struct.pack("!HHHH", args.sport, args.dport, 8 + len(args.payload), 0)
        proto = socket.IPPROTO_UDP
    seg = hdr + args.payload
    pseudo = saddr + daddr + struct.pack("!BBH", 0, proto, len(seg))
    c = csum(pseudo + seg)
    off = 16 if proto == socket.IPPROTO_TCP else 6
    seg = seg[:off] + struct.pack("!H", c) + seg[off + 2:]
    return proto, seg


def frame(args, smac):
    saddr = socket.inet_aton(args.saddr)
    daddr = socket.inet_aton(args.daddr)
    proto, seg = l4(args, saddr, daddr)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(seg), 1, 0, 64,
                     proto, 0, saddr, daddr)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(args.dmac) + smac + struct.pack("!H", 0x0800) + ip + seg


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dev")
    p.add_argument("--dmac", required=True)
    p.add_argument("--saddr", required=True)
    p.add_argument("--daddr", required=True)
    p.add_argument("--proto", choices=("tcp", "udp"), default="tcp")
    p.add_argument("--sport", type=int, default=40000)
    p.add_argument("--dport", type=int, default=22)
    p.add_argument("--flags", choices=("syn", "ack"), default="syn")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--payload-len", type=int, default=0)
    args = p.parse_args()
    args.payload = b"x" * args.payload_len

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((args.dev, 0))
    smac = s.getsockname()[4][:6]
    f = frame(args, smac)
    for _ in range(args.count):
        s.send(f)


if __name__ == "__main__":
    main()
