#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nft flowtable offload: established connections routed (and NATed) by the
# XDP program.  The guest routes between two attached NICs:
#   netns cli: eth0 10.1.0.2 fd01::2 --- eth1 10.1.0.1 fd01::1 [guest]
#   eth2 10.2.0.1 fd02::1 --- eth3 10.2.0.2 fd02::2 :netns srv
# The ruleset offloads every TCP and UDP flow into a flowtable on eth1 and
# eth2 and masquerades IPv4 out of eth2.  A flow's later frames must be
# forwarded in XDP (virtio-net's xdp_redirects on the ingress NIC count
# them; a software ingress chain on eth1 must not see them), with the data
# intact, and conntrack's counters must include them.
set -u
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/router.sh"

ALL_TESTS="
	flowtable_checksums
	flowtable_udp_v4
	flowtable_tcp_v4
	flowtable_udp_v6
	flowtable_vlan
	flowtable_timeouts
	flowtable_many_rmmod
	flowtable_full_map
	flowtable_refused
	flowtable_order
	flowtable_fidelity
"

trap router_down EXIT

# flows DEV: the offloaded flows XDP holds for frames coming in on DEV.
flows() {
	"$XDPOFF" show "$1" | sed -n 's/^  flow \(.*\)  packets.*/\1/p'
}

# has_flow DEV TEXT: DEV holds a flow whose description starts with TEXT.
has_flow() {
	flows "$1" | grep -qF -- "$2"
}

# ct_hw PROTO DPORT: conntrack marks the connection [HW_OFFLOAD].
ct_hw() {
	conntrack -L -p "$1" --dport "$2" 2>/dev/null | grep -q HW_OFFLOAD
}

observed() {
	nft_counter netdev obs in "$1"
}

# flow_packets DEV TEXT: the packets XDP counted for DEV's flow TEXT...
flow_packets() {
	"$XDPOFF" show "$1" | grep -F -- "  flow $2" |
		sed -n 's/.*  packets \([0-9]*\) .*/\1/p'
}

# flow_replaces DEV: the REPLACE commands the module took for DEV's flows.
flow_replaces() {
	cat "/sys/kernel/debug/xdpoff/$1/flow_replaces"
}

# main_ruleset: the ruleset of most cases: every TCP and UDP flow into an
# offloaded flowtable on eth1 and eth2; IPv4 masqueraded out of eth2, and
# 10.2.0.100:6001 DNATed to 10.2.0.2:5001; a software ingress chain on
# eth1 that counts udp port 7 and tcp port 5001.
main_ruleset() {
	nft -f - <<'EOT'
flush ruleset
table inet fw {
	flowtable ft {
		hook ingress priority 0; devices = { eth1, eth2 }; flags offload; counter;
	}
	chain forward {
		type filter hook forward priority 0; policy accept;
		meta l4proto { tcp, udp } flow add @ft
	}
}
table ip nat {
	chain pre {
		type nat hook prerouting priority -100; policy accept;
		ip daddr 10.2.0.100 tcp dport 6001 dnat to 10.2.0.2:5001
	}
	chain post {
		type nat hook postrouting priority 100; policy accept;
		oifname "eth2" masquerade
	}
}
table netdev obs {
	chain in {
		type filter hook ingress device eth1 priority -100; policy accept;
		udp dport 7 counter comment "udp7"
		tcp dport 5001 counter comment "tcp5001"
	}
}
EOT
}

# udp_timeout [SECONDS]: sets the flowtable's UDP timeout; without
# SECONDS, puts back the one the test began with
# (ft_timeout, read by the common setup).
udp_timeout() {
	sysctl -qw net.netfilter.nf_flowtable_udp_timeout="${1:-$ft_timeout}"
}

# back_to_setup: what the common setup leaves: eth1 and eth2 attached
# (default sizes), the main ruleset, no connection in conntrack, the UDP
# timeout the test began with.
back_to_setup() {
	local d
	for d in eth1 eth2; do
		[ -e "$PIN/$d" ] || "$XDPOFF" attach $d >/dev/null
	done
	main_ruleset
	conntrack -F 2>/dev/null
	udp_timeout
	return 0
}

# The fidelity case's: the MAC addresses (M0 to M3, set by the case),
# the flows, and one run of it, MODE xdp or software.
mac_of() { cat /sys/class/net/"$1"/address 2>/dev/null || ip -n "$2" -br link show "$1" | awk '{print $3}'; }
# NAME CLIENT-ADDR CLIENT-PORT SERVER-ADDR SERVER-PORT REPLY-TO-ADDR PAYLOAD
FLOWS4="f1 10.1.0.2 41001 10.2.0.2 9 10.2.0.1 100
f2 10.1.0.2 41002 10.2.0.100 6009 10.2.0.1 333
f4 10.1.0.2 41004 10.2.0.2 9 10.2.0.1 1"
FLOW6="f3 fd01::2 41003 fd02::2 9 fd01::2 640"

