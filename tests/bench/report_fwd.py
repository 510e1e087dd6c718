# SPDX-License-Identifier: GPL-2.0
"""The forwarding section's tables and ratios (part of report.py)."""

from report_lib import FWD_DESC, FWD_MODES, collect, csv_rows, fmt, perf_table


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
