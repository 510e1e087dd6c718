#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tc flower offload: keys, actions (drop, pass, mirred redirect with vlan
# and pedit edits), priorities, refusals, a shared block on two devices,
# and tc and nft offload on one device.  Real frames; decisions read back
# through tc -s, nft counters, ethtool's XDP drop counters and the maps.
#
# eth0 (namespace) -> eth1 (attached).  eth2 (attached) is the redirect
# target and the second device of the shared block; its peer eth3 sits in
# a namespace of its own, receives what eth2 sends and sends into eth2.
# A software nft chain on eth1 ("seen") counts what got past tc ingress.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
NS3=${PEER_NS}c
V4="--saddr 10.1.2.3 --daddr 10.0.0.2"
V6="--saddr 2001:db8:1::5 --daddr 2001:db8:9::2"
ALL_TESTS="
	tc_keys_l2_l3
	tc_keys_l4_vlan
	tc_refusals
	tc_priorities
	tc_and_nft
	tc_redirect
	tc_shared_block
	tc_filter_not_offloaded
	tc_module_unload
"

cleanup() {
	nft flush ruleset 2>/dev/null
	ip netns exec "$NS3" nft flush ruleset 2>/dev/null
	for d in eth1 eth2; do
		tc qdisc del dev $d ingress 2>/dev/null
		"$XDPOFF" detach $d >/dev/null 2>&1
		ip link set $d promisc off
	done
	unload_module
	release_ns "$NS3"
	cleanup_peer
}
trap cleanup EXIT

# tcf SELECTOR PREF FIELD: FIELD of the filter of priority PREF:
#   packets (tc -s, software plus XDP), in_hw (1 or 0), in_hw_count
# tcf_packets_is PREF N: eth1's ingress filter PREF counted N packets.
tcf_packets_is() { [ "$(tcf "dev $RX ingress" "$1" packets)" = "$2" ]; }

tcf() {
	tc -s -j filter show $1 | python3 -c '
import json, sys
pref, field, chain = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for f in json.load(sys.stdin):
    o = f.get("options")
    if f.get("pref") != pref or f.get("chain", 0) != chain or not o:
        continue
    if field == "packets":
        print(o["actions"][0]["stats"]["packets"])
    elif field == "in_hw":
        print(1 if o.get("in_hw") else 0)
    else:
        print(o.get(field, 0))
    sys.exit(0)
sys.exit(1)' "$2" "$3" "${TCF_CHAIN:-0}"
}
tcf_is() { [ "$(tcf "$1" "$2" "$3")" = "$4" ]; }

# tc_filter FLOWER-SPEC...: the only filter on eth1's ingress.
tc_filter() {
	tc filter del dev $RX ingress 2>/dev/null
	tc filter add dev $RX ingress "$@"
}

# key_case NAME "PROTOCOL-AND-FLOWER-KEYS" -- MATCHING -- OTHER
# A drop filter with the keys: the matching frames are dropped in XDP and
# counted by tc, the other ones reach the stack.
key_case() {
	local name=$1 keys=$2 match=() other=() d0
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do match+=("$1"); shift; done
	shift
	other=("$@")

	load_rules
	# shellcheck disable=SC2086
	if ! tc_filter prio 10 $keys action drop ||
	   [ "$(tcf "dev $RX ingress" 10 in_hw)" != 1 ]; then
		not_ok "key $name: filter in_hw"
		tc filter show dev $RX ingress | diag
		"$XDPOFF" show $RX | diag
		return
	fi
	d0=$(xdp_drops $RX)
	send $TX $RX "${match[@]}" --count 3
	if wait_for xdp_drops_are $RX "$d0" 3 && tcf_is "dev $RX ingress" 10 packets 3 &&
	   seen_is 0; then
		ok "key $name: matching frame dropped in XDP"
	else
		not_ok "key $name: matching frame dropped in XDP"
		echo "xdp drops +$(( $(xdp_drops $RX) - d0 )) tc $(tcf "dev $RX ingress" 10 packets) seen $(seen)" | diag
	fi
	send $TX $RX "${other[@]}" --count 2
	if wait_for seen_is 2 && xdp_drops_are $RX "$d0" 3 &&
	   tcf_is "dev $RX ingress" 10 packets 3; then
		ok "key $name: other frame passes"
	else
		not_ok "key $name: other frame passes"
		echo "xdp drops +$(( $(xdp_drops $RX) - d0 )) tc $(tcf "dev $RX ingress" 10 packets) seen $(seen)" | diag
	fi
}

