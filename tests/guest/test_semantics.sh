#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every match key and action, rule order, stages, multi-device chains,
# capacity and failed batches: real frames from the peer NIC, decisions
# read back through nft counters, ethtool and the maps.
#
# eth0 (namespace) -> eth1 (attached).  A software-only chain that runs
# before the offloaded ones ("seen", priority -10) counts what XDP passed.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
NS3=${PEER_NS}c
MAC1=$(cat /sys/class/net/$RX/address)
ALL_TESTS="
	semantics_keys
	semantics_keys_vlan_masked
	semantics_left_to_software
	semantics_actions
	semantics_rule_order
	semantics_stages
	semantics_two_devices
	semantics_failed_batches
	semantics_key_hashes
	semantics_full_map
"

cleanup() {
	nft flush ruleset 2>/dev/null
	for d in eth1 eth2 eth3; do "$XDPOFF" detach $d >/dev/null 2>&1; done
	unload_module
	release_ns "$NS3"
	cleanup_peer
}
trap cleanup EXIT


# key_case NAME RULE -- MATCHING-FRAME-ARGS -- OTHER-FRAME-ARGS
# The matching frame is dropped by XDP (counted by the rule, not seen);
# the other one reaches the stack and leaves the rule's counter alone.
key_case() {
	local name=$1 rule=$2 match=() other=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do match+=("$1"); shift; done
	shift
	other=("$@")

	if ! load_rules "$rule counter drop comment \"k\""; then
		not_ok "key $name: rule loads"
		return
	fi
	send $TX $RX "${match[@]}" --count 3
	if wait_for rule_is k 3 && seen_is 0; then
		ok "key $name: matching frame dropped in XDP"
	else
		not_ok "key $name: matching frame dropped in XDP"
		echo "rule=$(nft_counter netdev t hw k) seen=$(seen)" | diag
	fi
	send $TX $RX "${other[@]}" --count 2
	if wait_for seen_is 2 && rule_is k 3; then
		ok "key $name: other frame passes"
	else
		not_ok "key $name: other frame passes"
		echo "rule=$(nft_counter netdev t hw k) seen=$(seen)" | diag
	fi
}

setup_peer $TX
insmod "$XDPOFF_KO"
"$XDPOFF" attach $RX
# Without promiscuous mode QEMU's virtio-net filters frames by destination
# MAC and VLAN before the guest sees them.
ip link set $RX promisc on

V4="--saddr 10.1.2.3 --daddr 10.0.0.2"
V6="--saddr 2001:db8:1::5 --daddr 2001:db8:9::2"

# reattach_default: what a case that attached eth1 with other sizes
# leaves: no ruleset, eth1 attached with the default sizes.
reattach_default() {
	nft flush ruleset
	"$XDPOFF" detach $RX
	"$XDPOFF" attach $RX >/dev/null
}

# --- match keys -------------------------------------------------------------
semantics_keys() {
	key_case "ether saddr" "ether saddr 02:00:00:00:00:01" -- \
		--smac 02:00:00:00:00:01 $V4 --proto udp -- --smac 02:00:00:00:00:02 $V4 --proto udp
	key_case "ether daddr" "ether daddr $MAC1" -- \
		$V4 --proto udp -- --dmac ff:ff:ff:ff:ff:ff $V4 --proto udp
	key_case "ether type arp" "ether type arp" -- \
		--ethertype 0x0806 -- --ethertype 0x0805
	key_case "meta protocol ip6" "meta protocol ip6" -- \
		$V6 --proto udp -- $V4 --proto udp
	key_case "ip saddr prefix" "ip saddr 10.1.0.0/16" -- \
		$V4 --proto udp -- --saddr 10.2.0.1 --daddr 10.0.0.2 --proto udp
	key_case "ip daddr" "ip daddr 10.0.0.2" -- \
		$V4 --proto udp -- --saddr 10.1.2.3 --daddr 10.0.0.3 --proto udp
	key_case "ip protocol" "ip protocol udp" -- \
		$V4 --proto udp -- $V4 --proto tcp
	key_case "meta l4proto (ip6)" "meta l4proto tcp" -- \
		$V6 --proto tcp -- $V6 --proto udp
	key_case "ip6 saddr prefix" "ip6 saddr 2001:db8:1::/48" -- \
		$V6 --proto udp -- --saddr 2001:db8:2::5 --daddr 2001:db8:9::2 --proto udp
	key_case "ip6 daddr" "ip6 daddr 2001:db8:9::2" -- \
		$V6 --proto udp -- --saddr 2001:db8:1::5 --daddr 2001:db8:9::3 --proto udp
	key_case "ip6 nexthdr" "ip6 nexthdr udp" -- \
		$V6 --proto udp -- $V6 --proto tcp
	key_case "tcp sport" "tcp sport 1234" -- \
		$V4 --sport 1234 -- $V4 --sport 1235
	key_case "udp dport" "udp dport 53" -- \
		$V4 --proto udp --dport 53 -- $V4 --proto tcp --dport 53
	key_case "tcp dport (ip6)" "tcp dport 443" -- \
		$V6 --dport 443 -- $V6 --dport 444
	key_case "meta iif" "meta iif $RX udp dport 7" -- \
		$V4 --proto udp --dport 7 -- $V4 --proto udp --dport 8
	key_case "meta iiftype" "meta iiftype ether udp dport 7" -- \
		$V4 --proto udp --dport 7 -- $V4 --proto udp --dport 8
	nft flush ruleset
}

