# SPDX-License-Identifier: GPL-2.0
"""Reports, and the planted differences of the harness self-check.

Part of tests/lib/difftest.py, the differential test."""
import sys

from xdpt.diff_batch import run_batch
from xdpt.diff_frames import base_frame
from xdpt.diff_pools import mac
from xdpt.diff_rules import Chain, Rule, ruleset_text


def diag(*lines):
    for line in lines:
        print("# " + line)
    sys.stdout.flush()


HW_SAYS = {"xdp": "dropped in XDP", "drop": "dropped by nf_tables",
           "pass": "passed"}
SW_SAYS = {"gone": "never reached nf_tables", "drop": "dropped",
           "pass": "passed"}


def show_frame(f, indent="  "):
    diag(indent + "frame: " + f.describe(),
         indent + "bytes: " + f.build().hex())


# The tc filters that went with a ruleset (its chains list), for reports.
TC_OF = {}


def show_ruleset(chains, dev):
    diag("  ruleset (offloaded side; the twin on the other device is the "
         "same):")
    for i, r in enumerate(TC_OF.get(id(chains), [])):
        diag("    tc filter add dev %s ingress prio %d %s  # %s" %
             (dev, i + 1, r.flower(dev), r.comment))
    for line in ruleset_text(chains, dev):
        diag("    " + line)


def show_counters(st, counters):
    return "; ".join("%s %s %s, %s %s" % (c, st.hw, hw, st.sw, sw)
                     for c, hw, sw in counters)


# The planted differences: three source MAC prefixes, a rule per prefix.
CANARY_PREFIXES = [b"\x02\x00\x01", b"\x02\x00\x02", b"\x0a\x00\x00"]


def canary_rule(i, action, comment):
    r = Rule()
    r.smac = (CANARY_PREFIXES[i] + b"\0\0\0", mac("ff:ff:ff:00:00:00"))
    r.action = action
    r.comment = comment
    return r


def canary_run(st, rng, serial, hw, sw):
    """4, 3 and 5 frames of the three prefixes through HW and SW:
    (decision mismatches, counter mismatches, refusal)."""
    frames = []
    for prefix, n in zip(CANARY_PREFIXES, (4, 3, 5)):
        for _ in range(n):
            frames.append(plain_frame(rng, prefix + serial.to_bytes(3, "big")))
            serial += 1
    res, err, _ = run_batch(st, hw, sw, frames)
    if res is None:
        return None, None, err
    return len(res.decisions), len(res.counters), None


def canary(st, rng, serial):
    """A planted difference the comparison must catch: the twin of r1
    accepts what the offloaded r1 drops (decisions differ), r2 and r3 swap
    their matches on the twin (decisions agree, counters differ)."""
    hw = [Chain("c0", 10, [canary_rule(0, "drop", "r1"),
                           canary_rule(1, "drop", "r2"),
                           canary_rule(2, "drop", "r3")])]
    sw = [Chain("c0", 10, [canary_rule(0, "accept", "r1"),
                           canary_rule(2, "drop", "r2"),
                           canary_rule(1, "drop", "r3")])]
    return canary_run(st, rng, serial, hw, sw)


def tc_canary(st, rng, serial):
    """The same for tc: t1 drops on HW and passes on SW (decisions and
    its counter differ), t2 matches other frames on the twin."""
    st.tc_rules = [canary_rule(0, "drop", "t1"), canary_rule(1, "accept", "t2")]
    st.tc_sw_rules = [canary_rule(0, "accept", "t1"),
                      canary_rule(2, "accept", "t2")]
    try:
        return canary_run(st, rng, serial, [], [])
    finally:
        st.tc_rules, st.tc_sw_rules = [], None


def plain_frame(rng, smac):
    f = base_frame(rng, smac)
    while not f.plain():
        f = base_frame(rng, smac)
    return f
