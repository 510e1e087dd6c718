# SPDX-License-Identifier: GPL-2.0
# tests/lib/router.sh - the routed topology of the flowtable tests, sourced
# after lib.sh:
#   netns $CLI: eth0 10.1.0.2 fd01::2 --- eth1 10.1.0.1 fd01::1 [guest]
#   eth2 10.2.0.1 fd02::1 --- eth3 10.2.0.2 fd02::2 :netns $SRV
# Servers a test starts in the background go into PIDS; router_down stops
# them and undoes everything, the module unloaded.

FT="python3 $XDPOFF_ROOT/tests/lib/flowtraffic.py"
CLI=xcli$$
SRV=xsrv$$
PIDS=()

# in_ns NS DEV ADDR4 ADDR6 GW4 GW6: DEV into NS, addressed, routed via GW.
in_ns() {
	ip netns add "$1"
	ip link set "$2" netns "$1"
	ip -n "$1" link set lo up
	ip -n "$1" link set "$2" up
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$1" addr add "$4" dev "$2" nodad
	ip -n "$1" route add default via "$5"
	ip -n "$1" -6 route add default via "$6"
}

# router_addr DEV ADDR4 ADDR6: one of the guest's routing NICs, up.
router_addr() {
	ip link set "$1" up
	ip addr add "$2" dev "$1"
	ip addr add "$3" dev "$1" nodad
	# Neighbour solicitations go out from a link-local address; the rig
	# gives the guest's NICs none.
	ip addr add fe80::1/64 dev "$1" nodad
}

router_up() {
	sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	in_ns "$CLI" eth0 10.1.0.2/24 fd01::2/64 10.1.0.1 fd01::1
	in_ns "$SRV" eth3 10.2.0.2/24 fd02::2/64 10.2.0.1 fd02::1
	router_addr eth1 10.1.0.1/24 fd01::1/64
	router_addr eth2 10.2.0.1/24 fd02::1/64
}

# bound PROTO ADDR PORT: a socket of $SRV listens on PORT (udp or tcp) in
# ADDR's family.
bound() {
	local fam=-4

	case $2 in *:*) fam=-6 ;; esac
	[ -n "$(ip netns exec "$SRV" ss -Hln "--$1" $fam "sport = :$3")" ]
}

# serve KIND ADDR PORT: a flowtraffic.py server (udp-echo, tcp-sink) in
# $SRV, in the background (into PIDS, and SERVED), back once its socket
# is bound: a datagram that came before would be answered by an ICMP
# port unreachable, and its echo lost.
serve() {
	ip netns exec "$SRV" $FT "$1" "$2" "$3" &
	SERVED=$!
	PIDS+=($SERVED)
	local proto=udp

	[ "$1" = tcp-sink ] && proto=tcp
	WAIT_TIMEOUT=30 wait_for bound $proto "$2" "$3" ||
		echo "# serve: $1 $2 $3 not bound after 30 s"
}

router_down() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach eth1 >/dev/null 2>&1
	"$XDPOFF" detach eth2 >/dev/null 2>&1
	ip addr flush dev eth1 2>/dev/null
	ip addr flush dev eth2 2>/dev/null
	sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	release_ns "$CLI"
	release_ns "$SRV"
	unload_module
}

# udp_flowtable PRIO: table inet fw, an offloaded flowtable on eth1 and
# eth2 at PRIO that every UDP connection is added to.
udp_flowtable() {
	cat <<EOT
table inet fw {
	flowtable ft { hook ingress priority $1; devices = { eth1, eth2 }; flags offload; }
	chain forward { type filter hook forward priority 0; policy accept;
		meta l4proto udp flow add @ft
	}
}
EOT
}

# load_udp_flowtable PRIO: the same, committed.
load_udp_flowtable() {
	udp_flowtable "$1" | nft -f -
}