semantics_keys_vlan_masked() {
	key_case "vlan id" "vlan id 10" -- \
		--vlan 10 $V4 --proto udp -- --vlan 11 $V4 --proto udp
	check_fails "vlan pcp: nf_tables itself refuses to offload it" \
		"Operation not supported" load_rules "vlan pcp 5 drop"
	key_case "vlan id and ip saddr behind the tag" "vlan id 10 ip saddr 10.1.2.3" -- \
		--vlan 10 $V4 --proto udp -- --vlan 10 --saddr 10.1.2.4 --daddr 10.0.0.2 --proto udp
	key_case "vlan type" "vlan id 10 vlan type ip6" -- \
		--vlan 10 $V6 --proto udp -- --vlan 10 $V4 --proto udp
	key_case "8021ad outer tag" "ether type 8021ad vlan id 20" -- \
		--vlan 20 --vlan-tpid 0x88a8 --cvlan 30 --ethertype 0x0800 -- \
		--vlan 20 --cvlan 30 --ethertype 0x0800
	key_case "ether saddr masked" "ether saddr & ff:ff:ff:00:00:00 == 02:aa:bb:00:00:00" -- \
		--smac 02:aa:bb:01:02:03 $V4 --proto udp -- --smac 02:aa:bc:01:02:03 $V4 --proto udp
	nft flush ruleset
}

# Frames XDP leaves to software are still decided right by software.
semantics_left_to_software() {
	load_rules 'meta iif eth3 udp dport 9 counter drop comment "k"'
	send $TX $RX $V4 --proto udp --dport 9 --count 2
	check "meta iif of another device never matches here" wait_for seen_is 2
	check_eq "... and nothing of it is in the maps" 0 "$(map_count $RX xdpoff_rules)"

	load_rules 'udp dport 53 counter drop comment "k"'
	send $TX $RX $V4 --proto udp --dport 53 --frag-offset 8 --count 2
	check "non-first fragment: no ports, no match (as software)" wait_for seen_is 2
	check_eq "... rule counter untouched" 0 "$(nft_counter netdev t hw k)"
	load_rules 'ether type ip counter drop comment "k"'
	send $TX $RX $V4 --proto udp --vlan 5 --count 2
	check "ether type ip: a tagged frame is not ip at offset 12, passes" \
		wait_for seen_is 2
	load_rules 'meta protocol ip udp dport 53 counter drop comment "k"'
	send $TX $RX $V4 --proto udp --dport 53 --vlan 5 --count 2
	check "meta protocol ip on a tagged frame: left to software, which drops it" \
		wait_for rule_is k 2
	check_eq "... after XDP passed it" 2 "$(seen)"
	load_rules 'udp dport 53 counter drop comment "k"'
	send $TX $RX $V4 --proto udp --dport 53 --vlan 5 --count 2
	check "udp dport behind a vlan tag: dropped in XDP, as software does" \
		wait_for rule_is k 2
	check_eq "... not seen by the stack" 0 "$(seen)"
	nft flush ruleset
}

