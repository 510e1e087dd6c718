#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Differential test: random rulesets and random frames; for every
# (ruleset, frame) pair the offloaded device decides what nf_tables decides
# in software, and every rule counts what its software twin counts.
#
#   eth0 (namespace A) -> eth1: xdpoff attached, the ruleset with flags offload
#   eth2 (namespace B) -> eth3: no XDP, the same ruleset in software only
#
# The work is done by tests/lib/difftest.py (its docstring tells how).
#
#   XDPOFF_DIFF_PAIRS   (ruleset, frame) pairs, default 5120
#   XDPOFF_DIFF_FRAMES  frames per ruleset, default 128
#   XDPOFF_DIFF_SEED    seed of the run, random by default; printed, so a
#                       failing run can be repeated
#   XDPOFF_DIFF_TC      share of rulesets with tc flower filters before the
#                       nft chains, default 0.5
#   XDPOFF_DIFF_PLAIN   1: only frames the XDP parser takes in full (no VLAN
#                       tags, 802.3 lengths, bad headers, IPv6 extension
#                       headers, truncated l4 headers)
#   XDPOFF_DIFF_GENERIC_PAIRS  pairs of each generic-mode run, default 2000
#
# Then the same in generic XDP (`xdpoff attach --mode skb`), on HW sides
# whose senders sit in namespace A too, against eth3 in software:
#   a veth pair, vdh (xdpoff) <- vdt, its driver has native XDP as well;
#   QEMU's e1000 pair eth5 (xdpoff) <- eth4, whose driver has no native
#   XDP, against e1000's eth7 <- eth6 (in namespace B) in software: QEMU's
#   e1000 pads short frames, so both sides must be e1000 to see the same
#   frames, and both receive with VLAN stripping off, as virtio-net does
#   (XDPOFF_VM_E1000=1, which make check sets; the guest loads e1000).
# The rig passes on only the variables named in XDPOFF_VM_ENV, e.g. a long
# run (about 10 s per 1,000 pairs under TCG):
#   XDPOFF_DIFF_PAIRS=100000 XDPOFF_VM_ENV="XDPOFF_DIFF_PAIRS XDPOFF_DIFF_SEED \
#       XDPOFF_DIFF_FRAMES XDPOFF_DIFF_PLAIN" \
#       tests/check tests/guest/test_differential.sh
set -u
. "$(dirname "$0")/../lib/lib.sh"

HW=eth1
HW_TX=eth0
SW=eth3
SW_TX=eth2
NS_HW=${PEER_NS}h
NS_SW=${PEER_NS}s
PAIRS=${XDPOFF_DIFF_PAIRS:-5120}
FRAMES=${XDPOFF_DIFF_FRAMES:-128}
TC=${XDPOFF_DIFF_TC:-0.5}
SUMMARY=/tmp/xdpoff-diff.summary
seed_arg=()
[ -n "${XDPOFF_DIFF_SEED:-}" ] && seed_arg=(--seed "$XDPOFF_DIFF_SEED")
[ "${XDPOFF_DIFF_PLAIN:-0}" = 1 ] && seed_arg+=(--plain-only)
ALL_TESTS="
	differential_native
	differential_generic_veth
	differential_generic_e1000
"

cleanup() {
	nft flush ruleset 2>/dev/null
	tc qdisc del dev "$HW" ingress 2>/dev/null
	tc qdisc del dev "$SW" ingress 2>/dev/null
	"$XDPOFF" detach "$HW" >/dev/null 2>&1
	unload_module
	"$XDPOFF" detach vdh >/dev/null 2>&1
	"$XDPOFF" detach "$E1K" >/dev/null 2>&1
	tc qdisc del dev "$E1K_SW" ingress 2>/dev/null
	ip link del vdh 2>/dev/null
	release_ns "$NS_HW"
	release_ns "$NS_SW"
	ip link set "$HW" promisc off 2>/dev/null
	ip link set "$SW" promisc off 2>/dev/null
}
E1K=eth5
E1K_TX=eth4
E1K_SW=eth7
E1K_SW_TX=eth6
trap cleanup EXIT

