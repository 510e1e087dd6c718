# SPDX-License-Identifier: GPL-2.0
"""The instruction counts' tables, ratios and plot (part of report.py)."""
import os
import subprocess
import sys

from report_lib import (
    AREAS, FWD_DESC, FWD_MODES, INSN_DESC, INSN_MODES, Stats, area_split,
    collect, csv_rows, fmt, num, perf_table, ratio)


# tests/bench/classify's kinds of masks: "" prefix lengths, "d" distinct
# field sets; "n": the frame matches no rule.
CLS_KIND_NAME = {"": "", "n": " none", "d": " distinct", "dn": " distinct none"}


def cls_kind(r):
    return (("d" if r.get("sets") == "distinct" else "") +
            ("n" if r.get("match") == "none" else ""))


def insn_section(md, csv, recs, missing, out):
    """Instructions per frame (QEMU -icount): the table, the breakdown by
    area, and the _insn ratios."""
    if not any(r.get("sec") in ("insn", "insn_fwd") for r in recs):
        missing.append("insn")
        return []
    ins = {}
    for ioa in ("1", "0"):
        for m in INSN_MODES:
            ins[m, ioa] = {
                "insn": collect(recs, "insn", None, "insn", mode=m, ioa=ioa),
                "prog": collect(recs, "insn_bpf", None, "prog_insn", mode=m, ioa=ioa),
                "busy": collect(recs, "insn", None, "busy_pct", mode=m, ioa=ioa),
            }
        for m in FWD_MODES:
            ins["fwd:" + m, ioa] = {
                "insn": collect(recs, "insn_fwd", None, "insn", mode=m, ioa=ioa),
                "prog": collect(recs, "insn_fwd_bpf", None, "prog_insn", mode=m, ioa=ioa),
                "busy": collect(recs, "insn_fwd", None, "busy_pct", mode=m, ioa=ioa),
            }
    for (m, ioa), d in ins.items():
        csv_rows(csv, "insn", f"{m}/ioa{ioa}", "insn_per_frame", d["insn"])
        csv_rows(csv, "insn", f"{m}/ioa{ioa}", "prog_insn_per_run", d["prog"])
        if not d["insn"].n:
            missing.append(f"insn {m} init_on_alloc={ioa}")
    flows = next((r["flows"] for r in recs if r.get("sec") == "insn_fwd"), "?")
    reps = max((d["insn"].n for d in ins.values()), default=0)
    md.append("## Instructions per frame (QEMU -icount)")
    md.append("")
    md.append("A guest of one vCPU under QEMU's `-icount shift=0`: its clock advances 1 ns per "
              "instruction executed, so the vCPU's non-idle guest time is an instruction count. "
              "tests/bench/feed.py writes 64-byte UDP frames from the host into eth1's UDP "
              "socket backend (127.0.0.1) as fast as it goes; eth1's NAPI interrupts are "
              "deferred (napi_defer_hard_irqs, gro_flush_timeout 4 ms), so that a poll finds "
              "the receive ring (1,024 entries) full whether or not the host keeps up, and "
              "takes 64 frames. insn/frame: the window's "
              "non-idle guest time (/proc/timer_list) over eth1's frames: driver, allocator, "
              "XDP, stack, nft/tc and whatever else the vCPU ran (timers, RCU), counted, not "
              "timed. prog: the XDP program's own instructions per run (bpf_stats run_time_ns, "
              f"two clock reads included). Medians of {reps} windows per mode (min-max), "
              "init_on_alloc=1 (Debian's default) and =0. busy: the vCPU's non-idle share of "
              "the window (below 99 %: it drained the ring faster than the host filled it, "
              "and waited for the deferral's timer, idle; idle time is not counted).")
    md.append("")
    md.append("| mode | what | insn/frame | vs limit | prog insn | busy | "
              "insn/frame, init_on_alloc=0 | vs limit |")
    md.append("|---|---|---:|---:|---:|---:|---:|---:|")

    def row(key, label, desc, lim):
        a, b = ins[key, "1"], ins[key, "0"]
        cells = []
        for d, ld in ((a, ins[lim, "1"]), (b, ins[lim, "0"])):
            rng = (f" [{fmt(d['insn'].min)}-{fmt(d['insn'].max)}]"
                   if d["insn"].n > 1 else "")
            cells.append(f"{fmt(d['insn'].median)}{rng}")
            cells.append(fmt(ratio(d["insn"].median, ld["insn"].median), 3))
        md.append(f"| {label} | {desc} | {cells[0]} | {cells[1]} | "
                  f"{fmt(a['prog'].median) if a['prog'].n else '-'} | "
                  f"{fmt(a['busy'].median, 1) + ' %' if a['busy'].n else 'n/a'} | "
                  f"{cells[2]} | {cells[3]} |")

    for m in INSN_MODES:
        row(m, m, INSN_DESC[m], "limit")
    for m in FWD_MODES:
        row("fwd:" + m, m, f"forwarding eth1 -> eth2, {flows} flows: " + FWD_DESC[m],
            "fwd:fwd-limit")
    md.append("")
    for ioa in ("1", "0"):
        perf = {r["mode"]: r for r in recs
                if r.get("sec") in ("perf_insn", "perf_insn_fwd") and r.get("ioa") == ioa}
        if not perf:
            continue
        md.append(f"### Where the instructions go, init_on_alloc={ioa} (perf cpu-clock: "
                  "a sample every ~100,000 guest instructions)")
        md.append("")
        md.append("insn/frame by area = the area's share of the vCPU's non-idle samples x "
                  "the mode's insn/frame (one perf window per mode, in the last repetition).")
        md.append("")
        rows = [(m, m, {"host": Stats([]), "cpu": ins[m, ioa]["insn"]}) for m in INSN_MODES]
        rows += [(m, m, {"host": Stats([]), "cpu": ins["fwd:" + m, ioa]["insn"]})
                 for m in FWD_MODES]
        perf_table(md, csv, perf, rows)
    insn_plot(out, ins, recs)

    # The classifier alone (BPF_PROG_TEST_RUN, instructions per run), now
    # and as it was at the baseline (tests/bench/run: BASELINE_REV).
    cls, cls_tables = {}, {}
    for r in recs:
        if r.get("sec") == "insn_cls" and r.get("variant") == "current" and "tables" in r:
            cls_tables[int(r["rules"]), int(r["masks"]), cls_kind(r)] = r["tables"]
    for r in recs:
        if r.get("sec") == "insn_cls" and r.get("ioa") == "1":
            cls.setdefault((r["variant"], int(r["rules"]), int(r["masks"]),
                            cls_kind(r)), []).append(num(r["ns"]))
    points = sorted({k[1:] for k in cls if k[1]})
    # 0:0, a program that drops at once: BPF_PROG_TEST_RUN's own loop
    harness_st = Stats(cls.get(("current", 0, 0, ""), []))
    harness = harness_st.median
    if points:
        base_rev = next((r.get("base") for r in recs if r.get("sec") == "insn_cls"
                         and r.get("variant") == "baseline"), None)
        md.append("### The classifier alone (BPF_PROG_TEST_RUN, instructions per run)")
        md.append("")
        md.append("tests/bench/classify in the same guest: one 64-byte UDP frame, the matching "
                  "rule last, every mask looked up; the run's duration in guest ns is its "
                  "instructions. baseline: the program as it was at "
                  f"{base_rev or '(no baseline built)'}, before issue 16 changed the "
                  "classifier, built from git by tests/bench/run.")
        md.append("")
        md.append("Masks: M prefix lengths of ip saddr, or (distinct) M field sets no "
                  "table can share; none: the frame matches no rule. tables: the "
                  "tables they fill now.")
        md.append("")
        md.append("| rules | masks | tables | now | baseline | now / baseline |")
        md.append("|---:|---:|---:|---:|---:|---:|")
        for rules, masks, kind in points:
            a = Stats(cls.get(("current", rules, masks, kind), []))
            b = Stats(cls.get(("baseline", rules, masks, kind), []))
            tag = f"{masks:,}{CLS_KIND_NAME[kind]}"
            csv_rows(csv, "insn_cls", "current", "insn_per_run", a, rules, tag)
            csv_rows(csv, "insn_cls", "baseline", "insn_per_run", b, rules, tag)
            md.append(f"| {rules:,} | {tag} | {cls_tables.get((rules, masks, kind), '-')} | "
                      f"{fmt(a.median)} | {fmt(b.median)} | "
                      f"{fmt(ratio(a.median, b.median), 3)} |")
        md.append("")
        if harness is not None:
            csv_rows(csv, "insn_cls", "harness", "insn_per_run", harness_st, 0, 0)
            md.append(f"Of each figure, {fmt(harness)} are BPF_PROG_TEST_RUN's own loop "
                      "(classify 0:0: a program that returns XDP_DROP at once); "
                      "prog_1mask_vs_baseline_insn is of the programs' own instructions, "
                      "net of it, and _gross with it.")
            md.append("")

    # The peer on the same instrument: xdp-filter (guest.sh insn_peer).
    peer = {}
    for r in recs:
        if r.get("sec") == "insn_peer" and r.get("ioa") == "1":
            peer.setdefault(r["peer"], []).append(num(r["ns"]))
    if peer:
        md.append("### A peer on the same instrument: xdp-filter (instructions per run)")
        md.append("")
        md.append("xdp-filter of Debian's xdp-tools, loaded without libxdp's dispatcher, deny "
                  "mode, all features, N `xdp-filter ip ADDR --mode dst` rules, the frame's "
                  "the last; the same frame and BPF_PROG_TEST_RUN. own: less the test run's "
                  "loop. xdpoff: the rows of 1 mask above.")
        md.append("")
        md.append("| rules | xdp-filter | own | xdpoff | own | xdp-filter / xdpoff, own |")
        md.append("|---:|---:|---:|---:|---:|---:|")
        for name in sorted(peer, key=lambda x: int(x.rsplit("-", 1)[1])):
            n = int(name.rsplit("-", 1)[1])
            p_st = Stats(peer[name])
            x = Stats(cls.get(("current", n, 1), [])).median
            csv_rows(csv, "insn_peer", name, "insn_per_run", p_st, n, 1)
            p_own = p_st.median - harness if None not in (p_st.median, harness) else None
            x_own = x - harness if None not in (x, harness) else None
            md.append(f"| {n:,} | {fmt(p_st.median)} | {fmt(p_own)} | {fmt(x)} | "
                      f"{fmt(x_own)} | {fmt(ratio(p_own, x_own), 3)} |")
        md.append("")

    def med(m, ioa="1"):
        return ins[m, ioa]["insn"].median

    c_now = Stats(cls.get(("current", 1, 1, ""), [])).median
    c_base = Stats(cls.get(("baseline", 1, 1, ""), [])).median
    # The program's own instructions: less the test run's loop, in both.
    own = (ratio(c_now - harness, c_base - harness)
           if None not in (c_now, c_base, harness) else None)
    ratios = [("prog_1mask_vs_baseline_insn", own, "<= 0.60"),
              ("prog_1mask_vs_baseline_insn_gross", ratio(c_now, c_base), "(report)")]
    def own_vs_1(kind):
        """The program's own instructions at 1,000 rules over 32 masks
        (of kind), over its own at 1 rule."""
        c = Stats(cls.get(("current", 1000, 32, kind), [])).median
        return (ratio(c - harness, c_now - harness)
                if None not in (c, c_now, harness) else None)
    ratios += [("classify_32prefix_vs_1_insn", own_vs_1(""), "<= 2.0"),
               ("classify_32prefix_none_vs_1_insn", own_vs_1("n"), "<= 2.0"),
               ("classify_32distinct_vs_1_insn", own_vs_1("d"),
                "(report: no merge helps)")]
    p1 = Stats(peer.get("xdpfilter-1", [])).median
    ratios.append(("xdpfilter_vs_xdpoff_prog_insn",
                   ratio(p1 - harness, c_now - harness)
                   if None not in (p1, c_now, harness) else None, ">= 1.0"))
    for ioa, sfx in (("1", ""), ("0", "_ioa0")):
        lim, x1, x10k = med("limit", ioa), med("xdpoff-1", ioa), med("xdpoff-10k8m", ioa)
        nft, tc = med("nft-sw", ioa), med("tc-sw", ioa)
        flim, foff, fsw = (med("fwd:" + m, ioa) for m in ("fwd-limit", "ft-offload", "ft-sw"))
        nft_lim, nft_x = ratio(nft, lim), ratio(nft, x1)
        tc_lim, tc_x = ratio(tc, lim), ratio(tc, x1)
        blk = med("xdpoff-blocklist", ioa)
        ratios += [
            ("blocklist_vs_limit_insn" + sfx, ratio(blk, lim), "<= 1.35"),
            ("blocklist_none_vs_none_insn" + sfx,
             ratio(med("xdpoff-blocklist-none", ioa), med("none", ioa)),
             "(report: a frame no rule matches goes up; none: no filter)"),
            ("nft_sw_blocklist_vs_xdpoff_blocklist_insn" + sfx,
             ratio(med("nft-sw-blocklist", ioa), blk), "(report: the saving)"),
            ("nft_sw_blocklist_none_vs_xdpoff_blocklist_none_insn" + sfx,
             ratio(med("nft-sw-blocklist-none", ioa),
                   med("xdpoff-blocklist-none", ioa)), "(report)"),
            ("xdpoff_1rule_vs_limit_insn" + sfx, ratio(x1, lim), "<= 1.10"),
            ("xdpoff_10k8m_vs_limit_insn" + sfx, ratio(x10k, lim), "<= 1.30"),
            ("nft_sw_vs_limit_insn" + sfx, nft_lim, "(report: the most an offload saves)"),
            ("tc_sw_vs_limit_insn" + sfx, tc_lim, "(report: the most an offload saves)"),
            ("nft_sw_vs_xdpoff_insn" + sfx, nft_x,
             f">= 0.9 x nft_sw_vs_limit = {fmt(0.9 * nft_lim, 3) if nft_lim else 'n/a'}"),
            ("tc_sw_vs_xdpoff_insn" + sfx, tc_x,
             f">= 0.9 x tc_sw_vs_limit = {fmt(0.9 * tc_lim, 3) if tc_lim else 'n/a'}"),
            ("xdpfilter_vs_xdpoff_insn" + sfx, ratio(med("xdpfilter-1", ioa), x1),
             "(report: the whole receive path, 1 rule each)"),
            ("ft_offload_vs_limit_insn" + sfx, ratio(foff, flim), "<= 1.2"),
            ("ft_sw_vs_limit_insn" + sfx, ratio(fsw, flim), "(report)"),
            ("ft_sw_vs_ft_offload_insn" + sfx, ratio(fsw, foff), "(report)"),
            ("ft_offload_saving_vs_limit_saving_insn" + sfx,
             ratio(fsw - foff, fsw - flim) if None not in (fsw, foff, flim) else None,
             ">= 0.9"),
        ]
    return ratios


