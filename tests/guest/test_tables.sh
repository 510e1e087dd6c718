#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The classifier's tables (doc/design.md, Classification): rules whose
# masks differ only in address prefix lengths share tables, nested
# prefixes still decide in rule order, any number of masks fits while
# their tables do, and the 33rd table is refused with the reason,
# changing nothing.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
ALL_TESTS="
	tables_prefix_family
	tables_limits
"

cleanup() {
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
	cleanup_peer
}
trap cleanup EXIT

setup_peer "$TX"
load_module
check "attach $RX" "$XDPOFF" attach $RX

# tables: the tables in use (xdpoff_meta.nr_masks: the highest slot + 1,
# after a fresh attach the count).
tables() {
	bpftool -j map lookup pinned "$PIN/$RX/xdpoff_meta" key 0 0 0 0 |
		python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("formatted", d)["value"]["nr_masks"])'
}

# family ip|ip6 FIELD: 25 drop rules of FIELD prefixes /8 to /32, no two
# nested: (100 + L).L.0.0/L; one counted.
family() {
	local l
	for l in $(seq 8 32); do
		echo "ip $1 $((100 + l)).$l.0.0/$l counter drop comment \"$1$l\""
	done
}

# Five nested prefixes of 10.0.0.0/8, in an order where the shorter decide
# first, then the two families (25 masks each), then another field set: 51
# distinct masks, more than the 32 a mask each would allow.  Their tables,
# as kernel/xdpoff_rules.c files them: /16, /8, /32, /24 and /9 of saddr
# for the nested ones (each key of a shorter table is taken), which the
# saddr family shares (/8 with /8, /9 to /15 with /9, /16 to /23 with /16,
# ...); the daddr family one, /8 (within all of its masks, with room); the
# dport rule one: 7.
tables_prefix_family() {
	mapfile -t fam <<<"$(family saddr; family daddr)"
	check "51 distinct masks (prefixes /8 to /32 of ip saddr and daddr) offload" \
		load_rules 'ip saddr 10.1.0.0/16 counter accept comment "a16"' \
		'ip saddr 10.0.0.0/8 counter drop comment "d8"' \
		'ip saddr 10.1.2.3 counter drop comment "d32"' \
		'ip saddr 10.1.2.0/24 counter drop comment "d24"' \
		'ip saddr 10.0.0.0/9 counter accept comment "a9"' \
		"${fam[@]}" \
		'ip daddr 10.0.0.0/8 udp dport 4242 counter drop comment "port"'
	check_eq "... in 7 tables" 7 "$(tables)"
	check_eq "... 56 entries of the rules map, each keyed under its table's mask" \
		"56 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"

	send $TX $RX --saddr 10.1.2.3 --daddr 10.0.0.2 --proto udp --count 3
	check "10.1.2.3: the earlier /16 accept beats the later /32 and /24 drops" \
		wait_for seen_is 3
	check_eq "... counted by a16 only" "3 0 0" "$(nft_counter netdev t hw a16) \
$(nft_counter netdev t hw d32) $(nft_counter netdev t hw d24)"
	send $TX $RX --saddr 10.0.0.1 --daddr 10.0.0.2 --proto udp --count 2
	check "10.0.0.1: the /8 drop, in XDP, before the /9 accept" \
		wait_for rule_is d8 2
	check_eq "... not seen by software; a9 did not count" "3 0" \
		"$(seen) $(nft_counter netdev t hw a9)"
	send $TX $RX --saddr 120.20.1.1 --daddr 10.0.0.2 --proto udp --count 2
	check "120.20.1.1: the saddr /20 of the family, in a shared table" \
		wait_for rule_is saddr20 2
	send $TX $RX --saddr 10.9.9.9 --daddr 127.27.0.1 --proto udp --count 2
	check "10.9.9.9 to 127.27.0.1: the /8 saddr drop is first, not the daddr /27" \
		wait_for rule_is d8 4
	check_eq "... the daddr /27 did not count" 0 "$(nft_counter netdev t hw daddr27)"
	send $TX $RX --saddr 192.0.2.1 --daddr 132.32.0.0 --proto udp --count 2
	check "192.0.2.1 to 132.32.0.0: the daddr /32" wait_for rule_is daddr32 2
	check_eq "... nothing else seen by software" 3 "$(seen)"
	nft flush ruleset
	check_eq "flushed: no table left" 0 "$(tables)"
}

# masks N: N (up to 144) rules of distinct masks that differ in prefix
# lengths only:
# ip saddr /8 to /31 with ip daddr /8 to /13, keys distinct under any
# table (the first bytes (100 + L1) and (50 + L2)).
masks() {
	local l1 l2 n=0
	for l1 in $(seq 8 31); do
		for l2 in $(seq 8 13); do
			[ $n -lt "$1" ] || return 0
			echo "ip saddr $((100 + l1)).$l1.0.0/$l1 ip daddr $((50 + l2)).$l2.0.0/$l2 drop"
			n=$((n + 1))
		done
	done
}

tables_limits() {
	mapfile -t r <<<"$(masks 144)"
	check "144 distinct masks, prefixes of ip saddr and daddr, offload" \
		offload_chain $RX "${r[@]}"
	check_eq "... in 1 table (saddr /8 with daddr /8, within each of them)" 1 "$(tables)"
	check_eq "... 144 entries, each keyed under the table's mask" \
		"144 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"

	mapfile -t r <<<"$(one_bit_masks 32)"
	check "32 masks no table can share (one bit of ether saddr each) offload" \
		offload_chain $RX "${r[@]}"
	check_eq "... in 32 tables" 32 "$(tables)"
	before=$(map_dump $RX xdpoff_rules; map_dump $RX xdpoff_masks)
	check_fails "a 33rd is refused" "Operation not supported\|No space" \
		nft add rule netdev t hw ether saddr \& 00:00:00:00:01:00 == 00:00:00:00:00:00 drop
	check "... xdpoff show says why" \
		sh -c "$XDPOFF show $RX | grep -qF 'no table of the 32 takes this rule'"
	check_eq "... the maps as before" "$before" \
		"$(map_dump $RX xdpoff_rules; map_dump $RX xdpoff_masks)"
	nft flush ruleset
}

tests_run
