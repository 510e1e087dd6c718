#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Traffic through the routed topology of test_flowtable.sh (in the guest).

  flowtraffic.py udp-echo ADDR PORT            serve: echo each datagram
  flowtraffic.py udp-ping SADDR SPORT DADDR DPORT N [INTERVAL]
                                               N datagrams of 200 bytes from
                                               SADDR:SPORT, each answered,
                                               INTERVAL s apart (default 0);
                                               prints "sent N echoed M"
  flowtraffic.py udp-many SADDR SPORT DADDR DPORT N ROUNDS
                                               N connections at once, from
                                               ports SPORT..SPORT+N-1; each
                                               round sends one datagram on
                                               each, 50 at a time, and
                                               waits for the echoes (each
                                               unanswered one is sent again,
                                               twice at most); prints "sent
                                               N*ROUNDS echoed M"
  flowtraffic.py tcp-sink ADDR PORT            serve: read each connection
                                               to its end, answer the sha256
  flowtraffic.py tcp-send SADDR SPORT DADDR DPORT BYTES SEED
                                               BYTES of seeded data; prints
                                               "sent HASH got HASH"
  flowtraffic.py capture DEV PROTO PORTS N SECS READY
                                               raw frames on DEV to one of
                                               PORTS (a,b,...), as hex
                                               lines: up to N, SECS at
                                               most, or on SIGTERM what
                                               came until then; creates
                                               the file READY once bound

  flowtraffic.py compare A B                   frames of two captures of
                                               sendframe.py --seq frames,
                                               paired by flow, direction and
                                               sequence number: prints
                                               "pairs N differ N"; exit 1 if
                                               a pair differs

Servers run until killed.  Addresses may be IPv4 or IPv6.
"""
import hashlib
import random
import resource
import select
import signal
import socket
import sys
import threading
import time


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def udp_echo(addr, port):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    while True:
        data, peer = s.recvfrom(65535)
        s.sendto(data, peer)


def echo_of(data):
    """The number of udp_ping's message @data echoes, or None."""
    if len(data) != 200 or data[8:] != bytes(192) or not data[:8].isdigit():
        return None
    return int(data[:8])


