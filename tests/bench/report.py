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
import math
import os
import statistics
import subprocess
import sys

VIRTIO_MODES = ["limit", "xdpoff-1", "xdpoff-1k", "xdpoff-10k8m",
                "xdpoff-generic", "nft-sw", "tc-sw", "none"]
VIRTIO_DESC = {
    "limit": "bare XDP_DROP program (the limit)",
    "xdpoff-1": "xdpoff, 1 rule",
    "xdpoff-1k": "xdpoff, 1,000 rules, 1 mask",
    "xdpoff-10k8m": "xdpoff, 10,000 rules, 8 masks",
    "xdpoff-generic": "xdpoff program in generic mode (after the skb), 1 rule",
    "nft-sw": "nft ingress drop, software",
    "tc-sw": "tc flower drop, software (skip_hw)",
    "none": "no filter (dropped by IP: not for us)",
}
INSN_MODES = ["limit", "xdpoff-1", "xdpoff-1k", "xdpoff-10k8m", "xdpoff-1k32m",
              "xdpoff-generic", "xdpfilter-1", "xdpfilter-1k", "nft-sw", "tc-sw", "none"]
INSN_DESC = dict(VIRTIO_DESC, **{
    "xdpoff-1k32m": "xdpoff, 1,000 rules, 32 masks",
    "xdpfilter-1": "xdp-filter (xdp-tools), 1 address rule, native, no dispatcher",
    "xdpfilter-1k": "xdp-filter (xdp-tools), 1,000 address rules, native, no dispatcher"})
NETIF_MODES = ["nft-sw", "tc-sw", "none"]
FWD_MODES = ["fwd-limit", "ft-offload", "ft-sw", "nft-fwd", "route"]
FWD_DESC = {
    "fwd-limit": "XDP program that rewrites the MACs and redirects (the limit)",
    "ft-offload": "nft flowtable, flags offload (xdpoff), masquerade",
    "ft-sw": "nft flowtable in software, masquerade",
    "nft-fwd": "offloaded netdev chain `fwd to eth2` (xdpoff; no MAC/TTL/NAT edit)",
    "route": "plain routing, no netfilter",
}
AREAS = ["hash", "xdp", "driver", "zero", "mem", "skb", "stack", "nft", "tc", "other"]
# The sections timed by the wall clock, whose records count eth1's frames.
TIMED_SECS = {"virtio", "virtio_bpf", "fwd", "fwd_max", "netif"}


def parse(path):
    """The @bench records, and the @host samples by mark."""
    recs, host = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip().replace("\r", "")
            if not line.startswith(("@bench ", "@host ")):
                continue
            rec = {}
            for word in line.split()[1:]:
                if "=" in word:
                    k, v = word.split("=", 1)
                    rec[k] = v
            if line.startswith("@host "):
                host[rec.get("mark")] = rec
            else:
                recs.append(rec)
    # Host CPU time of QEMU's threads during each marked window.
    for rec in recs:
        a, b = host.get(rec.get("mark", "") + ".a"), host.get(rec.get("mark", "") + ".b")
        frames = num(rec.get("frames"))
        if not a or not b or not frames:
            continue
        for key, out in (("cpu0_ns", "host_cpu0_ns"), ("main_ns", "host_main_ns")):
            d = num(b.get(key)) - num(a.get(key))
            rec[out] = f"{d / frames:.1f}"
        rec["host_secs"] = f"{(num(b['t_us']) - num(a['t_us'])) / 1e6:.3f}"
    return recs


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class Stats:
    def __init__(self, values):
        self.values = [v for v in values if v is not None]
        self.n = len(self.values)
        self.median = statistics.median(self.values) if self.values else None
        self.min = min(self.values) if self.values else None
        self.max = max(self.values) if self.values else None


def collect(recs, sec, key, metric, **match):
    vals = [num(r.get(metric)) for r in recs
            if r.get("sec") == sec and all(r.get(k) == v for k, v in match.items())]
    return Stats(vals)