setup_peer $TX
insmod "$XDPOFF_KO"
"$XDPOFF" attach $RX
ip link set $RX promisc on
move_to_ns eth3 "$NS3"
ip -n "$NS3" link set eth3 promisc on
ip link set eth2 up
ip link set eth2 promisc on
"$XDPOFF" attach eth2

blocks() { "$XDPOFF" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["blocks"])'; }

# tc_ingress: the ingress qdisc on eth1 that most cases use (binding its
# block to xdpoff); tc_case_end: the common setup's state again, no qdisc
# on eth1, no ruleset.
tc_ingress() { tc qdisc add dev $RX ingress; }
tc_case_end() {
	tc qdisc del dev $RX ingress 2>/dev/null
	nft flush ruleset
}

# --- keys ---------------------------------------------------------------------
tc_keys_l2_l3() {
	check "ingress qdisc binds its block to the device" tc qdisc add dev $RX ingress
	check_eq "... xdpoff show counts it" 1 "$(blocks $RX)"

	key_case "dst_ip and udp dst_port" "protocol ip flower dst_ip 10.0.0.2 ip_proto udp dst_port 53" -- \
		$V4 --proto udp --dport 53 -- $V4 --proto udp --dport 54
	key_case "src_ip prefix (ipv6)" "protocol ipv6 flower src_ip 2001:db8:1::/48" -- \
		$V6 --proto udp -- --saddr 2001:db8:2::5 --daddr 2001:db8:9::2 --proto udp
	key_case "src_mac" "protocol all flower src_mac 02:00:00:00:00:aa" -- \
		--smac 02:00:00:00:00:aa $V4 --proto udp -- --smac 02:00:00:00:00:bb $V4 --proto udp
	key_case "ip_tos masked" "protocol ip flower ip_tos 0x10/0xfc" -- \
		$V4 --proto udp --tos 0x11 -- $V4 --proto udp --tos 0x20
	key_case "ip_ttl" "protocol ip flower ip_ttl 5" -- \
		$V4 --proto udp --ttl 5 -- $V4 --proto udp --ttl 6
	key_case "ip_tos (ipv6 traffic class)" "protocol ipv6 flower ip_tos 0xb8" -- \
		$V6 --proto udp --tos 0xb8 -- $V6 --proto udp --tos 0
	tc_case_end
}

tc_keys_l4_vlan() {
	tc_ingress
	key_case "tcp_flags: syn without ack" "protocol ip flower ip_proto tcp tcp_flags 0x2/0x12" -- \
		$V4 --flags syn -- $V4 --flags 0x12
	key_case "icmp type and code" "protocol ip flower ip_proto icmp type 8 code 0" -- \
		$V4 --proto icmp --icmp-type 8 -- $V4 --proto icmp --icmp-type 0
	key_case "icmpv6 type" "protocol ipv6 flower ip_proto icmpv6 type 128" -- \
		$V6 --proto icmpv6 --icmp-type 128 -- $V6 --proto icmpv6 --icmp-type 129
	key_case "dst_port range" "protocol ip flower ip_proto udp dst_port 1000-2000" -- \
		$V4 --proto udp --dport 2000 -- $V4 --proto udp --dport 2001
	key_case "src_port range (tcp)" "protocol ip flower ip_proto tcp src_port 100-200" -- \
		$V4 --sport 100 -- $V4 --sport 99
	key_case "vlan_id and vlan_prio" "protocol 802.1q flower vlan_id 5 vlan_prio 3" -- \
		--vlan 5 --vlan-pcp 3 $V4 --proto udp -- --vlan 5 --vlan-pcp 2 $V4 --proto udp
	key_case "vlan_ethtype and dst_ip behind the tag" \
		"protocol 802.1q flower vlan_id 5 vlan_ethtype ip dst_ip 10.0.0.2" -- \
		--vlan 5 $V4 --proto udp -- --vlan 5 --saddr 10.1.2.3 --daddr 10.0.0.3 --proto udp

	# A fragment carries no ports for flower: software decides it.
	load_rules
	tc_filter prio 10 protocol ip flower ip_proto udp dst_port 53 action drop
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 53 --mf --count 2
	check "first fragment: no ports for flower, passes as in software" wait_for seen_is 2
	check "... XDP dropped none" xdp_drops_are $RX "$d0" 0

	tc_filter prio 10 protocol ip flower indev eth2 ip_proto udp action drop
	check_eq "indev of another device: in_hw, but nothing in eth1's maps" "1 0" \
		"$(tcf "dev $RX ingress" 10 in_hw) $(map_count $RX xdpoff_rules)"
	tc_case_end
}

