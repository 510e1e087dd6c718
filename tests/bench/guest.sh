#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/bench/guest.sh - the in-guest half of `make bench`.  Run by
# tests/bench/run through tests/vm/run, as root INSIDE THE TEST GUEST; it
# refuses to run anywhere else.  It prints one "@bench key=value ..." line
# per measurement (the host side turns them into tables and plots), "# "
# lines for people, "@mark ID" lines at the edges of each virtio window
# (tests/bench/run samples QEMU's vCPU threads then), and exits non-zero
# if a mode produced no number.
#
# --smoke (about a minute in the guest: every mode once, briefly, smaller
# rulesets) can also run from a test inside an existing guest, once the
# host ran `tests/bench/run --build`; its only assertion is its exit
# status: 0 when every mode produced a number.
#
# Usage: guest.sh [--quick | --smoke] [--reps N] [--dur SECONDS] [--no-perf]
#                 [--perf-freq HZ] [--sections virtio,fwd,netif,classify,insn]
#                 [--modes LIST]
#
# The rig: 2 vCPUs under TCG.  vCPU 0 takes eth1's receive interrupt and
# nothing else we can steer away from it (every other IRQ, this script and
# the commands it runs are on vCPU 1); pktgen transmits from vCPU 1.  Modes
# are measured round-robin (rep 1 of every mode, then rep 2, ...) so that
# a slow patch of the host (other guests share its 2 cores) smears over
# all modes instead of hitting one; the host side takes medians.
#
# Sections (sec= of the output lines):
#   virtio    pktgen 64-byte UDP eth0 -> eth1 through QEMU's virtio path:
#             frames/s at eth1, vCPU 0 busy time per frame (/proc/stat),
#             modes limit (bare XDP_DROP), xdpoff-1, xdpoff-1k (1,000 rules,
#             1 mask), xdpoff-10k8m (10,000 rules, 8 masks), xdpoff-generic
#             (the xdpoff program in generic mode), nft-sw, tc-sw, none
#   virtio_bpf  same traffic, a second window with
#             kernel.bpf_stats_enabled=1: the XDP program's run_time_ns /
#             run_cnt, and vCPU 0 per frame
#   perf      (not with --quick/--smoke) perf record on vCPU 0 during one
#             more window per mode in the last repetition: where the
#             receiving CPU's time goes, by area (perf-areas.awk)
#   fwd       the guest routes: pktgen 64-byte UDP eth0 -> eth1, routed
#             out of eth2 to eth3 (a bare XDP_DROP swallows them there),
#             one flow and FWD_MANY flows (source ports).  fwd_max:
#             pktgen as fast as it goes: frames/s at eth1, vCPU 0 per
#             frame (it receives on eth1 and transmits on eth2), bpf_stats'
#             XDP ns per run; fwd: vCPU 0 per frame with FWD_PPS frames/s
#             offered in every mode.  Modes fwd-limit (an XDP program that
#             only rewrites the MACs and redirects), ft-offload (nft flowtable with flags
#             offload: xdpoff), ft-sw (the software flowtable), nft-fwd
#             (an offloaded netdev chain `fwd to eth2`: xdpoff, no MAC,
#             TTL or NAT edit), route (plain routing, no netfilter); the
#             flowtable modes masquerade out of eth2.  perf: in the last
#             repetition, FWD_MANY flows, pktgen as fast as it goes.
#   insn      (a guest of its own, one vCPU, QEMU -icount: see sec_insn)
#             instructions per frame received on eth1, frames fed from the
#             host: modes limit, xdpoff-1, -1k, -10k8m, -1k32m (1,000
#             rules, 32 masks), -generic, nft-sw, tc-sw, none; insn_fwd:
#             the forwarding modes with FWD_MANY flows; _bpf: the XDP
#             program's own instructions per run; perf_insn: by area;
#             insn_cls: the classifier alone (BPF_PROG_TEST_RUN), now and
#             as it was before issue 16 (the baseline)
#   classify  BPF_PROG_TEST_RUN of the xdpoff program (tests/bench/classify)
#   netif     pktgen xmit_mode netif_receive into eth1 (no virtio leg):
#             frames/s through the software paths (nft, tc, none).  Not
#             generic XDP: pktgen holds a reference to the skb it injects,
#             generic XDP must expand its headroom (pktgen leaves 16 bytes,
#             XDP wants 256) and pskb_expand_head() BUGs on a shared skb,
#             whatever the burst (6.1).  xdpoff in generic mode is measured
#             on the virtio path instead (mode xdpoff-generic).
#   commit    wall time of one `nft -f` of 1,000 / 10,000 rules, with and
#             without flags offload
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/lib.sh"
BENCH_BUILD=$BUILD/bench
CLASSIFY=$BENCH_BUILD/classify
DROP_OBJ=$BENCH_BUILD/xdp_drop.bpf.o
FWD_OBJ=$BENCH_BUILD/xdp_fwd.bpf.o
INSNWIN=$BENCH_BUILD/insnwin

RX=eth1
TX=eth0
RX_CPU=0		# eth1's interrupt, NAPI and the software paths
GEN_CPU=1		# pktgen (virtio path), this script, everything else
SADDR=198.18.0.1	# RFC 2544 benchmarking range, never routed
DADDR=198.18.0.2
PORT=9
WORK=/tmp/xdpoff-bench

MODE=full
REPS=3
DUR=4			# seconds per measurement window
WARM=1			# seconds of traffic before a window opens
CLS_REPEAT=1000000	# BPF_PROG_TEST_RUN repetitions per run
CLS_RUNS=3
INSN_CLS_REPEAT=20000	# section insn: exact counts, few repetitions
PERF=1
PERF_FREQ=997		# samples per second of vCPU 0 (guest time)
BIG1=1000		# rules of xdpoff-1k (1 mask)
BIG2=10000		# rules of xdpoff-10k8m (8 masks)
FWD_MANY=1000		# flows of the fwd section's many-flow runs
SECTIONS=virtio,fwd,netif,classify
ONLY_MODES=		# comma-separated filter of modes (development)
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=quick; REPS=2; DUR=2; CLS_REPEAT=200000; CLS_RUNS=2
		 PERF=0 ;;
	--smoke) MODE=smoke; REPS=1; DUR=0.5; WARM=0.2; CLS_REPEAT=1000
		 INSN_CLS_REPEAT=1000
		 CLS_RUNS=1; PERF=0; BIG1=100; BIG2=200; FWD_MANY=100 ;;
	--reps) REPS=$2; shift ;;
	--dur) DUR=$2; shift ;;
	--no-perf) PERF=0 ;;
	--perf-freq) PERF_FREQ=$2; shift ;;
	--sections) SECTIONS=$2; shift ;;
	--modes) ONLY_MODES=$2; shift ;;
	*) echo "usage: $0 [--quick|--smoke] [--reps N] [--dur S] [--no-perf] [--perf-freq HZ] [--sections LIST] [--modes LIST]" >&2
	   exit 2 ;;
	esac
	shift
done