fidelity_run() {
	local mode=$1 flags="" name ca cp sa sp ra len out
	[ "$mode" = xdp ] && flags="flags offload;"
	nft flush ruleset
	conntrack -F 2>/dev/null
	nft -f - <<EOT || return
table inet fw {
	flowtable ft { hook ingress priority 0; devices = { eth1, eth2 }; $flags }
	chain forward { type filter hook forward priority 0; policy accept;
		meta l4proto udp flow add @ft
	}
}
table ip nat {
	chain pre { type nat hook prerouting priority -100; policy accept;
		ip daddr 10.2.0.100 udp dport 6009 dnat to 10.2.0.2:9
	}
	chain post { type nat hook postrouting priority 100; policy accept;
		oifname "eth2" masquerade
	}
}
EOT
	local e4 e6
	serve udp-echo 0.0.0.0 9; e4=$SERVED
	serve udp-echo :: 9; e6=$SERVED
	while read -r name ca cp sa sp ra len; do
		ip netns exec "$CLI" $FT udp-ping "$ca" "$cp" "$sa" "$sp" 3 >/dev/null
	done <<<"$FLOWS4
$FLOW6"
	# Offloaded: into the flows maps, both directions (eth2's, the
	# replies', written after eth1's: the clean-clone run at 59719cd sent
	# 9 replies before it, 591 of 600 forwarded in XDP); in software:
	# conntrack's [OFFLOAD].
	if [ "$mode" = xdp ]; then
		WAIT_TIMEOUT=30 wait_for nr_flows_at_least eth1 4 &&
			WAIT_TIMEOUT=30 wait_for nr_flows_at_least eth2 4
	else
		WAIT_TIMEOUT=30 wait_for sh -c "[ \$(conntrack -L -p udp 2>/dev/null | grep -c OFFLOAD) -ge 4 ]"
	fi
	kill "$e4" "$e6"
	wait "$e4" "$e6" 2>/dev/null
	# The captures end with 600 frames each, or when told the senders
	# are done (SIGTERM): a python start between two senders may take
	# seconds on the debug kernel, a silence no capture may end on.
	rm -f "$WORK"/ready.*
	ip netns exec "$SRV" $FT capture eth3 udp 9 600 600 "$WORK/ready.fwd" >"$WORK/$mode.fwd" &
	local c1=$!
	ip netns exec "$CLI" $FT capture eth0 udp 41001,41002,41003,41004 600 600 \
		"$WORK/ready.rev" >"$WORK/$mode.rev" &
	local c2=$!
	WAIT_TIMEOUT=60 wait_for test -e "$WORK/ready.fwd" -a -e "$WORK/ready.rev"
	while read -r name ca cp sa sp ra len; do
		ip netns exec "$CLI" python3 "$SENDFRAME" eth0 --dmac "$M1" --smac "$M0" \
			--saddr "$ca" --daddr "$sa" --proto udp --sport "$cp" \
			--dport "$sp" --payload-len "$len" --count 150 --seq
		# the reply comes from the server's port 9, to the address and
		# port the client is seen as (masqueraded for IPv4)
		ip netns exec "$SRV" python3 "$SENDFRAME" eth3 --dmac "$M2" --smac "$M3" \
			--saddr "${sa/10.2.0.100/10.2.0.2}" --daddr "$ra" --proto udp --sport 9 \
			--dport "$cp" --payload-len "$len" --count 150 --seq
	done <<<"$FLOWS4
$FLOW6"
	kill -TERM "$c1" "$c2" 2>/dev/null
	wait "$c1" "$c2"
}

nr_flows_at_least() {
	[ "$(map_count "$1" xdpoff_flows)" -ge "$2" ]
}

same_frames() {
	cmp "$WORK/xdp.fwd" "$WORK/software.fwd" &&
		cmp "$WORK/xdp.rev" "$WORK/software.rev"
}

# A flowtable refused before the module is loaded: the kernel keeps the
# record of its failed bind (flow_indir_dev_list), data pointing at the
# freed flowtable, and replays it to every driver that registers later.
unload_module
check_fails "without the module, an offloaded flowtable is refused" \
	"Operation not supported" nft -f - <<'EOT'
table inet early {
	flowtable ft { hook ingress priority 0; devices = { eth1 }; flags offload; }
}
EOT
check "insmod after it: the stale record is not touched" load_module
sysctl -qw net.netfilter.nf_conntrack_acct=1 2>/dev/null ||
	{ modprobe nf_conntrack && sysctl -qw net.netfilter.nf_conntrack_acct=1; }
# (No connection left by an earlier run: each case starts with none.)
conntrack -F 2>/dev/null
router_up

check "xdpoff attach eth1" "$XDPOFF" attach eth1
check "xdpoff attach eth2" "$XDPOFF" attach eth2

serve udp-echo 0.0.0.0 7
serve udp-echo :: 7
serve tcp-sink 0.0.0.0 5001

check "a flowtable with flags offload on eth1 and eth2 commits" main_ruleset
ft_timeout=$(sysctl -n net.netfilter.nf_flowtable_udp_timeout)