# --- refusals: the filter stays in software --------------------------------------
# tc passes drivers its extack for skip_sw filters only, which it refuses
# here: the reason is in `xdpoff show`.
refused() {
	local name=$1 pattern=$2 out
	shift 2
	tc filter del dev $RX ingress 2>/dev/null
	if ! out=$(tc filter add dev $RX ingress "$@" 2>&1); then
		not_ok "$name: the filter is added (software only)"
		printf '%s\n' "$out" | diag
		return
	fi
	if [ "$(tcf "dev $RX ingress" 10 in_hw)" = 0 ] &&
	   "$XDPOFF" show $RX | grep -q -- "last error: xdpoff: .*$pattern"; then
		ok "$name: not in hw, xdpoff show says '$pattern'"
	else
		not_ok "$name: not in hw, xdpoff show says '$pattern'"
		{ printf '%s\n' "$out"; tc filter show dev $RX ingress; "$XDPOFF" show $RX; } | diag
	fi
}

tc_refusals() {
	tc_ingress
	refused "goto chain" "goto chain is not supported" \
		prio 10 protocol ip flower ip_proto udp action goto chain 1
	refused "mirred mirror" "XDP cannot clone frames" \
		prio 10 protocol ip flower ip_proto udp action mirred egress mirror dev eth2
	refused "mirred ingress redirect" "redirect to ingress is not supported" \
		prio 10 protocol ip flower ip_proto udp action mirred ingress redirect dev eth2
	refused "police" "police is not supported" \
		prio 10 protocol ip flower ip_proto udp action police rate 1mbit burst 10k conform-exceed drop/pipe
	refused "pedit of ip" "pedit of headers other than the Ethernet addresses" \
		prio 10 protocol ip flower ip_proto udp action pedit ex munge ip ttl set 1 pipe action drop
	TCF_CHAIN=1 refused "chain 1" "filters in chains other than 0 are not supported" \
		chain 1 prio 10 protocol ip flower ip_proto udp action drop
	tc filter del dev $RX ingress chain 1
	refused "ip_flags frag" "fragment flags is not supported" \
		prio 10 protocol ip flower ip_flags frag action drop
	tc filter del dev $RX ingress
	check_fails "skip_sw: the kernel refuses it (indirect offload only)" \
		"Operation not supported" \
		tc filter add dev $RX ingress prio 10 protocol ip flower skip_sw ip_proto udp action drop
	check "skip_hw: added" \
		tc filter add dev $RX ingress prio 10 protocol ip flower skip_hw ip_proto udp action drop
	check_eq "... and not in the maps" 0 "$(map_count $RX xdpoff_rules)"
	# Standalone actions reach every indirect driver (TC_SETUP_ACT, with no
	# device, on 6.1 and 6.12): xdpoff declines them.
	check "a standalone tc action is added" tc actions add action drop index 77
	check "... not in hardware" \
		sh -c "tc actions get action gact index 77 | grep -q not_in_hw"
	check "... and deleted" tc actions del action gact index 77
	tc_case_end
}