if [ "${XDPOFF_VM:-}" != 1 ] || [ ! -d /run/xdpoff-vm ]; then
	echo "guest.sh: runs inside the test guest only (tests/bench/run)" >&2
	exit 2
fi

say() { echo "# $*"; }
emit() { echo "@bench $*"; }
die() { echo "guest.sh: $*" >&2; exit 1; }
now_ns() { date +%s%N; }

missing=0
# result NAME VALUE: an empty or non-numeric value is a missing number.
check_num() {
	case $2 in
	''|*[!0-9.]*) echo "guest.sh: no number for $1" >&2
		      missing=$((missing + 1)) ;;
	esac
}

# stall_check WINDOW: a window in which eth1 received no frame stalled
# (seen twice in fwd_max, at pktgen's full rate into an XDP_REDIRECT:
# vCPU 0 busy throughout, the program never run; report.py leaves such a
# window out).  Say what vCPU 0 is doing: perf's hottest symbols over 2 s
# and the softirqs it ran meanwhile, and the NICs' queue counters.  (Not
# sysrq's backtraces: the rig fails a run on a "Call Trace" in dmesg.)
stall_softirqs() {
	grep -E '^ *CPU|NET_RX|NET_TX|TIMER|SCHED' /proc/softirqs | sed 's/^/# stall: /'
}

stall_check() {
	local d
	case " $1 " in *" frames=0 "*) ;; *) return 0 ;; esac
	say "stall: ${1##*mark=}: eth1 received no frame; vCPU $RX_CPU now:"
	stall_softirqs
	perf record -q -C "$RX_CPU" -g -o "$WORK/stall.data" -- sleep 2 >/dev/null 2>&1 &&
		perf report -q -i "$WORK/stall.data" --stdio --no-children --sort sym \
			-g none 2>/dev/null | grep -v '^$' | head -20 | sed 's/^/# stall: /'
	stall_softirqs
	for d in $RX ${OUT_DEV:-}; do
		ethtool -S "$d" 2>/dev/null | grep -vE ': 0$' | tr -s ' ' |
			paste -sd ' ' | sed "s/^/# stall: $d: /"
	done
	rm -f "$WORK/stall.data"
}

# modes LIST...: LIST less what --modes leaves out.
modes() {
	local m
	for m in "$@"; do
		case ,${ONLY_MODES:-$m}, in
		*,$m,*) echo "$m" ;;
		esac
	done
}

# ---- the rig ---------------------------------------------------------------

# IRQ numbers of DEV's virtio queues of KIND (input, output, config).
dev_irqs() {
	local v
	v=$(basename "$(readlink -f "/sys/class/net/$1/device")")
	awk -v pfx="$v-$2" '$NF ~ "^" pfx { sub(":", "", $1); print $1 }' \
		/proc/interrupts
}

pin_rig() {
	local irq f
	taskset -pc $GEN_CPU $$ >/dev/null
	echo $((1 << GEN_CPU)) > /proc/irq/default_smp_affinity
	for f in /proc/irq/[0-9]*/smp_affinity; do
		echo $((1 << GEN_CPU)) > "$f" 2>/dev/null
	done
	RX_IRQ=$(dev_irqs $RX input)
	[ -n "$RX_IRQ" ] || die "no virtio input interrupt for $RX"
	for irq in $RX_IRQ; do
		echo $((1 << RX_CPU)) > /proc/irq/$irq/smp_affinity ||
			die "cannot pin IRQ $irq"
	done
	say "rig: $RX input IRQ $RX_IRQ on vCPU $RX_CPU; pktgen, other IRQs and this script on vCPU $GEN_CPU"
}

CLK_TCK=$(getconf CLK_TCK)

# mark ID: "@mark ID" on the console, at once (fd 3 is the script's
# stdout, also inside $(...)).  tests/bench/run, reading the console on the
# host, samples the CPU time QEMU's vCPU threads have used when it sees
# one: what the vCPU really executed, whatever the host's scheduler did.
exec 3>&1
mark() {
	echo "@mark $1" >&3
}

# rx_xdp DEV: "RECEIVED DECIDED": DEV's frames received (rx_packets, which
# virtio-net counts before XDP runs), and dropped or redirected by XDP
# (its per-queue counters, one ethtool -S; 6.12's ethtool -S no longer
# lists the queues' packets, which moved to netlink's qstats).
rx_xdp() {
	local n
	n=$(cat "/sys/class/net/$1/statistics/rx_packets")
	ethtool -S "$1" | awk -v n="$n" '
		$1 ~ /^rx(_queue_)?[0-9]+_xdp_(drops|redirects):$/ { d += $2 }
		END { print n + 0, d + 0 }'
}

# xdp_decided DEV: frames XDP dropped or redirected on DEV.
xdp_decided() {
	local n d
	read -r n d <<<"$(rx_xdp "$1")"
	echo "$d"
}

# snap ID: S_T (us), S_RX (eth1 rx_packets), S_IDLE and S_BUSY (vCPU
# RX_CPU idle+iowait and busy, in USER_HZ ticks), then mark ID, then
# S_DROPS (eth1 frames dropped or redirected in XDP, ethtool: a fork,
# after the clock).  Builtins
# only between the clock and the mark: a fork costs milliseconds under TCG.
snap() {
	local name user nice system idle iowait irq softirq steal rest
	S_T=${EPOCHREALTIME/./}
	read -r S_RX < /sys/class/net/$RX/statistics/rx_packets
	while read -r name user nice system idle iowait irq softirq steal rest; do
		if [ "$name" = "cpu$RX_CPU" ]; then
			S_IDLE=$((idle + iowait))
			S_BUSY=$((user + nice + system + irq + softirq + steal))
			break
		fi
	done < /proc/stat
	mark "$1"
	S_DROPS=$(xdp_decided $RX)
}

# window SECONDS ID: measure one window; prints "secs frames rate cpu_ns
# busy_pct xdp_frac tick_ns mark=ID"; marks ID.a and ID.b around it.
#
# The receiving vCPU's busy time is the window less its idle time: with
# NO_HZ, /proc/stat's idle is measured (the time the CPU slept), while the
# busy fields are sampled by the tick, which is stopped while the CPU is
# idle and misses the short receive bursts between idle periods (at 60k
# frames/s and low load they count a fraction of the real time; tick_ns,
# the tick-sampled figure, is printed for comparison only).
window() {
	local t rx idle busy drops
	snap "$2.a"
	t=$S_T rx=$S_RX idle=$S_IDLE busy=$S_BUSY drops=$S_DROPS
	sleep "$1"
	snap "$2.b"
	awk -v id="$2" -v us=$((S_T - t)) -v frames=$((S_RX - rx)) \
	    -v idle=$((S_IDLE - idle)) -v ticks=$((S_BUSY - busy)) \
	    -v drops=$((S_DROPS - drops)) -v hz="$CLK_TCK" 'BEGIN {
		secs = us / 1e6
		busy = secs - idle / hz
		if (busy < 0)
			busy = 0
		printf "secs=%.3f frames=%d rate=%.0f cpu_ns=%.0f busy_pct=%.1f xdp_frac=%.3f tick_ns=%.0f mark=%s\n",
			secs, frames, frames / secs,
			frames ? busy * 1e9 / frames : 0, 100 * busy / secs,
			frames ? drops / frames : 0,
			frames ? ticks / hz * 1e9 / frames : 0, id
	}'
}