# The arithmetic first: XDP updates each checksum once per frame with what
# the flow's edits add to it; the software flowtable in steps.  Random
# flows and checksums, edges included (tests/lib/csumcheck.c).
flowtable_checksums() {
	local out rc

	out=$("$BUILD/tests/csumcheck" 2>&1)
	rc=$?
	check_eq "checksums: one update per checksum gives the bytes of the software flowtable's steps" \
		0 "$rc"
	printf '%s\n' "$out" | diag
}

# UDP, IPv4, masqueraded.
flowtable_udp_v4() {
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 20)
	check_eq "udp 10.1.0.2:40001 -> 10.2.0.2:7 through the router" "sent 20 echoed 20" "$out"
	WAIT_TIMEOUT=30 check "the flow is offloaded into eth1's flows (snat 10.2.0.1)" \
		wait_for has_flow eth1 "udp 10.1.0.2:40001 > 10.2.0.2:7 snat 10.2.0.1:"
	check "... its reply direction into eth2's (back to 10.1.0.2:40001)" \
		wait_for has_flow eth2 "udp 10.2.0.2:7 > 10.2.0.1:"
	{ flows eth1; flows eth2; } | diag
	check "conntrack shows the connection [HW_OFFLOAD]" wait_for ct_hw udp 7

	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2) o=$(observed udp7)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 200)
	check_eq "200 more datagrams and their echoes" "sent 200 echoed 200" "$out"
	check "... eth1 redirected the 200 in XDP ($(( $(xdp_redirects eth1) - r1 )))" \
		test $(( $(xdp_redirects eth1) - r1 )) -ge 200
	check "... eth2 redirected the 200 echoes in XDP ($(( $(xdp_redirects eth2) - r2 )))" \
		test $(( $(xdp_redirects eth2) - r2 )) -ge 200
	check_eq "... and software's ingress chain on eth1 saw none of them" "$o" "$(observed udp7)"
	WAIT_TIMEOUT=20 check "conntrack's counter includes what XDP forwarded (>= 220 packets)" \
		wait_for sh -c "[ \"\$(conntrack -L -p udp --dport 7 2>/dev/null | grep -o 'packets=[0-9]*' | head -n1 | cut -d= -f2)\" -ge 220 ]"
	conntrack -L -p udp --dport 7 2>&1 | diag

	# The flowtable offers an offloaded flow again whenever its software path
	# refreshes the flow (flow_offload_refresh(), at most once a second of the
	# flow's timeout): for frames sent before XDP had the flow, or held back,
	# as here by a tc filter xdpoff cannot take (ARP), which software runs
	# before the flowtable.  The flow must stay as it is: reinstalled, frames
	# would reach software meanwhile and its counters would start again.
	F1="udp 10.1.0.2:40001 > 10.2.0.2:7 "
	p0=$(flow_packets eth1 "$F1") n0=$(flow_replaces eth1)
	tc qdisc add dev eth1 ingress
	tc filter add dev eth1 ingress prio 1 protocol arp flower arp_op request action drop
	r1=$(xdp_redirects eth1)
	ping_until_offered() {
		ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 1 >/dev/null
		[ "$(flow_replaces eth1)" -gt "$n0" ]
	}
	check "held back from XDP by a tc filter in software, datagrams through software make the flowtable offer the flow again" \
		wait_for ping_until_offered
	check_eq "... none of them redirected in XDP on eth1" 0 "$(( $(xdp_redirects eth1) - r1 ))"
	tc qdisc del dev eth1 ingress
	r1=$(xdp_redirects eth1) o=$(observed udp7)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 200)
	check_eq "... the filter gone: 200 datagrams and their echoes" "sent 200 echoed 200" "$out"
	check_eq "... eth1 redirected the 200 in XDP" 200 "$(( $(xdp_redirects eth1) - r1 ))"
	check_eq "... software's ingress chain on eth1 saw none of them" "$o" "$(observed udp7)"
	p1=$(flow_packets eth1 "$F1")
	check "... the flow kept its counters (packets $p0, then $p1)" \
		test -n "$p0" -a "${p1:-0}" -ge $(( ${p0:-0} + 200 ))
	back_to_setup
}

# TCP, IPv4, masqueraded: a bulk transfer; DNAT to another port.
flowtable_tcp_v4() {
	r1=$(xdp_redirects eth1)
	out=$(ip netns exec "$CLI" $FT tcp-send 10.1.0.2 40002 10.2.0.2 5001 4000000 7)
	set -- $out
	check_eq "tcp: 4 MB through the router, sha256 the same at both ends" "$2" "${4:-none}"
	check "... most of it redirected in XDP on eth1 ($(( $(xdp_redirects eth1) - r1 )) frames)" \
		test $(( $(xdp_redirects eth1) - r1 )) -ge 1000
	check "... the closed connection (FIN: software tears it down) left eth1's and eth2's flows" \
		wait_for sh -c "! $XDPOFF show eth1 | grep -q 'flow tcp' &&
			! $XDPOFF show eth2 | grep -q 'flow tcp'"

	# TCP, IPv4, DNAT to another port (and masqueraded).
	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2)
	out=$(ip netns exec "$CLI" $FT tcp-send 10.1.0.2 40010 10.2.0.100 6001 2000000 11)
	set -- $out
	check_eq "tcp to 10.2.0.100:6001, DNATed to 10.2.0.2:5001: 2 MB, sha256 the same at both ends" \
		"$2" "${4:-none}"
	check "... redirected in XDP both ways ($(( $(xdp_redirects eth1) - r1 )) frames on eth1, $(( $(xdp_redirects eth2) - r2 )) on eth2)" \
		test $(( $(xdp_redirects eth1) - r1 )) -ge 500 -a $(( $(xdp_redirects eth2) - r2 )) -ge 20
	back_to_setup
}

