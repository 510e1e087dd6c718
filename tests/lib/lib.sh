# SPDX-License-Identifier: GPL-2.0
# Shared helpers of the in-guest tests: KTAP output, polling, the peer
# namespace, and readers of the user-visible state (nft, bpftool, xdpoff).
# Sourced by tests/guest/*.sh, which run as root inside the test guest.

XDPOFF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$XDPOFF_ROOT/build
XDPOFF=$BUILD/xdpoff
# The module built for the running kernel (make builds one per kernel
# ABI); make check-debug passes its own build.
XDPOFF_KO=${XDPOFF_KO:-$BUILD/kernel/$(uname -r)/xdpoff.ko}
SENDFRAME=$XDPOFF_ROOT/tests/lib/sendframe.py
BPFMAP=$XDPOFF_ROOT/tests/lib/bpfmap.py
KEYINDEX=$XDPOFF_ROOT/tests/lib/keyindex.py
PIN=/sys/fs/bpf/xdpoff

# KTAP numbering runs across all test files of one guest boot.
KTAP_COUNTER=${KTAP_COUNTER:-/tmp/xdpoff-ktap.count}
PEER_NS=${PEER_NS:-xpeer$$}

ktap_next() {
	local n
	n=$(( $(cat "$KTAP_COUNTER" 2>/dev/null || echo 0) + 1 ))
	echo "$n" > "$KTAP_COUNTER"
	echo "$n"
}

ok() { echo "ok $(ktap_next) - $*"; }
not_ok() { echo "not ok $(ktap_next) - $*"; }
skip() { local name=$1; shift; echo "ok $(ktap_next) - $name # SKIP $*"; }
diag() { sed 's/^/# /'; }

# A test file is a list of cases, kselftest's way: shell functions named
# in ALL_TESTS (one per line, between the quotes, so tests/check can read
# the list without running the file), run in that order by tests_run
# after the file's common setup.  Each case starts from that setup and
# leaves it as it found it, so any one of them runs alone:
#   make check TESTS=tests/guest/test_tc.sh:tc_shared_block
# (tests/check passes CASE,CASE... as XDPOFF_CASES).  An unknown name is a
# failure that lists the file's cases.
tests_run() {
	local c all
	all=" $(echo $ALL_TESTS) "
	for c in ${XDPOFF_CASES:-$ALL_TESTS}; do
		if [[ $all != *" $c "* ]]; then
			not_ok "$(basename "$0"): no case '$c' (cases:$all)"
			continue
		fi
		echo "# case $c"
		"$c"
	done
}

# check NAME CMD...: one test, passed when CMD exits 0.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$name"
	else
		not_ok "$name"
		printf '%s\n' "$out" | diag
	fi
}

# check_fails NAME PATTERN CMD...: CMD must fail and print PATTERN.
check_fails() {
	local name=$1 pattern=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		not_ok "$name"
		echo "command succeeded: $*" | diag
	elif ! grep -q -- "$pattern" <<<"$out"; then
		not_ok "$name"
		{ echo "expected '$pattern' in:"; printf '%s\n' "$out"; } | diag
	else
		ok "$name"
	fi
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		echo "expected '$2', got '$3'" | diag
	fi
}

# world_copy FILE: prints the path of a copy of FILE that every user of the
# guest can read and run (tmpfs under /run).  The checkout may live where
# an unprivileged user cannot enter: a mode 0700 home or mktemp -d
# directory, a CI workspace under /root.
world_copy() {
	local dir=/run/xdpoff-world
	mkdir -p "$dir" && chmod 0755 "$dir" &&
		install -m 0755 "$1" "$dir/" && echo "$dir/${1##*/}"
}

# Polling budget of a check that waits for frames of start_traffic: three
# times the general one (30 s; make check-debug's slow kernel: 180 s).
TRAFFIC_WAIT=$(( ${WAIT_TIMEOUT:-10} * 3 ))

