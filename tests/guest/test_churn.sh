#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Churn: random nft transactions on an offloaded chain (rules added one by
# one and in batches, deleted by handle, chain flushes, aborted batches)
# while frames arrive; after each, `xdpoff show --json` equals the chain's
# rules in `nft -j list` (tests/lib/churn.py: one entry per distinct match,
# the first rule with it, its verdict and match fields) and the driver's
# shadow table holds one line per rule.  Then the same for a while with
# random injected failures of the driver's map writes (debugfs
# fail_permille), in the style of the kernel's offload selftests: no
# warning taints the kernel.  At the end a flush empties every map.
#
#   XDPOFF_CHURN          transactions, default 1000 (the rig passes these
#                         on when named in XDPOFF_VM_ENV)
#   XDPOFF_FAULT_SECS     seconds of the random-failure run, default 30
#   XDPOFF_FAULT_PERMILLE probability of a failed map write, default 100
#                         (at least 20 add batches run whatever the time,
#                         and on until one failed and one loaded)
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
N=${XDPOFF_CHURN:-1000}
FAULT_SECS=${XDPOFF_FAULT_SECS:-30}
FAIL_PERMILLE_VALUE=${XDPOFF_FAULT_PERMILLE:-100}
FAIL_PERMILLE=/sys/kernel/debug/xdpoff/fail_permille
V4="--saddr 10.0.1.3 --daddr 10.0.0.2"
ALL_TESTS="
	churn_transactions
	churn_map_write_failures
	churn_self_check
"

cleanup() {
	echo 0 > $FAIL_PERMILLE 2>/dev/null
	cleanup_offload $RX
}
trap cleanup EXIT

setup_peer $TX
insmod "$XDPOFF_KO"
"$XDPOFF" attach $RX
ip link set $RX promisc on
start_traffic $TX $RX "1 2 3 4 5" $V4

offload_chain $RX

shadow() { wc -l < /sys/kernel/debug/xdpoff/$RX/rules; }

# churn ARGS...: tests/lib/churn.py on chain hw; sets i adds refused dels
# bad.  (No process substitution: the guest has no /dev/fd.)
churn() {
	local out
	out=$(python3 "$XDPOFF_ROOT/tests/lib/churn.py" --chain netdev:t:hw \
		--dev $RX --xdpoff "$XDPOFF" "$@" 2>/tmp/churn.err) || out="0 0 0 0 failed"
	diag < /tmp/churn.err
	set -- $out
	i=$1 adds=$2 refused=$3 dels=$4 bad=$5
}

# Each case leaves chain hw as the common setup made it, empty.
churn_transactions() {
	churn --seed "${XDPOFF_CHURN_SEED:-$RANDOM}" --transactions "$N"
	check_eq "$i transactions under traffic: xdpoff show --json equals the chain in nft -j after each" 0 "$bad"
	check "... $dels rules among them deleted by handle" test "$dels" -gt 0
	check_eq "... no add batch refused" 0 "$refused"
	offload_chain $RX
}

# masks_state: how many masks the meta map says are in use.
masks_state() {
	bpftool -j map dump pinned "$PIN/$RX/xdpoff_meta" | python3 -c '
import json, sys
meta = json.load(sys.stdin)[0]["value"]
if isinstance(meta, dict):
    print(meta["nr_masks"])
else:   # no BTF: little-endian bytes, nr_masks first
    print(int.from_bytes(bytes(int(b, 16) for b in meta[:4]), "little"))'
}

# Random injected failures of map writes while rulesets load.
churn_map_write_failures() {
	taint0=$(cat /proc/sys/kernel/tainted)
	echo "$FAIL_PERMILLE_VALUE" > $FAIL_PERMILLE
	# The failures are the kernel's dice, not the seed's: the run goes on
	# until some add batch failed and some loaded (--mixed).
	churn --seed "${XDPOFF_CHURN_SEED:-$RANDOM}" --seconds "$FAULT_SECS" --min-adds 20 --mixed
	echo 0 > $FAIL_PERMILLE
	check_eq "${FAULT_SECS} s of random map-write failures, $i transactions: xdpoff show equals nft after each" 0 "$bad"
	check "... $refused of $adds add batches failed, the others loaded" \
		test "$refused" -gt 0 -a "$refused" -lt "$adds"
	check_eq "... the kernel took no new taint (no warning)" "$taint0" \
		"$(cat /proc/sys/kernel/tainted)"
	nft flush ruleset
	check_eq "after a flush: no rule in the map, none in the shadow table, no mask in use" \
		"0 0 0" "$(map_count $RX xdpoff_rules) $(shadow) $(masks_state)"
	offload_chain $RX
}

# "key hex .. value hex ..": the first rule of the map, its action set to
# XDPOFF_ACT_PASS (0).
entry_as_pass() {
	python3 "$BPFMAP" first "$PIN/$RX/xdpoff_rules" action=0
}

# The comparison's self-check: one rule offloaded, equal; then the action
# of its map entry turned from drop to pass behind the module's back
# (bpftool), which the comparison must see.
churn_self_check() {
	offload_chain $RX 'udp dport 1 counter drop'
	churn --seed 0 --transactions 0
	check_eq "self-check: one rule, xdpoff show equals nft" 0 "$bad"
	check "... the entry's action set to pass with bpftool" \
		bpftool map update pinned "$PIN/$RX/xdpoff_rules" $(entry_as_pass)
	churn --seed 0 --transactions 0
	check_eq "... and the comparison reports the difference" 1 "$bad"
	offload_chain $RX
}

tests_run
