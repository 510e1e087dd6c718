#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/bench/feed.py - feed Ethernet frames into a guest NIC from the host.

Started by tests/vm/run (XDPOFF_VM_AGENT) next to QEMU, for make bench's
instruction-count section (tests/bench/guest.sh, section insn).  The
guest's eth1 and eth2 have QEMU's socket netdev in stream mode as their
backend, listening on 127.0.0.1 (QEMU's framing: a 4-byte big-endian
length, then the frame).  The feeder connects to both: it writes frames
into eth1's stream, and reads and counts what comes out of the guest on
both.  TCP's flow control holds the feeder back when QEMU cannot take more
(the guest's receive ring is full): the guest gets frames as fast as it
takes them, and nothing is dropped on the way.  Loopback only: the feeder
never connects anywhere else.

The guest asks for traffic through the run directory it shares with the
host (the same way as tests/vm/monitor-agent):

    guest:  feed/NAME.req   "start flows=F dmac=M smac=M src=A dst=A
                             dport=P"  or  "stop"
    host:   feed/NAME.rep   "ok" or "error ...", and for stop "ok sent=N
                            out=M": M frames came out of the guest's eth2
                            since the start

Frames are 60 bytes (64 with the FCS QEMU does not carry): IPv4 UDP from
src to dst, source ports 10000 .. 10000+F-1 in turn.

Usage: feed.py --eth1 PORT --eth2 PORT RUNDIR
"""

import argparse
import os
import select
import socket
import struct
import sys
import threading
import time


def csum(data):
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dmac, smac, src, dst, sport, dport, size=60):
    def mac(m):
        return bytes(int(x, 16) for x in m.split(":"))
    plen = size - 14 - 20 - 8
    udp = struct.pack("!HHHH", sport, dport, 8 + plen, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + plen, 0, 0, 64, 17,
                     0, socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(dmac) + mac(smac) + b"\x08\x00" + ip + udp + bytes(plen)


def connect(port, deadline):
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Stream:
    """One NIC's stream: frames out of the guest are read and counted."""

    def __init__(self, port):
        self.sock = connect(port, time.monotonic() + 120)
        # Bound what is in flight when the feed stops.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.out = 0
        threading.Thread(target=self.drain, daemon=True).start()

    def drain(self):
        buf = b""
        while True:
            data = self.sock.recv(65536)
            if not data:
                return
            buf += data
            while len(buf) >= 4:
                n = struct.unpack("!I", buf[:4])[0]
                if len(buf) < 4 + n:
                    break
                buf = buf[4 + n:]
                self.out += 1


class Feeder:
    def __init__(self, eth1, eth2):
        self.eth1 = Stream(eth1)
        self.eth2 = Stream(eth2)
        self.thread = None
        self.running = False
        self.sent = 0

    def start(self, opts):
        self.stop()
        flows = int(opts.get("flows", 1))
        frames = [frame(opts["dmac"], opts["smac"], opts["src"], opts["dst"],
                        10000 + i, int(opts["dport"])) for i in range(flows)]
        # about 64 KiB per write, every flow in turn
        per = max(1, 1000 // flows) * flows
        chunk = b"".join(struct.pack("!I", len(f)) + f
                         for f in (frames * (per // flows)))
        self.sent = 0
        self.out0 = self.eth2.out
        self.running = True
        self.thread = threading.Thread(target=self.run, args=(chunk, per),
                                       daemon=True)
        self.thread.start()

    def run(self, chunk, per):
        # Whole chunks only: a stop waits for the one being written, so
        # that the stream never ends inside a frame.
        sock = self.eth1.sock
        off = 0
        while self.running or off:
            if not select.select([], [sock], [], 0.2)[1]:
                continue
            off += sock.send(chunk[off:])
            if off == len(chunk):
                off = 0
                self.sent += per

    def stop(self):
        if self.thread:
            self.running = False
            self.thread.join()
            self.thread = None
        return self.sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eth1", type=int, required=True)
    ap.add_argument("--eth2", type=int, required=True)
    ap.add_argument("rundir")
    args = ap.parse_args()
    d = os.path.join(args.rundir, "feed")
    os.makedirs(d, exist_ok=True)
    feeder = Feeder(args.eth1, args.eth2)
    while os.path.isdir(d):
        for name in sorted(f for f in os.listdir(d) if f.endswith(".req")):
            path = os.path.join(d, name)
            with open(path) as f:
                words = f.read().split()
            os.unlink(path)
            try:
                if words[:1] == ["start"]:
                    feeder.start(dict(w.split("=", 1) for w in words[1:]))
                    reply = "ok"
                elif words[:1] == ["stop"]:
                    sent = feeder.stop()
                    reply = "ok sent=%d out=%d" % (sent, feeder.eth2.out - feeder.out0)
                else:
                    reply = "error unknown request %r" % " ".join(words)
            except (ValueError, KeyError, OSError) as e:
                reply = "error %s" % e
            tmp = path[:-4] + ".tmp"
            with open(tmp, "w") as f:
                f.write(reply + "\n")
            os.rename(tmp, path[:-4] + ".rep")
        time.sleep(0.02)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, EOFError):
        sys.exit(0)             # QEMU ended: the streams closed