# wait_for CMD...: poll CMD for up to ${WAIT_TIMEOUT:-10} s.
wait_for() {
	local deadline=$(( $(date +%s) + ${WAIT_TIMEOUT:-10} ))

	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# vm_monitor CMDLINE: run a QEMU monitor (HMP) command on the host, through
# tests/vm/monitor-agent; prints its output, fails if QEMU refused it.
vm_monitor() {
	local dir=${XDPOFF_VM_IO:?not in the test guest}/monitor name i
	name=$$.$RANDOM
	[ -d "$dir" ] || return 1
	echo "$*" > "$dir/$name.tmp" && mv "$dir/$name.tmp" "$dir/$name.req" || return 1
	for i in $(seq 300); do
		if [ -f "$dir/$name.rep" ]; then
			tail -n +2 "$dir/$name.rep"
			[ "$(head -n1 "$dir/$name.rep")" = ok ]
			return
		fi
		sleep 0.1
	done
	echo "vm_monitor: no answer from the host in 30 s" >&2
	return 1
}

# qemu_lacks_device ID: QEMU has no device ID (any more).  device_del only
# asks the guest to let the device go: QEMU deletes it once the guest
# ejected it, which a slow (debug) kernel does well after its netdev went,
# and a device_add of the same ID before that is refused ("Duplicate
# device ID").
qemu_lacks_device() {
	local out
	out=$(vm_monitor qom-list /machine/peripheral) || return 1
	! grep -q "^$1 (" <<<"$out"
}

# nic_by_mac MAC: the NIC with MAC, whatever the kernel named it (a NIC
# plugged back in).
nic_by_mac() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

# plug_back NIC NETDEV MAC NAME: QEMU's device NIC, unplugged by the test,
# plugged back in (virtio-net on QEMU's NETDEV, MAC), once QEMU deleted it;
# three checks; the new NIC named NAME and up.
plug_back() {
	local nic=$1 netdev=$2 mac=$3 name=$4 dev
	WAIT_TIMEOUT=60 check "... QEMU deleted the device (the guest ejected it)" \
		wait_for qemu_lacks_device "$nic"
	check "device_add plugs it back" vm_monitor device_add \
		"virtio-net-pci,id=$nic,netdev=$netdev,romfile=,mac=$mac"
	WAIT_TIMEOUT=60 check "... the guest sees it" wait_for nic_by_mac "$mac"
	dev=$(nic_by_mac "$mac")
	[ "$dev" = "$name" ] || ip link set dev "$dev" name "$name"
	ip link set "$name" up
}

# The sending NIC goes into a namespace of its own, so frames cross the
# (emulated) wire to its peer.  setup_peer SEND_DEV
# The peer stays silent: no IPv6 link-local address, so no DAD or MLD
# frames land in the counters of the tests.
setup_peer() {
	move_to_ns "$1" "$PEER_NS"
}

# move_to_ns DEV NS: move DEV into NS (created if needed), up and silent.
move_to_ns() {
	ip netns list | grep -qw "$2" || ip netns add "$2"
	ip netns exec "$2" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$2" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip link set "$1" netns "$2"
	ip -n "$2" link set "$1" up
}

# release_ns NS: move NS's NICs back to the root namespace, up, then delete
# NS.  Deleting a namespace alone returns its devices later, from a
# workqueue, and down: the next test would race with that, or find a NIC
# (an XDP redirect target, say) down.
release_ns() {
	local dev

	ip netns list | grep -qw "$1" || return 0
	for dev in $(ip -n "$1" -o link show | awk -F': ' '$2 != "lo" {print $2}'); do
		dev=${dev%%@*}
		ip -n "$1" link set "$dev" promisc off
		ip -n "$1" link set "$dev" netns 1 && ip link set "$dev" up
	done
	ip netns del "$1"
}

cleanup_peer() {
	release_ns "$PEER_NS"
}

# send DEV_IN_PEER RX_DEV sendframe-args...: frames from the peer to RX_DEV.
send() {
	send_from "$PEER_NS" "$@"
}

# send_from NS DEV_IN_NS RX_DEV sendframe-args...: the same from namespace NS.
send_from() {
	local ns=$1 tx=$2 rx=$3
	shift 3
	ip netns exec "$ns" python3 "$SENDFRAME" "$tx" \
		--dmac "$(cat /sys/class/net/"$rx"/address)" "$@"
}

# start_traffic TX RX "PORTS" sendframe-args...: in the background, UDP
# frames from the peer to RX, 40 a second, to each port of PORTS in turn;
# stop_traffic ends it.  One paced sender: starting a Python for each
# burst kept a guest CPU busy and slowed the whole test.
start_traffic() {
	local tx=$1 rx=$2 ports=$3
	shift 3
	ip netns exec "$PEER_NS" python3 "$SENDFRAME" "$tx" \
		--dmac "$(cat /sys/class/net/"$rx"/address)" "$@" --proto udp \
		--dport "${ports// /,}" --count 0 --rate 40 >/dev/null 2>&1 &
	TRAFFIC_PID=$!
}

stop_traffic() {
	[ -z "${TRAFFIC_PID:-}" ] || kill "$TRAFFIC_PID" 2>/dev/null
	wait 2>/dev/null
	TRAFFIC_PID=
}

# The rules and flows maps: hash maps of thousands of entries in some
# tests, which tests/lib/bpfmap.py reads raw, in key order (bpftool -j
# formats each entry through BTF, slowly under TCG).
raw_map() {
	case $1 in xdpoff_rules|xdpoff_flows) return 0 ;; esac
	return 1
}

