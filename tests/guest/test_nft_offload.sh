#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The walking skeleton end to end: the netfilter series' own example rule
# offloaded through xdpoff on virtio-net, traffic from the peer NIC.
#
# eth0 (in a namespace) <-> eth1 (attached); eth2 stays unattached.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
DADDR=10.0.0.2
RULESET=/tmp/xdpoff-seed.nft
ALL_TESTS="
	nft_offload_attach
	nft_offload_seed_rule
	nft_offload_refused_rules
	nft_offload_delete_flush
	nft_offload_device_added
	nft_offload_detach_rmmod
"

# back_to_setup: what the common setup leaves: no ruleset, nothing
# attached, no module.
back_to_setup() {
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach "$RX" >/dev/null 2>&1
	"$XDPOFF" detach eth2 >/dev/null 2>&1
	unload_module
	return 0
}
cleanup() {
	back_to_setup
	cleanup_peer
}
trap cleanup EXIT

# The offloaded chain holds the seed rule; a software-only chain that runs
# *before* it (lower priority) counts what reaches the stack at all.
cat > "$RULESET" <<EOT
table netdev x {
	chain hw {
		type filter hook ingress device $RX priority 10; policy accept;
		flags offload;
		ip daddr $DADDR tcp dport 22 counter drop comment "seed"
	}
	chain sw {
		type filter hook ingress device $RX priority -10; policy accept;
		ip daddr $DADDR tcp dport 22 counter comment "sw22"
		ip daddr $DADDR tcp dport 23 counter comment "sw23"
		ip daddr $DADDR udp dport 22 counter comment "swudp"
	}
}
EOT

# attached: the module loaded, RX attached; seeded: with the seed ruleset
# too.
attached() {
	load_module && "$XDPOFF" attach "$RX" >/dev/null
}
seeded() {
	attached && nft -f "$RULESET"
}

# bpftool reads the map's BTF (bpf/xdpoff_btf.h): addresses and ports in
# wire order, the order in its parts.  seed_entry FIELD...: those fields
# of the entry's value, as bpftool -j prints them (bit fields as "0x.."
# strings, here numbers), one per line.
seed_entry() {
	bpftool -j map lookup pinned "$PIN/$RX/xdpoff_rules" \
		key $(python3 "$BPFMAP" first "$PIN/$RX/xdpoff_rules" |
		      sed 's/^key \(.*\) value .*/\1/') | python3 -c '
import json, sys
v = json.load(sys.stdin)["formatted"]["value"]
for path in sys.argv[1:]:
    x = v
    for k in path.split("."):
        x = x[k]
    if isinstance(x, str) and x.startswith("0x"):
        x = int(x, 16)
    print(path, json.dumps(x, separators=(",", ":")))' "$@"
}

setup_peer "$TX"

# Errors before the module is there, attach, and a chain on a device that
# is not attached.
nft_offload_attach() {
	check_fails "offload chain refused without the module" \
		"Operation not supported" nft -f "$RULESET"
	check_fails "attach without the module says so" "module" \
		"$XDPOFF" attach "$RX"
	check "failed attach leaves no pins" test ! -e "$PIN/$RX"

	check "module loads" insmod "$XDPOFF_KO"
	check_fails "attach of a missing device" "no such device" \
		"$XDPOFF" attach eth9
	# A copy the unprivileged user can run, wherever the checkout lives.
	check_fails "attach as an unprivileged user" "must be run as root" \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$(world_copy "$XDPOFF")" attach "$RX"
	check "attach $RX" "$XDPOFF" attach "$RX"
	check "XDP program attached in native mode" \
		sh -c "ip -d link show $RX | grep -q 'xdp '"
	check "rules, masks, meta, stats maps pinned" \
		test -e "$PIN/$RX/xdpoff_rules" -a -e "$PIN/$RX/xdpoff_masks" \
		-a -e "$PIN/$RX/xdpoff_meta" -a -e "$PIN/$RX/xdpoff_stats"
	check_fails "second attach refused" "already attached" "$XDPOFF" attach "$RX"

	# A chain on a device that is not attached.
	sed "s/device $RX/device eth2/" "$RULESET" > /tmp/xdpoff-eth2.nft
	check_fails "offload chain on an unattached device refused" \
		"Operation not supported" nft -f /tmp/xdpoff-eth2.nft
	check_eq "nothing left of the refused ruleset" "" "$(nft list ruleset)"
	back_to_setup
}

