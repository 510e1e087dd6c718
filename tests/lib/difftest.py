#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Differential test of the offload: random rulesets, random frames.

Every ruleset is loaded twice in one nft transaction: with `flags offload`
on the attached device (HW, e.g. eth1) and without it on a twin device (SW,
e.g. eth3).  Every frame is sent, byte for byte the same, to both, from
their peers (e.g. eth0 and eth2, each in a namespace of its own).  Frames
are told apart by their source MAC, unique in a batch.  Software-only
chains record what happened to each frame:

  HW  priority -100      add @arrived  - the frame got past XDP
      offloaded chains   the ruleset, flags offload
      priority 100000    add @survived - no chain dropped it
  SW  priority -100      add @arrived  - the stack handed it to nf_tables
      twin chains        the same rules; each chain ends with
                         add @fall_cN  - no rule of chain N matched
      priority 100000    add @survived

For each frame: the HW verdict (survived or not) must equal the SW one,
and XDP must not drop a frame SW lets through.  For each rule: the nft
counter (packets, bytes) on HW, which nf_tables sums from what software
counted and what the driver reports XDP consumed, must equal the twin
rule's on SW.  Every rule has a counter and a comment "rN" that pairs it
with its twin.  Plain frames (untagged, valid headers, what the XDP parser
handles) that SW drops must all be dropped in XDP already.

Rule fields and frame fields come from small shared pools (addresses,
prefixes, ports, MACs), and most frames are made for one or two rules of
their ruleset, so that rules match often; a third of the frames get
something the XDP parser or the stack treats apart (VLAN tags, 802.3
lengths, bad or truncated headers, IPv6 extension headers, fragments).

With --tc P, a ruleset gets, with probability P, tc flower filters too
(up to 4, one priority each, drop or pass), on the ingress qdiscs of both
devices: offloaded on HW (no skip flag: XDP and software), software only
on SW.  tc runs before every nft chain.  The frame verdicts then are
those of tc and nft together, and each filter's tc -s counters (packets,
bytes) on HW must equal its twin's on SW.  The nft chain "first" runs
after tc: a frame tc dropped is missing from @arrived on both sides.

Before the random rulesets, a planted difference (a twin that differs on
purpose) must be caught: the harness self-check.  On a mismatch, the
frames behind a counter difference are found by sending them again one
group at a time, and the first mismatches are shrunk (chains, rules,
matches) to a minimal reproducer.