# The senders, each in a namespace of its own with IPv6 off, so that they
# send nothing but the test's frames (a new namespace does not inherit the
# rig's addr_gen_mode).
peer() {
	ip netns add "$1" &&
	ip netns exec "$1" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv6.conf.all.disable_ipv6=1 &&
	ip link set "$2" netns "$1" &&
	ip -n "$1" link set "$2" up
}

summary() { sed -n "s/^$1=//p" "$SUMMARY" 2>/dev/null; }

check "sender $HW_TX in its own namespace" peer "$NS_HW" "$HW_TX"
check "sender $SW_TX in its own namespace" peer "$NS_SW" "$SW_TX"
# QEMU's virtio-net filters on the destination MAC unless promiscuous.
check "$HW and $SW promiscuous" \
	sh -c "ip link set $HW promisc on && ip link set $SW promisc on"
check "module loads" insmod "$XDPOFF_KO"
check "attach $HW" "$XDPOFF" attach "$HW"
# Nothing below means anything without the offload.
ip -d link show "$HW" | grep -q 'prog/xdp' || exit 1

# The native run: virtio-net's eth1 against eth3.
differential_native() {
	rm -f "$SUMMARY"
	drops0=$(xdp_drops "$HW")
	start=$(date +%s)
	python3 "$XDPOFF_ROOT/tests/lib/difftest.py" --hw "$HW" --sw "$SW" \
		--hw-tx "$HW_TX@$NS_HW" --sw-tx "$SW_TX@$NS_SW" \
		--pairs "$PAIRS" --frames "$FRAMES" --tc "$TC" \
		${seed_arg[@]+"${seed_arg[@]}"} \
		--summary "$SUMMARY"
	rc=$?
	elapsed=$(( $(date +%s) - start ))
	drops=$(( $(xdp_drops "$HW") - drops0 ))
	echo "difftest.py: exit $rc after ${elapsed}s, $HW counted $drops XDP drops" | diag

	seed=$(summary seed)
	pairs=$(summary pairs)
	rulesets=$(summary rulesets)

	check_eq "harness self-check: a planted difference is caught (4 decisions, 2 counters)" \
		"4,2" "$(summary canary)"
	if [ "$TC" != 0 ]; then
		check_eq "harness self-check for tc: a planted difference is caught (4 decisions, 1 counter)" \
			"4,1" "$(summary tc_canary)"
	fi
	check "difftest ran $PAIRS pairs (seed ${seed:-?})" \
		test "$rc" = 0 -a "${pairs:-0}" -ge "$PAIRS"
	if ! [ "$rc" = 0 ] || ! [ "${pairs:-0}" -ge "$PAIRS" ]; then
		for t in "0 decision mismatches" "0 rule counter mismatches" \
			"plain drops in XDP" "no frame lost" "offload exercised" \
			"prefix families exercised" "xdp_drops agree" "tc exercised"; do
			skip "differential: $t" "difftest did not complete"
		done
	else
		check_eq "differential: ${rulesets:-?} rulesets, ${pairs:-?} frames, 0 decision mismatches" \
			0 "$(summary decision_mismatches)"
		check_eq "differential: 0 rule counter mismatches (packets and bytes)" \
			0 "$(summary counter_mismatches)"
		check_eq "every plain frame software drops is dropped in XDP" \
			0 "$(summary plain_not_early)"
		check_eq "no frame lost or added on the wire" 0 "$(summary lost)"
		check "the offload was exercised: $(summary xdp_dropped_frames) frames dropped in XDP" \
			test "$(summary xdp_dropped_frames)" -gt $(( ${pairs:-0} / 20 ))
		if [ "$TC" != 0 ]; then
			check "tc filters exercised: $(summary tc_filters) in $(summary tc_rulesets) rulesets, $(summary tc_not_in_hw) not in hw" \
				test "$(summary tc_rulesets)" -gt 0 -a \
				"$(summary tc_not_in_hw)" -lt "$(summary tc_filters)"
		fi
		check "prefix families exercised: $(summary prefix_rules) rules in $(summary prefix_rulesets) rulesets" \
			test "$(summary prefix_rulesets)" -gt 0
		check "virtio-net's xdp_drops agree ($drops >= $(summary xdp_drops))" \
			test "$drops" -ge "$(summary xdp_drops)" -a "$(summary xdp_drops)" -gt 0
	fi
	nft flush ruleset
	tc qdisc del dev "$HW" ingress 2>/dev/null
	tc qdisc del dev "$SW" ingress 2>/dev/null
}