def udp_ping(saddr, sport, daddr, dport, n, interval=0):
    s = socket.socket(family(daddr), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((saddr, int(sport)))
    s.settimeout(2)
    echoed = misses = 0
    # Echoes of any message sent count, late ones too: under TCG on a
    # loaded host the first round trip (ARP, conntrack, the slow path)
    # can take longer than the 2 s the loop waits for each.
    pending = set()
    for i in range(int(n)):
        if i and float(interval):
            time.sleep(float(interval))
        msg = b"%08d" % i + bytes(192)
        s.sendto(msg, (daddr, int(dport)))
        pending.add(i)
        try:
            while True:
                j = echo_of(s.recvfrom(65535)[0])
                if j in pending:
                    pending.discard(j)
                    echoed += 1
                    misses = 0
                    if j == i:
                        break
        except socket.timeout:
            misses += 1
            if misses == 3:     # the path is down: do not wait for each
                break
    end = time.monotonic() + 5
    while pending and time.monotonic() < end:
        try:
            j = echo_of(s.recvfrom(65535)[0])
        except socket.timeout:
            break
        if j in pending:
            pending.discard(j)
            echoed += 1
    print("sent %s echoed %d" % (n, echoed))
    return 0 if echoed == int(n) else 1


def udp_many(saddr, sport, daddr, dport, n, rounds):
    n, rounds, sport, dport = int(n), int(rounds), int(sport), int(dport)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
    socks = []
    for i in range(n):
        s = socket.socket(family(daddr), socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((saddr, sport + i))
        s.setblocking(False)
        socks.append(s)
    poll = select.poll()
    by_fd = {}
    for i, s in enumerate(socks):
        poll.register(s, select.POLLIN)
        by_fd[s.fileno()] = i
    echoed = 0
    for r in range(rounds):
        msg = b"round %04d" % r + bytes(54)
        for lo in range(0, n, 50):
            pending = set(range(lo, min(n, lo + 50)))
            for attempt in range(3):
                for i in pending:
                    socks[i].sendto(msg, (daddr, dport))
                deadline = time.time() + 3
                while pending and time.time() < deadline:
                    for fd, _ in poll.poll(200):
                        i = by_fd[fd]
                        try:
                            while True:
                                data = socks[i].recv(65535)
                                if data == msg and i in pending:
                                    pending.discard(i)
                                    echoed += 1
                        except BlockingIOError:
                            pass
                if not pending:
                    break
    print("sent %d echoed %d" % (n * rounds, echoed))
    return 0 if echoed == n * rounds else 1


def tcp_sink(addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(16)

    def serve(c):
        h = hashlib.sha256()
        while True:
            data = c.recv(65536)
            if not data:
                break
            h.update(data)
        c.sendall(h.hexdigest().encode())
        c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def tcp_send(saddr, sport, daddr, dport, nbytes, seed):
    rnd = random.Random(int(seed))
    s = socket.socket(family(daddr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((saddr, int(sport)))
    s.settimeout(60)
    s.connect((daddr, int(dport)))
    h = hashlib.sha256()
    left = int(nbytes)
    while left:
        chunk = rnd.randbytes(min(left, 32768))
        h.update(chunk)
        s.sendall(chunk)
        left -= len(chunk)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        data = s.recv(256)
        if not data:
            break
        got += data
    s.close()
    print("sent %s got %s" % (h.hexdigest(), got.decode()))
    return 0 if got.decode() == h.hexdigest() else 1


def capture(dev, proto, ports, n, secs, ready):
    """
    Frames on DEV whose TCP/UDP destination port is one of PORTS.  The
    sender tells it when it is done (SIGTERM): what is queued by then, and
    what follows within a second, is read; no silence ends it before, as
    the start of a sender may take seconds on a debug kernel.
    """
    ports = {int(p) for p in ports.split(",")}
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((dev, 0))
    # SIGTERM wakes select() through this pair (the handler runs late)
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGTERM, lambda *_: None)
    open(ready, "w").close()
    want = {"tcp": 6, "udp": 17}[proto]
    end = time.time() + float(secs)
    got = 0
    stopping = False
    while got < int(n):
        left = end - time.time()
        if stopping:
            left = min(left, 1)
        if left <= 0:
            break
        r = select.select([s, wake_r], [], [], left)[0]
        if wake_r in r:
            wake_r.recv(64)
            stopping = True
            continue
        if not r:
            break
        f, meta = s.recvfrom(65535)
        if meta[2] == socket.PACKET_OUTGOING:
            continue
        etype = int.from_bytes(f[12:14], "big")
        if etype == 0x0800:
            l4, p = 14 + (f[14] & 15) * 4, f[23]
        elif etype == 0x86DD:
            l4, p = 54, f[20]
        else:
            continue
        if p != want or int.from_bytes(f[l4 + 2:l4 + 4], "big") not in ports:
            continue
        print(f.hex())
        got += 1
    sys.stdout.flush()
    return 0


def frame_key(f):
    """(ethertype, protocol, ports, sequence number) of a captured frame."""
    etype = f[12:14]
    if etype == b"\x08\x00":
        l4, p = 14 + (f[14] & 15) * 4, f[23]
    else:
        l4, p = 54, f[20]
    return (etype, p, f[l4:l4 + 4], f[l4 + 8:l4 + 12])


def compare(a, b):
    def load(path):
        frames = {}
        with open(path) as fh:
            for line in fh:
                f = bytes.fromhex(line.strip())
                frames.setdefault(frame_key(f), f)
        return frames

    fa, fb = load(a), load(b)
    pairs = [k for k in fa if k in fb]
    differ = [k for k in pairs if fa[k] != fb[k]]
    print("pairs %d differ %d" % (len(pairs), len(differ)))
    for k in differ[:3]:
        print("# %s\n# %s" % (fa[k].hex(), fb[k].hex()))
    return 1 if differ else 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"udp-echo": udp_echo, "udp-ping": udp_ping, "udp-many": udp_many,
          "tcp-sink": tcp_sink,
          "tcp-send": tcp_send, "capture": capture,
          "compare": compare}[cmd]
    return fn(*args) or 0


if __name__ == "__main__":
    sys.exit(main())
