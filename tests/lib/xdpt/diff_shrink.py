# SPDX-License-Identifier: GPL-2.0
"""Diagnostics: the frames behind a counter mismatch, a ruleset shrunk
to a minimal reproducer.

Part of tests/lib/difftest.py, the differential test."""
import copy
import time

from xdpt.diff_batch import compare, read_state, run_batch, send, wait_rx
from xdpt.diff_rules import Chain
from xdpt.diff_sys import rx_packets


def culprit_frames(st, chains, frames, limit, deadline):
    """Resend frames (the ruleset is loaded) and find which ones move the
    HW and SW counters differently: groups first, then one by one."""
    found = []
    base = read_state(st)

    def differs(group):
        nonlocal base
        rx0 = (rx_packets(st.hw), rx_packets(st.sw))
        send(st, [frames[i].build() for i in group])
        wait_rx(st, rx0, len(group))
        time.sleep(0.02)
        now = read_state(st)
        res = compare(now, frames, chains, base)
        base = now
        return res.counters

    idx = list(range(len(frames)))
    for g in [idx[i:i + 16] for i in range(0, len(idx), 16)]:
        if len(found) >= limit or time.monotonic() > deadline:
            break
        if not differs(g):
            continue
        for i in g:
            if len(found) >= limit or time.monotonic() > deadline:
                break
            c = differs([i])
            if c:
                found.append((i, c))
    return found


def copy_chains(chains, keep):
    out = []
    for c in chains:
        rules = [r for r in c.rules if keep(r)]
        if rules:
            out.append(Chain(c.name, c.prio, rules))
    return out


def minimize(st, chains, frame, kind, deadline):
    """Greedy: drop chains, then rules, while FRAME still shows a mismatch
    of KIND ("decisions" or "counters")."""
    def bad(cand):
        res, _, _ = run_batch(st, cand, cand, [frame])
        return res is not None and bool(getattr(res, kind))

    cur = copy_chains(chains, lambda r: True)
    for c in list(cur):
        if time.monotonic() > deadline or len(cur) == 1:
            break
        cand = [x for x in cur if x is not c]
        if bad(cand):
            cur = cand
    for r in [r for c in cur for r in c.rules]:
        if time.monotonic() > deadline:
            break
        cand = copy_chains(cur, lambda rr: rr is not r)
        if cand and bad(cand):
            cur = cand
    # Then the matches of the rules left; a candidate nft refuses is no
    # reproducer, so dependencies take care of themselves.
    for c in cur:
        for i in range(len(c.rules)):
            for change in REDUCTIONS:
                if time.monotonic() > deadline:
                    break
                r = copy.copy(c.rules[i])
                if not change(r) or r.render("x") == c.rules[i].render("x"):
                    continue
                old, c.rules[i] = c.rules[i], r
                if not bad(cur):
                    c.rules[i] = old
    res, _, _ = run_batch(st, cur, cur, [frame])
    return cur, res


def _drop_l3(r):
    if r.fam is None:
        return False
    r.fam = r.fam_how = r.etype = r.saddr = r.daddr = None
    if r.l4_how in ("ip", "nexthdr"):
        r.l4_how = "meta"
    return True


def _drop_l4(r):
    if r.l4 is None:
        return False
    r.l4 = r.l4_how = r.port = None
    return True


def _drop(field, empty=None):
    def change(r):
        if getattr(r, field) in (None, False):
            return False
        setattr(r, field, empty)
        return True
    return change


def _implied_fam(r):
    if r.fam_how is None or not (r.saddr or r.daddr or
                                 r.l4_how in ("ip", "nexthdr")):
        return False
    r.fam_how = None
    return True


REDUCTIONS = [_drop("smac"), _drop("dmac"), _drop("iif"),
              _drop("iiftype", False), _drop("saddr"), _drop("daddr"),
              _drop("port"), _implied_fam, _drop_l4, _drop_l3]
