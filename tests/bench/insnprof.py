#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/bench/insnprof.py - the two halves of tests/bench/insnprof.

  insnprof.py jit ID OUT       (guest) write BPF program ID's JIT image to
                               OUT; print "@func ADDR LEN OFFSET" for each
                               of its functions, and "@verified N": the
                               instructions its verifier processed
  insnprof.py annotate LOG     (host) the image of LOG disassembled
                               (objdump), each instruction with its
                               executions per test run; then the total,
                               and each function's samples in the same
                               unit (@sym): instructions per run for the
                               program and the helpers it calls; the
                               rest (loading, the verifier) is not per run

Executions: samples fall only outside the timer interrupt that takes
them, so an instruction executed once per run gets a little more than
REPEAT / PERIOD samples.  That unit is the median count of the sampled
instructions (most run once per run at one mask); an instruction's
executions are its count in that unit, rounded.
"""
import ctypes
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import xdpt.bpf  # noqa: E402 (after the path)

BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
# struct bpf_prog_info (include/uapi/linux/bpf.h), the members used
INFO_SIZE = 232
OFF_JITED_LEN, OFF_JITED_INSNS = 16, 24
OFF_NR_KSYMS, OFF_NR_FUNC_LENS = 104, 108
OFF_KSYMS, OFF_FUNC_LENS = 112, 120
OFF_VERIFIED_INSNS = 216


def bpf(cmd, attr):
    """bpf() with @attr's bytes."""
    return xdpt.bpf.bpf(cmd, ctypes.create_string_buffer(attr, len(attr)))


def prog_info(fd, info):
    attr = struct.pack('=IIQ', fd, len(info), ctypes.addressof(info))
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr.ljust(128, b'\0'))
    return info.raw


def jit(prog_id, out):
    fd = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack('=I', prog_id).ljust(128, b'\0'))
    raw = prog_info(fd, ctypes.create_string_buffer(INFO_SIZE))
    jlen, = struct.unpack_from('=I', raw, OFF_JITED_LEN)
    nks, nfl = struct.unpack_from('=II', raw, OFF_NR_KSYMS)
    image = ctypes.create_string_buffer(jlen)
    ksyms = (ctypes.c_uint64 * nks)()
    lens = (ctypes.c_uint32 * nfl)()
    req = bytearray(INFO_SIZE)
    struct.pack_into('=I', req, OFF_JITED_LEN, jlen)
    struct.pack_into('=Q', req, OFF_JITED_INSNS, ctypes.addressof(image))
    struct.pack_into('=II', req, OFF_NR_KSYMS, nks, nfl)
    struct.pack_into('=QQ', req, OFF_KSYMS, ctypes.addressof(ksyms),
                     ctypes.addressof(lens))
    prog_info(fd, ctypes.create_string_buffer(bytes(req), INFO_SIZE))
    with open(out, 'wb') as f:
        f.write(image.raw)
    off = 0
    for addr, n in zip(ksyms, lens):
        print('@func %x %d %d' % (addr, n, off))
        off += n
    print('@verified %d' % struct.unpack_from('=I', raw, OFF_VERIFIED_INSNS))


def annotate(log):
    funcs, image, samples, head, syms = [], b'', {}, [], {}
    with open(log) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == '@func':
                funcs.append((int(w[1], 16), int(w[2]), int(w[3])))
            elif w[0] == '@jit':
                image = bytes(int(h, 16) for h in w[1:])
            elif w[0] == '@ip':
                samples[int(w[1], 16)] = int(w[2])
            elif w[0] == '@sym':
                syms[w[1]] = int(w[2])
            elif w[0].startswith('classify') or w[0] in ('@period', '@repeat',
                                                       '@verified'):
                head.append(line.rstrip())
    if not funcs or not image:
        sys.exit('insnprof.py: %s holds no JIT image (@func, @jit lines)' % log)
    insns = []          # (function index, address, text, samples)
    with tempfile.NamedTemporaryFile() as tmp:
        for k, (addr, n, off) in enumerate(funcs):
            tmp.seek(0)
            tmp.truncate()
            tmp.write(image[off:off + n])
            tmp.flush()
            dis = subprocess.run(['objdump', '-D', '-b', 'binary',
                                  '-mi386:x86-64', '--adjust-vma=%#x' % addr,
                                  tmp.name], capture_output=True, text=True,
                                 check=True).stdout
            for d in dis.splitlines():
                m = re.match(r'\s*([0-9a-f]+):\s+(.*)', d)
                if m:
                    ip = int(m.group(1), 16)
                    insns.append((k, ip, m.group(2), samples.get(ip, 0)))
    hit = sorted(c for _, _, _, c in insns if c)
    if not hit:
        sys.exit('insnprof.py: no sample fell in the program')
    unit = hit[len(hit) // 2]
    total = [0] * len(funcs)
    for line in head:
        print('# ' + line)
    print('# one execution per run = %d samples (the median)' % unit)
    k0 = None
    for k, ip, text, c in insns:
        if k != k0:
            print('== function %d at %x' % (k, funcs[k][0]))
            k0 = k
        n = round(c / unit)
        total[k] += n
        if n:
            print('%4d  %x  %s' % (n, ip, text))
    for k, n in enumerate(total):
        print('function %d: %d instructions per run' % (k, n))
    print('program: %d instructions per run' % sum(total))
    # Every function the samples fell in, the program's among them.
    for name, c in sorted(syms.items(), key=lambda x: -x[1]):
        n = round(c / unit)
        if n:
            print('@sym %6d  %s' % (n, name))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == 'jit':
        jit(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == 'annotate':
        annotate(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