# UDP, IPv6, routed; conntrack -D: the connection's flows leave XDP.
flowtable_udp_v6() {
	out=$(ip netns exec "$CLI" $FT udp-ping fd01::2 40003 fd02::2 7 20)
	check_eq "udp [fd01::2]:40003 -> [fd02::2]:7 through the router" "sent 20 echoed 20" "$out"
	if [ "$out" != "sent 20 echoed 20" ]; then
		{ ip -n "$CLI" -6 addr; ip -n "$CLI" -6 route; ip -6 addr; ip -6 route
		  ip -6 neigh; ip -n "$CLI" -6 neigh; ip -n "$SRV" -6 neigh
		  sysctl net.ipv6.conf.all.forwarding net.ipv6.conf.eth1.disable_ipv6
		  } 2>&1 | diag
	fi
	WAIT_TIMEOUT=30 check "the IPv6 flow is offloaded into eth1's flows" \
		wait_for has_flow eth1 "udp [fd01::2]:40003 > [fd02::2]:7 to eth2"
	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2)
	out=$(ip netns exec "$CLI" $FT udp-ping fd01::2 40003 fd02::2 7 200)
	check_eq "200 more IPv6 datagrams and their echoes" "sent 200 echoed 200" "$out"
	check "... redirected in XDP on eth1 and eth2" \
		test $(( $(xdp_redirects eth1) - r1 )) -ge 200 -a $(( $(xdp_redirects eth2) - r2 )) -ge 200

	"$XDPOFF" show eth1 | diag
	"$XDPOFF" show eth2 | diag

	# conntrack -D: the connection's flows leave XDP.
	check "conntrack -D of the IPv6 connection" conntrack -D -p udp --orig-src fd01::2
	check "... its flows leave eth1's and eth2's maps" \
		wait_for sh -c "! $XDPOFF show eth1 | grep -qF 'flow udp [fd01::2]' &&
			! $XDPOFF show eth2 | grep -qF 'flow udp [fd02::2]'"
	back_to_setup
}

# A flow through a VLAN device stays in software.
flowtable_vlan() {
	# The client reaches the router over VLAN 10 too (eth0.10 -- eth1.10).
	# xdpoff refuses VLAN flows (a VLAN match or push); 6.1's flowtable does
	# not even offer this one to either device's callback (neither records a
	# refusal): it stays in the software flowtable either way.
	ip -n "$CLI" link add link eth0 name eth0.10 type vlan id 10
	ip -n "$CLI" link set eth0.10 up
	ip -n "$CLI" addr add 10.3.0.2/24 dev eth0.10
	ip link add link eth1 name eth1.10 type vlan id 10
	ip link set eth1.10 up
	ip addr add 10.3.0.1/24 dev eth1.10
	out=$(ip netns exec "$CLI" $FT udp-ping 10.3.0.2 40030 10.2.0.2 7 20)
	check_eq "udp 10.3.0.2:40030 over VLAN 10 through the router" "sent 20 echoed 20" "$out"
	WAIT_TIMEOUT=30 check "... in the software flowtable ([OFFLOAD] in conntrack)" \
		wait_for sh -c "conntrack -L -p udp --sport 40030 2>/dev/null | grep -q '\[OFFLOAD\]'"
	check "... not taken by xdpoff in either direction" \
		sh -c "! $XDPOFF show eth1 | grep -q 'flow udp 10.3.0.2:40030' &&
			! $XDPOFF show eth2 | grep -q 'flow udp 10.2.0.2:7 > .*:40030 '"
	{ "$XDPOFF" show eth1; "$XDPOFF" show eth2; } | grep -v '^  flow ' | diag
	conntrack -L -p udp --sport 40030 2>&1 | diag
	out=$(ip netns exec "$CLI" $FT udp-ping 10.3.0.2 40030 10.2.0.2 7 20)
	check_eq "... and goes on working" "sent 20 echoed 20" "$out"
	ip link del eth1.10
	ip -n "$CLI" link del eth0.10
	back_to_setup
}