# generic_diff LABEL DEV TX SWDEV SWTX: xdpoff in generic mode on DEV, fed
# by TX in namespace A; the differential against SWDEV, fed by SWTX in
# namespace B; and detach.
GEN_PAIRS=${XDPOFF_DIFF_GENERIC_PAIRS:-2000}
generic_diff() {
	local label=$1 dev=$2 tx=$3 swdev=$4 swtx=$5 rc
	local names=("canary caught" "$GEN_PAIRS pairs" "0 decision mismatches"
		     "0 rule counter mismatches" "plain drops in XDP"
		     "no frame lost" "offload exercised")

	if ! check "$label: attach --mode skb $dev" "$XDPOFF" attach --mode skb "$dev"; then
		for t in "${names[@]}"; do
			skip "$label: $t" "attach failed"
		done
		return
	fi
	check "$label: the program runs on $dev in generic mode (ip link: xdpgeneric)" \
		sh -c "ip -d link show $dev | grep -q 'prog/xdp id' &&
		       ip link show $dev | grep -q xdpgeneric"
	check "$label: xdpoff show says generic mode" \
		sh -c "'$XDPOFF' show $dev | grep -q '(generic mode, libxdp priority 200)' &&
		       '$XDPOFF' show --json $dev | grep -q '\"xdp_mode\":\"generic\"'"
	# Native eth1 cannot hand XDP frames to a generic-mode device.
	if nft -f - 2>/dev/null <<-EOF
		table netdev xfwd {
			chain c {
				type filter hook ingress device $HW priority 5; policy accept; flags offload;
				ip daddr 10.9.9.9 fwd to $dev
			}
		}
		EOF
	then
		not_ok "$label: fwd from native $HW to $dev refused"
		nft delete table netdev xfwd
	else
		ok "$label: fwd from native $HW to $dev refused"
	fi
	check "... with the reason: xdpoff show $HW says generic mode" \
		sh -c "'$XDPOFF' show $HW | grep -q 'fwd target runs XDP in generic mode'"
	rm -f "$SUMMARY"
	python3 "$XDPOFF_ROOT/tests/lib/difftest.py" --hw "$dev" --sw "$swdev" \
		--hw-tx "$tx@$NS_HW" --sw-tx "$swtx@$NS_SW" \
		--pairs "$GEN_PAIRS" --frames "$FRAMES" --tc "$TC" \
		--no-xdp-counter ${seed_arg[@]+"${seed_arg[@]}"} \
		--summary "$SUMMARY" 2>&1 | diag
	rc=${PIPESTATUS[0]}
	check_eq "$label: harness self-check, a planted difference is caught" \
		"4,2" "$(summary canary)"
	check "$label: difftest ran $GEN_PAIRS pairs (seed $(summary seed))" \
		test "$rc" = 0 -a "$(summary pairs)" -ge "$GEN_PAIRS"
	check_eq "$label: $(summary rulesets) rulesets, $(summary pairs) frames, 0 decision mismatches" \
		0 "$(summary decision_mismatches)"
	check_eq "$label: 0 rule counter mismatches" \
		0 "$(summary counter_mismatches)"
	check_eq "$label: every plain frame software drops is dropped in XDP" \
		0 "$(summary plain_not_early)"
	check_eq "$label: no frame lost or added on the wire" 0 "$(summary lost)"
	check "$label: the offload was exercised: $(summary xdp_dropped_frames) frames dropped in XDP" \
		test "$(summary xdp_dropped_frames)" -gt $(( GEN_PAIRS / 20 ))
	nft flush ruleset
	tc qdisc del dev "$dev" ingress 2>/dev/null
	tc qdisc del dev "$swdev" ingress 2>/dev/null
	check "$label: detach" "$XDPOFF" detach "$dev"
	check "$label: no XDP program left on $dev" \
		sh -c "! ip link show $dev | grep -q xdp"
}

