# SPDX-License-Identifier: GPL-2.0
# tests/bench/guest-netif.sh - the software paths, pktgen netif_receive into eth1
# (section netif).
# Sourced by tests/bench/guest.sh, in the test guest; its globals and
# helpers are guest.sh's.

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