def insn_plot(out, ins, recs):
    """insn.png: instructions per frame by mode, stacked by area (perf),
    init_on_alloc=1 and =0 side by side."""
    blocks = []
    for ioa in ("1", "0"):
        perf = {r["mode"]: r for r in recs
                if r.get("sec") in ("perf_insn", "perf_insn_fwd") and r.get("ioa") == ioa}
        lines = []
        keys = [(m, m) for m in INSN_MODES] + [("fwd:" + m, m) for m in FWD_MODES]
        for i, (key, m) in enumerate(keys):
            total = ins[key, ioa]["insn"].median or 0
            parts = [x or 0.0 for x in area_split(perf.get(m, {}), total)]
            rest = max(0.0, total - sum(parts))     # no perf window: all here
            lines.append(f'{i} "{m}" ' + " ".join(f"{x:.0f}" for x in parts + [rest]))
        blocks.append("\n".join(lines))
    with open(os.path.join(out, "insn.dat"), "w") as f:
        f.write("# idx mode " + " ".join(AREAS) + " unattributed; "
                "block 0: init_on_alloc=1, block 1: =0\n" + "\n\n\n".join(blocks) + "\n")
    colours = ["#882255", "#cc6677", "#4477aa", "#ddcc77", "#117733", "#88ccee", "#332288",
               "#aa4499", "#44aa99", "#999933", "#dddddd"]
    cols = ", \\\n     ".join(
        f'"" index {{i}} using {j + 3}{":xtic(2)" if j == 0 else ""} title "{a}" lc rgb "{c}"'
        for j, (a, c) in enumerate(zip(AREAS + ["unattributed"], colours)))
    gp = f"""# gnuplot script written by tests/bench/report.py
set terminal pngcairo size 1400,550 font ",10" noenhanced
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.8
set grid ytics
set xtics rotate by -40
set yrange [0:*]
set ylabel "guest instructions per frame"
set key outside right top
set output "{out}/insn.png"
set multiplot layout 1,2 title "instructions per frame received on eth1 (QEMU -icount), by area (perf)"
"""
    for i, ioa in enumerate(("1", "0")):
        gp += f'set title "init_on_alloc={ioa}"\nplot "{out}/insn.dat" ' + \
            cols.replace("{i}", str(i))[3:] + "\n"
    gp += "unset multiplot\n"
    with open(os.path.join(out, "insn.gp"), "w") as f:
        f.write(gp)
    try:
        subprocess.run(["gnuplot", os.path.join(out, "insn.gp")], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"bench: gnuplot failed on insn.gp ({e}); tables are complete", file=sys.stderr)
