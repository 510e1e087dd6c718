#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Replay at attach: the offloaded nft chains and the tc ingress block that
# exist when a device is attached (a qdisc made before `xdpoff attach`,
# everything after an rmmod/insmod, as a DKMS upgrade does) come back into
# XDP by themselves, in their order, counters kept; a chain that cannot be
# offloaded again stays in software, unchanged, and attach says so.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
V4="--saddr 10.3.0.1 --daddr 10.0.0.2"
TC4="--saddr 10.9.0.1 --daddr 10.0.0.2"	# what tc's pref 3 drops
ALL_TESTS="
	reload_tc_block
	reload_rmmod_insmod
"

cleanup() {
	tc qdisc del dev $RX ingress 2>/dev/null
	cleanup_offload $RX
}
trap cleanup EXIT

# in_hw DEV PREF...: "1" per filter of DEV's ingress block that tc reports
# in hardware, "0" otherwise, in PREF order (each PREF once).
in_hw() {
	local dev=$1
	shift
	tc -j filter show dev "$dev" ingress | python3 -c '
import json, sys
fs = [f for f in json.load(sys.stdin) if "options" in f]
out = []
for pref in sys.argv[1:]:
    for f in fs:
        if f["pref"] == int(pref):
            out.append("1" if f["options"].get("in_hw") else "0")
print(" ".join(out))' "$@"
}

# handles: the rule handles of chain hw, in order.
handles() {
	nft -a list chain netdev t hw | sed -n 's/.*# handle \([0-9]*\)$/\1/p' | tr '\n' ' '
}

# sent_dropped PORT N [ADDRS]: N frames to udp PORT, all dropped in XDP?
sent_dropped() {
	local base
	base=$(xdp_drops $RX)
	send $TX $RX ${3:-$V4} --proto udp --dport "$1" --count "$2"
	wait_for xdp_drops_are $RX "$base" "$2"
}

# sent_passed PORT N [ADDRS]: N frames to udp PORT, none dropped in XDP?
sent_passed() {
	local base
	base=$(xdp_drops $RX)
	send $TX $RX ${3:-$V4} --proto udp --dport "$1" --count "$2"
	sleep 1
	xdp_drops_are $RX "$base" 0
}

setup_peer $TX
ip link set $RX promisc on
load_module

# 1. A tc block that exists before attach.  pref 3 has two masks: flower
# tries them in the order they were made, so udp dport 6 from 10.9.0.1
# passes (the first mask's filter); installed newest first, it would drop.
# tc_block makes it, on eth1 not attached yet.
tc_block() {
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress pref 1 protocol ip flower ip_proto udp dst_port 4 action drop
	tc filter add dev $RX ingress pref 3 protocol ip flower ip_proto udp dst_port 6 action pass
	tc filter add dev $RX ingress pref 3 protocol ip flower ip_proto udp src_ip 10.9.0.1 action drop
}

reload_tc_block() {
	tc_block
	check_eq "tc filters made before attach are in software" "0 0 0" "$(in_hw $RX 1 3)"
	"$XDPOFF" attach $RX
	check_eq "attach replays the existing tc block: every filter in hardware" \
		"1 1 1" "$(in_hw $RX 1 3)"
	check_eq "three rules in eth1's maps" 3 "$(map_count $RX xdpoff_rules)"
	check "a replayed tc drop filter drops in XDP" sent_dropped 4 10
	check "flower's mask order survives the replay (dport 6 from 10.9.0.1 passes)" \
		sent_passed 6 10 "$TC4"
	check "the second mask's filter drops what the first does not take" \
		sent_dropped 7 10 "$TC4"
	tc qdisc del dev $RX ingress
	"$XDPOFF" detach $RX
}

