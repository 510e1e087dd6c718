#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Send crafted Ethernet frames out of one interface.

Raw AF_PACKET frames: no routing, no ARP, the frame on the wire is exactly
the one described.  Used inside the test guest only.

  sendframe.py DEV --dmac MAC [--smac MAC] [--vlan ID [--vlan-pcp N]
               [--vlan-tpid 0x88a8] [--cvlan ID]]
               [--saddr A --daddr B [--proto tcp|udp|icmp|icmpv6|N]
                [--sport N] [--dport N[,N...]] [--flags syn|ack|0xNNN]
                [--icmp-type N --icmp-code N] [--tos N] [--ttl N]
                [--frag-offset N] [--mf]]
               [--ethertype 0xNNNN] [--count N] [--payload-len N [--seq]]
               [--rate PPS]

--saddr/--daddr take IPv4 or IPv6 addresses; without them the frame is a
bare Ethernet header of --ethertype with a zero payload.  With --seq,
frame I of --count carries I in its payload's first 4 bytes, bytes
derived from I after them, and IPv4 ID I: every frame differs, and so do
their checksums.  With --rate, frame I leaves I / PPS seconds after the
first, and the last line printed is "sent N frames in T s: R/s".
With several --dport ports, frame I goes to port I modulo their number.
--count 0 sends until killed (background traffic: one process, paced
by --rate, rather than one started per burst).
"""
import argparse
import ipaddress
import socket
import struct
import time

from xdpt.net import csum, mac

PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
TCP_FLAGS = {"syn": 0x002, "ack": 0x010}


def make_payload(args):
    if not args.seq:
        return b"x" * args.payload_len
    i = args.seq_i
    body = struct.pack("!I", i) + bytes((i * 7 + k * 13) & 0xFF
                                        for k in range(args.payload_len))
    return body[:max(args.payload_len, 4)]


def l4(args, proto, pseudo):
    payload = make_payload(args)
    if proto == 6:
        flags = TCP_FLAGS.get(args.flags)
        flags = int(args.flags, 0) if flags is None else flags
        seg = struct.pack("!HHIIHHHH", args.sport, args.dport, 1, 0,
                          5 << 12 | flags, 65535, 0, 0) + payload
        off = 16
    elif proto == 17:
        seg = struct.pack("!HHHH", args.sport, args.dport,
                          8 + len(payload), 0) + payload
        off = 6
    elif proto in (1, 58):
        seg = struct.pack("!BBHI", args.icmp_type, args.icmp_code, 0,
                          0x00010001) + payload
        off = 2
    else:
        return payload or b"\0" * 8
    c = csum(pseudo(len(seg)) + seg)
    return seg[:off] + struct.pack("!H", c) + seg[off + 2:]


def ipv4(args, proto):
    saddr = socket.inet_aton(args.saddr)
    daddr = socket.inet_aton(args.daddr)
    frag = args.frag_offset // 8
    seg = l4(args, proto if frag == 0 else -1,
             lambda n: saddr + daddr + struct.pack("!BBH", 0, proto, n))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, args.tos, 20 + len(seg),
                     (args.seq_i & 0xFFFF) if args.seq else 1,
                     frag | (0x2000 if args.mf else 0), args.ttl,
                     proto, 0, saddr, daddr)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return 0x0800, ip + seg


def ipv6(args, proto):
    saddr = socket.inet_pton(socket.AF_INET6, args.saddr)
    daddr = socket.inet_pton(socket.AF_INET6, args.daddr)
    seg = l4(args, proto, lambda n: saddr + daddr +
             struct.pack("!IxxxB", n, proto))
    ip = struct.pack("!IHBB16s16s", 6 << 28 | args.tos << 20, len(seg),
                     proto, args.ttl, saddr, daddr)
    return 0x86DD, ip + seg


def frame(args, smac):
    if args.saddr:
        proto = PROTOS.get(args.proto)
        proto = int(args.proto) if proto is None else proto
        v6 = ipaddress.ip_address(args.saddr).version == 6
        ethertype, body = (ipv6 if v6 else ipv4)(args, proto)
    else:
        ethertype, body = int(args.ethertype, 0), b"\0" * 46
    if args.ethertype and args.saddr:
        ethertype = int(args.ethertype, 0)
    hdr = mac(args.dmac) + smac
    if args.vlan is not None:
        hdr += struct.pack("!HH", int(args.vlan_tpid, 0),
                           args.vlan_pcp << 13 | args.vlan)
    if args.cvlan is not None:
        hdr += struct.pack("!HH", 0x8100, args.cvlan)
    return hdr + struct.pack("!H", ethertype) + body


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dev")
    p.add_argument("--dmac", required=True)
    p.add_argument("--smac")
    p.add_argument("--saddr")
    p.add_argument("--daddr")
    p.add_argument("--proto", default="tcp")
    p.add_argument("--sport", type=int, default=40000)
    p.add_argument("--dport", type=lambda x: [int(v) for v in x.split(",")],
                   default=[22], help="N[,N...]: frames cycle through them")
    p.add_argument("--flags", default="syn",
                   help="TCP flags: syn, ack or a number")
    p.add_argument("--icmp-type", type=int, default=8)
    p.add_argument("--icmp-code", type=int, default=0)
    p.add_argument("--tos", type=lambda x: int(x, 0), default=0)
    p.add_argument("--ttl", type=lambda x: int(x, 0), default=64)
    p.add_argument("--frag-offset", type=int, default=0)
    p.add_argument("--mf", action="store_true", help="more fragments")
    p.add_argument("--ethertype")
    p.add_argument("--vlan", type=int, help="outer tag's VLAN id")
    p.add_argument("--vlan-pcp", type=int, default=0)
    p.add_argument("--vlan-tpid", default="0x8100")
    p.add_argument("--cvlan", type=int, help="inner tag (802.1Q)")
    p.add_argument("--count", type=int, default=1, help="0: until killed")
    p.add_argument("--payload-len", type=int, default=0)
    p.add_argument("--seq", action="store_true",
                   help="number the frames (payload and IPv4 ID)")
    p.add_argument("--rate", type=float,
                   help="frames per second, paced; prints what it sent")
    args = p.parse_args()
    args.seq_i = 0
    ports = args.dport
    if args.count == 0 and not args.rate:
        p.error("--count 0 needs --rate")

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((args.dev, 0))
    smac = mac(args.smac) if args.smac else s.getsockname()[4][:6]
    frames = []
    for port in ports:
        args.dport = port
        frames.append(frame(args, smac))
    t0 = time.monotonic()
    i = 0
    while args.count == 0 or i < args.count:
        if args.rate:
            delay = t0 + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        f = frames[i % len(ports)]
        if args.seq:
            args.seq_i = i
            args.dport = ports[i % len(ports)]
            f = frame(args, smac)
        s.send(f)
        i += 1
    if args.rate:
        # The span of the sends: the first to the last, one gap per frame.
        t = time.monotonic() - t0
        span = t * args.count / max(args.count - 1, 1)
        print("sent %d frames in %.3f s: %.1f/s" %
              (args.count, span, args.count / span))


if __name__ == "__main__":
    main()
