#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Hot-unplug of a routing NIC (QEMU device_del of eth2, run on the host by
# tests/vm/monitor-agent) while an offloaded flowtable forwards through it
# in XDP, frames arriving: no oops; the flows out of eth2 leave eth1's map
# and eth2's own go with it; the flowtable lives on with eth1; the NIC
# plugged back in is attached, and a flowtable on it offloads again.
#   netns cli: eth0 10.1.0.2 --- eth1 10.1.0.1 [guest] eth2 10.2.0.1 ---
#   eth3 10.2.0.2 :netns srv
# Runs after test_unplug.sh: eth2 is away for a while.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/router.sh"

NIC=nic2			# QEMU's id of eth2 (tests/vm/run)
MAC=52:54:00:00:00:02
ALL_TESTS="
	unplug_flows
"
trap router_down EXIT

if ! vm_monitor info pci >/dev/null; then
	skip "hot-unplug of a NIC with flows offloaded" "no QEMU monitor (not run by tests/vm/run)"
	exit 0
fi

# ruleset: the whole ruleset, as /etc/nftables.conf has it: flush, the
# flowtable, masquerade out of eth2.
ruleset() {
	{ echo "flush ruleset"; udp_flowtable 0; cat <<'EOT'; } | nft -f -
table ip nat {
	chain post { type nat hook postrouting priority 100; policy accept;
		oifname "eth2" masquerade
	}
}
EOT
}

no_flows() {
	[ "$(map_count "$1" xdpoff_flows)" = 0 ]
}

load_module
router_up
check "xdpoff attach eth1 and eth2" sh -c "$XDPOFF attach eth1 && $XDPOFF attach eth2"
serve udp-echo 0.0.0.0 7
check "an offloaded flowtable on eth1 and eth2" ruleset

unplug_flows() {
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 5)
	check_eq "udp 10.1.0.2:40001 -> 10.2.0.2:7 through the router" "sent 5 echoed 5" "$out"
	WAIT_TIMEOUT=30 check "... offloaded: a flow in eth1's map and one in eth2's" \
		wait_for sh -c "[ \$($XDPOFF show eth1 | grep -c '^  flow udp') -ge 1 ] &&
			[ \$($XDPOFF show eth2 | grep -c '^  flow udp') -ge 1 ]"
	# Frames keep arriving on eth1 for the flow while eth2 goes.
	ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 100000 0.01 >/dev/null &
	PIDS+=($!)
	# (Polled: the sender, a Python started in a TCG guest, may take
	# seconds to send its first frame.)
	r1=$(xdp_redirects eth1)
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... its frames forwarded in XDP (10 at least)" \
		wait_for xdp_redirected_since eth1 "$r1" 10
	echo "$(( $(xdp_redirects eth1) - r1 )) redirected" | diag

	# (What the wait for QEMU's deletion below reads must show the device now.)
	if qemu_lacks_device $NIC; then
		not_ok "QEMU's qom-list shows $NIC before its device_del"
	else
		ok "QEMU's qom-list shows $NIC before its device_del"
	fi
	check "device_del $NIC (eth2) through the QEMU monitor, frames arriving" \
		vm_monitor device_del $NIC
	WAIT_TIMEOUT=60 check "... the guest lets the NIC go" wait_for sh -c "! ip link show eth2"
	WAIT_TIMEOUT=30 check "... the flow out of eth2 leaves eth1's map" wait_for no_flows eth1
	kill "${PIDS[-1]}" 2>/dev/null
	wait "${PIDS[-1]}" 2>/dev/null
	check "... the module forgets eth2" sh -c "[ ! -e /sys/kernel/debug/xdpoff/eth2 ]"
	check "... xdpoff show says eth2 is gone" \
		sh -c "$XDPOFF show eth2 2>&1 | grep -q 'device is gone'"
	devs=$(nft list flowtable inet fw ft | grep -o 'devices = {[^}]*}')
	check "... the flowtable lives on, with eth1 only ($devs)" \
		sh -c "echo '$devs' | grep -q eth1 && ! echo '$devs' | grep -q eth2"
	check "... xdpoff detach eth2 removes what is left" "$XDPOFF" detach eth2

	plug_back $NIC n2 $MAC eth2
	router_addr eth2 10.2.0.1/24 fd02::1/64
	check "attach the new eth2" "$XDPOFF" attach eth2
	# `flush ruleset` and the new flowtable in one transaction: the new one
	# binds eth1 before the old one lets go of it.
	check "the ruleset reloaded (flush ruleset, the flowtable on eth1 and the new eth2)" ruleset
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40002 10.2.0.2 7 5)
	check_eq "a new connection through the new eth2" "sent 5 echoed 5" "$out"
	WAIT_TIMEOUT=30 check "... offloaded into eth1's and eth2's maps again" \
		wait_for sh -c "$XDPOFF show eth1 | grep -q 'flow udp 10.1.0.2:40002 ' &&
			[ \$($XDPOFF show eth2 | grep -c '^  flow udp') -ge 1 ]"
	r1=$(xdp_redirects eth2)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40002 10.2.0.2 7 50)
	r2=$(xdp_redirects eth2)
	check_eq "... 50 more datagrams" "sent 50 echoed 50" "$out"
	check "... their echoes forwarded in XDP by the new eth2 ($((r2 - r1)))" test $((r2 - r1)) -ge 50

	check_fails "a second offloaded flowtable on eth1, at another priority, is refused" \
		"Operation not supported" nft -f - <<'EOT'
table inet other {
	flowtable ft { hook ingress priority 5; devices = { eth1 }; flags offload; }
}
EOT
	check "... xdpoff show says why" \
		sh -c "$XDPOFF show eth1 | grep -q 'last error: .*flowtable of another priority'"
}

tests_run
