#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/bench/report.py LOG OUTDIR: the host half of `make bench`.

Reads the "@bench key=value ..." lines tests/bench/guest.sh printed in the
guest (LOG is the guest's console output), takes medians over the
repetitions and writes into OUTDIR:

  results.md    the tables (Markdown), with the rig's description
  results.csv   every figure: section,mode,rules,masks,metric,median,min,max,n
  *.dat, *.gp   gnuplot inputs; virtio.png, classifier.png, software.png,
                insn.png (section insn: instructions per frame by area)

It prints the Markdown to stdout and ends with one "ratio NAME VALUE" line
per ratio (NAME VALUE only, nothing after).  Exit status 1 if a mode
produced no number (with --check: the smoke test's only assertion).
"""
import collections
import os
import sys

from report_fwd import fwd_section
from report_insn import insn_section
from report_lib import (
    FWD_MODES, NETIF_MODES, Stats, TIMED_SECS, VIRTIO_DESC, VIRTIO_MODES,
    collect, csv_rows, fmt, linfit, num, parse, perf_table, ratio)
from report_plots import plots


def main():
    argv = sys.argv[1:]
    sections = "virtio,fwd,netif,classify,insn"
    if "--sections" in argv:
        i = argv.index("--sections")
        sections = argv[i + 1]
        del argv[i:i + 2]
    sections = sections.split(",")
    args = [a for a in argv if not a.startswith("--")]
    check = "--check" in argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    log, out = args
    os.makedirs(out, exist_ok=True)
    recs = parse(log)
    # A timed window in which eth1 received nothing stalled (seen in
    # fwd_max: vCPU 0 busy the whole window, the XDP program never run);
    # its zeros measure nothing.  Leave it out of the medians, and say so.
    kept, stalled = [], []
    for r in recs:
        (stalled if r.get("sec") in TIMED_SECS and num(r.get("frames")) == 0 else kept).append(r)
    recs = kept
    stalled = ", ".join(r.get("mark", r.get("sec", "?")) for r in stalled)
    info = {}
    for r in recs:
        if r.get("sec") == "info":
            info.update(r)
    md = []
    csv = ["section,mode,rules,masks,metric,median,min,max,n"]
    missing = []

    def csv_add(section, mode, metric, st, rules="", masks=""):
        csv_rows(csv, section, mode, metric, st, rules, masks)

    # ---- 1 + 2: virtio path, bpf_stats, perf --------------------------
    v = {}
    for m in VIRTIO_MODES:
        v[m] = {
            "rate": collect(recs, "virtio", None, "rate", mode=m),
            "cpu": collect(recs, "virtio", None, "cpu_ns", mode=m),
            "host": collect(recs, "virtio", None, "host_cpu0_ns", mode=m),
            "main": collect(recs, "virtio", None, "host_main_ns", mode=m),
            "tick": collect(recs, "virtio", None, "tick_ns", mode=m),
            "busy": collect(recs, "virtio", None, "busy_pct", mode=m),
            "xdp_frac": collect(recs, "virtio", None, "xdp_frac", mode=m),
            "bpf": collect(recs, "virtio_bpf", None, "bpf_ns", mode=m),
            "cpu_stats": collect(recs, "virtio_bpf", None, "cpu_ns", mode=m),
        }
        for k, st in v[m].items():
            csv_add("virtio" if k not in ("bpf", "cpu_stats") else "bpfstats",
                    m, {"cpu": "cpu_ns", "host": "vcpu_thread_ns", "main": "qemu_main_ns",
                        "tick": "tick_ns", "rate": "frames_per_s", "bpf": "bpf_ns",
                        "cpu_stats": "cpu_ns_with_stats"}.get(k, k), st)
        if not v[m]["rate"].n or not v[m]["cpu"].n:
            missing.append(f"virtio {m}")
        if (m == "limit" or m.startswith("xdpoff")) and not v[m]["bpf"].n:
            missing.append(f"bpfstats {m}")

    reps = info.get("reps", "?")
    dur = info.get("dur", "?")
    md.append("## Virtio path: pktgen 64-byte UDP eth0 -> eth1 (in-situ XDP cost from bpf_stats)")
    md.append("")
    md.append(f"Medians of {reps} windows of {dur} s per mode (min-max in brackets). "
              "CPU ns/frame: busy time of vCPU 0, which takes eth1's interrupt, per frame "
              "received: the window less the vCPU's idle time from /proc/stat (NO_HZ measures "
              "idle time; the tick-sampled busy fields miss the short receive bursts of a "
              "mostly idle CPU). vCPU thread ns/frame: host CPU time of QEMU's vCPU 0 thread "
              "(schedstat, sampled by tests/bench/run at the window's edges) per frame: what "
              "the vCPU executed, without the time the host's scheduler took it off a core "
              "(pktgen's vCPU, QEMU's main loop and other guests share the host's 2 cores). "
              "XDP ns/frame: the program's run_time_ns / run_cnt "
              "(kernel.bpf_stats_enabled=1, a separate window of the same traffic).")
    md.append("")
    md.append("| mode | what | frames/s at eth1 | vs limit | CPU ns/frame (/proc/stat) | vCPU thread ns/frame (host) | XDP prog ns/frame | dropped in XDP |")
    md.append("|---|---|---:|---:|---:|---:|---:|---:|")
    lim_rate = v["limit"]["rate"].median
    for m in VIRTIO_MODES:
        d = v[m]
        rng = (f" [{fmt(d['cpu'].min)}-{fmt(d['cpu'].max)}]"
               if d["cpu"].n > 1 else "")
        md.append(f"| {m} | {VIRTIO_DESC[m]} | {fmt(d['rate'].median)} | "
                  f"{fmt(ratio(d['rate'].median, lim_rate), 3)} | "
                  f"{fmt(d['cpu'].median)}{rng} | "
                  f"{fmt(d['host'].median) if d['host'].n else 'n/a'} | "
                  f"{fmt(d['bpf'].median, 1) if d['bpf'].n else '-'} | "
                  f"{fmt(min(100.0, 100 * d['xdp_frac'].median)) + ' %' if d['xdp_frac'].median else '-'} |")
    md.append("")

    # perf breakdown
    perf = {r["mode"]: r for r in recs if r.get("sec") == "perf"}
    if perf:
        md.append("### Where the receiving vCPU's time goes (perf, cpu-clock, one window per mode)")
        md.append("")
        md.append("ns/frame by area = the area's share of the vCPU's busy samples x the mode's "
                  "vCPU thread ns/frame (or CPU ns/frame without host figures). "
                  "zero = clear_page/memset, mostly init_on_alloc zeroing of every page "
                  "and slab object the kernel hands out; `rep stos` is emulated slowly by TCG.")
        md.append("")
        perf_table(md, csv, perf, [(m, m, v[m]) for m in VIRTIO_MODES])

    # ---- forwarding -----------------------------------------------------
    fwd, fwd_many = fwd_section(md, csv, recs, perf, missing)

    # ---- instructions per frame (icount) ---------------------------------
    insn_ratios = insn_section(md, csv, recs, missing, out)

    # ---- 3: classifier -------------------------------------------------
    cls = collections.defaultdict(list)
    for r in recs:
        if r.get("sec") == "classify":
            cls[(int(r["rules"]), int(r["masks"]))].append(num(r["ns"]))
    cmed = {k: Stats(vs) for k, vs in cls.items()}
    for (rules, masks), st in sorted(cmed.items()):
        csv_add("classify", "test_run", "ns", st, rules, masks)
    rules_list = sorted({k[0] for k in cmed})
    masks_list = sorted({k[1] for k in cmed})
    if not cmed:
        missing.append("classify")
    md.append(f"## Classifier: BPF_PROG_TEST_RUN, ns per frame (repeat {info.get('cls_repeat', '?')}, "
              f"median of {info.get('cls_runs', '?')} runs)")
    md.append("")
    md.append("Every mask is looked up for every frame; the matching rule is the last one, in the last mask.")
    md.append("")
    md.append("| rules \\ masks | " + " | ".join(str(m) for m in masks_list) +
              " | ns per extra mask | R² (linear in masks) |")
    md.append("|---:|" + "---:|" * (len(masks_list) + 2))
    fits = {}
    for rules in rules_list:
        pts = [(m, cmed[(rules, m)].median) for m in masks_list if (rules, m) in cmed]
        fit = linfit([p[0] for p in pts], [p[1] for p in pts])
        fits[rules] = fit
        cells = [fmt(cmed[(rules, m)].median) if (rules, m) in cmed else "-"
                 for m in masks_list]
        md.append(f"| {rules:,} | " + " | ".join(cells) + " | " +
                  (f"{fit[0]:.0f} | {fit[2]:.4f} |" if fit else "- | - |"))
        if fit:
            csv.append(f"classify,fit,{rules},,ns_per_mask,{fit[0]:g},{fit[0]:g},{fit[0]:g},1")
            csv.append(f"classify,fit,{rules},,ns_intercept,{fit[1]:g},{fit[1]:g},{fit[1]:g},1")
            csv.append(f"classify,fit,{rules},,r2,{fit[2]:g},{fit[2]:g},{fit[2]:g},1")
    md.append("")

    # ---- 4: software paths ---------------------------------------------
    netif = {m: collect(recs, "netif", None, "rate", mode=m) for m in NETIF_MODES}
    for m, st in netif.items():
        csv_add("netif", m, "rate", st)
        if not st.n:
            missing.append(f"netif {m}")
    md.append("## Software paths: pktgen netif_receive into eth1 (no virtio leg), burst 32")
    md.append("")
    md.append("pktgen injects one reused skb straight into eth1's receive path on the vCPU of "
              "the virtio path's interrupt: the cost of the classification in the stack, "
              "without the driver and without allocating skbs. "
              "Generic-mode XDP cannot be fed this way on 6.1: pktgen holds a reference to "
              "its skb, generic XDP must expand the headroom and pskb_expand_head() BUGs on "
              "a shared skb, whatever the burst; xdpoff in generic mode is the "
              "xdpoff-generic mode of the virtio path.")
    md.append("")
    md.append("| mode | frames/s | ns/frame (whole vCPU) |")
    md.append("|---|---:|---:|")
    for m in NETIF_MODES:
        st = netif[m]
        md.append(f"| {m} | {fmt(st.median)} | {fmt(1e9 / st.median if st.median else None)} |")
    md.append("")

    # ---- 5: control plane ----------------------------------------------
    md.append("## Control plane: one `nft -f` commit, wall time (ms)")
    md.append("")
    md.append("| rules | masks | without flags offload | with flags offload | ratio |")
    md.append("|---:|---:|---:|---:|---:|")
    commit = {}
    sizes = sorted({int(r["rules"]) for r in recs if r.get("sec") == "commit"})
    if not sizes:
        missing.append("commit")
    for rules in sizes:
        masks = 1 if rules == sizes[0] else 8
        p = collect(recs, "commit", None, "ms", kind="plain", rules=str(rules))
        o = collect(recs, "commit", None, "ms", kind="offload", rules=str(rules))
        commit[rules] = (p, o)
        csv_add("commit", "plain", "ms", p, rules, masks)
        csv_add("commit", "offload", "ms", o, rules, masks)
        if not p.n or not o.n:
            missing.append(f"commit {rules}")
        md.append(f"| {rules:,} | {masks} | {fmt(p.median)} | {fmt(o.median)} | "
                  f"{fmt(ratio(o.median, p.median), 2)} |")
    md.append("")

    # ---- ratios ----------------------------------------------------------
    # CPU per frame for the ratios: the vCPU thread's host CPU time when the
    # host sampled it (it does not count the time the host's scheduler
    # took the vCPU off a core), else the guest's /proc/stat figure.
    use_host = all(v[m]["host"].n for m in ("xdpoff-1", "nft-sw", "tc-sw"))
    cpu_key = "host" if use_host else "cpu"
    c1 = cmed.get((1, 1))
    c100k = cmed.get((100000, 1))
    ratios = [
        ("xdpoff_vs_limit_rate",
         ratio(v["xdpoff-1"]["rate"].median, lim_rate), ">= 0.95"),
        ("nft_sw_vs_xdpoff_cpu",
         ratio(v["nft-sw"][cpu_key].median, v["xdpoff-1"][cpu_key].median), ">= 5"),
        ("tc_sw_vs_xdpoff_cpu",
         ratio(v["tc-sw"][cpu_key].median, v["xdpoff-1"][cpu_key].median), ">= 5"),
        ("xdpoff_10k8m_vs_limit_rate",
         ratio(v["xdpoff-10k8m"]["rate"].median, lim_rate), ">= 0.9"),
        ("classifier_100k_vs_1_rules",
         ratio(c100k.median if c100k else None, c1.median if c1 else None), "<= 1.1"),
        ("commit_offload_vs_plain",
         ratio(commit[sizes[-1]][1].median, commit[sizes[-1]][0].median)
         if sizes else None, "<= 1.3"),
    ]
    # Forwarding, FWD_MANY flows, the same CPU measure as above.
    if fwd_many:
        fk = "host" if all(fwd[m, fwd_many]["host"].n for m in FWD_MODES
                           if fwd[m, fwd_many]["rate"].n) else "cpu"
        lim, off, sw = (fwd[m, fwd_many][fk].median
                        for m in ("fwd-limit", "ft-offload", "ft-sw"))
        ratios += [
            ("ft_offload_vs_limit_cpu", ratio(off, lim), "<= 1.2"),
            ("ft_sw_vs_limit_cpu", ratio(sw, lim), "(report)"),
            ("ft_sw_vs_ft_offload_cpu", ratio(sw, off), "(report)"),
            ("ft_offload_saving_vs_limit_saving",
             ratio(sw - off, sw - lim) if None not in (sw, off, lim) else None,
             ">= 0.9"),
        ]
    ratios += insn_ratios
    md.append("## Ratios")
    md.append("")
    md.append("| ratio | value | target |")
    md.append("|---|---:|---|")
    for name, val, target in ratios:
        md.append(f"| {name} | {fmt(val, 3)} | {target} |")
    md.append("")
    hr = [("nft_sw_vs_xdpoff_cpu", "nft-sw"), ("tc_sw_vs_xdpoff_cpu", "tc-sw")]
    other = "cpu" if use_host else "host"

    def marginal(m, key):
        a, b, lim = v[m][key].median, v["xdpoff-1"][key].median, v["limit"][key].median
        return ratio(a - lim, b - lim) if a and b and lim and b != lim else None

    md.append("The CPU ratios divide " + (
        "the vCPU thread's host CPU time per frame (the guest's /proc/stat figures also "
        "count the time the host's scheduler held the vCPU off a core)" if use_host else
        "the guest's /proc/stat busy time per frame (no host figures)") +
        ". The same from the " + ("guest's /proc/stat" if use_host else "vCPU thread") +
        " figures: " + ", ".join(
            f"{name} {fmt(ratio(v[m][other].median, v['xdpoff-1'][other].median), 3)}"
            for name, m in hr) +
        ". Cost per frame above the bare XDP_DROP's (the driver's share taken out), "
        "software over xdpoff-1: " + ", ".join(
            f"{m} {fmt(marginal(m, cpu_key), 2)}" for m in ("nft-sw", "tc-sw")) + ".")
    md.append("")
    md.append(f"commit_offload_vs_plain is taken at {format(sizes[-1], ',') if sizes else '?'} rules; "
              "classifier_100k_vs_1_rules at 1 mask.")
    md.append("")
    host = {}
    for r in recs:
        if r.get("sec") == "host":
            host.update(r)
    if host:
        md.append(f"Host: {host.get('host_cpus', '?')} cores; other QEMU guests running "
                  f"{host.get('other_qemus_before', '?')} before / {host.get('other_qemus_after', '?')} after "
                  f"the run, load average {host.get('load_before', '?')} / {host.get('load_after', '?')}; "
                  f"{host.get('wall_s', '?')} s wall time.")
        if host.get("other_qemus_before", "0") != "0" or host.get("other_qemus_after", "0") != "0":
            md.append("")
            md.append("**Other guests shared the host's cores during this run: the vCPUs lost time to them, "
                      "which inflates CPU ns/frame and lowers frames/s unevenly across modes.**")
        md.append("")
    if stalled:
        md.append(f"**Stalled windows, left out of the medians: eth1 received no frame in {stalled}.**")
        md.append("")
    md.append(f"Run: mode {info.get('mode', '?')}, guest kernel {info.get('kernel', '?')}, "
              f"{info.get('cpus', '?')} vCPUs, {info.get('elapsed_s', '?')} s in the guest.")
    md.append("")

    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("# xdpoff benchmark (`make bench`)\n\n" + "\n".join(md))
    with open(os.path.join(out, "results.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")

    if any(r.get("sec") == "virtio" for r in recs):
        plots(out, v, cmed, rules_list, masks_list, fits, netif)

    print("\n".join(md))
    # Only what the run was asked for is missing (--sections LIST).
    sec_of = {"bpfstats": "virtio", "commit": "virtio", "fwd_max": "fwd"}
    missing = [m for m in missing
               if sec_of.get(m.split()[0], m.split()[0]) in sections]
    if missing:
        print("bench: no number for: " + ", ".join(missing), file=sys.stderr)
    if stalled:
        print(f"bench: stalled window (no frame received), left out: {stalled}", file=sys.stderr)
    for name, val, _ in ratios:
        print(f"ratio {name} {'n/a' if val is None else f'{val:.3f}'}")
    return 1 if (check and missing) else 0


if __name__ == "__main__":
    sys.exit(main())
