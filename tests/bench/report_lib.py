# SPDX-License-Identifier: GPL-2.0
"""What the sections of report.py share: the modes, the @bench lines
parsed, medians, ratios, perf areas, CSV rows."""
import statistics


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
              "xdpoff-generic", "xdpfilter-1", "xdpfilter-1k", "nft-sw", "tc-sw", "none",
              "xdpoff-blocklist", "xdpoff-blocklist-none", "nft-sw-blocklist",
              "nft-sw-blocklist-none"]


INSN_DESC = dict(VIRTIO_DESC, **{
    "xdpoff-1k32m": "xdpoff, 1,000 rules, 32 masks",
    "xdpfilter-1": "xdp-filter (xdp-tools), 1 address rule, native, no dispatcher",
    "xdpfilter-1k": "xdp-filter (xdp-tools), 1,000 address rules, native, no dispatcher",
    "xdpoff-blocklist": "xdpoff, blocklist: 10,000 IPv4 prefixes /8-/32, 1,000 IPv6 "
                        "/16-/128, the frame's source the last rule",
    "xdpoff-blocklist-none": "xdpoff, the same blocklist, a frame no rule matches (goes up)",
    "nft-sw-blocklist": "the same blocklist in a software nft chain, the last rule",
    "nft-sw-blocklist-none": "the same blocklist in software, a frame no rule matches"})


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


def csv_rows(csv, section, mode, metric, st, rules="", masks=""):
    if st.n:
        csv.append(f"{section},{mode},{rules},{masks},{metric},"
                   f"{st.median:g},{st.min:g},{st.max:g},{st.n}")