# ---- pktgen ----------------------------------------------------------------

PG=/proc/net/pktgen
pgset() {
	echo "$2" > "$PG/$1" || die "pktgen $1: $2"
	case $1 in
	kpktgend_*|pgctrl) ;;
	*) grep -q '^Result: OK' "$PG/$1" ||
		die "pktgen $1: $2: $(grep '^Result' "$PG/$1")" ;;
	esac
}

# pg_setup DEV THREAD XMIT_MODE BURST: one device, 64-byte UDP to eth1.
pg_setup() {
	local dev=$1 thread=$2 xmit=$3 burst=$4 t
	for t in $PG/kpktgend_*; do
		pgset "${t##*/}" rem_device_all
	done
	pgset "kpktgend_$thread" "add_device $dev"
	pgset "$dev" "xmit_mode $xmit"
	pgset "$dev" "count 0"
	pgset "$dev" "clone_skb 0"
	pgset "$dev" "pkt_size 60"		# 64 bytes with the FCS
	pgset "$dev" "delay 0"
	pgset "$dev" "burst $burst"
	pgset "$dev" "dst_mac $(cat /sys/class/net/$RX/address)"
	pgset "$dev" "src_min $SADDR"
	pgset "$dev" "src_max $SADDR"
	pgset "$dev" "dst $DADDR"
	pgset "$dev" "udp_src_min $PORT"
	pgset "$dev" "udp_src_max $PORT"
	pgset "$dev" "udp_dst_min $PORT"
	pgset "$dev" "udp_dst_max $PORT"
}

PG_PID=
pg_start() {
	echo start > $PG/pgctrl &
	PG_PID=$!
}

pg_stop() {
	[ -n "$PG_PID" ] || return 0
	echo stop > $PG/pgctrl
	wait "$PG_PID" 2>/dev/null
	PG_PID=
}

# pg_sofar DEV: SOFAR (frames sent so far) and SOFAR_T (us), builtins only.
pg_sofar() {
	local l
	SOFAR_T=${EPOCHREALTIME/./}
	while read -r l; do
		case $l in
		pkts-sofar:*) set -- $l; SOFAR=$2; return ;;
		esac
	done < "$PG/$1"
}

# ---- rulesets --------------------------------------------------------------

# gen_rules N MASKS OFFLOAD: an nft ruleset on eth1 of N rules over MASKS
# distinct masks (up to 8: ip saddr none, /8, /12, /16, /20, /24, /28,
# /32; more, up to 33: none, /1, /2, ..., /32; all with ip daddr and udp
# dport).  Only the last rule matches the benchmark traffic (198.18.0.1 ->
# 198.18.0.2 udp 9); it is in the last mask (/32).
gen_rules() {
	awk -v n="$1" -v m="$2" -v off="$3" -v dev=$RX -v sa=$SADDR \
	    -v da=$DADDR -v port=$PORT 'BEGIN {
		if (m <= 8) {
			split("- 198.0.0.0/8 198.16.0.0/12 198.18.0.0/16 198.18.0.0/20 198.18.0.0/24 198.18.0.0/28 198.18.0.1", pfx, " ")
			pfx[m] = sa
		} else {
			split(sa, o, ".")
			a = ((o[1] * 256 + o[2]) * 256 + o[3]) * 256 + o[4]
			for (k = 1; k < m - 1; k++) {
				b = 2 ^ (32 - k)
				net = int(a / b) * b
				pfx[k + 1] = sprintf("%d.%d.%d.%d/%d", int(net / 16777216),
					int(net / 65536) % 256, int(net / 256) % 256, net % 256, k)
			}
			pfx[m] = sa
		}
		print "table netdev bench {"
		print "\tchain ingress {"
		printf "\t\ttype filter hook ingress device %s priority 10; policy accept;\n", dev
		if (off)
			print "\t\tflags offload;"
		for (j = 0; j < n - 1; j++) {
			k = j % m
			s = k ? "ip saddr " pfx[k + 1] " " : ""
			printf "\t\t%sip daddr 10.%d.%d.%d udp dport %d drop\n", s,
				int(j / 65536) % 256, int(j / 256) % 256, j % 256, port
		}
		s = m > 1 ? "ip saddr " sa " " : ""
		printf "\t\t%sip daddr %s udp dport %d counter drop\n", s, da, port
		print "\t}"
		print "}"
	}'
}

make_rulesets() {
	mkdir -p $WORK
	gen_rules 1 1 1 > $WORK/off1.nft
	gen_rules 1 1 0 > $WORK/plain1.nft
	gen_rules $BIG1 1 1 > $WORK/off1k.nft
	gen_rules $BIG1 1 0 > $WORK/plain1k.nft
	gen_rules $BIG2 8 1 > $WORK/off10k.nft
	gen_rules $BIG2 8 0 > $WORK/plain10k.nft
	gen_rules $BIG1 32 1 > $WORK/off1k32.nft
}

# nft_commit FILE: time one `nft -f FILE`, in ms.
nft_commit() {
	local t0 t1
	t0=$(now_ns)
	nft -f "$1" || die "nft -f $1 failed"
	t1=$(now_ns)
	echo $(( (t1 - t0) / 1000000 ))
}

XDP_PROG_ID=
xdp_prog_id() {
	ip -d link show dev $RX | sed -n 's/.*prog\/xdp[a-z]* id \([0-9]*\).*/\1/p' | head -1
}

# ---- modes -----------------------------------------------------------------

