#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdpoff beside other XDP programs on one NIC, through libxdp's dispatcher
# (xdp-tools' xdp-filter and xdp-loader, Debian's 1.3.1).
#
# eth0 (in a namespace) -> eth1: xdpoff attached, an offloaded chain that
# drops UDP port 9 and accepts port 7; xdp-filter denies source BAD.  A
# software chain after the offloaded one counts what reaches the stack.
# Which program saw a frame is read from their own counters: xdp-filter's
# hit counter of BAD, the offloaded rules' nft counters, the software
# chain's counters.
#   - xdpoff at its default priority runs after xdp-filter: BAD's frames
#     never reach xdpoff, the others are xdpoff's to drop or pass;
#   - xdpoff at --priority 5 runs first: what it drops never reaches
#     xdp-filter, what it passes does;
#   - detach removes xdpoff only; a program attached without libxdp, or a
#     dispatcher in the other mode, makes attach fail with nothing left.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
BAD=10.9.9.9
GOOD=10.0.0.1
N=20
ALW_ALL=/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o
ALL_TESTS="
	libxdp_after_filter
	libxdp_before_filter
	libxdp_foreign_hook
	libxdp_without
	libxdp_vlan_dispatcher
"

# back_to_setup: what the common setup leaves: the module loaded, no XDP
# program on RX or eth2, no ruleset, no tc filter.
back_to_setup() {
	nft flush ruleset 2>/dev/null
	tc qdisc del dev $RX ingress 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	"$XDPOFF" detach eth2 >/dev/null 2>&1
	xdp-filter unload $RX >/dev/null 2>&1
	ip link set dev $RX xdp off 2>/dev/null
	ip link set dev $RX xdpgeneric off 2>/dev/null
	return 0
}
cleanup() {
	back_to_setup
	unload_module
	cleanup_peer
}
trap cleanup EXIT

# The programs on RX in run order, as xdp-loader lists them: "PRIO NAME"
# lines for a dispatcher's programs, "- NAME" for a program alone.
loader_progs() {
	xdp-loader status $RX | awk -v dev=$RX '
		$1 == dev && $2 == "xdp_dispatcher" { next }
		$1 == dev && $2 != "<No" { print "-", $2 }
		$1 == "=>" { print $2, $3 }'
}

# xdp-filter's hit counter of address BAD (0 while it filters nothing).
filter_hits() {
	xdp-filter status 2>/dev/null |
		awk -v ip=$BAD '$1 == ip { n = $NF } END { print n + 0 }'
}

# udp_from SADDR DPORT: N frames from the peer.
udp_from() {
	send $TX $RX --saddr "$1" --daddr 10.0.0.2 --proto udp --dport "$2" \
		--count $N >/dev/null
}

# counts: filter hits, nft d9, a7, sw9, sw7 as one line.
counts() {
	echo "$(filter_hits) $(nft_counter netdev t hw d9) $(nft_counter netdev t hw a7)" \
	     "$(nft_counter netdev s sw sw9) $(nft_counter netdev s sw sw7)"
}

# add_counts BASE "D1 D2 D3 D4 D5": BASE plus the deltas.
add_counts() {
	local -a b=($1) d=($2)
	echo "$((b[0] + d[0])) $((b[1] + d[1])) $((b[2] + d[2])) $((b[3] + d[3])) $((b[4] + d[4]))"
}

counts_are() { [ "$(counts)" = "$1" ]; }

# counts_grow NAME "D1 D2 D3 D4 D5" SADDR:DPORT...: N frames from each
# SADDR to DPORT; check NAME: counts grows by the deltas.
counts_grow() {
	local name=$1 deltas=$2 base sp
	shift 2
	base=$(counts)
	for sp; do udp_from "${sp%:*}" "${sp#*:}"; done
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "$name" \
		wait_for counts_are "$(add_counts "$base" "$deltas")"
	diag <<<"counts (filter d9 a7 sw9 sw7): $base -> $(counts)"
}
filter_hits_are() { [ "$(filter_hits)" = "$1" ]; }

ruleset() {
	nft -f - <<EOT
flush ruleset
table netdev t {
	chain hw {
		type filter hook ingress device $RX priority 10; policy accept;
		flags offload;
		udp dport 9 counter drop comment "d9"
		udp dport 7 counter accept comment "a7"
	}
}
table netdev s {
	chain sw {
		type filter hook ingress device $RX priority 20; policy accept;
		udp dport 9 counter comment "sw9"
		udp dport 7 counter comment "sw7"
	}
}
EOT
}