# 2. to 5., one story: the block of 1. with eth1 attached, then nft chains,
# rmmod, insmod, and an attach that cannot bring the chains back.
reload_rmmod_insmod() {
	tc_block
	"$XDPOFF" attach $RX >/dev/null

	# 2. nft chains on the device, with traffic counted.
	nft -f - <<EOT
table netdev t {
	chain hw {
		type filter hook ingress device $RX priority 10; policy accept; flags offload;
		udp dport 1 counter drop comment "one"
		udp dport 2 counter accept comment "acc"
		udp dport 2 counter drop comment "never"
	}
	chain late {
		type filter hook ingress device $RX priority 20; policy accept; flags offload;
		udp dport 3 counter drop comment "three"
	}
}
EOT
	# (dport 2's two rules share one map entry: the first one owns it.)
	check_eq "two chains and three filters offloaded" 6 "$(map_count $RX xdpoff_rules)"
	check "nft drop offloaded" sent_dropped 1 5
	check "accept before drop: dport 2 passes" sent_passed 2 5
	check "second chain offloaded" sent_dropped 3 5
	old_handles=$(handles)

	# 3. rmmod: everything stays, in software.  nf_tables learns what XDP
	# dropped only when it lists a chain (FLOW_CLS_STATS): list first, as
	# xdpoff-reload does, or the counts since the last listing are lost.
	nft list ruleset >/dev/null
	rmmod xdpoff
	check_eq "after rmmod the tc filters are in software" "0 0 0" "$(in_hw $RX 1 3)"
	check_eq "after rmmod the nft counters are kept" "5 5 0 5" \
		"$(nft_counter netdev t hw one) $(nft_counter netdev t hw acc) $(nft_counter netdev t hw never) $(nft_counter netdev t late three)"

	# 4. insmod, and the device handed over again (detach: the program and
	# pins of the old module's attach; attach: a fresh one).
	insmod "$XDPOFF_KO"
	"$XDPOFF" detach $RX 2>/dev/null
	check "detach after rmmod and insmod removes the old program" \
		test ! -e "$PIN/$RX"
	out=$("$XDPOFF" attach $RX 2>&1)
	rc=$?
	echo "$out" | diag
	# On 6.12 every attach also says it runs the build without VLAN push and
	# pop (Debian 12's libxdp; test_libxdp.sh checks that line).
	out=$(grep -v "libxdp's dispatcher cannot run a program" <<<"$out")
	check_eq "attach succeeds and says the two chains were re-created" \
		"0 $RX: 2 offloaded chains re-created and offloaded (new rule handles)" "$rc $out"
	check_eq "every rule back in eth1's maps" 6 "$(map_count $RX xdpoff_rules)"
	check_eq "the tc filters are in hardware again" "1 1 1" "$(in_hw $RX 1 3)"
	check_eq "the nft counters kept their values" "5 5 0 5" \
		"$(nft_counter netdev t hw one) $(nft_counter netdev t hw acc) $(nft_counter netdev t hw never) $(nft_counter netdev t late three)"
	new_handles=$(handles)
	check "the rules are new ones (handles $old_handles-> $new_handles)" \
		test "$old_handles" != "$new_handles"
	check "the nft drop rule drops in XDP again" sent_dropped 1 5
	check "accept before drop still: dport 2 passes" sent_passed 2 5
	check "the second chain drops in XDP again" sent_dropped 3 5
	check "the tc drop filter drops in XDP again" sent_dropped 4 5
	check "flower's mask order still holds" sent_passed 6 5 "$TC4"
	check "nft counts what XDP dropped on top of the kept values" \
		wait_for counter_is netdev t hw one 10
	check_eq "counters of rules not hit did not move" "10 0 10" \
		"$(nft_counter netdev t hw acc) $(nft_counter netdev t hw never) $(nft_counter netdev t late three)"

	# 5. A chain that cannot come back: the rules table is too small.  The
	# transaction fails as a whole: the chains stay as they were, in software.
	tc qdisc del dev $RX ingress
	rmmod xdpoff
	insmod "$XDPOFF_KO"
	"$XDPOFF" detach $RX 2>/dev/null
	before=$(nft -a list table netdev t)
	out=$("$XDPOFF" attach $RX --max-rules 2 2>&1)
	rc=$?
	echo "$out" | diag
	check_eq "attach with too small a table succeeds" 0 "$rc"
	check "and warns that the chains stay in software" \
		grep -q "2 offloaded chains could not be brought into XDP and stay in software" <<<"$out"
	check_eq "nothing of them reached the maps" 0 "$(map_count $RX xdpoff_rules)"
	check_eq "the chains are unchanged (same handles, same counters)" \
		"$before" "$(nft -a list table netdev t)"
	check "XDP no longer drops: dport 1 goes up to the stack" sent_passed 1 3
	check "where software counts (and drops) it" wait_for counter_is netdev t hw one 13
	nft flush ruleset
	"$XDPOFF" detach $RX
}

tests_run
