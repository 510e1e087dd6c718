#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdpoff show --watch: with paced traffic running (sendframe.py --rate
# from the peer, RATE frames/s for DUR s, all dropped in XDP by one
# offloaded rule), three watchers of 1 s intervals side by side: on a
# pseudo-terminal (script(1)), redrawn in place; into a file, plain
# lines; --json, an object per interval.  The rates shown in the
# intervals the traffic filled (their median) must be within 10 % of what
# the sender says it sent; the watchers end cleanly (exit 0) on SIGINT or
# SIGTERM.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
RATE=${XDPOFF_WATCH_RATE:-200}
DUR=8
W=/tmp/xdpoff-watch
PIDS=()
ALL_TESTS="
	watch_usage
	watch_rates
"

cleanup() {
	kill "${PIDS[@]}" 2>/dev/null
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
	cleanup_peer
	rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$W"
setup_peer "$TX"
load_module
check "attach $RX" "$XDPOFF" attach $RX
check "an offloaded drop rule for udp dport 9" \
	offload_chain $RX 'udp dport 9 counter drop'

# mid_rates FILE KIND: the rates of the intervals the traffic filled (the
# busy ones but the first and the last, which it only partly covered),
# one "rx rule share" line each; KIND json or text.
mid_rates() {
	python3 - "$1" "$2" <<'EOF'
import json, re, sys
path, kind = sys.argv[1:]
rows = []
text = open(path, errors="replace").read()
if kind == "json":
    for line in text.splitlines():
        d = json.loads(line)["devices"][0]
        rows.append((d["rx_pps"], d["rules"][0]["pps"] if d["rules"] else 0,
                     d.get("xdp_share", 0)))
else:
    dev = re.compile(r"^eth1: rx ([0-9.]+)/s, XDP decided ([0-9.]+)/s"
                     r"(?: \(([0-9.]+) %\))?")
    rule = re.compile(r"^  prio .* ([0-9.]+) pkt/s .* consumed")
    cur = None
    for line in re.split(r"\r?\n|\x1b\[H\x1b\[J", text):
        m = dev.match(line)
        if m:
            cur = [float(m.group(1)), 0.0,
                   float(m.group(3) or 0) / 100]
            rows.append(cur)
            continue
        m = rule.match(line)
        if m and cur is not None:
            cur[1] = float(m.group(1))
busy = [r for r in rows if r[0] > 0]
for r in busy[1:-1]:
    print("%.1f %.1f %.3f" % tuple(r))
EOF
}
# within10 RATE LINES: at least 3 full intervals; the median of their rx
# rates and that of their rule rates within 10 % of RATE, and of XDP's
# share of rx at least 0.95.  (The median: a host that stalls the guest
# makes the paced sender catch up in a burst, one interval low and the
# next high.)
within10() {
	python3 - "$1" "$2" <<'EOF'
import statistics, sys
rate = float(sys.argv[1])
rows = [list(map(float, l.split())) for l in sys.argv[2].splitlines() if l.strip()]
assert len(rows) >= 3, "only %d full intervals" % len(rows)
for col, what in ((0, "rx"), (1, "rule")):
    m = statistics.median(r[col] for r in rows)
    assert 0.9 * rate <= m <= 1.1 * rate, "%s median %.1f" % (what, m)
assert statistics.median(r[2] for r in rows) >= 0.95, "share"
EOF
}
watch_usage() {
	check_eq "--watch=0 is a usage error (exit 2)" 2 \
		"$("$XDPOFF" show --watch=0 $RX >/dev/null 2>&1; echo $?)"
	check_eq "--watch of a device not attached fails (exit 1)" 1 \
		"$("$XDPOFF" show --watch 1 eth3 >/dev/null 2>&1; echo $?)"
}

# The three watchers; script(1) gives the first a terminal of its own.
watch_rates() {
	script -qfec "$XDPOFF show --watch 1 $RX" "$W/tty" >/dev/null 2>&1 </dev/null &
	PIDS+=($!)
	"$XDPOFF" show --watch 1 $RX > "$W/plain" 2>&1 &
	PIDS+=($!)
	"$XDPOFF" show $RX --watch=1 --json > "$W/json" 2>&1 &
	PIDS+=($!)
	sleep 1.5
	sent=$(send $TX $RX --saddr 10.0.0.1 --daddr 10.0.0.2 --proto udp \
		--dport 9 --count $((RATE * DUR)) --rate $RATE | tail -n1)
	echo "sendframe.py: $sent" | diag
	sleep 1.5
	# What the sender achieved, frames/s (its own clock).
	got_rate=$(sed -n 's/.*: \([0-9.]*\)\/s$/\1/p' <<<"$sent")
	check "the sender paced its frames ($sent)" test -n "$got_rate"

	# SIGINT to the terminal one (script passes it on as ^C would), SIGTERM
	# to the others; each must exit 0.
	kill -INT "${PIDS[0]}"
	kill -TERM "${PIDS[1]}" "${PIDS[2]}"
	for i in 0 1 2; do
		wait "${PIDS[i]}"
		rcs[i]=$?
	done
	PIDS=()
	check_eq "the watchers exit 0 when interrupted (tty, plain, json)" "0 0 0" \
		"${rcs[*]}"

	for kind in tty:text plain:text json:json; do
		f=${kind%%:*}
		rates=$(mid_rates "$W/$f" "${kind#*:}" 2>&1)
		printf '%s: rx/s rule/s share per full interval\n%s\n' "$f" "$rates" | diag
		check "$f: rx and rule rates (medians of the full intervals) within 10 % of the sender's $got_rate/s, XDP decided them" \
			within10 "${got_rate:-0}" "$rates"
	done
	check "tty: redrawn in place (home and clear before each interval)" \
		grep -q $'\x1b\[H\x1b\[J' "$W/tty"
	check "plain: no terminal control, a '--- time' line per interval" \
		sh -c "! grep -q $'\x1b' $W/plain && [ \$(grep -c '^--- ' $W/plain) -ge $DUR ]"
	check "json: one object per line, every line" \
		python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) >= 8, len(lines)
for l in lines:
    d = json.loads(l)
    assert d["devices"][0]["ifname"] == "eth1"' "$W/json"
}

tests_run
