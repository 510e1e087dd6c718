#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Hot-unplug of the attached virtio-net NIC (QEMU device_del, run on the
# host by tests/vm/monitor-agent) with nft and tc rules offloaded and
# frames arriving: no oops, the module forgets the device, nf_tables'
# chain on it goes away (6.1) or stays without a device (6.12), a chain it
# shared with eth1 keeps working there;
# the NIC plugged back in is attached and offloads again.
# Runs last: eth3 is away for a while.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth3
TX=eth2
NIC=nic3			# QEMU's id of eth3 (tests/vm/run)
MAC=52:54:00:00:00:03
V4="--saddr 10.3.0.1 --daddr 10.0.0.2"
ALL_TESTS="
	unplug_replug
"

cleanup() {
	tc qdisc del dev $RX ingress 2>/dev/null
	cleanup_offload $RX eth1
}
trap cleanup EXIT

if ! vm_monitor info pci >/dev/null; then
	skip "hot-unplug of an attached NIC" "no QEMU monitor (not run by tests/vm/run)"
	exit 0
fi

setup_peer $TX
load_module
"$XDPOFF" attach $RX
"$XDPOFF" attach eth1
ip link set $RX promisc on

# device_del of eth3, frames arriving, then device_add: one scenario.
unplug_replug() {
	# nf_tables frees chain hw with eth3; chain multi lives on with eth1.
	nft -f - <<EOT
table netdev t {
	chain hw {
		type filter hook ingress device $RX priority 10; policy accept; flags offload;
		udp dport 1 counter drop
	}
	chain multi {
		type filter hook ingress devices = { eth1, $RX } priority 20; policy accept; flags offload;
		udp dport 7 counter drop
	}
}
EOT
	tc qdisc add dev $RX ingress
	tc filter add dev $RX ingress pref 1 protocol ip flower ip_proto udp dst_port 2 action drop
	check_eq "two nft chains and a tc filter offloaded on eth3, one chain on eth1 too" \
		"3 1" "$(map_count $RX xdpoff_rules) $(map_count eth1 xdpoff_rules)"
	start_traffic $TX $RX "1 2" $V4
	d0=$(xdp_drops $RX)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... frames dropped in XDP" wait_for xdp_dropped_since $RX $d0 10

	check "device_del $NIC (eth3) through the QEMU monitor, frames arriving" \
		vm_monitor device_del $NIC
	WAIT_TIMEOUT=60 check "... the guest lets the NIC go" wait_for sh -c "! ip link show $RX"
	stop_traffic
	check "... the module forgets it" sh -c "[ ! -e /sys/kernel/debug/xdpoff/$RX ]"
	# 6.1's nft_netdev_event() frees a netdev chain with its last device; 6.12
	# keeps it, without a device (nft_chain_filter.c), and never unbinds it:
	# the module takes its block cb off the chain itself.
	case "$(uname -r)" in
	6.1.*)	check "... nf_tables' chain on it went away (6.1)" \
			sh -c "! nft list chain netdev t hw" ;;
	*)	check_eq "... nf_tables' chain on it stays, without a device (6.12)" \
			"type filter hook ingress priority filter + 10; policy accept; flags offload;" \
			"$(nft list chain netdev t hw | grep -o 'type filter hook.*' | tr -d '\t')" ;;
	esac
	hooks=$(nft list chain netdev t multi | grep -o 'hook ingress .* priority' | tr -d '"')
	check "... the shared chain stays, on eth1 only ($hooks)" \
		sh -c "echo '$hooks' | grep -q eth1 && ! echo '$hooks' | grep -q $RX"
	check "... a rule added to it" nft add rule netdev t multi udp dport 8 counter drop
	check_eq "... is offloaded on eth1" 2 "$(map_count eth1 xdpoff_rules)"
	check "... the chain deleted" nft delete chain netdev t multi
	check_eq "... leaves eth1's maps empty" 0 "$(map_count eth1 xdpoff_rules)"
	check "... xdpoff show says the device is gone" \
		sh -c "$XDPOFF show $RX 2>&1 | grep -q 'device is gone'"
	check "... xdpoff detach removes what is left" "$XDPOFF" detach $RX
	check "... nothing pinned for it" sh -c "[ ! -e $PIN/$RX ]"
	check "the module unloads and loads with the NIC gone" \
		sh -c "$XDPOFF detach eth1 && rmmod xdpoff && insmod $XDPOFF_KO"
	if nft list chain netdev t hw >/dev/null 2>&1; then
		# 6.12: the device-less chain outlived the module that was bound to it.
		check "... the device-less chain is listed after the module went" \
			nft list ruleset
		check "... takes a rule (software: no device to offload to)" \
			nft add rule netdev t hw udp dport 9 counter drop
		check "... and is deleted" nft delete table netdev t
	fi

	plug_back $NIC n3 $MAC $RX
	ip link set $RX promisc on
	check "attach the new NIC" "$XDPOFF" attach $RX
	offload_chain $RX 'udp dport 1 counter drop'
	check_eq "... an offload chain on it offloads again" 1 "$(map_count $RX xdpoff_rules)"
	start_traffic $TX $RX "1" $V4
	d0=$(xdp_drops $RX)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... and drops in XDP" wait_for xdp_dropped_since $RX $d0 10

	# The common setup's state again: eth1 attached, no ruleset.
	stop_traffic
	nft flush ruleset
	"$XDPOFF" attach eth1 >/dev/null
}

tests_run
