# SPDX-License-Identifier: GPL-2.0
# tests/bench/guest-virtio.sh - the modes on the virtio path (sections virtio and
# netif): setting each up, measuring its windows, perf.
# Sourced by tests/bench/guest.sh, in the test guest; its globals and
# helpers are guest.sh's.

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
		xdpoff-blocklist*)
			ms=$(nft_commit $WORK/offblock.nft) ||
				die "the blocklist did not offload"
			rules=$BLOCK_RULES ;;
		esac
		[ -n "${rules:-}" ] &&
			emit "sec=commit kind=offload rules=$rules rep=$REP ms=$ms" ;;
	nft-sw)
		nft -f $WORK/plain1.nft || die "nft" ;;
	nft-sw-blocklist*)
		nft -f $WORK/plainblock.nft || die "nft" ;;
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
	nft-sw*) nft delete table netdev bench ;;
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