differential_generic_veth() {
	check "veth pair vdh <- vdt (vdt in namespace A)" \
		sh -c "ip link add vdh type veth peer name vdt netns $NS_HW &&
		       ip link set vdh up && ip -n $NS_HW link set vdt up"
	generic_diff "generic on veth" vdh vdt "$SW" "$SW_TX"
	ip link del vdh
}

# QEMU's e1000: by MAC, whatever names the driver gave them.
e1k_name() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && { echo "${d##*/}"; return; }
	done
}
e1k_present() {
	local i
	for i in 4 5 6 7; do
		[ -n "$(e1k_name 52:54:00:00:00:0$i)" ] || return 1
	done
}
# e1k_setup HW TX NS: name the pair by MAC (:05 / :04, :07 / :06), TX into
# NS, both up, HW promiscuous with VLAN stripping off.
e1k_setup() {
	local h t
	h=$(e1k_name "52:54:00:00:00:0${1#eth}") t=$(e1k_name "52:54:00:00:00:0${2#eth}")
	[ -n "$h" ] && [ -n "$t" ] &&
	{ [ "$h" = "$1" ] || ip link set "$h" name "$1"; } &&
	{ [ "$t" = "$2" ] || ip link set "$t" name "$2"; } &&
	ip link set "$2" netns "$3" && ip -n "$3" link set "$2" up &&
	ethtool -K "$1" rxvlan off && ip link set "$1" up promisc on
}
e1k_setup_both() {
	e1k_setup $E1K $E1K_TX $NS_HW && e1k_setup $E1K_SW $E1K_SW_TX $NS_SW
}
has_mode_hint() { [ "$1" = 1 ] && grep -q -- "--mode skb $E1K" <<<"$2"; }
# e1k_teardown: the senders of the e1000 pairs back out of the namespaces.
e1k_teardown() {
	local ns_tx
	for ns_tx in "$NS_HW:$E1K_TX" "$NS_SW:$E1K_SW_TX"; do
		ip -n "${ns_tx%%:*}" link set "${ns_tx#*:}" netns 1 2>/dev/null &&
			ip link set "${ns_tx#*:}" up
	done
}

differential_generic_e1000() {
	if ! modprobe e1000 2>/dev/null; then
		skip "e1000 pair" "no e1000 module for kernel $(uname -r)"
	elif ! wait_for e1k_present; then
		skip "e1000 pair" "the guest has no e1000 NICs (tests/vm/run without XDPOFF_VM_E1000=1)"
	else
		# Names first, all four: a rename must not take a name still in use.
		for i in 4 5 6 7; do
			n=$(e1k_name 52:54:00:00:00:0$i)
			[ "$n" = eth$i ] || ip link set "$n" name e1k$i
		done
		check "e1000 pairs $E1K <- $E1K_TX (namespace A), $E1K_SW <- $E1K_SW_TX (namespace B)" \
			e1k_setup_both
		# Without --mode: native, which e1000's driver lacks; nothing left.
		out=$("$XDPOFF" attach "$E1K" 2>&1)
		rc=$?
		echo "$out" | diag
		check "attach $E1K without --mode fails, and says to use --mode skb" \
			has_mode_hint "$rc" "$out"
		check "... nothing left: no XDP program, no pins" \
			sh -c "! ip link show $E1K | grep -q xdp && [ ! -e /sys/fs/bpf/xdpoff/$E1K ]"
		check_eq "attach --mode bogus is a usage error (exit 2)" 2 \
			"$("$XDPOFF" attach --mode bogus "$E1K" >/dev/null 2>&1; echo $?)"
		generic_diff "generic on e1000" "$E1K" "$E1K_TX" "$E1K_SW" "$E1K_SW_TX"
	fi
	e1k_teardown
}

tests_run