# --- priorities ------------------------------------------------------------------------
tc_priorities() {
	tc_ingress
	load_rules
	tc filter del dev $RX ingress
	tc filter add dev $RX ingress prio 1 protocol ip flower ip_proto udp action pass
	tc filter add dev $RX ingress prio 2 protocol ip flower ip_proto udp dst_port 11 action drop
	send $TX $RX $V4 --proto udp --dport 11 --count 3
	check "prio 1 pass before prio 2 drop: passes" wait_for seen_is 3
	check_eq "... counted by the pass filter only" "3 0" \
		"$(tcf "dev $RX ingress" 1 packets) $(tcf "dev $RX ingress" 2 packets)"
	load_rules
	tc filter del dev $RX ingress
	tc filter add dev $RX ingress prio 2 protocol ip flower ip_proto udp action pass
	tc filter add dev $RX ingress prio 1 protocol ip flower ip_proto udp dst_port 11 action drop
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 11 --count 3
	check "prio 1 drop before prio 2 pass: dropped in XDP" wait_for xdp_drops_are $RX "$d0" 3
	check_eq "... counted by the drop filter only, stack saw none" "3 0 0" \
		"$(tcf "dev $RX ingress" 1 packets) $(tcf "dev $RX ingress" 2 packets) $(seen)"
	tc_case_end
}

# --- tc and nft offload on one device -------------------------------------------------
tc_and_nft() {
	tc_ingress
	load_rules 'udp dport 7 counter drop comment "d7"' 'udp dport 8 counter accept comment "a8"'
	tc filter del dev $RX ingress
	tc filter add dev $RX ingress prio 1 protocol ip flower ip_proto udp dst_port 7 action pass
	tc filter add dev $RX ingress prio 2 protocol ip flower ip_proto udp dst_port 8 action drop
	check_eq "xdpoff show: tc filters run before the nft chain" "tc tc nft nft" \
		"$("$XDPOFF" show $RX --json | python3 -c 'import json,sys; print(" ".join(r["hook"] for r in json.load(sys.stdin)[0]["rules"]))')"
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 7 --count 4
	check "tc pass, then nft drop: dropped in XDP" wait_for xdp_drops_are $RX "$d0" 4
	check_eq "... tc and nft counted each frame once" "4 4" \
		"$(tcf "dev $RX ingress" 1 packets) $(nft_counter netdev t hw d7)"
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 8 --count 4
	check "tc drop before nft accept: dropped in XDP" wait_for xdp_drops_are $RX "$d0" 4
	check_eq "... tc counted them, nft never saw them" "4 0 0" \
		"$(tcf "dev $RX ingress" 2 packets) $(nft_counter netdev t hw a8) $(seen)"

	# vlan pop and go on: the stack pops (XDP must not decide for the nft
	# chain, which sees the frame without its tag).
	load_rules 'vlan id 5 counter drop comment "v5"'
	tc_filter prio 10 protocol 802.1q flower vlan_id 5 action vlan pop
	if [ "$(tcf "dev $RX ingress" 10 in_hw)" = 1 ]; then
		ok "vlan pop then continue: in_hw, as a rule for software"
	else
		not_ok "vlan pop then continue: in_hw, as a rule for software"
		{ tc filter show dev $RX ingress; "$XDPOFF" show $RX; } | diag
	fi
	d0=$(xdp_drops $RX)
	send $TX $RX --vlan 5 $V4 --proto udp --count 3
	check "... the stack pops the tag, nft's vlan rule no longer matches" \
		wait_for seen_is 3
	check_eq "... XDP dropped none, nft counted none" "0 0" \
		"$(( $(xdp_drops $RX) - d0 )) $(nft_counter netdev t hw v5)"
	tc_case_end
}

