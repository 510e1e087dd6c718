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

cleanup() {
	nft flush ruleset 2>/dev/null
	tc qdisc del dev "$HW" ingress 2>/dev/null
	tc qdisc del dev "$SW" ingress 2>/dev/null
	"$XDPOFF" detach "$HW" >/dev/null 2>&1
	unload_module
	release_ns "$NS_HW"
	release_ns "$NS_SW"
	ip link set "$HW" promisc off 2>/dev/null
	ip link set "$SW" promisc off 2>/dev/null
}
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

rm -f "$SUMMARY"
check "sender $HW_TX in its own namespace" peer "$NS_HW" "$HW_TX"
check "sender $SW_TX in its own namespace" peer "$NS_SW" "$SW_TX"
# QEMU's virtio-net filters on the destination MAC unless promiscuous.
check "$HW and $SW promiscuous" \
	sh -c "ip link set $HW promisc on && ip link set $SW promisc on"
check "module loads" insmod "$XDPOFF_KO"
check "attach $HW" "$XDPOFF" attach "$HW"
# Nothing below means anything without the offload.
ip -d link show "$HW" | grep -q 'prog/xdp' || exit 1

drops0=$(xdp_drops "$HW")
start=$(date +%s)
seed_arg=()
[ -n "${XDPOFF_DIFF_SEED:-}" ] && seed_arg=(--seed "$XDPOFF_DIFF_SEED")
[ "${XDPOFF_DIFF_PLAIN:-0}" = 1 ] && seed_arg+=(--plain-only)
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
		"xdp_drops agree" "tc exercised"; do
		skip "differential: $t" "difftest did not complete"
	done
	exit 0
fi
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
check "virtio-net's xdp_drops agree ($drops >= $(summary xdp_drops))" \
	test "$drops" -ge "$(summary xdp_drops)" -a "$(summary xdp_drops)" -gt 0