Run inside the test guest only (tests/guest/test_differential.sh sets up
the devices).  Prints "# " diagnostics on stdout and writes key=value
results to --summary.
"""
import argparse
import os
import random
import time

from xdpt.diff_batch import Setup, Timer, classify_refusal, run_batch, sw_path
from xdpt.diff_frames import batch_macs, gen_frames
from xdpt.diff_pools import mac_str
from xdpt.diff_report import (
    HW_SAYS, SW_SAYS, TC_OF, canary, diag, plain_frame, show_counters,
    show_frame, show_ruleset, tc_canary)
from xdpt.diff_rules import Chain, gen_ruleset, gen_tc, render_table
from xdpt.diff_shrink import culprit_frames, minimize


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hw", default="eth1")
    ap.add_argument("--sw", default="eth3")
    ap.add_argument("--hw-tx", default="eth0", help="DEV[@NETNS]")
    ap.add_argument("--sw-tx", default="eth2", help="DEV[@NETNS]")
    ap.add_argument("--pairs", type=int, default=5120)
    ap.add_argument("--frames", type=int, default=128,
                    help="frames per ruleset")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-chains", type=int, default=3)
    ap.add_argument("--max-rules", type=int, default=15)
    ap.add_argument("--plain-only", action="store_true",
                    help="only frames the XDP parser takes in full")
    ap.add_argument("--examples", type=int, default=3,
                    help="mismatches shown in full")
    ap.add_argument("--minimize", type=int, default=1,
                    help="1: shrink the first mismatches to a reproducer")
    ap.add_argument("--diag-budget", type=float, default=90,
                    help="seconds for culprit search and minimization")
    ap.add_argument("--tc", type=float, default=0.0,
                    help="share of rulesets with tc flower filters too")
    ap.add_argument("--prefix", type=float, default=0.3,
                    help="share of rulesets led by a prefix family's chain")
    ap.add_argument("--summary", required=True)
    ap.add_argument("--no-xdp-counter", action="store_true",
                    help="HW's driver counts no XDP drops (generic XDP): "
                    "no check against its counter")
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else \
        int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    st = Setup(args)
    t0 = time.monotonic()
    diag("seed %d (XDPOFF_DIFF_SEED=%d repeats this run), %d pairs, %d "
         "frames per ruleset%s" % (seed, seed, args.pairs, args.frames,
                                   ", plain frames only"
                                   if args.plain_only else ""))

    summary = {"seed": seed}
    serial = 1
    cd, cc, err = canary(st, random.Random(seed ^ 0x5a5a), serial)
    serial += 64
    summary["canary"] = "%s,%s" % (cd, cc)
    if err:
        diag("canary ruleset refused: " + err.strip().splitlines()[0])
    if args.tc:
        cd, cc, err = tc_canary(st, random.Random(seed ^ 0xa5a5), serial)
        serial += 64
        summary["tc_canary"] = "%s,%s" % (cd, cc)
        if err:
            diag("tc canary refused: " + err.strip().splitlines()[0])

    timer = Timer()
    rulesets = pairs = draws = lost = xdp_drops_total = 0
    tc_rulesets = tc_filters = tc_not_in_hw = 0
    prefix_rulesets = prefix_rules = 0
    refused = {}
    dec_mm = cnt_pkts = cnt_bytes = 0
    dec_examples, cnt_examples, early_missed = [], [], []
    dec_by_kind = {}
    mix = {"sw drop": 0, "sw accept": 0, "sw no match": 0, "stack drop": 0,
           "xdp drop": 0}
    kinds = {}
    plain = {"frames": 0, "sw drops": 0, "xdp drops": 0}
    while pairs < args.pairs:
        draws += 1
        n = min(args.frames, args.pairs - pairs)
        macs = batch_macs(rng, n, serial)
        serial += n
        chains = gen_ruleset(rng, macs, args.max_chains, args.max_rules,
                             args.prefix)
        st.tc_rules = gen_tc(rng, macs, rng.randint(1, 4)) \
            if rng.random() < args.tc else []
        frames = gen_frames(rng, chains + (
            [Chain("tc", 0, st.tc_rules)] if st.tc_rules else []), macs)
        TC_OF[id(chains)] = st.tc_rules
        if args.plain_only:
            frames = [f if f.plain() else plain_frame(rng, f.smac)
                      for f in frames]
        res, err, text = run_batch(st, chains, chains, frames, timer)
        if res is None:
            why, example = classify_refusal(st, text, chains)
            if why not in refused:
                diag("refused: %s, e.g. %s" % (why, example))
            refused[why] = refused.get(why, 0) + 1
            if draws > 20 and sum(refused.values()) > draws // 2:
                diag("more than half of the rulesets refused, giving up")
                break
            continue
        rulesets += 1
        pairs += n
        if any(c.prefix_family for c in chains):
            prefix_rulesets += 1
            prefix_rules += sum(len(c.rules) for c in chains
                                if c.prefix_family)
        if st.tc_rules:
            tc_rulesets += 1
            tc_filters += len(st.tc_rules)
            tc_not_in_hw += sum(1 for k in res.state["counters"]
                                if k[0] == "not_in_hw")
        xdp_drops_total += res.xdp_drops
        if res.rx != (n, n):
            lost += 1
            diag("ruleset %d: frames seen by %s/%s: %d/%d of %d" %
                 (rulesets, st.hw, st.sw, res.rx[0], res.rx[1], n))
        # Frames missing from HW's arrived set were dropped in XDP, or by
        # the stack before nf_tables (then SW misses them too).
        gone = sum(1 for hw, sw in res.outcomes if sw == "gone")
        xdp = sum(1 for hw, sw in res.outcomes if hw == "xdp")
        if st.ethtool and not xdp - gone <= res.xdp_drops <= xdp:
            lost += 1
            diag("ruleset %d: %d frames missing past XDP, %d missing on %s "
                 "too, but virtio-net counted %d XDP drops" %
                 (rulesets, xdp, gone, st.sw, res.xdp_drops))
        sets = res.state["sets"]
        # A tc filter not in hw runs in software only, and XDP takes no
        # verdict from its priority on: those frames may go up.
        sw_only = any(k[0] == "not_in_hw" for k in res.state["counters"])
        for f, (hw, sw) in zip(frames, res.outcomes):
            m = mac_str(f.smac)
            for k in f.kinds or {"plain"}:
                kinds[k] = kinds.get(k, 0) + 1
            if sw == "gone":
                mix["stack drop"] += 1
            elif sw == "drop":
                mix["sw drop"] += 1
            elif any(m not in sets.get(("xdt_sw", "fall_" + c.name), ())
                     for c in chains):
                mix["sw accept"] += 1
            else:
                mix["sw no match"] += 1
            if hw == "xdp":
                mix["xdp drop"] += 1
            if f.plain(tc=bool(st.tc_rules)) and not sw_only:
                plain["frames"] += 1
                if sw == "drop":
                    plain["sw drops"] += 1
                    if hw == "xdp":
                        plain["xdp drops"] += 1
                    else:
                        early_missed.append((rulesets, chains, f))
        dec_mm += len(res.decisions)
        for i, hw, sw in res.decisions:
            k = "%s/%s %s" % (hw, sw, ",".join(sorted(frames[i].kinds))
                              or "plain")
            dec_by_kind[k] = dec_by_kind.get(k, 0) + 1
            if len(dec_examples) < args.examples:
                dec_examples.append((rulesets, chains, frames[i], hw, sw,
                                     res))
        cnt_pkts += sum(1 for c, hw, sw in res.counters if hw[0] != sw[0])
        cnt_bytes += sum(1 for c, hw, sw in res.counters if hw[0] == sw[0])
        # Counter mismatches of a ruleset without decision mismatches: the
        # ruleset is still loaded, find the frames behind them.
        if res.counters and len(cnt_examples) < args.examples:
            culprits = []
            if not res.decisions and not any(len(x[4]) for x in cnt_examples):
                culprits = culprit_frames(
                    st, chains, frames, 3,
                    time.monotonic() + args.diag_budget / 3)
            cnt_examples.append((rulesets, chains, frames, res, culprits))

    elapsed = time.monotonic() - t0
    diag("%d rulesets x %d frames = %d pairs in %.0f s (nft load %.0f s, "
         "send %.0f s, read %.0f s); %d draws refused" %
         (rulesets, args.frames, pairs, elapsed, timer.t.get("load", 0),
          timer.t.get("send", 0), timer.t.get("read", 0),
          sum(refused.values())))
    for why, n in sorted(refused.items(), key=lambda x: -x[1]):
        diag("  refused %dx: %s" % (n, why))
    if args.tc:
        diag("tc: %d rulesets with %d flower filters, %d of them not in hw "
             "(software only)" % (tc_rulesets, tc_filters, tc_not_in_hw))
    diag("decisions: %s" % ", ".join("%s %d" % kv for kv in mix.items()))
    diag("frames: %s" % ", ".join("%s %d" % kv for kv in sorted(
        kinds.items(), key=lambda x: -x[1])))
    diag("plain frames: %d, dropped by SW %d, of which in XDP %d" %
         (plain["frames"], plain["sw drops"], plain["xdp drops"]))
    if dec_by_kind:
        diag("decision mismatches (%s/%s frame kind): %s" % (
            st.hw, st.sw, ", ".join("%s %d" % kv for kv in sorted(
                dec_by_kind.items(), key=lambda x: -x[1]))))
    if cnt_pkts or cnt_bytes:
        diag("counter mismatches: %d in packets, %d in bytes only" %
             (cnt_pkts, cnt_bytes))

    for rs, chains, f, hw, sw, res in dec_examples:
        diag("DECISION MISMATCH in ruleset %d: %s %s, %s %s (%s chains: %s)"
             % (rs, st.hw, HW_SAYS[hw], st.sw, SW_SAYS[sw], st.sw,
                " ".join(sw_path(res.state, chains, mac_str(f.smac)))))
        show_frame(f)
        show_ruleset(chains, st.hw)
    for rs, chains, frames, res, culprits in cnt_examples:
        diag("COUNTER MISMATCH in ruleset %d%s: %s" % (
            rs, " (with decision mismatches)" if res.decisions else "",
            show_counters(st, res.counters)))
        show_ruleset(chains, st.hw)
        for i, c in culprits:
            diag("  a frame behind it: " + show_counters(st, c))
            show_frame(frames[i], "    ")
    for rs, chains, f in early_missed[:args.examples]:
        diag("NOT DROPPED EARLY in ruleset %d: a plain frame SW drops, XDP "
             "passed it up" % rs)
        show_frame(f)
        show_ruleset(chains, st.hw)

    # Minimal reproducers: the first decision mismatch, the first frame
    # behind a counter mismatch.
    todo = []
    if dec_examples:
        todo.append(("decisions", dec_examples[0][1], dec_examples[0][2]))
    for rs, chains, frames, res, culprits in cnt_examples:
        if culprits:
            todo.append(("counters", chains, frames[culprits[0][0]]))
            break
    for kind, chains, f in todo if args.minimize else ():
        st.tc_rules = TC_OF.get(id(chains), [])
        for i, r in enumerate(st.tc_rules):
            diag("  with tc filter prio %d %s" % (i + 1, r.flower(st.hw)))
        chains, res = minimize(st, chains, f, kind, time.monotonic() +
                               args.diag_budget / 3)
        if res is None or not getattr(res, kind):
            diag("the %s mismatch did not come back on its own" % kind[:-1])
            continue
        diag("MINIMAL REPRODUCER (%s mismatch): offloaded on %s, the same "
             "without flags offload on %s" % (kind[:-1], st.hw, st.sw))
        for line in render_table("x", st.hw, chains, True, False,
                                 bare=True).splitlines():
            diag("    " + line)
        show_frame(f)
        for i, hw, sw in res.decisions:
            diag("  decision: %s %s, %s %s" % (st.hw, HW_SAYS[hw], st.sw,
                                               SW_SAYS[sw]))
        if res.counters:
            diag("  counters: " + show_counters(st, res.counters))

    summary.update({
        "rulesets": rulesets, "pairs": pairs, "seconds": int(elapsed),
        "refused": sum(refused.values()), "decision_mismatches": dec_mm,
        "counter_mismatches": cnt_pkts + cnt_bytes, "xdp_drops":
        xdp_drops_total, "xdp_dropped_frames": mix["xdp drop"],
        "sw_drops": mix["sw drop"], "plain_sw_drops": plain["sw drops"],
        "plain_not_early": len(early_missed), "lost": lost,
        "tc_rulesets": tc_rulesets, "tc_filters": tc_filters,
        "prefix_rulesets": prefix_rulesets, "prefix_rules": prefix_rules,
        "tc_not_in_hw": tc_not_in_hw,
    })
    with open(args.summary, "w") as f:
        for k, v in summary.items():
            f.write("%s=%s\n" % (k, v))


if __name__ == "__main__":
    main()