# --- actions ----------------------------------------------------------------
# rx3: frames eth3 received (in NS3, eth2's peer).
rx3() { ip -n "$NS3" -j -s link show eth3 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"]["rx"]["packets"])'; }
rx3_atleast() { [ "$(rx3)" -ge "$1" ]; }

semantics_actions() {
	load_rules 'udp dport 97 counter accept comment "acc"'
	send $TX $RX $V4 --proto udp --dport 97 --count 5
	check "accept passes to the stack" wait_for seen_is 5
	check_eq "accept counter counts each frame once" 5 \
		"$(nft list ruleset >/dev/null; nft list ruleset >/dev/null; nft_counter netdev t hw acc)"

	check_fails "fwd to an unattached device refused" "Operation not supported" \
		load_rules 'udp dport 99 counter fwd to eth2 comment "fwd"'
	check "... reason: the target needs xdpoff" \
		sh -c "$XDPOFF show $RX | grep -q 'fwd target must be attached with xdpoff'"
	check_fails "dup refused" "Operation not supported" \
		load_rules 'udp dport 98 dup to eth2'
	check "... reason: XDP cannot clone" \
		sh -c "$XDPOFF show $RX | grep -q 'mirror and dup are not supported: XDP cannot clone frames'"

	move_to_ns eth3 "$NS3"
	ip -n "$NS3" link set eth3 promisc on
	ip link set eth2 up
	"$XDPOFF" attach eth2
	check "fwd to an xdpoff device loads" \
		load_rules 'udp dport 99 counter fwd to eth2 comment "fwd"'
	base=$(rx3)
	send $TX $RX $V4 --proto udp --dport 99 --count 6
	check "fwd: frames come out at eth2's peer eth3" wait_for rx3_atleast $((base + 6))
	echo "eth3 rx before $base after $(rx3)" | diag
	check_eq "fwd: the stack on eth1 never saw them" 0 "$(seen)"
	check_eq "fwd: counter equals frames, across dumps" 6 \
		"$(nft list ruleset >/dev/null; nft_counter netdev t hw fwd)"
	check_fails "detach of a fwd target refused" "fwd rules target" \
		"$XDPOFF" detach eth2
	nft flush ruleset
	check "detach of eth2 once no rule targets it" "$XDPOFF" detach eth2
	release_ns "$NS3"
}

# --- rule order ---------------------------------------------------------------
semantics_rule_order() {
	load_rules 'ip saddr 10.9.0.0/16 counter accept comment "broad"' \
		'ip saddr 10.9.1.1 counter drop comment "spec"'
	send $TX $RX --saddr 10.9.1.1 --daddr 10.0.0.2 --proto udp --count 3
	check "earlier broad accept beats later specific drop" wait_for seen_is 3
	check_eq "... the broad rule counted them" "3 0" \
		"$(nft_counter netdev t hw broad) $(nft_counter netdev t hw spec)"

	load_rules 'ip saddr 10.9.1.1 counter drop comment "spec"' \
		'ip saddr 10.9.0.0/16 counter accept comment "broad"'
	send $TX $RX --saddr 10.9.1.1 --daddr 10.0.0.2 --proto udp --count 3
	check "earlier specific drop beats later broad accept" wait_for rule_is spec 3
	check_eq "... in XDP, counted by the specific rule only" "0 0" \
		"$(seen) $(nft_counter netdev t hw broad)"

	load_rules 'udp dport 77 counter accept comment "first"' \
		'udp dport 77 counter drop comment "second"'
	check_eq "same key twice: one map entry" 1 "$(map_count $RX xdpoff_rules)"
	send $TX $RX $V4 --proto udp --dport 77 --count 2
	check "same key: the earlier rule (accept) wins" wait_for seen_is 2
	handle=$(nft -a list chain netdev t hw | sed -n 's/.*comment "first" # handle \([0-9]*\)/\1/p')
	nft delete rule netdev t hw handle "$handle"
	send $TX $RX $V4 --proto udp --dport 77 --count 4
	check "same key: the later rule takes over when the earlier goes" \
		wait_for rule_is second 4
	check_eq "... dropping in XDP" 2 "$(seen)"
	nft flush ruleset
}

# --- stages (several offloaded chains) ------------------------------------------
# load_stages "CHAIN-A-RULE" "CHAIN-B-RULE" [b-first]: chain a at priority
# 10, b at 20; with b-first, b is declared (and bound) first.
load_stages() {
	local a="chain a { type filter hook ingress device $RX priority 10; policy accept; flags offload; $1; }"
	local b="chain b { type filter hook ingress device $RX priority 20; policy accept; flags offload; $2; }"
	local first=$a second=$b

	[ "${3:-}" = b-first ] && { first=$b; second=$a; }
	nft flush ruleset
	nft -f - <<EOT
table netdev t {
	chain seen { type filter hook ingress device $RX priority -10; counter comment "seen"; }
	$first
	$second
}
EOT
}
stage_is() { [ "$(nft_counter netdev t "$1" "$2")" = "$3" ]; }

semantics_stages() {
	load_stages 'udp dport 66 counter accept comment "a"' \
		'udp dport 66 counter drop comment "b"'
	send $TX $RX $V4 --proto udp --dport 66 --count 3
	check "stages: accept in the first chain, drop in the second: dropped" \
		wait_for stage_is b b 3
	check_eq "... in XDP, both rules counted once" "0 3" \
		"$(seen) $(nft_counter netdev t a a)"

	load_stages 'udp dport 65 counter drop comment "a"' \
		'udp dport 65 counter accept comment "b"' b-first
	send $TX $RX $V4 --proto udp --dport 65 --count 3
	check "stages by priority, not declaration: first chain's drop wins" \
		wait_for stage_is a a 3
	check_eq "... the second chain never saw them" "0 0" \
		"$(seen) $(nft_counter netdev t b b)"

	load_stages 'udp dport 1 counter accept comment "a"' \
		'udp dport 64 counter drop comment "b"' b-first
	send $TX $RX $V4 --proto udp --dport 64 --count 2
	check "stages: no match in the first chain, drop in the second" \
		wait_for stage_is b b 2
	check_eq "... in XDP" 0 "$(seen)"

	load_stages 'udp dport 63 counter accept comment "a"' \
		'udp dport 62 counter drop comment "b"'
	send $TX $RX $V4 --proto udp --dport 63 --count 2
	check "stages: accept and no final rule: passes" wait_for seen_is 2
	check_eq "... counted by software once" 2 "$(nft_counter netdev t a a)"
	nft flush ruleset
}

# --- one chain on two devices -------------------------------------------------
semantics_two_devices() {
	nft flush ruleset
	move_to_ns eth2 "$NS3"
	ip link set eth3 up
	"$XDPOFF" attach eth3
	check "chain on two attached devices loads" nft -f - <<EOT
table netdev t {
	chain hw {
		type filter hook ingress devices = { eth1, eth3 } priority 10; policy accept; flags offload;
		udp dport 55 counter drop comment "both"
	}
}
EOT
	d1=$(xdp_drops eth1)
	d3=$(xdp_drops eth3)
	send $TX $RX $V4 --proto udp --dport 55 --count 3
	send_from "$NS3" eth2 eth3 $V4 --proto udp --dport 55 --count 4
	check "two devices: both drop in XDP" \
		wait_for xdp_drops_are eth1 $d1 3 eth3 $d3 4
	check_eq "two devices: one counter for both" 7 "$(nft_counter netdev t hw both)"
	nft flush ruleset
	"$XDPOFF" detach eth3
	release_ns "$NS3"
}

# --- capacity and failed batches leave the maps as they were ------------------
maps_state() {
	local m
	for m in xdpoff_rules xdpoff_masks xdpoff_meta xdpoff_stats; do
		map_dump $RX $m
	done
}

semantics_failed_batches() {
	"$XDPOFF" detach $RX
	check "attach with --max-rules 4" "$XDPOFF" attach $RX --max-rules 4
	load_rules 'udp dport 1 counter drop' 'udp dport 2 counter drop' \
		'ip saddr 10.0.0.0/8 counter accept'
	before=$(maps_state)
	check_fails "a batch overflowing the table fails" "Operation not supported\|No space" \
		nft -f - <<'EOT'
add rule netdev t hw udp dport 3 drop
add rule netdev t hw ip6 saddr ::1 drop
EOT
	check "... nft's error, the reason in xdpoff show" \
		sh -c "$XDPOFF show $RX | grep -qF 'rule table is full (4 rules)'"
	check_eq "... maps byte for byte as before" "$before" "$(maps_state)"
	check_fails "a batch failing midway (unsupported rule last) fails" \
		"Operation not supported" nft -f - <<'EOT'
add rule netdev t hw udp dport 3 drop
add rule netdev t hw udp dport 5 dup to eth3
EOT
	check_eq "... maps byte for byte as before" "$before" "$(maps_state)"
	h1=$(nft -a list chain netdev t hw | sed -n 's/.*udp dport 1 .*# handle \([0-9]*\)/\1/p')
	check_fails "a batch deleting a rule, then failing, fails" \
		"Operation not supported" nft -f - <<EOT
delete rule netdev t hw handle $h1
add rule netdev t hw udp dport 5 dup to eth3
EOT
	check_eq "... the deleted rule is back in its place, maps as before" \
		"$before" "$(maps_state)"
	check_fails "insert at a position refused for an offloaded chain" \
		"Operation not supported" nft insert rule netdev t hw udp dport 4 drop
	check_fails "replace refused for an offloaded chain" "Operation not supported" \
		nft replace rule netdev t hw handle "$h1" udp dport 5 drop
	check_eq "... maps as before" "$before" "$(maps_state)"

	# The rules map's keys are what the contract's key hash gives for each
	# rule (tests/lib/keyindex.py computes it from the maps: seed, mask words,
	# fields).
	check_eq "... the rules map keyed by each rule's key hash" \
		"3 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"
	reattach_default
}

# --- rules whose key hashes are alike all load -------------------------------
# keyindex.py collide finds variations of a rule (ip saddr, udp dport)
# whose 32-bit key hashes are alike under the device's seed, in pairs:
# the two rules of a pair share a hash and take dups 0 and 1 of it.
# pair_rules: the rules of the pairs, each pair's first then its second.
pair_rules() {
	awk '{ for (i = 1; i <= 3; i += 2)
		print "add rule netdev t hw ip saddr " $i " udp dport " $(i + 1) " counter drop" }' <<<"$pairs"
}
# pair_firsts: the handles of each pair's first rule.
pair_firsts() {
	local sa pa sb pb
	nft -a list chain netdev t hw > /tmp/sem-hw.nft
	while read -r sa pa sb pb; do
		sed -n "s/.*ip saddr $sa udp dport $pa .*# handle \([0-9]*\)$/\1/p" /tmp/sem-hw.nft
	done <<<"$pairs"
}
# dups_count: how many entries of the rules map have dup 0, how many dup 1
# (the key's second u32, in hex after the hash's).
dups_count() {
	local keys
	keys=$(map_dump $RX xdpoff_rules | cut -c9-16)
	echo "$(grep -c '^00000000$' <<<"$keys") $(grep -c '^01000000$' <<<"$keys")"
}
# mask_dups: xdpoff_mask.dups of the used mask slots (one here).
mask_dups() {
	python3 "$BPFMAP" member "$PIN/$RX/xdpoff_masks" dups
}
# pair_drops N: N frames to each pair's second rule, all dropped in XDP.
pair_drops() {
	local d0 sa pa sb pb
	d0=$(xdp_drops $RX)
	while read -r sa pa sb pb; do
		send $TX $RX --saddr "$sb" --daddr 10.0.0.2 --proto udp \
			--dport "$pb" --count "$1"
	done <<<"$pairs"
	WAIT_TIMEOUT=$TRAFFIC_WAIT wait_for xdp_drops_are $RX "$d0" $(( 4 * $1 ))
}

