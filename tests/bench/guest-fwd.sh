# SPDX-License-Identifier: GPL-2.0
# tests/bench/guest-fwd.sh - the forwarding section: eth0 -> eth1, routed out of
# eth2 to eth3, the flowtable offloaded or in software.
# Sourced by tests/bench/guest.sh, in the test guest; its globals and
# helpers are guest.sh's.

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
