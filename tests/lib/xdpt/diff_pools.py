# SPDX-License-Identifier: GPL-2.0
"""The pools rules and frames draw from, shared so that frames match
rules often.

Part of tests/lib/difftest.py, the differential test."""
import ipaddress

from xdpt.net import mac


def mac_str(b):
    return ":".join("%02x" % x for x in b)


def band(a, b):
    return bytes(x & y for x, y in zip(a, b))


def bor(a, b):
    return bytes(x | y for x, y in zip(a, b))


def bnot(a):
    return bytes(~x & 0xff for x in a)


DMACS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "02:aa:00:00:00:01",
                          "02:aa:00:00:00:02", "33:33:00:00:00:01",
                          "01:00:5e:00:00:01", "0a:bb:cc:dd:ee:01")]
# Source MACs: one of these prefixes, then 3 bytes unique in the batch.
SMAC_PREFIXES = [bytes.fromhex(p) for p in ("020001", "020002", "0a0000",
                                             "030001")]
SMAC_MASKS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "ff:ff:ff:00:00:00",
                               "ff:ff:ff:00:00:00", "ff:ff:ff:ff:ff:f0",
                               "01:00:00:00:00:00", "00:00:00:00:00:01",
                               "ff:00:00:00:00:03")]
DMAC_MASKS = [mac(m) for m in ("ff:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff",
                               "ff:ff:ff:00:00:00", "01:00:00:00:00:00")]
ADDR4 = [ipaddress.IPv4Address(a).packed for a in
         ("10.0.0.1", "10.0.0.2", "10.0.1.1", "10.1.0.1", "192.168.1.1",
          "192.168.1.130")]
ADDR6 = [ipaddress.IPv6Address(a).packed for a in
         ("fd00::1", "fd00::2", "fd00:0:0:1::1", "fd01::1", "2001:db8::1",
          "fd00::8001")]
PREFIX4 = [32, 32, 32, 24, 16, 8, 25, 31]
PREFIX6 = [128, 128, 128, 64, 60, 16, 127, 120]
PORTS = [22, 53, 80, 443, 1234]
OTHER_TYPES = [0x88b5, 0x88cc, 0x9000]
# EtherType/length field below 0x0600: an 802.3 length, not a type.  The
# stack sets skb->protocol (meta protocol) to ETH_P_802_3 (0x0001) when
# the payload starts with ffff, ETH_P_802_2 (0x0004) otherwise.
LOW_TYPES = [0x0100, 0x0040, 0x05dc]
LOW_PROTOS = [0x0004, 0x0001, 0x0100]
TCP, UDP, ICMP, ICMP6, GRE, SCTP, NONE6, HOP = 6, 17, 1, 58, 47, 132, 59, 0
L4_IP = [TCP, TCP, UDP, UDP, ICMP, GRE]
L4_IP6 = [TCP, TCP, UDP, UDP, ICMP6, NONE6, GRE, HOP]
PROTO_NAME = {TCP: "tcp", UDP: "udp", ICMP: "icmp"}
FAM_TYPE = {"ip": 0x0800, "ip6": 0x86dd, "arp": 0x0806}