# mode_up MODE: configure eth1 for MODE.  Commit times of the offloaded
# rulesets are reported here (sec=commit kind=offload).  xdpoff attaches
# --no-libxdp: its program alone on the hook, as the limit's is, so that
# the figures are the program's and comparable with the baseline's (libxdp's
# dispatcher adds its own call).
mode_up() {
	local ms rules
	case $1 in
	limit)
		ip link set dev $RX xdpdrv obj $DROP_OBJ sec xdp ||
			die "cannot attach $DROP_OBJ" ;;
	xdpoff-*)
		"$XDPOFF" attach --no-libxdp $RX >/dev/null || die "xdpoff attach $RX"
		case $1 in
		xdpoff-1) ms=$(nft_commit $WORK/off1.nft) ;;
		xdpoff-generic)
			# The module fills the maps of the program xdpoff
			# attached; the same program then runs in generic
			# mode instead: after the driver built an skb.
			ms=$(nft_commit $WORK/off1.nft)
			ip link set dev $RX xdpdrv off
			ip link set dev $RX xdpgeneric pinned $PIN/$RX/prog ||
				die "cannot attach the xdpoff program in generic mode" ;;
		xdpoff-1k) ms=$(nft_commit $WORK/off1k.nft); rules=$BIG1 ;;
		xdpoff-10k8m) ms=$(nft_commit $WORK/off10k.nft); rules=$BIG2 ;;
		xdpoff-1k32m) nft_commit $WORK/off1k32.nft >/dev/null ;;
		esac
		[ -n "${rules:-}" ] &&
			emit "sec=commit kind=offload rules=$rules rep=$REP ms=$ms" ;;
	nft-sw)
		nft -f $WORK/plain1.nft || die "nft" ;;
	tc-sw)
		tc qdisc add dev $RX ingress || die "tc qdisc"
		tc filter add dev $RX ingress protocol ip prio 10 flower skip_hw \
			ip_proto udp dst_ip $DADDR dst_port $PORT action drop ||
			die "tc filter" ;;
	xdpfilter-*)
		# The peer a user would pick for an address drop list, as its
		# own tool loads it: native, without libxdp's dispatcher.
		LIBXDP_SKIP_DISPATCHER=1 xdp-filter load --mode native $RX ||
			die "xdp-filter load $RX"
		if [ $1 = xdpfilter-1k ]; then
			for i in $(seq 1 999); do
				xdp-filter ip "10.$((i >> 8 & 255)).$((i & 255)).1" \
					--mode dst || die "xdp-filter ip"
			done
		fi
		xdp-filter ip $DADDR --mode dst || die "xdp-filter ip $DADDR" ;;
	none) ;;
	*) die "unknown mode $1" ;;
	esac
	XDP_PROG_ID=$(xdp_prog_id)
}

mode_down() {
	case $1 in
	limit) ip link set dev $RX xdpdrv off ;;
	xdpoff-generic)
		ip link set dev $RX xdpgeneric off
		nft delete table netdev bench
		"$XDPOFF" detach $RX >/dev/null || die "xdpoff detach $RX" ;;
	xdpoff-*)
		nft delete table netdev bench
		"$XDPOFF" detach $RX >/dev/null || die "xdpoff detach $RX" ;;
	nft-sw) nft delete table netdev bench ;;
	tc-sw) tc qdisc del dev $RX ingress ;;
	xdpfilter-*) xdp-filter unload $RX ;;
	esac
}

# bpf_run_stats: "run_time_ns run_cnt" of the program on eth1.
bpf_run_stats() {
	[ -n "$XDP_PROG_ID" ] || return 0
	bpftool -j prog show id "$XDP_PROG_ID" |
		sed -n 's/.*"run_time_ns":\([0-9]*\).*"run_cnt":\([0-9]*\).*/\1 \2/p'
}

# bpf_run_delta A B: "run_cnt=N bpf_ns=NS" between two bpf_run_stats.
bpf_run_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		n = y[2] - x[2]
		printf "run_cnt=%d bpf_ns=%.1f", n, n ? (y[1] - x[1]) / n : 0
	}'
}

# perf: one `perf record` of vCPU RX_CPU for the last repetition of the
# virtio path, started before it (its start-up takes seconds under TCG and
# would load vCPU 1 during a window), events enabled only during each
# mode's perf window; perf_report splits the samples by window.
PERF_PID=
perf_start() {
	rm -f $WORK/perf.ctl $WORK/perf.ack $WORK/perf.windows
	mkfifo $WORK/perf.ctl $WORK/perf.ack
	exec {PERF_CTL}<>$WORK/perf.ctl {PERF_ACK}<>$WORK/perf.ack
	perf record -q -B -N -k mono -C $RX_CPU -e cpu-clock -F $PERF_FREQ -D -1 \
		--control fd:$PERF_CTL,$PERF_ACK -o $WORK/perf.data \
		>$WORK/perf.log 2>&1 &
	PERF_PID=$!
	perf_cmd disable || { say "perf record does not answer: no perf breakdown"; perf_stop; PERF=0; }
}

perf_cmd() {
	local ack
	echo "$1" >&$PERF_CTL
	read -r -t 120 -u $PERF_ACK ack && [ "$ack" = ack ]
}

perf_stop() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_PID=
	exec {PERF_CTL}>&- {PERF_ACK}>&-
}

perf_window() {
	local up0 up1 rest
	read -r up0 rest < /proc/uptime
	perf_cmd enable || return
	sleep "$DUR"
	perf_cmd disable
	read -r up1 rest < /proc/uptime
	echo "$1 $up0 $up1" >> $WORK/perf.windows
}

# perf_report [SEC [K=V]]: sec=perf_SEC lines (sec=perf without SEC),
# tagged K=V.
perf_report() {
	perf_stop
	[ -s $WORK/perf.windows ] || return 0
	perf script -i $WORK/perf.data -F time,ip,sym 2>/dev/null |
		awk -v windows=$WORK/perf.windows -v sec="perf${1:+_$1}" \
			-v tag="${2:-}" -f "$HERE/perf-areas.awk"
	rm -f $WORK/perf.windows
}