nft_offload_seed_rule() {
	attached
	check "offloaded ruleset loads" nft -f "$RULESET"
	check_eq "one entry in the rules map" 1 "$(map_count $RX xdpoff_rules)"
	seed_handle=$(nft -a list chain netdev x hw | sed -n 's/.*comment "seed" # handle \([0-9]*\)/\1/p')
	check_eq "bpftool shows the rule's key in wire order" \
		"fields.daddr [10,0,0,2,0,0,0,0,0,0,0,0,0,0,0,0]
fields.dport [0,22]
fields.n_proto [8,0]
fields.ip_proto 6" \
		"$(seed_entry fields.daddr fields.dport fields.n_proto fields.ip_proto)"
	check_eq "... and its order: nft, chain priority 10, rule handle $seed_handle" \
		"order.nft.nft 1
order.nft.prio 10
order.nft.handle $seed_handle" \
		"$(seed_entry order.nft.nft order.nft.prio order.nft.handle)"

	drops0=$(xdp_drops $RX)
	send $TX $RX --saddr 10.0.0.1 --daddr $DADDR --dport 22 --count 20
	check "matching SYNs counted by the XDP rule" \
		wait_for xdp_packets_is $RX 0 20
	check_eq "virtio-net counted 20 XDP drops" 20 $(( $(xdp_drops $RX) - drops0 ))
	check_eq "the stack never saw them (software chain before it)" 0 \
		"$(nft_counter netdev x sw sw22)"
	check_eq "nft counter of the offloaded rule shows the drops" 20 \
		"$(nft_counter netdev x hw seed)"
	check_eq "repeated dumps do not count twice" 20 \
		"$(nft list ruleset >/dev/null; nft_counter netdev x hw seed)"
	check_eq "bytes counted from the IP header, as software does (20 x 40)" \
		800 "$(nft_counter netdev x hw seed bytes)"

	send $TX $RX --saddr 10.0.0.1 --daddr $DADDR --dport 23 --count 7
	check "non-matching frames pass to the stack" \
		wait_for counter_is netdev x sw sw23 7
	check_eq "XDP rule counter unchanged by them" 20 \
		"$(xdp_rule_packets $RX 0)"
	send $TX $RX --proto udp --saddr 10.0.0.1 --daddr $DADDR --dport 22 --count 3
	check "udp to port 22 passes the tcp rule" \
		wait_for counter_is netdev x sw swudp 3
	back_to_setup
}

# Refused rules leave the maps alone.
nft_offload_refused_rules() {
	seeded
	before=$(map_dump $RX xdpoff_rules; map_dump $RX xdpoff_masks)
	check_fails "tcp dport != 22 refused" "Operation not supported" \
		nft add rule netdev x hw tcp dport != 22 drop
	check_fails "set lookup refused" "Operation not supported" \
		nft add rule netdev x hw tcp dport { 22, 23 } drop
	check_fails "match on ip ttl refused" "Operation not supported" \
		nft add rule netdev x hw ip ttl 3 drop
	# nf_tables refuses those itself; these reach the driver, which refuses.
	check_fails "dup refused by the driver" \
		"Operation not supported" nft add rule netdev x hw ip saddr 10.0.0.1 dup to eth2
	check "driver's reason visible in xdpoff show" \
		sh -c "$XDPOFF show $RX | grep -q 'last error: xdpoff: mirror and dup are not supported: XDP cannot clone frames'"
	check_fails "fwd to a device without xdpoff refused by the driver" \
		"Operation not supported" \
		nft add rule netdev x hw ip daddr $DADDR fwd to eth2
	check "its reason in xdpoff show --json" \
		sh -c "$XDPOFF show $RX --json | grep -q 'fwd target must be attached with xdpoff'"
	check_eq "maps unchanged by refused rules" "$before" \
		"$(map_dump $RX xdpoff_rules; map_dump $RX xdpoff_masks)"
	check_eq "rule table unchanged by refused rules" 1 \
		"$(wc -l < /sys/kernel/debug/xdpoff/$RX/rules)"
	back_to_setup
}