semantics_key_hashes() {
	nft flush ruleset
	"$XDPOFF" detach $RX
	check "attach with the default sizes" "$XDPOFF" attach $RX
	offload_chain $RX 'ip saddr 10.1.2.3 udp dport 1000 counter drop'
	pairs=$(python3 "$KEYINDEX" collide "$PIN/$RX" 4 2>&1)
	check_eq "4 pairs of rules of its mask whose key hashes are alike" 4 \
		"$(grep -c '^[0-9.]* [0-9]* [0-9.]* [0-9]*$' <<<"$pairs")"
	printf '%s\n' "$pairs" | diag
	check "the 8 rules of the pairs, in one transaction, load" \
		nft -f - <<<"$(pair_rules)"
	check_eq "... the rules map holds the 9 rules" 9 "$(map_count $RX xdpoff_rules)"
	check_eq "... 5 entries of dup 0, 4 of dup 1: each pair's second" "5 4" \
		"$(dups_count)"
	check "... the mask's dups is 2 or more ($(mask_dups))" test "$(mask_dups)" -ge 2
	check_eq "... keyed by each rule's key hash" \
		"9 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"
	check "... frames to each pair's second rule are dropped in XDP" pair_drops 2
	firsts=$(pair_firsts)
	check_eq "... the handles of each pair's first rule" 4 "$(wc -w <<<"$firsts")"
	check "each pair's first rule deleted, in one transaction" \
		nft -f - <<<"$(for h in $firsts; do echo "delete rule netdev t hw handle $h"; done)"
	check_eq "... the rules map holds 5 rules" 5 "$(map_count $RX xdpoff_rules)"
	check_eq "... keyed by each rule's key hash" \
		"5 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"
	check "... frames to each pair's second rule are still dropped in XDP" pair_drops 2

	# Rules of one mask that differ in their ports only have keys of their
	# own (xdpoff/xdpoff.h: the last product's top half is folded into the
	# key), none at a dup above 0.
	nft flush ruleset
	"$XDPOFF" detach $RX
	check "attach with --max-rules 64" "$XDPOFF" attach $RX --max-rules 64
	rules=()
	for p in $(seq 100 163); do rules+=("udp dport $p counter drop"); done
	check "64 rules of one mask (udp dport 100-163) offload with --max-rules 64" \
		offload_chain $RX "${rules[@]}"
	check_eq "... each keyed by its key hash" \
		"64 rules" "$(python3 "$KEYINDEX" check "$PIN/$RX" 2>&1)"
	check_eq "... 64 hashes: every entry at dup 0" "64 0" "$(dups_count)"
	reattach_default
}