# measure SEC MODE [KEY=VALUE...]: the windows of MODE while pktgen runs:
# "sec=SEC" (frames/s, CPU per frame), then, with an XDP program on eth1,
# "sec=SEC_bpf" (the same with kernel.bpf_stats_enabled=1: the program's
# ns per run), and in the last repetition a perf window named MODE, or
# MODE.VALUE of the first KEY=VALUE.
measure() {
	local sec=$1 mode=$2 id w a b
	shift 2
	id=$mode${1:+.${1#*=}}
	w=$(window "$DUR" "$sec.$id.$REP")
	emit "sec=$sec mode=$mode $* rep=$REP $w"
	stall_check "$w"
	check_num "$sec $id" "$(sed -n 's/.*cpu_ns=\([0-9]*\).*/\1/p' <<<"$w")"
	if [ -n "$XDP_PROG_ID" ]; then
		sysctl -qw kernel.bpf_stats_enabled=1
		a=$(bpf_run_stats)
		w=$(window "$DUR" "${sec}_bpf.$id.$REP")
		b=$(bpf_run_stats)
		sysctl -qw kernel.bpf_stats_enabled=0
		w="$w $(bpf_run_delta "$a" "$b")"
		emit "sec=${sec}_bpf mode=$mode $* rep=$REP $w"
		stall_check "$w"
		check_num "${sec}_bpf $id" "$(sed -n 's/.*bpf_ns=\([0-9.]*\).*/\1/p' <<<"$w")"
	fi
	if [ "$PERF" = 1 ] && [ "$REP" = "$REPS" ]; then
		perf_window "$id"
	fi
}

virtio_mode() {
	mode_up "$1"
	pg_start
	sleep $WARM
	measure virtio "$1"
	pg_stop
	mode_down "$1"
}

VIRTIO_MODES="limit xdpoff-1 xdpoff-1k xdpoff-10k8m xdpoff-generic nft-sw tc-sw none"

sec_virtio() {
	local mode
	say "virtio path: pktgen $TX -> $RX, ${DUR}s windows, $REPS reps, modes: $VIRTIO_MODES"
	pg_setup $TX $GEN_CPU start_xmit 1
	for REP in $(seq 1 "$REPS"); do
		[ "$PERF" = 1 ] && [ "$REP" = "$REPS" ] && perf_start
		for mode in $(modes $VIRTIO_MODES); do
			virtio_mode "$mode"
		done
		[ "$REP" = "$REPS" ] && perf_report
		# The same rulesets as xdpoff-1k / xdpoff-10k8m, in software.
		emit "sec=commit kind=plain rules=$BIG1 rep=$REP ms=$(nft_commit $WORK/plain1k.nft)"
		nft delete table netdev bench
		emit "sec=commit kind=plain rules=$BIG2 rep=$REP ms=$(nft_commit $WORK/plain10k.nft)"
		nft delete table netdev bench
	done
}

# ---- forwarding: eth0 -> eth1 [routed] eth2 -> eth3 ----------------------

OUT_DEV=eth2
SINK=eth3
FWD_DADDR=198.19.0.2	# behind eth2 (198.18.0.0/15 is the benchmarking range)
FWD_PIN=/sys/fs/bpf/xdpoff-bench-fwd
FWD_MODES="fwd-limit ft-offload ft-sw nft-fwd route"
FWD_PPS=8000		# offered load of the CPU windows, frames/s: pktgen
			# sleeps between frames at this rate; above 10,000/s
			# it busy-waits on vCPU 1, where this script runs (a
			# run at 15,000/s stalled in the window's ethtool)

mac() { cat /sys/class/net/"$1"/address; }

# fwd_rig_up: addresses, routes and static neighbours (no ARP during a
# window), forwarding on, the sink's XDP_DROP, the limit's programs pinned
# and configured: eth3's and eth2's MAC addresses, eth2's ifindex.
fwd_rig_up() {
	local i map
	ip link set $OUT_DEV up && ip link set $SINK up || die "link up"
	ip addr add 198.18.0.254/24 dev $RX
	ip addr add 198.19.0.254/24 dev $OUT_DEV
	ip neigh replace $SADDR lladdr "$(mac $TX)" dev $RX nud permanent
	ip neigh replace $FWD_DADDR lladdr "$(mac $SINK)" dev $OUT_DEV nud permanent
	sysctl -qw net.ipv4.ip_forward=1
	ip link set dev $SINK xdpdrv obj $DROP_OBJ sec xdp ||
		die "cannot attach $DROP_OBJ to $SINK"
	bpftool prog loadall $FWD_OBJ $FWD_PIN || die "cannot load $FWD_OBJ"
	map=$(bpftool -j prog show pinned $FWD_PIN/xdp_fwd |
		sed -n 's/.*"map_ids":\[\([0-9]*\)\].*/\1/p')
	i=$(cat /sys/class/net/$OUT_DEV/ifindex)
	# shellcheck disable=SC2046
	bpftool map update id "$map" key hex 00 00 00 00 \
		value hex $(mac $SINK | tr : ' ') $(mac $OUT_DEV | tr : ' ') \
		$(printf '%02x %02x %02x %02x' $((i & 255)) $((i >> 8 & 255)) \
			$((i >> 16 & 255)) $((i >> 24 & 255))) ||
		die "cannot configure $FWD_OBJ"
	# (the insn section's guest, one vCPU, has no pktgen thread 1: the
	# host feeds its frames.  --all: pin_rig has put this script on one
	# vCPU, and nproc alone counts the CPUs it may run on)
	[ "$(nproc --all)" -gt 1 ] || return 0
	pg_setup $TX $GEN_CPU start_xmit 1
	pgset $TX "dst $FWD_DADDR"
}

fwd_rig_down() {
	ip link set dev $SINK xdpdrv off
	rm -rf $FWD_PIN
	sysctl -qw net.ipv4.ip_forward=0
	ip neigh flush dev $RX
	ip neigh flush dev $OUT_DEV
	ip addr flush dev $RX
	ip addr flush dev $OUT_DEV
}

# ft_ruleset OFFLOAD: the flowtable ruleset of issue 14's example.
ft_ruleset() {
	cat <<EOT
table inet bench {
	flowtable ft {
		hook ingress priority 0; devices = { $RX, $OUT_DEV };$([ "$1" = 1 ] && echo " flags offload;")
	}
	chain forward {
		type filter hook forward priority 0; policy accept;
		meta l4proto { tcp, udp } flow add @ft
	}
	chain post {
		type nat hook postrouting priority 100; policy accept;
		oifname "$OUT_DEV" masquerade
	}
}
EOT
}

fwd_up() {
	case $1 in
	fwd-limit)
		ip link set dev $OUT_DEV xdpdrv pinned $FWD_PIN/xdp_pass &&
		ip link set dev $RX xdpdrv pinned $FWD_PIN/xdp_fwd ||
			die "cannot attach $FWD_OBJ" ;;
	ft-offload|nft-fwd)
		"$XDPOFF" attach --no-libxdp $RX >/dev/null && "$XDPOFF" attach --no-libxdp $OUT_DEV >/dev/null ||
			die "xdpoff attach"
		if [ "$1" = nft-fwd ]; then
			nft -f - <<EOT || die "nft fwd ruleset"
table netdev bench {
	chain ingress {
		type filter hook ingress device $RX priority 10; policy accept;
		flags offload;
		ip daddr $FWD_DADDR fwd to $OUT_DEV
	}
}
EOT
		else
			ft_ruleset 1 | nft -f - || die "nft flowtable ruleset"
		fi ;;
	ft-sw) ft_ruleset 0 | nft -f - || die "nft flowtable ruleset" ;;
	route) ;;
	*) die "unknown mode $1" ;;
	esac
	XDP_PROG_ID=$(xdp_prog_id)
}

fwd_down() {
	case $1 in
	fwd-limit)
		ip link set dev $RX xdpdrv off
		ip link set dev $OUT_DEV xdpdrv off ;;
	ft-offload|nft-fwd)
		nft delete table "$([ "$1" = nft-fwd ] && echo netdev || echo inet)" bench
		"$XDPOFF" detach $RX >/dev/null && "$XDPOFF" detach $OUT_DEV >/dev/null ||
			die "xdpoff detach" ;;
	ft-sw) nft delete table inet bench ;;
	esac
	conntrack -F 2>/dev/null
}

# offloaded MODE: how many flows the flowtable holds as MODE needs them:
# in eth1's XDP maps (ft-offload), in the software flowtable (ft-sw).
offloaded() {
	case $1 in
	ft-offload) map_count $RX xdpoff_flows ;;
	ft-sw) conntrack -L -p udp 2>/dev/null | grep -c '\[OFFLOAD\]' ;;
	*) echo 0 ;;
	esac
}