# --- redirect, with edits ------------------------------------------------------------
# What eth3 receives, counted by nft in its namespace.
rcv() { ip netns exec "$NS3" nft -j list chain netdev r in | python3 -c '
import json, sys
for i in json.load(sys.stdin)["nftables"]:
    r = i.get("rule")
    if r and r.get("comment") == sys.argv[1]:
        print([e for e in r["expr"] if "counter" in e][0]["counter"]["packets"])' "$1"; }
rcv_is() { [ "$(rcv "$1")" = "$2" ]; }

redirect_case() {
	local name=$1 counter=$2 edits=$3 base
	shift 3
	load_rules
	base=$(rcv "$counter")
	# shellcheck disable=SC2086
	tc_filter prio 10 protocol all flower $edits action mirred egress redirect dev eth2
	send $TX $RX "$@" --count 5
	if wait_for rcv_is "$counter" $((base + 5)) && seen_is 0 &&
	   tcf_is "dev $RX ingress" 10 packets 5; then
		ok "redirect $name: out of eth2 as edited, counted by tc"
	else
		not_ok "redirect $name: out of eth2 as edited, counted by tc"
		echo "eth3 '$counter' +$(( $(rcv "$counter") - base )) seen $(seen) tc $(tcf "dev $RX ingress" 10 packets)" | diag
		{ "$XDPOFF" show $RX; tc -s filter show dev $RX ingress; } | diag
	fi
}

tc_redirect() {
	tc_ingress
	ip netns exec "$NS3" nft -f - <<EOT
table netdev r {
	chain in {
		type filter hook ingress device eth3 priority 0;
		ether daddr 02:00:00:00:00:99 counter comment "newmac"
		vlan id 7 counter comment "v7"
		vlan id 9 vlan pcp 3 counter comment "v9p3"
		ether type ip udp dport 99 counter comment "untagged99"
	}
}
EOT
	redirect_case "(mirred egress)" untagged99 "" $V4 --proto udp --dport 99
	redirect_case "with vlan pop" untagged99 "action vlan pop pipe" \
		--vlan 5 $V4 --proto udp --dport 99
	redirect_case "with vlan push id 7" v7 "action vlan push id 7 pipe" \
		$V4 --proto udp --dport 98
	redirect_case "with vlan modify id 9 (priority kept)" v9p3 \
		"action vlan modify id 9 pipe" --vlan 5 --vlan-pcp 3 $V4 --proto udp --dport 98
	redirect_case "with pedit eth dst" newmac \
		"action pedit ex munge eth dst set 02:00:00:00:00:99 pipe" $V4 --proto udp --dport 98
	check_fails "detach of the redirect target refused" "fwd rules target" \
		"$XDPOFF" detach eth2
	tc filter del dev $RX ingress
	tc_case_end
	ip netns exec "$NS3" nft flush ruleset
}

# --- a shared block on eth1 and eth2 -------------------------------------------------
nrules() { map_count "$1" xdpoff_rules; }
tc_shared_block() {
	load_rules
	check "block 22 on eth1" tc qdisc add dev $RX ingress_block 22 ingress
	check "block 22 on eth2" tc qdisc add dev eth2 ingress_block 22 ingress
	check "filter added once to the block" \
		tc filter add block 22 prio 1 protocol ip flower ip_proto udp dst_port 55 action drop
	check_eq "... in the maps of both devices" "1 1" "$(nrules $RX) $(nrules eth2)"
	check_eq "... one block cb for both: in_hw_count 1" 1 "$(tcf "block 22" 1 in_hw_count)"
	d1=$(xdp_drops $RX)
	d2=$(xdp_drops eth2)
	send $TX $RX $V4 --proto udp --dport 55 --count 3
	send_from "$NS3" eth3 eth2 $V4 --proto udp --dport 55 --count 4
	check "frames into both devices dropped in XDP" \
		wait_for xdp_drops_are eth1 $d1 3 eth2 $d2 4
	check_eq "... one tc counter for both" 7 "$(tcf "block 22" 1 packets)"
	check "unbind eth2" tc qdisc del dev eth2 ingress
	check_eq "... eth2's maps are empty, eth1's keep the rule" "1 0" "$(nrules $RX) $(nrules eth2)"
	d1=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 55 --count 2
	check "... eth1 still drops in XDP" wait_for xdp_drops_are $RX "$d1" 2
	check "a filter added while eth2 is away" \
		tc filter add block 22 prio 2 protocol ip flower ip_proto udp dst_port 56 action drop
	check_fails "eth2 cannot join while filters of the block are offloaded (tc's rule)" \
		"a device joins a shared block only while no filter of it is offloaded" \
		tc qdisc add dev eth2 ingress_block 22 ingress
	check_eq "... and nothing of it stays on eth2" "2 0 0" \
		"$(nrules $RX) $(nrules eth2) $(blocks eth2)"
	tc filter del block 22
	check "with the block empty, eth2 joins again" tc qdisc add dev eth2 ingress_block 22 ingress
	check "a filter added now" \
		tc filter add block 22 prio 3 protocol ip flower ip_proto udp dst_port 56 action drop
	check_eq "... is installed on both" "1 1" "$(nrules $RX) $(nrules eth2)"
	d2=$(xdp_drops eth2)
	send_from "$NS3" eth3 eth2 $V4 --proto udp --dport 56 --count 2
	check "... and drops there in XDP" wait_for xdp_drops_are eth2 "$d2" 2
	tc qdisc del dev eth2 ingress
	check "last unbind" tc qdisc del dev $RX ingress
	check_eq "... every map is empty, no block left" "0 0 0 0" \
		"$(nrules $RX) $(nrules eth2) $(blocks $RX) $(blocks eth2)"
	nft flush ruleset
}

# --- a filter xdpoff cannot take: no verdict from its priority on ---------------
# It stays in software only, where it runs before the later filters: XDP
# must leave the frames of those to software, or it could decide a frame
# that filter takes (a verdict or a counter would change).
tc_filter_not_offloaded() {
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress prio 5 protocol ip flower ip_proto udp dst_port 60 action drop
	tc filter add dev $RX ingress prio 6 protocol arp flower arp_op request action drop
	tc filter add dev $RX ingress prio 7 protocol ip flower ip_proto udp dst_port 61 action drop
	check_eq "an arp filter between two others is not in hw, they are" "1 0 1" \
		"$(tcf "dev $RX ingress" 5 in_hw) $(tcf "dev $RX ingress" 6 in_hw) $(tcf "dev $RX ingress" 7 in_hw)"
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 60 --count 3
	check "the filter before it still drops in XDP" wait_for xdp_drops_are $RX "$d0" 3
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 61 --count 3
	check "the filter after it: its frames go up, tc drops them in software" \
		wait_for tcf_packets_is 7 3
	check "... none of them dropped in XDP" xdp_drops_are $RX "$d0" 0
	tc filter del dev $RX ingress prio 6
	d0=$(xdp_drops $RX)
	send $TX $RX $V4 --proto udp --dport 61 --count 3
	check "with the arp filter gone, XDP drops for the later filter again" \
		wait_for xdp_drops_are $RX "$d0" 3
	tc qdisc del dev $RX ingress
	nft flush ruleset
}

# --- module unload with filters offloaded ------------------------------------------
tc_module_unload() {
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress prio 10 protocol ip flower ip_proto udp dst_port 57 action drop
	"$XDPOFF" detach eth2
	check_fails "detach while the tc block is bound refused" "offloaded chains are bound" \
		"$XDPOFF" detach $RX
	tc qdisc del dev $RX ingress
	"$XDPOFF" detach $RX
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress prio 10 protocol ip flower ip_proto udp dst_port 57 action drop
	check "a qdisc added before attach stays in software" \
		sh -c "[ \"\$(tc -j filter show dev $RX ingress | grep -c not_in_hw)\" = 1 ]"
	tc qdisc del dev $RX ingress
	"$XDPOFF" attach $RX
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress prio 10 protocol ip flower ip_proto udp dst_port 57 action drop
	check "rmmod with a tc filter offloaded" rmmod xdpoff
	check_eq "... the filter stays, in software" 0 "$(tcf "dev $RX ingress" 10 in_hw)"
	tc qdisc del dev $RX ingress
	insmod "$XDPOFF_KO"
	"$XDPOFF" detach $RX 2>/dev/null
	"$XDPOFF" attach $RX >/dev/null
	"$XDPOFF" attach eth2 >/dev/null
}

tests_run