# xdpoff_after_filter: what libxdp_after_filter sets up: xdpoff attached
# at its default priority, xdp-filter before it denying BAD, the ruleset.
xdpoff_after_filter() {
	"$XDPOFF" attach $RX >/dev/null &&
		xdp-filter load -m native $RX && xdp-filter ip -m src $BAD &&
		ruleset
}

setup_peer $TX
load_module

# Usage errors; xdpoff after xdp-filter (the default priority).
libxdp_after_filter() {
	check_eq "--priority that is not a number is a usage error (exit 2)" 2 \
		"$("$XDPOFF" attach --priority x $RX >/dev/null 2>&1; echo $?)"
	check_eq "--priority with --no-libxdp is a usage error (exit 2)" 2 \
		"$("$XDPOFF" attach --priority 5 --no-libxdp $RX >/dev/null 2>&1; echo $?)"
	check "... and neither attached anything" \
		sh -c "! ip link show $RX | grep -q xdp && [ ! -e $PIN/$RX ]"

	# xdpoff after xdp-filter (the default priority).
	check "attach $RX (through libxdp by default)" "$XDPOFF" attach $RX
	check_eq "xdp-loader lists xdpoff at priority 200" "200 xdpoff_xdp" \
		"$(loader_progs)"
	check "xdpoff show says libxdp priority 200" \
		sh -c "'$XDPOFF' show $RX | grep -q '^$RX: xdp prog id [0-9]* (libxdp priority 200),'"
	check "... --json: libxdp true, run_prio 200, attached" \
		sh -c "'$XDPOFF' show --json $RX | grep -q '\"xdp_attached\":true,\"xdp_mode\":\"native\",\"libxdp\":true,\"run_prio\":200'"
	check "xdp-filter loads beside it" xdp-filter load -m native $RX
	check "xdp-filter denies source $BAD" xdp-filter ip -m src $BAD
	check_eq "xdp-loader lists both, xdp-filter (10) first" \
		"$(printf '10 xdpfilt_alw_all\n200 xdpoff_xdp')" "$(loader_progs)"
	check "an offloaded chain (drop udp 9, accept udp 7) and a software one" \
		ruleset

	d0=$(xdp_drops $RX)
	counts_grow "xdp-filter drops $BAD's frames, xdpoff never sees them; xdpoff drops the other port 9 frames, port 7 reaches the stack" \
		"$N $N $N 0 $N" $BAD:9 $GOOD:9 $GOOD:7
	check_eq "... $((2 * N)) frames dropped in XDP" $((2 * N)) \
		$(( $(xdp_drops $RX) - d0 ))
	back_to_setup
}

# xdpoff before xdp-filter (--priority 5).
libxdp_before_filter() {
	xdpoff_after_filter
	check "detach $RX (its chains gone first)" \
		sh -c "nft flush ruleset && '$XDPOFF' detach $RX"
	check_eq "... removes xdpoff only" "10 xdpfilt_alw_all" "$(loader_progs)"
	check "... and its pins" test ! -e $PIN/$RX
	check "attach $RX --priority 5" "$XDPOFF" attach --priority 5 $RX
	check_eq "xdp-loader lists xdpoff (5) first" \
		"$(printf '5 xdpoff_xdp\n10 xdpfilt_alw_all')" "$(loader_progs)"
	check "the ruleset again" ruleset
	# The port 7 frames of BAD xdpoff passes are not the accept rule's: nft
	# counts what software saw, and what XDP consumed.
	counts_grow "xdpoff drops $BAD's port 9 frames before xdp-filter sees them; the port 7 frames it passes go on to xdp-filter, which drops $BAD's" \
		"$N $N $N 0 $N" $BAD:9 $BAD:7 $GOOD:7

	check "detach $RX" sh -c "nft flush ruleset && '$XDPOFF' detach $RX"
	check_eq "... xdp-filter stays" "10 xdpfilt_alw_all" "$(loader_progs)"
	base=$(filter_hits)
	udp_from $BAD 9
	WAIT_TIMEOUT=$TRAFFIC_WAIT check "... and still filters" \
		wait_for filter_hits_are $((base + N))
	check "xdp-filter unloads" xdp-filter unload $RX
	check_eq "nothing left on $RX" "" "$(loader_progs)"
	back_to_setup
}