# open_flows MODE FLOWS: the first frames of a flow take the slow path,
# which puts the flow into the flowtable.  Bursts of 3 frames per flow
# (pktgen stopped in between: it shares vCPU 1 with this script and the
# flowtable's work), until the flowtable holds every flow; 4 bursts and
# 15 s after each at most.
open_flows() {
	local mode=$1 flows=$2 n=0 try end
	pgset $TX "count $((3 * flows))"
	for try in 1 2 3 4; do
		echo start > $PG/pgctrl
		end=$((SECONDS + 15))
		while n=$(offloaded "$mode"); [ "$n" -lt "$flows" ] &&
			[ $SECONDS -lt $end ]; do
			sleep 0.5
		done
		[ "$n" -ge "$flows" ] && break
	done
	pgset $TX "count 0"
	[ "$n" -ge "$flows" ] && return
	say "$mode: $n of $flows flows in the flowtable after $try bursts"
	conntrack -L -p udp 2>/dev/null |
		awk '{ k = /\[HW_OFFLOAD\]/ ? "HW_OFFLOAD" : /\[OFFLOAD\]/ ? "OFFLOAD" : "not offloaded"; n[k]++ }
			END { for (k in n) printf "# conntrack, %s: %d\n", k, n[k] }'
	[ "$mode" = ft-offload ] || return
	"$XDPOFF" show $RX | grep -v '^  flow ' | sed 's/^/# /'
	"$XDPOFF" show $RX | sed -n "s/^  flow udp $SADDR:\([0-9]*\) .*/\1/p" | sort -n |
		awk -v lo=10000 -v hi=$((10000 + flows - 1)) '{ have[$1] = 1 }
			END { for (p = lo; p <= hi; p++) if (!(p in have)) printf "# not in XDP: port %d\n", p }' | head -5
}

# fwd_run MODE FLOWS: FLOWS source ports from 10000 up; the flowtable
# modes first open every flow.  Two windows: pktgen at FWD_PPS frames/s,
# the same offered load for every mode (at a higher rate NAPI polls more
# frames per interrupt and the cost per frame falls); then pktgen as fast
# as it goes, for frames/s, the CPU per frame (the drop modes' measure)
# and, with an XDP program on eth1, the program's ns per run.
fwd_run() {
	local mode=$1 flows=$2 id=$1.$2 w a b
	fwd_up "$mode"
	# pktgen's range excludes its max; min = max: one port
	pgset $TX "udp_src_min 10000"
	pgset $TX "udp_src_max $((10000 + (flows > 1 ? flows : 0)))"
	case $mode in
	ft-*) open_flows "$mode" "$flows" ;;
	esac
	pgset $TX "ratep $FWD_PPS"
	pg_start
	sleep $WARM
	w=$(window "$DUR" "fwd.$id.$REP")
	emit "sec=fwd mode=$mode flows=$flows pps=$FWD_PPS rep=$REP $w"
	stall_check "$w"
	check_num "fwd $id" "$(sed -n 's/.*cpu_ns=\([0-9]*\).*/\1/p' <<<"$w")"
	pg_stop
	pgset $TX "delay 0"
	pg_start
	sleep $WARM
	[ -n "$XDP_PROG_ID" ] && sysctl -qw kernel.bpf_stats_enabled=1
	a=$(bpf_run_stats)
	w=$(window "$DUR" "fwd_max.$id.$REP")
	b=$(bpf_run_stats)
	sysctl -qw kernel.bpf_stats_enabled=0
	[ -n "$XDP_PROG_ID" ] && w="$w $(bpf_run_delta "$a" "$b")"
	emit "sec=fwd_max mode=$mode flows=$flows rep=$REP $w"
	stall_check "$w"
	check_num "fwd_max $id" "$(sed -n 's/.*rate=\([0-9]*\).*/\1/p' <<<"$w")"
	[ "$PERF" = 1 ] && [ "$REP" = "$REPS" ] && perf_window "$id"
	pg_stop
	fwd_down "$mode"
}

sec_fwd() {
	local mode flows perf=$PERF
	say "forwarding: pktgen $TX -> $RX, routed out of $OUT_DEV, 1 and $FWD_MANY flows, ${DUR}s windows, $REPS reps, modes: $FWD_MODES"
	modprobe nf_flow_table_inet 2>/dev/null
	fwd_rig_up
	for REP in $(seq 1 "$REPS"); do
		PERF=$perf
		if [ "$PERF" = 1 ] && [ "$REP" = "$REPS" ]; then
			perf_start
			perf=$PERF		# 0 if perf does not answer
		fi
		for flows in 1 $FWD_MANY; do
			# perf windows: the many-flow runs only
			PERF=$perf
			[ "$flows" = 1 ] && PERF=0
			for mode in $(modes $FWD_MODES); do
				fwd_run "$mode" "$flows"
			done
		done
		PERF=$perf
		[ "$REP" = "$REPS" ] && perf_report
	done
	fwd_rig_down
}

# ---- software paths, pktgen netif_receive into eth1 ----------------------

# pktgen's xmit_mode netif_receive skips the virtio leg.  Not with generic
# XDP: pktgen holds a reference to its skb, generic XDP must expand the
# headroom and pskb_expand_head() BUGs on a shared skb (6.1, any burst):
# xdpoff in generic mode is a mode of sec_virtio.
NETIF_MODES="nft-sw tc-sw none"

sec_netif() {
	local mode a b t0 t1
	say "software paths (pktgen netif_receive into $RX on vCPU $RX_CPU, burst 32), modes: $NETIF_MODES"
	pg_setup $RX $RX_CPU netif_receive 32
	for REP in $(seq 1 "$REPS"); do
		for mode in $(modes $NETIF_MODES); do
			mode_up "$mode"
			pg_start
			sleep $WARM
			pg_sofar $RX; t0=$SOFAR_T a=$SOFAR
			sleep "$DUR"
			pg_sofar $RX; t1=$SOFAR_T b=$SOFAR
			pg_stop
			mode_down "$mode"
			emit "sec=netif mode=$mode rep=$REP $(awk -v us=$((t1 - t0)) -v n=$((b - a)) 'BEGIN {
				printf "secs=%.3f frames=%d rate=%.0f", us / 1e6, n, n * 1e6 / us }')"
			check_num "netif $mode" "$((b - a))"
		done
	done
	for t in $PG/kpktgend_*; do
		pgset "${t##*/}" rem_device_all
	done
}

# ---- instructions per frame: QEMU -icount, frames fed from the host -------
#
# Run by tests/bench/run in a guest of its own: one vCPU, QEMU's -icount
# shift=0 (the guest clock advances exactly 1 ns per instruction executed),
# eth1's backend a UDP socket on 127.0.0.1 into which tests/bench/feed.py
# writes frames from the host as fast as it goes (what the guest cannot
# take, the host's socket buffer drops), eth2's another one whose frames
# the feeder only counts.  The
# receive ring (1,024 entries) is full whenever NAPI polls it
# (insn_napi_defer), so NAPI polls 64 frames at a time, and the vCPU's non-idle guest
# time (the window less the idle time the kernel measured,
# /proc/timer_list) is the instructions it executed: what one frame costs,
# counted, not timed.  A rep of a mode: one window
# (insn=), one with kernel.bpf_stats_enabled (the XDP program's own
# run_time_ns per run: instructions too, plus two clock reads), and in the
# last rep a perf window (cpu-clock samples fall every 1,003,000
# instructions: where the instructions go).

INSN_MODES="limit xdpoff-1 xdpoff-1k xdpoff-10k8m xdpoff-1k32m xdpoff-generic xdpfilter-1 xdpfilter-1k nft-sw tc-sw none"
INSN_FWD_MODES="fwd-limit ft-offload ft-sw nft-fwd route"

