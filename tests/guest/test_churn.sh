#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Churn: random nft transactions on an offloaded chain (single rules added
# and deleted, batches, chain flushes) while frames arrive; after each,
# the driver's shadow table holds exactly the chain's rules and the rules
# map one entry per distinct match.  Then the same for a while with random
# injected failures of the driver's map writes (debugfs fail_permille), in
# the style of the kernel's offload selftests: no warning taints the
# kernel.  At the end a flush empties every map.
#
#   XDPOFF_CHURN          transactions, default 120 (the rig passes these
#                         on when named in XDPOFF_VM_ENV)
#   XDPOFF_FAULT_SECS     seconds of the random-failure run, default 30
#   XDPOFF_FAULT_PERMILLE probability of a failed map write, default 100
#                         (at least 20 add batches run whatever the time)
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
TX=eth0
N=${XDPOFF_CHURN:-120}
FAULT_SECS=${XDPOFF_FAULT_SECS:-30}
FAIL_PERMILLE=/sys/kernel/debug/xdpoff/fail_permille
V4="--saddr 10.0.1.3 --daddr 10.0.0.2"

cleanup() {
	echo 0 > $FAIL_PERMILLE 2>/dev/null
	stop_traffic
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
	ip link set $RX promisc off
	cleanup_peer
}
trap cleanup EXIT

setup_peer $TX
insmod "$XDPOFF_KO"
"$XDPOFF" attach $RX
ip link set $RX promisc on
start_traffic $TX $RX "1 2 3 4 5" $V4

nft add table netdev t
nft add chain netdev t hw "{ type filter hook ingress device $RX priority 10; policy accept; flags offload; }"

# plan N SEED: N random transactions over a pool of rules, every text a
# distinct match, some sharing masks.
plan() {
	python3 - "$1" "$2" <<'EOF'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
pool = ["udp dport %d counter drop" % p for p in range(1, 9)] + \
       ["ip saddr 10.0.%d.0/24 counter accept" % i for i in range(4)] + \
       ["ip daddr 10.0.0.%d tcp dport 22 counter drop" % i for i in range(4)] + \
       ["ether saddr 02:00:00:00:00:%02x counter drop" % i for i in range(4)] + \
       ["ip6 saddr fd00::%d counter drop" % i for i in range(3)]
print("# seed %d" % seed)
for _ in range(n):
    k = rng.random()
    if k < 0.45:
        print("add " + "|".join(rng.sample(pool, rng.randint(1, 3))))
    elif k < 0.9:
        print("del %d" % rng.randint(1, 3))
    elif k < 0.95:
        print("flush")
    else:
        print("bad " + rng.choice(pool))
EOF
}

handles() { nft -a list chain netdev t hw | awk '/counter.*# handle/ {print $NF}'; }
nft_rules() { nft list chain netdev t hw | grep -c counter; }
distinct() { nft list chain netdev t hw | grep counter | sed 's/counter packets [0-9]* bytes [0-9]*/counter/' | sort -u | wc -l; }
shadow() { wc -l < /sys/kernel/debug/xdpoff/$RX/rules; }

# run PLAN [SECONDS MIN_ADDS]: the transactions of PLAN (all, or as many
# as fit in SECONDS, but at least MIN_ADDS add batches); counts mismatches
# in $bad, transactions in $i, add batches in $adds, of them refused by nft
# in $refused, rules deleted in $dels.
run() {
	local deadline=$(( $(date +%s) + ${2:-1000000} )) op arg hs
	bad=0 i=0 dels=0 adds=0 refused=0
	head -1 "$1" | diag
	while read -r op arg; do
		[ "$op" = "#" ] && continue
		[ "$(date +%s)" -lt $deadline ] || [ $adds -lt "${3:-0}" ] || break
		i=$((i + 1))
		case $op in
		add)
			IFS='|' read -ra rules <<<"$arg"
		adds=$((adds + 1))
			{ for r in "${rules[@]}"; do echo "add rule netdev t hw $r"; done; } |
				nft -f - 2>/dev/null || refused=$((refused + 1))
			;;
		del)
			# (no process substitution: the guest has no /dev/fd)
			hs=$(handles | shuf -n "$arg")
			[ -z "$hs" ] || for h in $hs; do
				echo "delete rule netdev t hw handle $h"
			done | nft -f - && dels=$((dels + $(wc -w <<<"$hs")))
			;;
		flush)
			nft flush chain netdev t hw
			;;
		bad)
			# A batch that fails at its end: nothing of it may stay.
			printf 'add rule netdev t hw %s\nadd rule netdev t hw ip saddr 10.9.9.9 dup to lo\n' \
				"$arg" | nft -f - 2>/dev/null
			;;
		esac
		want=$(nft_rules) have=$(shadow) keys=$(distinct) entries=$(map_count $RX xdpoff_rules)
		if [ "$want" != "$have" ] || [ "$keys" != "$entries" ]; then
			bad=$((bad + 1))
			[ $bad -le 3 ] && echo "after #$i ($op $arg): nft $want rules, shadow $have; $keys distinct matches, map $entries entries" | diag
		fi
	done < "$1"
}

plan "$N" "${XDPOFF_CHURN_SEED:-$RANDOM}" > /tmp/churn.plan
run /tmp/churn.plan
check_eq "$i transactions under traffic: shadow table and rules map agree with nft after each" 0 "$bad"
check "... $dels rules among them deleted one by one" test "$dels" -gt 0
check_eq "... no add batch refused" 0 "$refused"

# Random injected failures of map writes while rulesets load.
taint0=$(cat /proc/sys/kernel/tainted)
plan 100000 "${XDPOFF_CHURN_SEED:-$RANDOM}" > /tmp/churn.plan
echo "${XDPOFF_FAULT_PERMILLE:-100}" > $FAIL_PERMILLE
run /tmp/churn.plan "$FAULT_SECS" 20
echo 0 > $FAIL_PERMILLE
check_eq "${FAULT_SECS} s of random map-write failures, $i transactions: shadow table and rules map agree with nft after each" 0 "$bad"
check "... $refused of $adds add batches failed, the others loaded" \
	test "$refused" -gt 0 -a "$refused" -lt "$adds"
check_eq "... the kernel took no new taint (no warning)" "$taint0" \
	"$(cat /proc/sys/kernel/tainted)"
nft flush ruleset
masks_state() {
	bpftool -j map dump pinned "$PIN/$RX/xdpoff_meta" | python3 -c '
import json, sys
meta = json.load(sys.stdin)[0]["value"]
if isinstance(meta, dict):
    print(meta["nr_masks"])
else:   # no BTF: little-endian bytes, nr_masks first
    print(int.from_bytes(bytes(int(b, 16) for b in meta[:4]), "little"))'
}
check_eq "after a flush: no rule in the map, none in the shadow table, no mask in use" \
	"0 0 0" "$(map_count $RX xdpoff_rules) $(shadow) $(masks_state)"
