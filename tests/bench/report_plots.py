# SPDX-License-Identifier: GPL-2.0
"""The gnuplot plots of the wall-clock sections (part of report.py)."""
import os
import subprocess
import sys

from report_lib import NETIF_MODES, VIRTIO_MODES


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
