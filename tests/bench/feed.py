#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/bench/feed.py - feed Ethernet frames into a guest NIC from the host.

Started by tests/vm/run (XDPOFF_VM_AGENT) next to QEMU, for make bench's
instruction-count section (tests/bench/guest.sh, section insn).  The
guest's eth1 and eth2 have QEMU's socket netdev in UDP mode as their
backend: every datagram QEMU receives on eth1's local port is one frame
on eth1's wire, and what the guest sends out of eth1 and eth2 comes to
the ports given here, where the feeder reads and counts it.  The feeder
sends as fast as it goes; what the guest cannot take is dropped by the
host's UDP socket buffer in front of QEMU, which bounds what waits.  (Not
the stream mode: QEMU reads a stream ahead into a queue without bound,
which grew to 24 GB and was OOM-killed in one run, and held frames of
earlier modes for minutes.)  Loopback only: 127.0.0.1, nothing else.

The guest asks for traffic through the run directory it shares with the
host (the same way as tests/vm/monitor-agent):

    guest:  feed/NAME.req   "start flows=F dmac=M smac=M src=A dst=A
                             dport=P"  or  "stop"
    host:   feed/NAME.rep   "ok" or "error ...", and for stop "ok sent=N
                            out=M": M frames came out of the guest's eth2
                            since the start

Frames are 60 bytes (64 with the FCS QEMU does not carry): IPv4 UDP from
src to dst, source ports 10000 .. 10000+F-1 in turn.  With --blast, the
sending is done by tests/bench/blast (C, sendmmsg() of 64 frames at a
time), which keeps a vCPU busy where Python's sendto() could not; the
frames go to its stdin.

Usage: feed.py [--blast PATH] --to PORT --eth1-out PORT --eth2-out PORT RUNDIR
"""

import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from xdpt.net import csum, mac  # noqa: E402 (after the path)


def frame(dmac, smac, src, dst, sport, dport, size=60):
    plen = size - 14 - 20 - 8
    udp = struct.pack("!HHHH", sport, dport, 8 + plen, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + plen, 0, 0, 64, 17,
                     0, socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return mac(dmac) + mac(smac) + b"\x08\x00" + ip + udp + bytes(plen)


class Sink:
    """Frames out of one guest NIC, read and counted."""

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.out = 0
        threading.Thread(target=self.drain, daemon=True).start()

    def drain(self):
        while True:
            self.sock.recv(65536)
            self.out += 1


class Feeder:
    def __init__(self, to, eth1_out, eth2_out, blast=None):
        self.to = to
        self.dest = ("127.0.0.1", to)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.eth1 = Sink(eth1_out)
        self.eth2 = Sink(eth2_out)
        self.blast = blast
        self.proc = None
        self.thread = None
        self.running = False
        self.sent = 0
        self.out0 = 0

    def start(self, opts):
        self.stop()
        flows = int(opts.get("flows", 1))
        frames = [frame(opts["dmac"], opts["smac"], opts["src"], opts["dst"],
                        10000 + i, int(opts["dport"])) for i in range(flows)]
        self.sent = 0
        self.out0 = self.eth2.out
        if self.blast:
            self.proc = subprocess.Popen([self.blast, str(self.to)],
                                         stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)
            self.proc.stdin.write(b"".join(frames))
            self.proc.stdin.close()
            return
        self.running = True
        self.thread = threading.Thread(target=self.run, args=(frames,),
                                       daemon=True)
        self.thread.start()

    def run(self, frames):
        send, dest, n, i = self.sock.sendto, self.dest, len(frames), 0
        while self.running:
            try:
                send(frames[i % n], dest)
                i += 1
            except OSError:     # ECONNREFUSED after an ICMP error: go on
                time.sleep(0.001)
        self.sent = i

    def stop(self):
        if self.proc:
            proc, self.proc = self.proc, None
            proc.send_signal(signal.SIGTERM)
            out = proc.stdout.read()
            if proc.wait():
                raise OSError("blast exited %d" % proc.returncode)
            self.sent = int(out.split()[0])
        if self.thread:
            self.running = False
            self.thread.join()
            self.thread = None
        return self.sent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blast")
    ap.add_argument("--to", type=int, required=True)
    ap.add_argument("--eth1-out", type=int, required=True)
    ap.add_argument("--eth2-out", type=int, required=True)
    ap.add_argument("rundir")
    args = ap.parse_args()
    d = os.path.join(args.rundir, "feed")
    os.makedirs(d, exist_ok=True)
    feeder = Feeder(args.to, args.eth1_out, args.eth2_out, args.blast)
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
        sys.exit(0)
