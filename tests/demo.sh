#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`, run inside the guest: the netfilter series' example rule
# offloaded to XDP on virtio-net eth1, traffic from its peer eth0.
set -eu
. "$(dirname "$0")/lib/lib.sh"

RX=eth1
TX=eth0
DADDR=192.168.10.2

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { echo "\$ $*"; "$@"; }

trap 'nft flush ruleset 2>/dev/null; "$XDPOFF" detach $RX >/dev/null 2>&1; unload_module; cleanup_peer' EXIT

step "load the module and hand eth1 to xdpoff"
run insmod "$XDPOFF_KO"
run "$XDPOFF" attach $RX
setup_peer $TX

step "an offloaded ruleset (nft -f)"
cat > /tmp/demo.nft <<EOT
table netdev filter {
	chain ingress {
		type filter hook ingress device $RX priority 10; policy accept;
		flags offload;
		ip daddr $DADDR tcp dport 22 counter drop
	}
}
EOT
cat /tmp/demo.nft
run nft -f /tmp/demo.nft

step "traffic from the peer: 1000 SYNs to $DADDR:22 (match), 300 to :80 (no match)"
drops0=$(xdp_drops $RX)
rx0=$(cat /sys/class/net/$RX/statistics/rx_packets)
send $TX $RX --saddr 192.168.10.1 --daddr $DADDR --dport 22 --count 1000
send $TX $RX --saddr 192.168.10.1 --daddr $DADDR --dport 80 --count 300
wait_for xdp_packets_is $RX 0 1000 || true
sleep 0.5

step "nft list ruleset (the counter is what XDP dropped)"
run nft list ruleset

step "bpftool map dump of the rules map: one entry per offloaded rule"
run bpftool map dump pinned $PIN/$RX/xdpoff_rules

step "xdpoff show"
run "$XDPOFF" show $RX

step "result"
drops=$(( $(xdp_drops $RX) - drops0 ))
passed=$(( $(cat /sys/class/net/$RX/statistics/rx_packets) - rx0 - drops ))
echo "frames sent:             1300"
echo "dropped in XDP:          $drops   (virtio-net's per-queue xdp_drops)"
echo "passed to the stack:     $passed"