# Timeouts: XDP's traffic keeps a flow alive; an idle one expires.
flowtable_timeouts() {
	# The flowtable's UDP timeout (30 s by default) is 10 s here: sysctl
	# net.netfilter.nf_flowtable_udp_timeout, which the flowtable reads each
	# time it sets a flow's timeout.  For 15 s every frame of this connection
	# goes through XDP, software sees none: only FLOW_CLS_STATS's lastused
	# keeps the flow from expiring.  Then it idles out.
	check "the flowtable's UDP timeout set to 10 s" udp_timeout 10
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40005 10.2.0.2 7 5)
	WAIT_TIMEOUT=30 check "a new connection (udp 40005) is offloaded" \
		wait_for has_flow eth1 "udp 10.1.0.2:40005 > 10.2.0.2:7"
	o=$(observed udp7)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40005 10.2.0.2 7 15 1)
	check_eq "15 s of traffic in XDP, one datagram a second" "sent 15 echoed 15" "$out"
	check_eq "... none of it seen by software's ingress chain" "$o" "$(observed udp7)"
	check "... the flow is still offloaded after 15 s, past the 10 s timeout" \
		has_flow eth1 "udp 10.1.0.2:40005 > 10.2.0.2:7"
	WAIT_TIMEOUT=60 check "idle, it expires and leaves eth1's and eth2's maps" \
		wait_for sh -c "! $XDPOFF show eth1 | grep -qF 'flow udp 10.1.0.2:40005' &&
			! $XDPOFF show eth2 | grep -qF ':7 > 10.2.0.1:40005'"
	udp_timeout
	back_to_setup
}

# 1,000 connections at once; rmmod with them offloaded; then the flowtable
# goes: no flow left in XDP.
flowtable_many_rmmod() {
	# Two rounds open them (the second datagram of a UDP connection, its
	# reply seen, puts it into the flowtable), the third must go through XDP.
	many_in() {
		[ "$(flows "$1" | grep -c "$2")" -ge 1000 ]
	}
	# The flows installed first must not idle out while the last are installed
	# (minutes on the debug kernel, past the default 30 s): this is about
	# capacity, not timeouts.
	udp_timeout 600
	out=$(ip netns exec "$CLI" $FT udp-many 10.1.0.2 20000 10.2.0.2 7 1000 2)
	check_eq "1,000 UDP connections (ports 20000-20999), two datagrams each" \
		"sent 2000 echoed 2000" "$out"
	WAIT_TIMEOUT=120 check "... all 1,000 offloaded into eth1's flows" \
		wait_for many_in eth1 '^udp 10\.1\.0\.2:2[0-9]\{4\} > 10\.2\.0\.2:7 '
	WAIT_TIMEOUT=60 check "... and their replies into eth2's" \
		wait_for many_in eth2 '^udp 10\.2\.0\.2:7 > 10\.2\.0\.1:'
	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2) o=$(observed udp7)
	out=$(ip netns exec "$CLI" $FT udp-many 10.1.0.2 20000 10.2.0.2 7 1000 1)
	check_eq "one more datagram on each of the 1,000" "sent 1000 echoed 1000" "$out"
	check "... forwarded in XDP both ways ($(( $(xdp_redirects eth1) - r1 )) on eth1, $(( $(xdp_redirects eth2) - r2 )) on eth2)" \
		test $(( $(xdp_redirects eth1) - r1 )) -ge 1000 -a $(( $(xdp_redirects eth2) - r2 )) -ge 1000
	check_eq "... software's ingress chain on eth1 saw none of them" "$o" "$(observed udp7)"
	check "... conntrack lists the 1,000 [HW_OFFLOAD]" sh -c "[ \$(conntrack -L -p udp 2>/dev/null |
		grep 'sport=2[0-9][0-9][0-9][0-9] dport=7 ' | grep -c HW_OFFLOAD) -ge 1000 ]"
	udp_timeout

	# rmmod with flows offloaded (the 1,000 too).
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 20)
	WAIT_TIMEOUT=30 check "before rmmod: the IPv4 flow is in eth1's maps" \
		wait_for has_flow eth1 "udp 10.1.0.2:40001"
	nft list ruleset >/dev/null
	check "rmmod xdpoff with flows offloaded ($(map_count eth1 xdpoff_flows) on eth1)" rmmod xdpoff
	check_eq "... no flow left in the maps (the flowtable let go of them)" "0 0" \
		"$(map_count eth1 xdpoff_flows) $(map_count eth2 xdpoff_flows)"
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 20)
	check_eq "... the connection goes on, in the software flowtable" "sent 20 echoed 20" "$out"
	check "insmod, detach and attach again" sh -c "insmod $XDPOFF_KO &&
		$XDPOFF detach eth1 && $XDPOFF detach eth2 &&
		$XDPOFF attach eth1 && $XDPOFF attach eth2"

	# the flowtable goes: no flow left in XDP.
	check "nft delete table inet fw" nft delete table inet fw
	check_eq "no flow left in eth1's and eth2's maps" "0 0" \
		"$(map_count eth1 xdpoff_flows) $(map_count eth2 xdpoff_flows)"
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40001 10.2.0.2 7 5)
	check_eq "the connection goes on in software" "sent 5 echoed 5" "$out"
	back_to_setup
}