# feed REQUEST...: ask tests/bench/feed.py on the host; prints its reply.
feed() {
	local dir=$XDPOFF_VM_IO/feed name=$$.$RANDOM i
	[ -d "$dir" ] || die "no frame feeder on the host ($dir)"
	echo "$*" > "$dir/$name.tmp" && mv "$dir/$name.tmp" "$dir/$name.req" ||
		die "cannot write $dir/$name.req"
	for i in $(seq 600); do
		if [ -f "$dir/$name.rep" ]; then
			FEED_REPLY=$(cat "$dir/$name.rep")
			rm -f "$dir/$name.rep"
			case $FEED_REPLY in
			ok*) return 0 ;;
			*) die "feeder: $FEED_REPLY" ;;
			esac
		fi
		sleep 0.05
	done
	die "feeder: no answer to '$*'"
}

# feed_start DEV DST FLOWS: frames to DEV's MAC, UDP 198.18.0.1 -> DST
# port 9, source ports 10000..10000+FLOWS-1, as fast as the guest takes them.
feed_start() {
	feed start flows="$3" dmac="$(cat /sys/class/net/$1/address)" \
		smac=52:54:00:00:00:00 src=$SADDR dst="$2" dport=$PORT
}

# insn_window SECONDS: "vsecs=S frames=N insn=I busy_pct=P xdp_frac=F"
# (SECONDS of guest time; with icount, guest nanoseconds are instructions;
# tests/bench/insnwin.c takes the window).  xdp_frac: the share of eth1's
# frames XDP dropped or redirected, from two ethtool -S around the window
# (forks: outside the counted span).
insn_window() {
	local w a b
	a=$(rx_xdp $RX)
	w=$("$INSNWIN" "$1" $RX) || die "insnwin failed"
	b=$(rx_xdp $RX)
	awk -v a="$a" -v b="$b" -v w="$w" 'BEGIN {
		n = split(w, kv, /[ =]/)
		for (i = 1; i < n; i += 2)
			v[kv[i]] = kv[i + 1]
		split(a, x, " "); split(b, y, " ")
		all = y[1] - x[1]
		printf "vsecs=%.3f frames=%d insn=%.0f busy_pct=%.2f xdp_frac=%.3f\n",
			v["ns"] / 1e9, v["frames"], v["frames"] ? v["busy_ns"] / v["frames"] : 0,
			v["ns"] ? 100 * v["busy_ns"] / v["ns"] : 0,
			all ? (y[2] - x[2]) / all : 0
	}'
}

# insn_measure SEC MODE [KEY=VALUE...]: the windows of one rep of MODE.
insn_measure() {
	local sec=$1 mode=$2 w a b
	shift 2
	w=$(insn_window "$DUR")
	emit "sec=$sec mode=$mode $* ioa=$IOA rep=$REP $w"
	check_num "$sec $mode" "$(sed -n 's/.*insn=\([0-9]*\).*/\1/p' <<<"$w")"
	if [ -n "$XDP_PROG_ID" ]; then
		sysctl -qw kernel.bpf_stats_enabled=1
		a=$(bpf_run_stats)
		sleep "$DUR"
		b=$(bpf_run_stats)
		sysctl -qw kernel.bpf_stats_enabled=0
		w=$(bpf_run_delta "$a" "$b")
		emit "sec=${sec}_bpf mode=$mode $* ioa=$IOA rep=$REP ${w/bpf_ns=/prog_insn=}"
	fi
	if [ "$PERF" = 1 ] && [ "$REP" = "$REPS" ]; then
		perf_window "$mode"
	fi
}

# insn_napi_defer DEV: NAPI polls of DEV take a full budget whether or not
# the feeder keeps up.  A poll that empties the ring normally re-enables the
# interrupt, and the next frame starts a new poll: a poll's fixed cost
# (interrupt, softirq, refill kick) then falls on fewer frames the slower
# the feed, so a count per frame moved with the host's load (the bare drop
# at init_on_alloc=0: 908 to 985, the vCPU 86-93 % busy).  Deferred
# (napi_defer_hard_irqs, gro_flush_timeout: net/core/dev.c
# napi_complete_done(), which virtio-net's virtqueue_napi_complete()
# honours), such a poll leaves the interrupt masked and a timer polls again
# INSN_NAPI_DEFER_NS later: the ring fills meanwhile (the vCPU idles, at
# wall-clock speed under icount's sleep=on, and idle time is not counted),
# and the next polls find it full again.
INSN_NAPI_DEFER_NS=4000000
insn_napi_defer() {
	echo 1000000 > "/sys/class/net/$1/napi_defer_hard_irqs" &&
	echo "$INSN_NAPI_DEFER_NS" > "/sys/class/net/$1/gro_flush_timeout" ||
		die "cannot defer $1's NAPI interrupts"
}

sec_insn() {
	local mode
	[ "$(nproc)" = 1 ] || die "section insn needs a guest of one vCPU (tests/bench/run boots one)"
	IOA=$(sed -n 's/.*init_on_alloc=\([01]\).*/\1/p' /proc/cmdline)
	IOA=${IOA:-1}		# Debian's default: CONFIG_INIT_ON_ALLOC_DEFAULT_ON
	say "instructions per frame (icount), init_on_alloc=$IOA: frames from the host into $RX, ${DUR}s windows of guest time, $REPS reps, modes: $INSN_MODES; forwarding, $FWD_MANY flows: $INSN_FWD_MODES"
	insn_napi_defer $RX
	for REP in $(seq 1 "$REPS"); do
		[ "$PERF" = 1 ] && [ "$REP" = "$REPS" ] && perf_start
		for mode in $(modes $INSN_MODES); do
			mode_up "$mode"
			feed_start $RX $DADDR 1
			sleep $WARM
			insn_measure insn "$mode"
			feed stop
			mode_down "$mode"
		done
		[ "$REP" = "$REPS" ] && perf_report insn "ioa=$IOA"
	done
	insn_classify
	[ -n "$(modes $INSN_FWD_MODES)" ] || return 0
	# Forwarding: eth1 -> eth2, whose frames the feeder counts: the
	# vCPU receives on eth1 and transmits on eth2, nothing else.
	modprobe nf_flow_table_inet 2>/dev/null
	fwd_rig_up
	for REP in $(seq 1 "$REPS"); do
		[ "$PERF" = 1 ] && [ "$REP" = "$REPS" ] && perf_start
		for mode in $(modes $INSN_FWD_MODES); do
			fwd_up "$mode"
			feed_start $RX $FWD_DADDR "$FWD_MANY"
			case $mode in
			ft-*) if ! insn_open_flows "$mode"; then
				# not what the mode is about: no number
				feed stop
				fwd_down "$mode"
				check_num "insn_fwd $mode" ""
				continue
			      fi ;;
			esac
			sleep $WARM
			insn_measure insn_fwd "$mode" flows=$FWD_MANY
			feed stop
			say "$mode: feeder $FEED_REPLY"
			fwd_down "$mode"
		done
		[ "$REP" = "$REPS" ] && perf_report insn_fwd "ioa=$IOA"
	done
	fwd_rig_down
}