# A hook xdpoff cannot share.
libxdp_foreign_hook() {
	check "a program attached without libxdp's dispatcher" \
		env LIBXDP_SKIP_DISPATCHER=1 xdp-loader load -m native $RX $ALW_ALL
	foreign=$(loader_progs)
	check_fails "attach refuses to run beside it, says why" \
		"attached without libxdp's dispatcher" "$XDPOFF" attach $RX
	check_fails "attach --no-libxdp refuses too" "another XDP program holds the hook" \
		"$XDPOFF" attach --no-libxdp $RX
	check_eq "... the program is still there, alone" "- xdpfilt_alw_all" "$foreign"
	check_eq "... unchanged" "$foreign" "$(loader_progs)"
	check "... no pins, the module does not know $RX" \
		sh -c "[ ! -e $PIN/$RX ] && ! '$XDPOFF' show $RX >/dev/null 2>&1"
	ip link set dev $RX xdp off

	check "xdp-filter in generic mode, denying $BAD" \
		sh -c "xdp-filter load -m skb $RX && xdp-filter ip -m src $BAD"
	check_fails "attach in native mode beside it is refused, with the mode to use" \
		"attach with --mode skb" "$XDPOFF" attach $RX
	check "... nothing left" test ! -e $PIN/$RX
	check "attach --mode skb joins its dispatcher" \
		"$XDPOFF" attach --mode skb $RX
	check_eq "... after it" "$(printf '10 xdpfilt_alw_all\n200 xdpoff_xdp')" \
		"$(loader_progs)"
	check "xdpoff show: generic mode, libxdp priority 200" \
		sh -c "'$XDPOFF' show $RX | grep -q '(generic mode, libxdp priority 200)'"
	check "the ruleset" ruleset
	counts_grow "generic mode: xdpoff drops port 9, xdp-filter $BAD's frames" \
		"$N $N 0 0 0" $GOOD:9 $BAD:7
	check "detach" sh -c "nft flush ruleset && '$XDPOFF' detach $RX"
	check_eq "... xdp-filter stays" "10 xdpfilt_alw_all" "$(loader_progs)"
	xdp-filter unload $RX
	back_to_setup
}

# Without libxdp.
libxdp_without() {
	check "attach --no-libxdp" "$XDPOFF" attach --no-libxdp $RX
	check_eq "... xdpoff alone on the hook" "- xdpoff_xdp" "$(loader_progs)"
	check "... show says no libxdp" \
		sh -c "'$XDPOFF' show --json $RX | grep -q '\"libxdp\":false' &&
		       ! '$XDPOFF' show $RX | grep -q libxdp"
	check_fails "xdp-filter cannot join it" "not using a dispatcher" \
		xdp-filter load -m native $RX
	check "the ruleset" ruleset
	counts_grow "... drops port 9 in XDP, passes port 7" "0 $N $N 0 $N" \
		$GOOD:9 $GOOD:7
	check "detach" sh -c "nft flush ruleset && '$XDPOFF' detach $RX"
	check_eq "... nothing left" "" "$(loader_progs)"
	back_to_setup
}

# A dispatcher that cannot run a program moving the frame's start.
libxdp_vlan_dispatcher() {
	# libxdp before 1.5.5 (Debian 12 has 1.3.1) gives its dispatcher stub
	# functions that do not move it; kernels since 6.13, and 6.12.y, refuse an
	# extension that does in their place ("Extension program changes packet
	# data, while original does not").  attach then runs the build without
	# VLAN push and pop, says so, and the module leaves a tc redirect that
	# pushes or pops a tag to software.
	if [ "$(printf '6.12\n%s\n' "$(uname -r)" | sort -V | head -n1)" = 6.12 ]; then
		refuses=true
	else
		refuses=false
	fi
	out=$("$XDPOFF" attach $RX 2>&1)
	check_eq "attach $RX through libxdp" 0 $?
	if $refuses; then
		check "... says a VLAN push or pop before a redirect runs in software ($(uname -r))" \
			grep -q "tc filters that push or pop a VLAN tag before a redirect run in software" <<<"$out"
		want=software
	else
		check_eq "... with the whole program, silently ($(uname -r))" "" "$out"
		want=fwd
	fi
	check "eth2 attached (--no-libxdp), the redirect target" \
		"$XDPOFF" attach --no-libxdp eth2
	check "tc: vlan pop, then redirect to eth2" \
		sh -c "tc qdisc add dev $RX ingress &&
		       tc filter add dev $RX ingress prio 10 protocol 802.1q flower vlan_id 5 \
				action vlan pop pipe action mirred egress redirect dev eth2"
	check_eq "... xdpoff show: $want" $want \
		"$("$XDPOFF" show --json $RX | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["rules"][0]["action"])')"
	tc qdisc del dev $RX ingress
	check "detach both" sh -c "'$XDPOFF' detach $RX && '$XDPOFF' detach eth2"
	back_to_setup
}

tests_run