def fmt(v, digits=0):
    if v is None:
        return "n/a"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def linfit(xs, ys):
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    icpt = my - slope * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - (icpt + slope * x)) ** 2 for x, y in zip(xs, ys))
    r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
    return slope, icpt, r2


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


def area_split(p, total):
    """TOTAL (per frame) split over AREAS by perf record P's shares of the
    vCPU's busy samples; None each without a total or busy samples."""
    busy = 100.0 - (num(p.get("idle")) or 0.0)
    return [total * (num(p.get(a)) or 0.0) / busy if busy > 0 and total else None
            for a in AREAS]


def perf_table(md, csv, perf, rows):
    """Per-area ns/frame of each (label, perf window, stats) row."""
    md.append("| mode | " + " | ".join(AREAS) + " |")
    md.append("|---|" + "---:|" * len(AREAS))
    for label, key, d in rows:
        p = perf.get(key)
        if not p:
            continue
        cells = []
        for a, ns in zip(AREAS, area_split(p, d["host"].median or d["cpu"].median)):
            cells.append(fmt(ns))
            if ns is not None:
                csv.append(f"perf,{label},,,{a}_ns,{ns:g},{ns:g},{ns:g},1")
        md.append(f"| {label} | " + " | ".join(cells) + " |")
    md.append("")