# A full flows map: the flows beyond it stay in software.
flowtable_full_map() {
	nft delete table inet fw
	check "attach eth1 and eth2 again with --max-flows 16" sh -c "
		$XDPOFF detach eth1 && $XDPOFF detach eth2 &&
		$XDPOFF attach eth1 --max-flows 16 && $XDPOFF attach eth2 --max-flows 16"
	conntrack -F 2>/dev/null
	check "the offloaded flowtable again" load_udp_flowtable 0
	out=$(ip netns exec "$CLI" $FT udp-many 10.1.0.2 30000 10.2.0.2 7 40 2)
	check_eq "40 connections (ports 30000-30039), two datagrams each" "sent 80 echoed 80" "$out"
	nr_flows_is() {
		[ "$(map_count "$1" xdpoff_flows)" -eq "$2" ]
	}
	# The keys of DEV's flows map (the values count frames).
	flow_keys() {
		map_dump "$1" xdpoff_flows | cut -d' ' -f1
	}
	WAIT_TIMEOUT=30 check "16 of them fill eth1's flows map" wait_for nr_flows_is eth1 16
	check "... every one installed: xdpoff show lists 16 flows of 16" \
		sh -c "$XDPOFF show eth1 | grep -qF 'flowtable: 16 flows (of 16)'"
	check_eq "... bpftool map dump lists the 16" 16 \
		"$(bpftool -j map dump pinned "$PIN/eth1/xdpoff_flows" |
		   python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
	check "... the next is refused: xdpoff show says why" \
		sh -c "$XDPOFF show eth1 | grep -qF 'last error: xdpoff: flow table is full (16 flows)'"
	"$XDPOFF" show eth1 | grep -v '^  flow ' | diag
	keys=$(flow_keys eth1)
	r1=$(xdp_redirects eth1) o=$(observed udp7)
	out=$(ip netns exec "$CLI" $FT udp-many 10.1.0.2 30000 10.2.0.2 7 40 1)
	check_eq "... all 40 still work: one more datagram each" "sent 40 echoed 40" "$out"
	x=$(( $(xdp_redirects eth1) - r1 )) o=$(( $(observed udp7) - o ))
	check "... 16 forwarded in XDP ($x), the other 24 by software ($o seen by its ingress chain)" \
		test "$x" -ge 16 -a "$o" -ge 24
	check_eq "... eth1's flows map holds the same 16 flows" "$keys" "$(flow_keys eth1)"
	check "back to the default size, eth2 not attached" sh -c "nft delete table inet fw &&
		$XDPOFF detach eth1 && $XDPOFF detach eth2 && $XDPOFF attach eth1"
	back_to_setup
}

# Refused: flows out of a NIC not attached, into a tunnel, out of a PPPoE
# session stay in software.  (From eth1 attached alone, without the
# flowtable.)
flowtable_refused() {
	nft delete table inet fw
	"$XDPOFF" detach eth2 >/dev/null
	check "a flowtable on eth1 only" nft -f - <<'EOT'
table inet fw {
	flowtable ft { hook ingress priority 0; devices = { eth1 }; flags offload; }
	chain forward { type filter hook forward priority 0; policy accept;
		meta l4proto udp flow add @ft
	}
}
EOT
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40031 10.2.0.2 7 20)
	check_eq "udp 10.1.0.2:40031 through the router, out of eth2" "sent 20 echoed 20" "$out"
	WAIT_TIMEOUT=30 check "... in the software flowtable ([OFFLOAD] in conntrack)" \
		wait_for sh -c "conntrack -L -p udp --sport 40031 2>/dev/null | grep -q '\[OFFLOAD\]'"
	check "... refused by xdpoff: show says why" \
		sh -c "$XDPOFF show eth1 | grep -q 'last error: .*output device not attached'"
	check_eq "... no flow in eth1's map" 0 "$(map_count eth1 xdpoff_flows)"
	check "nft delete table inet fw, attach eth2 again" \
		sh -c "nft delete table inet fw && $XDPOFF attach eth2"

	# refused: a flow into a tunnel stays in software.
	# A route with lightweight-tunnel encapsulation (ip route ... encap ip, out
	# of a VXLAN device in external mode): the flowtable hands eth1's callback
	# the flow with a TUNNEL_ENCAP action, which xdpoff refuses.  One way only
	# (the server does not decapsulate): UDP is offloaded from its second
	# datagram on, as soon as conntrack has confirmed it.
	check "a flowtable on eth1, a route into a VXLAN tunnel (lwt encap)" sh -c "
		ip link add vxlan0 type vxlan external dstport 4789 dev eth2 &&
		ip link set vxlan0 up &&
		ip route add 10.9.0.0/24 encap ip id 42 dst 10.2.0.2 dev vxlan0 &&
		ip neigh add 10.9.0.2 lladdr 02:00:00:00:00:09 dev vxlan0 nud permanent &&
		nft -f - <<'EOT'