# insn_classify: the classifier alone, BPF_PROG_TEST_RUN (tests/bench/
# classify): the run's guest ns per repetition are its instructions; now,
# and the baseline tests/bench/run built from git (build/bench/baseline).
# The current one also runs 0:0, a program that drops at once: what
# BPF_PROG_TEST_RUN's own loop counts, in both (the baseline's classify
# predates 0:0).
insn_classify() {
	local v bin grid="1:1 1000:1 10000:8 1000:32" g
	[ "$MODE" = smoke ] && grid="1:1 100:8"
	for v in current baseline; do
		bin=$CLASSIFY
		g="0:0 $grid"
		[ $v = baseline ] && bin=$BENCH_BUILD/baseline/classify g=$grid
		if [ ! -x "$bin" ]; then
			say "no $v classifier ($bin): tests/bench/run builds it from git"
			continue
		fi
		"$bin" --repeat "$INSN_CLS_REPEAT" --runs 2 $g |
			sed "s/^classify /@bench sec=insn_cls variant=$v base=$(cat "$BENCH_BUILD/baseline/rev" 2>/dev/null) ioa=$IOA /" ||
			missing=$((missing + 1))
	done
	insn_peer
}

# insn_peer: the peer a user would pick for an address drop list,
# xdp-filter (Debian's xdp-tools), on the classifier's instrument: loaded
# as its own tool loads it, without libxdp's dispatcher, in deny mode with
# all its features, on a dummy device (generic mode: nothing is sent, the
# test run drives it), with 1 and with 1,000 `xdp-filter ip ADDR --mode
# dst` rules, the frame's destination (198.18.0.2) the last; each run
# must drop the frame.  "@bench sec=insn_peer peer=xdpfilter-N ..." lines.
insn_peer() {
	local n i id dev=xfpeer sizes="1 1000"
	[ "$MODE" = smoke ] && sizes="1 10"
	if ! command -v xdp-filter >/dev/null; then
		say "no xdp-filter (package xdp-tools): no peer measured"
		missing=$((missing + 1))
		return
	fi
	ip link add $dev type dummy && ip link set $dev up || {
		missing=$((missing + 1)); return; }
	for n in $sizes; do
		if ! LIBXDP_SKIP_DISPATCHER=1 xdp-filter load --mode skb $dev; then
			say "xdp-filter load failed"
			missing=$((missing + 1))
			break
		fi
		for i in $(seq 1 $((n - 1))); do
			xdp-filter ip "10.$((i >> 8 & 255)).$((i & 255)).1" --mode dst
		done
		xdp-filter ip 198.18.0.2 --mode dst
		id=$(ip -j link show dev $dev | python3 -c '
import json, sys
print(json.load(sys.stdin)[0]["xdp"]["prog"]["id"])')
		"$CLASSIFY" --repeat "$INSN_CLS_REPEAT" --runs 2 "prog:$id:xdpfilter-$n" |
			sed "s/^classify /@bench sec=insn_peer ioa=$IOA /" ||
			missing=$((missing + 1))
		xdp-filter unload $dev
	done
	ip link del $dev
}

# insn_open_flows MODE: with the feed running, wait until the flowtable
# holds every flow (the first frames of each take the slow path); fails
# (and says what it saw) if it does not within 60 s.
insn_open_flows() {
	local n end=$((SECONDS + 60))
	while n=$(offloaded "$1"); [ "$n" -lt "$FWD_MANY" ] && [ $SECONDS -lt $end ]; do
		sleep 0.5
	done
	[ "$n" -ge "$FWD_MANY" ] && return 0
	say "$1: $n of $FWD_MANY flows in the flowtable after 60 s; conntrack:"
	conntrack -L 2>&1 | head -3 | sed 's/^/#   /'
	nstat -az 2>/dev/null | grep -Ei 'InAddrErrors|InNoRoutes|ForwDatagrams|InDiscards|OutNoRoutes' | sed 's/^/#   /'
	ip -s link show $OUT_DEV | sed 's/^/#   /'
	return 1
}

# ---- classifier ------------------------------------------------------------

sec_classify() {
	local grid
	case $MODE in
	smoke) grid="1:1 100:8 1000:32" ;;
	*) grid="1:1 100:1 10000:1 100000:1"
	   for m in 2 4 8 16 32; do
		grid+=" 100:$m 10000:$m 100000:$m"
	   done ;;
	esac
	say "classifier: BPF_PROG_TEST_RUN, repeat $CLS_REPEAT, $CLS_RUNS runs per point"
	"$CLASSIFY" --repeat "$CLS_REPEAT" --runs "$CLS_RUNS" $grid |
		sed 's/^classify /@bench sec=classify /' ||
		missing=$((missing + 1))
}

# ---- main ------------------------------------------------------------------

cleanup() {
	perf_stop
	pg_stop
	nft delete table netdev bench 2>/dev/null
	tc qdisc del dev $RX ingress 2>/dev/null
	ip link set dev $RX xdpgeneric off 2>/dev/null
	ip link set dev $RX xdpdrv off 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	nft delete table inet bench 2>/dev/null
	ip link set dev $OUT_DEV xdpdrv off 2>/dev/null
	"$XDPOFF" detach $OUT_DEV >/dev/null 2>&1
	fwd_rig_down 2>/dev/null
}
trap cleanup EXIT

for f in "$CLASSIFY" "$DROP_OBJ" "$FWD_OBJ" "$INSNWIN" "$XDPOFF" "$XDPOFF_KO"; do
	[ -e "$f" ] || die "$f missing (run tests/bench/run, which builds it)"
done

start=$(now_ns)
emit "sec=info mode=$MODE reps=$REPS dur=$DUR warm=$WARM cls_repeat=$CLS_REPEAT cls_runs=$CLS_RUNS kernel=$(uname -r) cpus=$(nproc)"
# One vCPU (the insn section's guest): nothing to pin.
[ "$(nproc)" -gt 1 ] && pin_rig
modprobe pktgen || die "modprobe pktgen"
modprobe sch_ingress; modprobe cls_flower; modprobe act_gact
load_module
make_rulesets
# Warm the page cache of the tools (9p) before anything is timed.
nft -f $WORK/plain1.nft && nft delete table netdev bench
"$XDPOFF" attach --no-libxdp $RX >/dev/null && "$XDPOFF" detach $RX >/dev/null

for s in ${SECTIONS//,/ }; do
	case $s in
	virtio|fwd|netif|classify|insn)
		t0=$(now_ns)
		sec_$s
		emit "sec=info section=$s elapsed_s=$(( ($(now_ns) - t0) / 1000000000 ))" ;;
	*) die "unknown section $s" ;;
	esac
done

emit "sec=info elapsed_s=$(( ($(now_ns) - start) / 1000000000 ))"
if [ "$missing" -gt 0 ]; then
	echo "guest.sh: $missing measurements produced no number" >&2
	exit 1
fi