def fwd_section(md, csv, recs, perf, missing):
    """The forwarding table; returns the stats by (mode, flows) and the
    many-flow count."""
    flows = sorted({int(r["flows"]) for r in recs
                    if r.get("sec") == "fwd" and r.get("flows", "").isdigit()})
    fwd = {}
    for m in FWD_MODES:
        for n in flows:
            f = str(n)
            fwd[m, n] = {
                "rate": collect(recs, "fwd_max", None, "rate", mode=m, flows=f),
                "cpu": collect(recs, "fwd_max", None, "cpu_ns", mode=m, flows=f),
                "host": collect(recs, "fwd_max", None, "host_cpu0_ns", mode=m, flows=f),
                "busy": collect(recs, "fwd_max", None, "busy_pct", mode=m, flows=f),
                "xdp_frac": collect(recs, "fwd_max", None, "xdp_frac", mode=m, flows=f),
                "cpu_fixed": collect(recs, "fwd", None, "cpu_ns", mode=m, flows=f),
                "host_fixed": collect(recs, "fwd", None, "host_cpu0_ns", mode=m, flows=f),
                "bpf": collect(recs, "fwd_max", None, "bpf_ns", mode=m, flows=f),
            }
            d = fwd[m, n]
            for k, name in (("rate", "frames_per_s"), ("cpu", "cpu_ns"),
                            ("host", "vcpu_thread_ns"), ("bpf", "bpf_ns"),
                            ("cpu_fixed", "cpu_ns_fixed_rate"),
                            ("host_fixed", "vcpu_thread_ns_fixed_rate")):
                csv_rows(csv, "fwd", f"{m}/{n}", name, d[k])
            if not d["rate"].n or not d["cpu"].n or (
                    m in ("fwd-limit", "ft-offload", "nft-fwd") and not d["bpf"].n):
                missing.append(f"fwd {m} {n} flows")
    if not flows:
        missing.append("fwd")
        return fwd, None
    many = flows[-1]
    pps = next((r["pps"] for r in recs if r.get("sec") == "fwd" and "pps" in r), "?")
    md.append("## Forwarding: pktgen 64-byte UDP eth0 -> eth1, routed out of eth2")
    md.append("")
    md.append("The guest routes 198.18.0.1 -> 198.19.0.2 from eth1 to eth2 (static neighbours; a "
              "bare XDP_DROP on eth3 swallows the frames); pktgen varies the UDP source port "
              f"over 1 or {many:,} values (flows). CPU per frame as in the virtio path (vCPU 0 "
              "receives on eth1 and transmits on eth2), with pktgen as fast as it goes (on "
              "vCPU 1, which also runs eth3's XDP_DROP), in the same window as frames/s; XDP "
              "prog ns/frame from bpf_stats in that window. The cost per frame falls as the "
              "rate rises (NAPI polls more frames per interrupt), and pktgen's rate differs "
              f"between modes: the last columns are a second window with pktgen offering "
              f"{pps} frames/s in every mode, where each frame mostly pays for its own "
              "interrupt. The flowtable modes open their windows once every flow is in the "
              "flowtable. \"in XDP\": frames eth1's XDP program redirected (virtio-net's "
              "xdp_redirects).")
    md.append("")
    md.append("| mode | what | flows | frames/s at eth1 | CPU ns/frame (/proc/stat) | "
              "vCPU thread ns/frame (host) | XDP prog ns/frame | in XDP | "
              f"CPU ns/frame at {pps}/s | vCPU thread ns/frame at {pps}/s |")
    md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for m in FWD_MODES:
        for n in flows:
            d = fwd[m, n]
            rng = (f" [{fmt(d['cpu'].min)}-{fmt(d['cpu'].max)}]"
                   if d["cpu"].n > 1 else "")
            frac = d["xdp_frac"].median
            md.append(f"| {m} | {FWD_DESC[m]} | {n:,} | {fmt(d['rate'].median)} | "
                      f"{fmt(d['cpu'].median)}{rng} | "
                      f"{fmt(d['host'].median) if d['host'].n else 'n/a'} | "
                      f"{fmt(d['bpf'].median, 1) if d['bpf'].n else '-'} | "
                      f"{fmt(min(100.0, 100 * frac)) + ' %' if frac else '-'} | "
                      f"{fmt(d['cpu_fixed'].median)} | "
                      f"{fmt(d['host_fixed'].median) if d['host_fixed'].n else 'n/a'} |")
    md.append("")
    rows = [(f"{m}/{many}", f"{m}.{many}", fwd[m, many]) for m in FWD_MODES]
    if any(perf.get(k) for _, k, _ in rows):
        md.append(f"### Where the vCPU's time goes when forwarding, {many:,} flows (perf)")
        md.append("")
        perf_table(md, csv, perf, rows)
    return fwd, many


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
    cls = {}
    for r in recs:
        if r.get("sec") == "insn_cls" and r.get("ioa") == "1":
            cls.setdefault((r["variant"], int(r["rules"]), int(r["masks"])), []).append(num(r["ns"]))
    points = sorted({(k[1], k[2]) for k in cls if k[1]})
    # 0:0, a program that drops at once: BPF_PROG_TEST_RUN's own loop
    harness_st = Stats(cls.get(("current", 0, 0), []))
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
        md.append("| rules | masks | now | baseline | now / baseline |")
        md.append("|---:|---:|---:|---:|---:|")
        for rules, masks in points:
            a = Stats(cls.get(("current", rules, masks), []))
            b = Stats(cls.get(("baseline", rules, masks), []))
            csv_rows(csv, "insn_cls", "current", "insn_per_run", a, rules, masks)
            csv_rows(csv, "insn_cls", "baseline", "insn_per_run", b, rules, masks)
            md.append(f"| {rules:,} | {masks} | {fmt(a.median)} | {fmt(b.median)} | "
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

    c_now = Stats(cls.get(("current", 1, 1), [])).median
    c_base = Stats(cls.get(("baseline", 1, 1), [])).median
    # The program's own instructions: less the test run's loop, in both.
    own = (ratio(c_now - harness, c_base - harness)
           if None not in (c_now, c_base, harness) else None)
    ratios = [("prog_1mask_vs_baseline_insn", own, "<= 0.60"),
              ("prog_1mask_vs_baseline_insn_gross", ratio(c_now, c_base), "(report)")]
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
        ratios += [
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


def csv_rows(csv, section, mode, metric, st, rules="", masks=""):
    if st.n:
        csv.append(f"{section},{mode},{rules},{masks},{metric},"
                   f"{st.median:g},{st.min:g},{st.max:g},{st.n}")


def plots(out, v, cmed, rules_list, masks_list, fits, netif):
    def w(name, text):
        with open(os.path.join(out, name), "w") as f:
            f.write(text)

    rows = []
    use_host = all(v[m]["host"].n for m in VIRTIO_MODES if v[m]["rate"].n)
    for i, m in enumerate(VIRTIO_MODES):
        d = v[m]
        bpf = d["bpf"].median or 0
        cpu = (d["host"].median if use_host else d["cpu"].median) or 0
        rows.append(f'{i} "{m}" {d["rate"].median or 0} {cpu} {bpf}')
    w("virtio.dat", "# idx mode frames/s cpu_ns bpf_ns\n" + "\n".join(rows) + "\n")
    cpu_title = ("receiving vCPU thread, host CPU ns per frame" if use_host
                 else "receiving vCPU busy ns per frame (/proc/stat)")

    def grid(outer, inner, key):
        """One gnuplot block per value of outer: "rules masks ns" lines."""
        lines = []
        for a in outer:
            for b in inner:
                k = key(a, b)
                if k in cmed:
                    lines.append(f"{k[0]} {k[1]} {cmed[k].median}")
            lines.append("\n")
        return "\n".join(lines)

    w("classifier.dat", "# rules masks ns\n" +
      grid(rules_list, masks_list, lambda r, m: (r, m)))
    w("classifier_rules.dat", "# rules masks ns, by masks\n" +
      grid(masks_list, rules_list, lambda m, r: (r, m)))

    rows = []
    for i, m in enumerate(NETIF_MODES):
        rows.append(f'{i} "{m}" {netif[m].median or 0}')
    w("software.dat", "# idx mode netif\n" + "\n".join(rows) + "\n")

    w("plots.gp", f"""# gnuplot script written by tests/bench/report.py
set terminal pngcairo size 1100,500 font ",10" noenhanced
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set xtics rotate by -30

set output "{out}/virtio.png"
set multiplot layout 1,2 title "virtio path: pktgen 64-byte UDP eth0 -> eth1 (TCG guest)"
set title "frames/s at eth1"
set yrange [0:*]
plot "{out}/virtio.dat" using 3:xtic(2) notitle lc rgb "#4477aa"
set title "{cpu_title}"
set style histogram rowstacked
plot "{out}/virtio.dat" using 5:xtic(2) title "XDP program (bpf_stats)" lc rgb "#cc6677", \\
     "" using ($4 > $5 ? $4 - $5 : 0) title "rest (driver, stack, filter)" lc rgb "#88ccee"
unset multiplot

set output "{out}/classifier.png"
set style data linespoints
set multiplot layout 1,2 title "xdpoff classifier, BPF_PROG_TEST_RUN"
set title "ns/frame against masks"
set xlabel "masks"
set ylabel "ns/frame"
set key left top
set xtics norotate
set xrange [0:33]
plot """ + ", \\\n     ".join(
        f'"{out}/classifier.dat" using ($1 == {r} ? $2 : 1/0):3 title "{r} rules"'
        for r in rules_list) + f"""
set title "ns/frame against rules"
set xlabel "rules"
set logscale x
set xrange [0.5:200000]
set yrange [0:*]
plot """ + ", \\\n     ".join(
        f'"{out}/classifier_rules.dat" using ($2 == {m} ? $1 : 1/0):3 title "{m} mask{"s" if m > 1 else ""}"'
        for m in masks_list) + f"""
unset multiplot
unset logscale x
set xrange [*:*]
unset xlabel

set output "{out}/software.png"
set style data histograms
set style histogram clustered gap 1
set xtics rotate by -30
set title "software paths: pktgen netif_receive into eth1 (frames/s)"
set ylabel "frames/s"
plot "{out}/software.dat" using 3:xtic(2) notitle lc rgb "#ddcc77"
""")
    try:
        subprocess.run(["gnuplot", os.path.join(out, "plots.gp")], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"bench: gnuplot failed ({e}); tables are complete", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