nft_offload_delete_flush() {
	seeded
	handle=$(nft -a list chain netdev x hw | sed -n 's/.*comment "seed" # handle \([0-9]*\)/\1/p')
	check "nft delete rule" nft delete rule netdev x hw handle "$handle"
	check_eq "rules map empty after delete" 0 "$(map_count $RX xdpoff_rules)"
	send $TX $RX --saddr 10.0.0.1 --daddr $DADDR --dport 22 --count 5
	check "deleted rule no longer drops in XDP" \
		wait_for counter_is netdev x sw sw22 5
	check "rule added again" nft add rule netdev x hw ip daddr $DADDR tcp dport 22 drop
	check_eq "rules map has it again" 1 "$(map_count $RX xdpoff_rules)"
	check "nft flush ruleset" nft flush ruleset
	check_eq "rules map empty after flush" 0 "$(map_count $RX xdpoff_rules)"
	check_eq "masks released after flush" 0 \
		"$(bpftool -j map lookup pinned $PIN/$RX/xdpoff_meta key 0 0 0 0 | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("formatted", d)["value"]["nr_masks"])')"
	back_to_setup
}

# A device added to an offloaded chain.
nft_offload_device_added() {
	attached
	# 6.1 refuses to add devices to an existing chain (File exists); 6.12
	# adds them, but nf_tables offloads new chains only, not chain updates
	# (nf_tables_offload.c): the added device runs the chain in software, even
	# attached to xdpoff, and the chain's delete unbinds a device that was
	# never bound (the module's -ENOENT, which nf_tables ignores).
	check "eth2 attached too" "$XDPOFF" attach eth2
	nft -f "$RULESET"
	grow="add chain netdev x hw { type filter hook ingress devices = { $RX, eth2 } priority 10; policy accept; flags offload; }"
	case "$(uname -r)" in
	6.1.*)	check_fails "6.1: adding eth2 to the offloaded chain is refused" \
			"File exists" nft "$grow" ;;
	*)	check "6.12: adding eth2 to the offloaded chain is taken" nft "$grow"
		check "... the chain is on both" \
			sh -c "nft list chain netdev x hw | grep -q 'devices = { eth1, eth2 }'"
		check_eq "... but offloaded on eth1 only: no rule in eth2's maps" "1 0" \
			"$(map_count $RX xdpoff_rules) $(map_count eth2 xdpoff_rules)" ;;
	esac
	check "the chain is deleted" nft delete chain netdev x hw
	check_eq "... eth1's maps empty, eth2's too" "0 0" \
		"$(map_count $RX xdpoff_rules) $(map_count eth2 xdpoff_rules)"
	check "eth2 detaches (no block left bound)" "$XDPOFF" detach eth2
	nft flush ruleset
	back_to_setup
}

# Detach refuses while bound; rmmod unbinds.
nft_offload_detach_rmmod() {
	attached
	nft -f "$RULESET"
	check_fails "detach refused while an offloaded chain is bound" \
		"delete them first" "$XDPOFF" detach "$RX"
	check_eq "refused detach left the rule in place" 1 \
		"$(map_count $RX xdpoff_rules)"
	check "rmmod with the ruleset loaded" rmmod xdpoff
	check_eq "rmmod removed the rule from the map" 0 \
		"$(map_count $RX xdpoff_rules)"
	check "the chain stays, in software" nft list chain netdev x hw
	send $TX $RX --saddr 10.0.0.1 --daddr $DADDR --dport 22 --count 4
	check "frames reach the stack after rmmod (software chain sees them)" \
		wait_for counter_is netdev x sw sw22 4
	check "detach without the module cleans up" "$XDPOFF" detach "$RX"
	check "no XDP program left" sh -c "! ip -d link show $RX | grep -q 'xdp '"
	check "no pins left" test ! -e "$PIN/$RX"

	nft flush ruleset
	check "module loads again" insmod "$XDPOFF_KO"
	check "attach again" "$XDPOFF" attach "$RX"
	check "detach with no chain bound" "$XDPOFF" detach "$RX"
	check "rmmod when idle" rmmod xdpoff
	back_to_setup
}

tests_run
