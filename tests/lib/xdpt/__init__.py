# SPDX-License-Identifier: GPL-2.0
"""The test suite's Python helpers, each written once.

  xdpt.bpf  the bpf() system call: pinned maps read raw, program info
  xdpt.btf  a map's key and value layout, read from its BTF
  xdpt.net  checksums, MAC addresses, prefix masks

The scripts of tests/lib import it as a sibling package; those elsewhere
(tests/bench) put tests/lib on sys.path first.
"""