# --- a full rules map ---------------------------------------------------------
# 4,096 random rules of one mask (distinct by construction) fill a rules
# map of 4,096 in one transaction; the next rule is refused and changes
# nothing.  XDPOFF_SEED repeats a run.
semantics_full_map() {
	nft flush ruleset
	"$XDPOFF" detach $RX
	check "attach with --max-rules 4096" "$XDPOFF" attach $RX --max-rules 4096
	seed=${XDPOFF_SEED:-$RANDOM}
	python3 -c '
import random, sys
seed, dev = int(sys.argv[1]), sys.argv[2]
# n: 10.0.0.0 + n // 65535, port 1 + n % 65535; distinct n, distinct rules
picks = random.Random(seed).sample(range((1 << 24) * 65535), 4096)
print("table netdev t {")
print("  chain hw { type filter hook ingress device %s priority 10;"
      " policy accept; flags offload;" % dev)
for n in picks:
    a = (10 << 24) + n // 65535
    print("    ip saddr %d.%d.%d.%d udp dport %d drop"
          % (a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255, 1 + n % 65535))
print("  }")
print("}")' "$seed" $RX > /tmp/sem-full.nft
	check "4,096 random rules (seed $seed, XDPOFF_SEED repeats it) in one transaction load" \
		nft -f /tmp/sem-full.nft
	check_eq "... the rules map holds 4096" 4096 "$(map_count $RX xdpoff_rules)"
	before=$(map_dump $RX xdpoff_rules)
	check_fails "one more rule is refused" "Operation not supported\|No space" \
		nft add rule netdev t hw ip saddr 11.0.0.1 udp dport 1 drop
	check "... xdpoff show says the table is full" \
		sh -c "$XDPOFF show $RX | grep -qF 'rule table is full (4096 rules)'"
	check_eq "... the rules map as before" "$before" "$(map_dump $RX xdpoff_rules)"
	reattach_default
}

tests_run