# Number of entries in one pinned map of DEV.
map_count() {
	if raw_map "$2"; then
		python3 "$BPFMAP" count "$PIN/$1/$2"
		return
	fi
	bpftool -j map dump pinned "$PIN/$1/$2" |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}

# The entries of one pinned map, in a canonical order (a hash map dumps in
# bucket order, which changes when an entry is deleted and added back).
map_dump() {
	if raw_map "$2"; then
		python3 "$BPFMAP" dump "$PIN/$1/$2"
		return
	fi
	bpftool -j map dump pinned "$PIN/$1/$2" | python3 -c '
import json, sys
entries = json.load(sys.stdin)
for e in sorted(entries, key=lambda e: json.dumps(e["key"])):
    print(json.dumps(e, sort_keys=True))'
}

# nft_counter FAMILY TABLE CHAIN COMMENT [packets|bytes]: counter of the
# rule with COMMENT, from nft's listing (`... counter packets N bytes N
# ... comment "COMMENT"`): awk, as a Python started per poll of a
# wait_for costs the TCG guest most of a second.
nft_counter() {
	nft list chain "$1" "$2" "$3" | awk -v c="comment \"$4\"" -v what="${5:-packets}" '
		substr($0, length($0) - length(c) + 1) == c {
			for (i = 1; i + 4 <= NF; i++)
				if ($i == "counter" && $(i + 1) == "packets") {
					print (what == "bytes" ? $(i + 4) : $(i + 2))
					found = 1
					exit
				}
		}
		END { exit !found }'
}

# xdp_rule_packets DEV ORDER_INDEX: XDP packets of the n-th rule (0-based)
# of DEV in xdpoff show --json.
xdp_rule_packets() {
	"$XDPOFF" show "$1" --json | python3 -c '
import json, sys
devs = json.load(sys.stdin)
print(devs[0]["rules"][int(sys.argv[1])]["packets"])' "$2"
}

# counter_is FAMILY TABLE CHAIN COMMENT N, for wait_for
counter_is() {
	[ "$(nft_counter "$1" "$2" "$3" "$4")" = "$5" ]
}

# xdp_packets_is DEV ORDER_INDEX N, for wait_for
xdp_packets_is() {
	[ "$(xdp_rule_packets "$1" "$2")" = "$3" ]
}

# ethtool -S counter of virtio-net, summed over queues: rx_queue_N_xdp_drops
# on 6.1, rxN_xdp_drops on 6.12 (which adds a total, rx_xdp_drops, left out).
xdp_drops() {
	ethtool -S "$1" |
		awk '$1 ~ /^rx(_queue_)?[0-9]+_xdp_drops:$/ { s += $2 } END { print s + 0 }'
}

