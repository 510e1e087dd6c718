#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Faults with traffic flowing: an injected failure of the Nth map write of
# a batch (debugfs fail_nth), the rule table full in the middle of a batch,
# the XDP program taken away behind xdpoff's back, rmmod and reload.  Each ends with the maps equal to the ruleset.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
FAIL_NTH=/sys/kernel/debug/xdpoff/fail_nth
V4="--saddr 10.1.2.3 --daddr 10.0.0.2"
ALL_TESTS="
	faults_fail_nth
	faults_xdp_off
	faults_table_full
	faults_rmmod
"

trap 'cleanup_offload $RX' EXIT

maps_state() {
	local m
	for m in xdpoff_rules xdpoff_masks xdpoff_meta; do
		map_dump $RX $m
	done
}

# Packets counted by every nft rule, together.
nft_total() {
	nft -j list ruleset | python3 -c '
import json, sys
print(sum(e["counter"]["packets"] for i in json.load(sys.stdin)["nftables"]
          if "rule" in i for e in i["rule"]["expr"] if "counter" in e))'
}
nft_total_atleast() { [ "$(nft_total)" -ge "$1" ]; }

# reattach [ARGS...]: RX detached and attached again (with ARGS), its
# ruleset flushed first.
reattach() {
	nft flush ruleset
	"$XDPOFF" detach $RX >/dev/null
	"$XDPOFF" attach $RX "$@" >/dev/null
}

setup_peer $TX
insmod "$XDPOFF_KO"
"$XDPOFF" attach $RX
ip link set $RX promisc on
start_traffic $TX $RX "1 2 3 4 5 6" $V4

faults_fail_nth() {
	offload_chain $RX 'udp dport 1 counter drop' \
		'ip saddr 10.1.0.0/16 udp dport 2 counter drop'
	before=$(maps_state)
	# Three rules, two of them with masks of their own: a dozen map writes.
	batch='add rule netdev t hw udp dport 3 counter drop
add rule netdev t hw ip daddr 10.0.0.0/24 udp dport 4 counter drop
add rule netdev t hw ether saddr 02:00:00:00:00:01 udp dport 5 counter drop'

	failed=0 bad=0 n=1
	while [ $n -le 40 ]; do
		echo $n > $FAIL_NTH
		if nft -f - <<<"$batch" 2>/dev/null; then
			break
		fi
		failed=$((failed + 1))
		if [ "$(maps_state)" != "$before" ]; then
			bad=$((bad + 1))
			echo "fail_nth $n: maps differ after the failed batch" | diag
		fi
		n=$((n + 1))
	done
	echo 0 > $FAIL_NTH
	check "an injected failure at each map write of the batch fails it ($failed writes)" \
		test "$failed" -ge 3 -a $n -le 40
	check_eq "... and leaves the maps as they were, every time" 0 "$bad"
	check_eq "past the last write the batch loads: 5 rules offloaded" 5 \
		"$(map_count $RX xdpoff_rules)"
	d0=$(xdp_drops $RX)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... and they drop in XDP" wait_for xdp_dropped_since $RX $d0 10
	nft flush ruleset
}

# The XDP program taken away behind xdpoff's back: the rules keep working
# in software, xdpoff show says what happened.  (The five rules of
# faults_fail_nth.)
faults_xdp_off() {
	offload_chain $RX 'udp dport 1 counter drop' \
		'ip saddr 10.1.0.0/16 udp dport 2 counter drop' \
		'udp dport 3 counter drop' \
		'ip daddr 10.0.0.0/24 udp dport 4 counter drop' \
		'ether saddr 02:00:00:00:00:01 udp dport 5 counter drop'
	check "ip link set xdp off behind xdpoff's back" ip link set dev $RX xdp off
	check "... xdpoff show says the program is not attached" \
		sh -c "$XDPOFF show $RX | grep -q 'not attached'"
	c0=$(nft_total)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... frames are still dropped, by software" \
		wait_for nft_total_atleast $((c0 + 10))
	check "detach then works" sh -c "nft flush ruleset && $XDPOFF detach $RX"
	check "attach again, with --max-rules 4" "$XDPOFF" attach $RX --max-rules 4
	reattach
}

# The rule table full in the middle of a batch, frames arriving.
faults_table_full() {
	reattach --max-rules 4
	offload_chain $RX 'udp dport 1 counter drop' \
		'ip saddr 10.1.0.0/16 udp dport 2 counter drop'
	before=$(maps_state)
	check_fails "a batch whose third rule finds the table full fails" \
		"Operation not supported\|No space" nft -f - <<'EOT'
add rule netdev t hw udp dport 3 counter drop
add rule netdev t hw udp dport 4 counter drop
add rule netdev t hw udp dport 5 counter drop
EOT
	check "... xdpoff show gives the reason" \
		sh -c "$XDPOFF show $RX | grep -qF 'rule table is full (4 rules)'"
	check_eq "... maps as before" "$before" "$(maps_state)"
	check_eq "... nft kept the two rules it had" 2 \
		"$(nft list chain netdev t hw | grep -c 'counter packets')"
	d0=$(xdp_drops $RX)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... which still drop in XDP" wait_for xdp_dropped_since $RX $d0 10
	check "... a batch that fits loads" nft add rule netdev t hw udp dport 3 counter drop
	check_eq "... 3 rules offloaded" 3 "$(map_count $RX xdpoff_rules)"
	reattach
}

# rmmod with rules offloaded and frames arriving, then reload.
faults_rmmod() {
	offload_chain $RX 'udp dport 1 counter drop'
	check "rmmod with frames arriving" rmmod xdpoff
	check_eq "... its rules left the maps" 0 "$(map_count $RX xdpoff_rules)"
	check "reload, re-attach" sh -c "insmod $XDPOFF_KO && $XDPOFF detach $RX && $XDPOFF attach $RX"
	check "the chain, created again" offload_chain $RX 'udp dport 1 counter drop'
	check_eq "... is offloaded again" 1 "$(map_count $RX xdpoff_rules)"
	nft flush ruleset
}

tests_run