table inet fw {
	flowtable ft { hook ingress priority 0; devices = { eth1 }; flags offload; }
	chain forward { type filter hook forward priority 0; policy accept;
		meta l4proto udp flow add @ft
	}
}
EOT"
	ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40032 10.9.0.2 7 3 >/dev/null
	WAIT_TIMEOUT=30 check "udp 10.1.0.2:40032 into the tunnel: in the software flowtable ([OFFLOAD] in conntrack)" \
		wait_for sh -c "conntrack -L -p udp --sport 40032 2>/dev/null | grep -q '\[OFFLOAD\]'"
	check "... refused by xdpoff: show says why" \
		sh -c "$XDPOFF show eth1 | grep -q 'last error: .*tunnel flow: not offloaded'"
	check_eq "... no flow in eth1's map" 0 "$(map_count eth1 xdpoff_flows)"
	"$XDPOFF" show eth1 | grep -v '^  flow ' | diag
	conntrack -L -p udp --sport 40032 2>&1 | diag
	nft delete table inet fw
	ip link del vxlan0

	# refused: a flow out of a PPPoE session stays in software.
	# The server's netns runs a PPPoE access concentrator on eth3
	# (pppoe-server, user mode); the guest dials in over eth2 with pppd and
	# the kernel's PPPoE (ppp0, 10.4.0.1 -- 10.4.0.2).  A flow from the client
	# to 10.4.0.2 leaves eth2 in the session: the flowtable hands eth1's
	# callback a PPPOE_PUSH action, which xdpoff refuses.  The replies come in
	# on eth2 in PPPoE: the kernel's flow_rule for that direction does not say
	# so, its tuple does (encap), and xdpoff refuses that one too: neither
	# direction in XDP, so conntrack does not say [HW_OFFLOAD].
	PPP=$(mktemp -d)
	printf 'noauth\nlcp-echo-interval 0\nnodefaultroute\n' >"$PPP/server-options"
	modprobe pppoe 2>/dev/null
	ip netns exec "$SRV" pppoe-server -I eth3 -L 10.4.0.2 -R 10.4.0.1 -N 1 \
		-O "$PPP/server-options"
	check "pppd dials a PPPoE session over eth2 (ppp0: 10.4.0.1 -- 10.4.0.2)" \
		timeout 60 pppd plugin pppoe.so nic-eth2 noauth noipdefault \
			nodefaultroute lcp-echo-interval 0 unit 0 maxfail 1 updetach
	ip -n "$SRV" route add 10.1.0.0/24 dev ppp0 2>/dev/null
	check "a flowtable on eth1 and eth2, the session's way out" nft -f - <<'EOT'
table inet fw {
	flowtable ft { hook ingress priority 0; devices = { eth1, eth2 }; flags offload; }
	chain forward { type filter hook forward priority 0; policy accept;
		meta l4proto udp flow add @ft
	}
}
EOT
	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40033 10.4.0.2 7 20)
	check_eq "udp 10.1.0.2:40033 to 10.4.0.2, through the PPPoE session" "sent 20 echoed 20" "$out"
	WAIT_TIMEOUT=30 check "... in the flowtable (OFFLOAD in conntrack)" \
		wait_for sh -c "conntrack -L -p udp --sport 40033 2>/dev/null | grep -q OFFLOAD"
	WAIT_TIMEOUT=30 check "... refused by xdpoff on eth1 and on eth2: show says why" \
		wait_for sh -c "$XDPOFF show eth1 | grep -q 'last error: .*PPPoE flow: not offloaded' &&
			$XDPOFF show eth2 | grep -q 'last error: .*PPPoE flow: not offloaded'"
	m1=$(map_count eth1 xdpoff_flows) m2=$(map_count eth2 xdpoff_flows)
	check "... no flow in the maps ($m1 on eth1, $m2 on eth2), not [HW_OFFLOAD] in conntrack" \
		sh -c "[ $m1 = 0 ] && [ $m2 = 0 ] &&
			! conntrack -L -p udp --sport 40033 2>/dev/null | grep -q HW_OFFLOAD"
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40033 10.4.0.2 7 20)
	x1=$(( $(xdp_redirects eth1) - r1 )) x2=$(( $(xdp_redirects eth2) - r2 ))
	check "... and goes on in software: $out, none redirected in XDP ($x1 on eth1, $x2 on eth2)" \
		test "$out" = "sent 20 echoed 20" -a "$x1" = 0 -a "$x2" = 0
	{ "$XDPOFF" show eth1; "$XDPOFF" show eth2; } | diag
	conntrack -L -p udp --sport 40033 2>&1 | diag
	nft delete table inet fw
	pkill -x pppd
	ip netns exec "$SRV" pkill -x pppoe-server
	WAIT_TIMEOUT=10 wait_for sh -c "! ip link show ppp0 >/dev/null 2>&1 && ! pgrep -x pppd >/dev/null"
	rm -rf "$PPP"
	back_to_setup
}

