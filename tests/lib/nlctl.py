#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw generic netlink requests to the xdpoff module, well-formed or not.

Used inside the test guest only, to check that the control interface
answers every request, hostile ones included, with a clear errno.

  nlctl.py attach IFINDEX FD...        one ATTACH, fds as given (seven)
  nlctl.py attach-maps IFINDEX KIND     ATTACH with the seven maps this script
                                        creates (KIND: ok, hash, small,
                                        value, rulesarray, flowsarray,
                                        noprealloc, order, notmap, badfd)
  nlctl.py raw CMD [TYPE:HEX ...]       one request with the attributes
                                        given as type:payload-hex
  nlctl.py detach IFINDEX
  nlctl.py get                          dump: ifindex of each device
  nlctl.py fuzz N SEED [IFINDEX ...]    N random requests
  nlctl.py hello                        prints "nlctl runs as uid N", no
                                        netlink: can this caller run me?

Prints "errno NAME message" (NAME 0 on success) for single requests.

fuzz draws commands, attribute types, lengths and values from small sets,
and mixes in well-formed attaches (seven maps of the right layout) and
detaches of the IFINDEXes given and of ifindex 1..4, so requests that
really change the module's state are part of the run.  It follows the
state those successful requests imply, starting from the module's dump,
and checks after each success that it was possible (no attach of a device
attached, no detach of one that is not) and at the end that the module's
dump equals the implied state.  It prints the seed, a tally of the errnos
and the state before and after, and exits 1 if a request got no answer or
the state is not what the answers imply.
"""
import ctypes
import errno
import os
import random
import socket
import struct
import sys

NETLINK_GENERIC = 16
NETLINK_EXT_ACK = 11
SOL_NETLINK = 270
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLMSGERR_ATTR_MSG = 1

CMD = {"attach": 1, "detach": 2, "get": 3}
A_IFINDEX, A_RULES, A_MASKS, A_META, A_STATS, A_FLOWS, A_FILTER, A_INDEX = \
    1, 2, 3, 4, 5, 10, 12, 20

# The contract of xdpoff/xdpoff.h, as the maps must be.
FIELDS = 72
RULE_KEY = 8                           # struct xdpoff_rule_key: hash, dup
RULE_VAL = 64 + 2 * FIELDS + 8         # ..., mask id, fields, mask, words, pad2
# mask, id .. words, the port ranges, min_order, hash_start, dups, pad
MASK_VAL = FIELDS + 4 * 6 + 8 + 8 + 8 + 8
# nr_masks, nr_stages, software_from, ft_order, seed, tables, index_any, pad
META_VAL = 48
FLOW_KEY = 40                          # struct xdpoff_flow_key
FLOW_VAL = 88                          # struct xdpoff_flow_val
MAX_MASKS = 32
FILTER_ENTRIES = MAX_MASKS * 1024      # XDPOFF_FILTER_ENTRIES
INDEX_ENTRIES = 2 << 16                # XDPOFF_INDEX_ENTRIES
BPF_MAP_CREATE = 0
HASH, ARRAY, PERCPU_ARRAY = 1, 2, 6
BPF_F_NO_PREALLOC = 1


def bpf_map(mtype, key, value, entries, flags=0):
    attr = struct.pack("IIIII", mtype, key, value, entries, flags) + \
        b"\0" * 108
    buf = ctypes.create_string_buffer(attr, len(attr))
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(321, BPF_MAP_CREATE, buf, len(attr))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "bpf(BPF_MAP_CREATE)")
    return fd


def maps(kind):
    """Seven map fds, right or wrong in one way."""
    spec = [(HASH, RULE_KEY, RULE_VAL, 64), (ARRAY, 4, MASK_VAL, MAX_MASKS),
            (ARRAY, 4, META_VAL, 1), (PERCPU_ARRAY, 4, 32, 64),
            (HASH, FLOW_KEY, FLOW_VAL, 64), (ARRAY, 4, 8, FILTER_ENTRIES),
            (ARRAY, 4, 4, INDEX_ENTRIES)]
    if kind == "hash":          # masks as a hash, not an array
        spec[1] = (HASH, 4, MASK_VAL, MAX_MASKS)
    elif kind == "small":       # masks array too short
        spec[1] = (ARRAY, 4, MASK_VAL, 4)
    elif kind == "value":       # rule values of the wrong size
        spec[0] = (HASH, RULE_KEY, RULE_VAL - 8, 64)
    elif kind == "rulesarray":  # the rules array of 0.2
        spec[0] = (ARRAY, 4, RULE_VAL, 64)
    elif kind == "flowsarray":  # the flows array of 0.2: key and value
        spec[4] = (ARRAY, 4, FLOW_KEY + FLOW_VAL, 64)
    elif kind == "noprealloc":  # rules allocated as they come
        spec[0] = (HASH, RULE_KEY, RULE_VAL, 64, BPF_F_NO_PREALLOC)
    fds = [bpf_map(*s) for s in spec]
    if kind == "order":         # two maps swapped
        fds[0], fds[1] = fds[1], fds[0]
    elif kind == "notmap":      # an fd that is no map
        fds[2] = os.open("/dev/null", os.O_RDONLY)
    elif kind == "badfd":       # no such fd
        fds[3] = 987
    return fds


def attr(t, payload):
    a = struct.pack("HH", 4 + len(payload), t) + payload
    return a + b"\0" * (-len(a) % 4)


class Genl:
    def __init__(self):
        self.s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                               NETLINK_GENERIC)
        self.s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.s.settimeout(5)
        self.seq = 0
        self.family = None
        err, _, replies = self.request(
            GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
            attr(CTRL_ATTR_FAMILY_NAME, b"xdpoff\0"))
        if err:
            raise OSError(-err, "family xdpoff: %s" % os.strerror(-err))
        for t, v in replies[0]:
            if t == CTRL_ATTR_FAMILY_ID:
                self.family = struct.unpack("H", v[:2])[0]

    def request(self, family, cmd, attrs=b"", flags=NLM_F_ACK, version=1):
        self.seq += 1
        body = struct.pack("BBH", cmd, version, 0) + attrs
        msg = struct.pack("IHHII", 16 + len(body), family,
                          NLM_F_REQUEST | flags, self.seq, 0) + body
        self.s.send(msg)
        replies = []
        while True:
            data = self.s.recv(65536)
            off = 0
            while off < len(data):
                ln, typ, fl, seq, _ = struct.unpack_from("IHHII", data, off)
                if ln < 16:
                    raise RuntimeError("bad netlink message")
                if seq != self.seq:
                    off += (ln + 3) & ~3
                    continue
                if typ == NLMSG_ERROR:
                    err = struct.unpack_from("i", data, off + 16)[0]
                    msg = ""
                    inner = struct.unpack_from("I", data, off + 20)[0]
                    tlv = off + 16 + 4 + (inner if fl & 0x100 == 0 and err
                                          else 16)
                    while tlv + 4 <= off + ln:
                        al, at = struct.unpack_from("HH", data, tlv)
                        if al < 4:
                            break
                        if at == NLMSGERR_ATTR_MSG:
                            msg = data[tlv + 4:tlv + al].rstrip(b"\0") \
                                .decode(errors="replace")
                        tlv += (al + 3) & ~3
                    return err, msg, replies
                if typ == NLMSG_DONE:
                    return 0, "", replies
                replies.append(parse_attrs(data[off + 20:off + ln]))
                off += (ln + 3) & ~3


def parse_attrs(b):
    out, off = [], 0
    while off + 4 <= len(b):
        ln, t = struct.unpack_from("HH", b, off)
        if ln < 4:
            break
        out.append((t & 0x3fff, b[off + 4:off + ln]))
        off += (ln + 3) & ~3
    return out


def show(err, msg):
    name = errno.errorcode.get(-err, str(-err)) if err else "0"
    print("errno %s %s" % (name, msg))
    return 0


def attach_attrs(ifindex, fds):
    return attr(A_IFINDEX, struct.pack("I", ifindex)) + b"".join(
        attr(t, struct.pack("I", fd)) for t, fd in
        zip((A_RULES, A_MASKS, A_META, A_STATS, A_FLOWS, A_FILTER, A_INDEX),
            fds))


def dump(g):
    """Sorted ifindexes of the devices the module holds (this netns)."""
    err, msg, replies = g.request(g.family, CMD["get"], b"",
                                  NLM_F_ACK | NLM_F_DUMP)
    if err:
        raise OSError(-err, "dump refused: %s" % msg)
    return sorted(struct.unpack("I", v[:4])[0] for r in replies
                  for t, v in r if t == A_IFINDEX)


def request_ifindex(attrs):
    """The ifindex the module acted on: nla_parse keeps the last
    attribute of a type (flag bits masked off, as nla_type() does)."""
    ifindex = None
    for t, v in parse_attrs(attrs):
        if t == A_IFINDEX and len(v) >= 4:
            ifindex = struct.unpack("I", v[:4])[0]
    return ifindex


def draw(rng, ifindexes, values, good):
    """One random request: (cmd, attrs, flags, version)."""
    if rng.random() < 0.03:
        # Well-formed: it must take effect when the state allows it.
        cmd = rng.choice((1, 2))
        ifx = rng.choice(ifindexes)
        attrs = attach_attrs(ifx, good) if cmd == 1 else \
            attr(A_IFINDEX, struct.pack("I", ifx))
        return cmd, attrs, NLM_F_ACK, 1
    cmd = rng.choice((0, 1, 2, 3, 4, 7, 200))
    attrs = b""
    for _ in range(rng.randint(0, 7)):
        t = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x8001))
        ln = rng.choice((0, 1, 2, 4, 4, 4, 8, 64))
        v = bytes(rng.getrandbits(8) for _ in range(ln))
        if ln == 4 and rng.random() < 0.5:
            v = struct.pack("I", rng.choice(values))
        attrs += attr(t, v)
    if rng.random() < 0.05:
        attrs += b"\x03\x00"        # a truncated attribute header
    return cmd, attrs, rng.choice((NLM_F_ACK, NLM_F_ACK | NLM_F_DUMP)), \
        rng.choice((0, 1, 2))


def fuzz(g, n, seed, targets):
    rng = random.Random(seed)
    tally = {}
    devnull = os.open("/dev/null", os.O_RDONLY)
    good = maps("ok")
    ifindexes = sorted(set((1, 2, 3, 4) + tuple(targets)))
    values = (0, 1, 2, 3, 4, devnull, 0xffffffff) + tuple(good)
    state = set(dump(g))
    before = sorted(state)
    changed = {"attach": 0, "detach": 0}
    problems = []
    print("seed %d: %d requests, well-formed ones aimed at ifindex %s" %
          (seed, n, " ".join(map(str, ifindexes))))
    for i in range(n):
        cmd, attrs, flags, version = draw(rng, ifindexes, values, good)
        try:
            err, _, _ = g.request(g.family, cmd, attrs, flags, version)
        except socket.timeout:
            print("no answer: cmd %d attrs %s" % (cmd, attrs.hex()))
            return 1
        name = errno.errorcode.get(-err, str(-err)) if err else "0"
        tally[name] = tally.get(name, 0) + 1
        if err or cmd not in (1, 2) or flags & NLM_F_DUMP == NLM_F_DUMP:
            continue
        ifx = request_ifindex(attrs)
        what = "attach" if cmd == 1 else "detach"
        if ifx is None or (cmd == 1) == (ifx in state):
            problems.append("request %d, %s of ifindex %s succeeded with "
                            "%s attached: %s" % (i, what, ifx, sorted(state),
                                                 attrs.hex()))
        changed[what] += 1
        if cmd == 1:
            state.add(ifx)
        else:
            state.discard(ifx)
    after = dump(g)
    print("answers: " + ", ".join("%s %d" % kv for kv in sorted(
        tally.items(), key=lambda x: -x[1])))
    print("state: before %s; %d attaches and %d detaches succeeded; "
          "implied %s, the module lists %s" %
          (before, changed["attach"], changed["detach"], sorted(state),
           after))
    if after != sorted(state):
        problems.append("the module's state is not what its answers imply")
    for p in problems[:5]:
        print("PROBLEM: " + p)
    return 1 if problems else 0


def main():
    a = sys.argv[1:]
    if a[:1] == ["hello"]:
        print("nlctl runs as uid %d" % os.getuid())
        return 0
    g = Genl()
    if a[0] == "attach":
        fds = [int(x) for x in a[2:]]
        return show(*g.request(g.family, CMD["attach"],
                               attach_attrs(int(a[1]), fds))[:2])
    if a[0] == "attach-maps":
        return show(*g.request(g.family, CMD["attach"],
                               attach_attrs(int(a[1]), maps(a[2])))[:2])
    if a[0] == "detach":
        return show(*g.request(g.family, CMD["detach"],
                               attr(A_IFINDEX, struct.pack("I", int(a[1]))))
                    [:2])
    if a[0] == "raw":
        attrs = b""
        for spec in a[2:]:
            t, _, hexv = spec.partition(":")
            attrs += attr(int(t), bytes.fromhex(hexv))
        return show(*g.request(g.family, int(a[1]), attrs)[:2])
    if a[0] == "get":
        err, msg, replies = g.request(g.family, CMD["get"], b"",
                                      NLM_F_ACK | NLM_F_DUMP)
        if err:
            return show(err, msg)
        for r in replies:
            for t, v in r:
                if t == A_IFINDEX:
                    print(struct.unpack("I", v[:4])[0])
        return 0
    if a[0] == "fuzz":
        return fuzz(g, int(a[1]), int(a[2]), [int(x) for x in a[3:]])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
