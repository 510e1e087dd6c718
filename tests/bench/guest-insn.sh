# SPDX-License-Identifier: GPL-2.0
# tests/bench/guest-insn.sh - the instruction counts (section insn): QEMU -icount,
# frames fed from the host.
# Sourced by tests/bench/guest.sh, in the test guest; its globals and
# helpers are guest.sh's.

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

INSN_MODES="limit xdpoff-1 xdpoff-1k xdpoff-10k8m xdpoff-1k32m xdpoff-generic xdpfilter-1 xdpfilter-1k nft-sw tc-sw none xdpoff-blocklist xdpoff-blocklist-none nft-sw-blocklist nft-sw-blocklist-none"
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

# feed_start DEV DST FLOWS [SRC]: frames to DEV's MAC, UDP SRC (198.18.0.1)
# -> DST port 9, source ports 10000..10000+FLOWS-1, as fast as the guest
# takes them.
feed_start() {
	feed start flows="$3" dmac="$(cat /sys/class/net/$1/address)" \
		smac=52:54:00:00:00:00 src="${4:-$SADDR}" dst="$2" dport=$PORT
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
			# -none: from a source no rule of the blocklist covers
			case $mode in
			*-none) feed_start $RX $DADDR 1 $NONE_SADDR ;;
			*) feed_start $RX $DADDR 1 ;;
			esac
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
		# 1,000 rules over 32 prefix lengths, matching none; over 32
		# field sets no table shares (the baseline's classify has neither)
		g="0:0 $grid 1000:32n 1000:32d"
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