# The same for frames XDP redirected (rx_queue_N_xdp_redirects, rxN_...).
xdp_redirects() {
	ethtool -S "$1" |
		awk '$1 ~ /^rx(_queue_)?[0-9]+_xdp_redirects:$/ { s += $2 } END { print s + 0 }'
}

# xdp_dropped_since DEV BASE N: at least N frames dropped in XDP on DEV
# since xdp_drops gave BASE, for wait_for.
xdp_dropped_since() {
	[ $(( $(xdp_drops "$1") - $2 )) -ge "$3" ]
}

# xdp_redirected_since DEV BASE N: the same for frames XDP redirected.
xdp_redirected_since() {
	[ $(( $(xdp_redirects "$1") - $2 )) -ge "$3" ]
}

# xdp_drops_are DEV BASE N [DEV BASE N...]: exactly N frames dropped in XDP
# on each DEV since BASE, for wait_for.
xdp_drops_are() {
	while [ $# -ge 3 ]; do
		[ $(( $(xdp_drops "$1") - $2 )) -eq "$3" ] || return 1
		shift 3
	done
}

# one_bit_masks N: N drop rules of ether saddr masks of one bit each (bit
# i of the address: bit i % 8 of byte i / 8), none within another: a
# table each (doc/design.md, Classification).
one_bit_masks() {
	local i b m
	for i in $(seq 0 $(($1 - 1))); do
		m=
		for b in 5 4 3 2 1 0; do
			m=$(printf '%02x' $(( i / 8 == b ? 1 << i % 8 : 0 )))${m:+:$m}
		done
		echo "ether saddr & $m == 00:00:00:00:00:00 drop"
	done
}

load_module() {
	lsmod | grep -q '^xdpoff ' || insmod "$XDPOFF_KO"
}

unload_module() {
	! lsmod | grep -q '^xdpoff ' || rmmod xdpoff
}

# load_rules [RULE...]: the ruleset becomes table netdev t with a chain
# "seen" on $RX at priority -10, which counts the frames software sees
# (those XDP did not drop), and with RULEs the offloaded chain hw
# (priority 10) of them.
load_rules() {
	nft flush ruleset
	{
		echo "table netdev t {"
		echo "  chain seen { type filter hook ingress device $RX priority -10; counter comment \"seen\"; }"
		if [ $# -gt 0 ]; then
			echo "  chain hw { type filter hook ingress device $RX priority 10; policy accept; flags offload;"
			printf '    %s\n' "$@"
			echo "  }"
		fi
		echo "}"
	} > /tmp/load-rules.nft
	nft -f /tmp/load-rules.nft
}

# seen: the "seen" chain's packets; seen_is N; rule_is COMMENT N: the
# packets of hw's rule of that comment.
seen() { nft_counter netdev t seen seen; }
seen_is() { [ "$(seen)" = "$1" ]; }
rule_is() { [ "$(nft_counter netdev t hw "$1")" = "$2" ]; }

# offload_chain DEV RULE...: the ruleset becomes table netdev t with one
# offloaded chain, hw, on DEV (priority 10) holding the RULEs.
offload_chain() {
	local dev=$1
	shift
	nft flush ruleset || return
	{
		echo "table netdev t {"
		echo "  chain hw { type filter hook ingress device $dev priority 10; policy accept; flags offload;"
		printf '    %s\n' "$@"
		echo "  }"
		echo "}"
	} | nft -f -
}

# cleanup_offload DEV...: the end of a test that sent traffic to attached
# DEVs: traffic stopped, ruleset flushed, DEVs detached and out of
# promiscuous mode, module unloaded, peer namespace gone.
cleanup_offload() {
	local d
	stop_traffic
	nft flush ruleset 2>/dev/null
	for d; do
		"$XDPOFF" detach "$d" >/dev/null 2>&1
		ip link set "$d" promisc off 2>/dev/null
	done
	unload_module
	cleanup_peer
}