# The flowtable among offloaded chains and tc filters on eth1.
flowtable_order() {
	nft delete table inet fw
	# Hook order on eth1: tc ingress, then the nf ingress hooks by priority:
	# a chain at 10, the flowtable at 20, a chain at 30 (nf_tables offloads
	# chains of priority 1 to 65535 only; a flowtable may have any).  Three
	# connections are offloaded first; then a tc filter drops the first, the
	# chain at 10 the second, and the chain at 30, after the flowtable, drops
	# udp dport 7: the third, forwarded by the flowtable before it, goes on; a
	# new connection, which the flowtable does not know, is dropped there.
	# The three must not idle out (30 s) while the filters and chains go in
	# and the first two are tried: this is about order, not timeouts.
	udp_timeout 600
	check "the offloaded flowtable at priority 20, for the order test" \
		load_udp_flowtable 20
	for p in 40020 40021 40022; do
		ip netns exec "$CLI" $FT udp-ping 10.1.0.2 $p 10.2.0.2 7 3 >/dev/null
	done
	WAIT_TIMEOUT=30 check "udp 40020, 40021 and 40022 are offloaded" wait_for sh -c "
		$XDPOFF show eth1 | grep -q 'flow udp 10.1.0.2:40020 ' &&
		$XDPOFF show eth1 | grep -q 'flow udp 10.1.0.2:40021 ' &&
		$XDPOFF show eth1 | grep -q 'flow udp 10.1.0.2:40022 '"
	tc qdisc add dev eth1 clsact
	check "tc: drop udp sport 40020 on eth1, offloaded" tc filter add dev eth1 ingress \
		protocol ip prio 1 flower ip_proto udp src_port 40020 action drop
	check "... in_hw" sh -c "tc filter show dev eth1 ingress | grep -q in_hw"
	check "nft: chains at 10 (drop udp sport 40021) and 30 (drop udp dport 7), offloaded" nft -f - <<'EOT'
table netdev order {
	chain before {
		type filter hook ingress device eth1 priority 10; policy accept; flags offload;
		ip saddr 10.1.0.2 udp sport 40021 counter drop comment "sport40021"
	}
	chain after {
		type filter hook ingress device eth1 priority 30; policy accept; flags offload;
		ip daddr 10.2.0.2 udp dport 7 counter drop comment "dport7"
	}
}
EOT
	d=$(xdp_drops eth1)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40020 10.2.0.2 7 5)
	check_eq "udp 40020: tc ingress, first in the order, drops it" "sent 5 echoed 0" "$out"
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40021 10.2.0.2 7 5)
	check_eq "udp 40021: the chain at 10, before the flowtable, drops it" "sent 5 echoed 0" "$out"
	check "... both dropped in XDP ($(( $(xdp_drops eth1) - d )))" test $(( $(xdp_drops eth1) - d )) -ge 6
	check "... the chain at 10 counted its 3" test "$(nft_counter netdev order before sport40021)" -ge 3
	r1=$(xdp_redirects eth1)
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40022 10.2.0.2 7 20)
	check_eq "udp 40022: the flowtable, before the chain at 30, forwards it" "sent 20 echoed 20" "$out"
	check "... in XDP ($(( $(xdp_redirects eth1) - r1 )))" test $(( $(xdp_redirects eth1) - r1 )) -ge 20
	check_eq "... the chain at 30 saw none of it" 0 "$(nft_counter netdev order after dport7)"
	out=$(ip netns exec "$CLI" $FT udp-ping 10.1.0.2 40023 10.2.0.2 7 5)
	check_eq "udp 40023, new: the flowtable does not know it, the chain at 30 drops it" \
		"sent 5 echoed 0" "$out"
	check "... counted by the chain at 30" test "$(nft_counter netdev order after dport7)" -ge 3
	"$XDPOFF" show eth1 | grep -v '^  flow ' | diag
	nft delete table netdev order
	tc qdisc del dev eth1 clsact
	nft delete table inet fw
	udp_timeout
	back_to_setup
}

# Fidelity: XDP's frames are the software flowtable's, byte for byte.
flowtable_fidelity() {
	# The same ruleset with and without `flags offload`; in each, four UDP
	# flows are set up by real sockets, then the same crafted frames are sent
	# in both directions of each (150 per direction, 1,200 in all) and
	# captured where they come out of the router (at eth3 and at eth0).
	M1=$(mac_of eth1) M2=$(mac_of eth2)
	M0=$(mac_of eth0 "$CLI") M3=$(mac_of eth3 "$SRV")
	WORK=$(mktemp -d)
	"$XDPOFF" show eth1 >/dev/null
	r1=$(xdp_redirects eth1) r2=$(xdp_redirects eth2)
	fidelity_run xdp
	x1=$(( $(xdp_redirects eth1) - r1 )) x2=$(( $(xdp_redirects eth2) - r2 ))
	check "fidelity, offloaded: 600 frames each way forwarded in XDP ($x1 on eth1, $x2 on eth2)" \
		test "$x1" -ge 600 -a "$x2" -ge 600
	fidelity_run software
	cat "$WORK/xdp.fwd" "$WORK/xdp.rev" >"$WORK/xdp"
	cat "$WORK/software.fwd" "$WORK/software.rev" >"$WORK/software"
	out=$($FT compare "$WORK/xdp" "$WORK/software")
	set -- $out
	check "fidelity: at least 1,000 frames of the 1,200 captured in both runs ($2 pairs)" \
		test "$2" -ge 1000
	check_eq "fidelity: every frame XDP forwarded is byte for byte the software flowtable's" \
		0 "${4:-none}"
	printf '%s\n' "$out" | sed 1d | diag
	head -n 1 "$WORK/xdp.fwd" | diag
	rm -rf "$WORK"
	nft flush ruleset
	back_to_setup
}

tests_run
