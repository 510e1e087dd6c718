#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# xdpoff check: each class of refusal named with its source (nf_tables'
# expression, xdpoff's key and action, its tables, its stages, a device
# not attached, a chain's priority); suggestions that offload once
# applied; the running ruleset checked; the live state (ruleset, maps,
# counters, pins, namespaces, devices) the same after a check and after
# one killed midway; bad input.
set -u
. "$(dirname "$0")/../lib/lib.sh"

RX=eth1
ALL_TESTS="
	check_refusals
	check_suggestions
	check_fallback
	check_live_unchanged
	check_bad_input
"
F=/tmp/check-ruleset.nft
OUT=/tmp/check-out.json

cleanup() {
	nft flush ruleset 2>/dev/null
	"$XDPOFF" detach eth2 >/dev/null 2>&1
	"$XDPOFF" detach $RX >/dev/null 2>&1
	unload_module
}
trap cleanup EXIT

load_module
check "attach $RX" "$XDPOFF" attach $RX
check "attach eth2" "$XDPOFF" attach eth2

# result CHAIN INDEX KEY: KEY of the check result of rule INDEX of CHAIN
# in $OUT (offload: true/false; by; reason; suggestion; rule).
result() {
	python3 - "$OUT" "$@" <<'EOF'
import json, sys
out, chain, index, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for r in json.load(open(out)):
    if r["chain"] == chain and r["index"] == index:
        v = r[key]
        print(json.dumps(v) if isinstance(v, bool) or v is None else v)
        break
else:
    print("no result")
EOF
}

# refused CHAIN INDEX BY REASON: rule INDEX of CHAIN does not offload,
# refused by BY, REASON in its reason.
refused() {
	[ "$(result "$1" "$2" offload)" = false ] &&
		[ "$(result "$1" "$2" by)" = "$3" ] &&
		result "$1" "$2" reason | grep -qF -- "$4"
}

# stages N: N chains on eth2 with flags offload, one rule each, one more
# than the module takes when N is XDPOFF_MAX_STAGES + 1.
stages() {
	local i
	for i in $(seq 1 "$1"); do
		echo "	chain s$i {"
		echo "		type filter hook ingress device eth2 priority $i; flags offload;"
		echo "		ip saddr 10.9.9.$i drop"
		echo "	}"
	done
}

# The ruleset of check_refusals, in FILE.
write_ruleset() {
	{
		echo "define DEV = $RX"
		echo "table netdev prio {"
		echo "	chain p0 {"
		echo "		type filter hook ingress device $RX priority 0; flags offload;"
		echo "		ip saddr 10.1.0.1 drop"
		echo "	}"
		echo "}"
		echo "table netdev filter {"
		echo "	chain in {"
		echo "		type filter hook ingress devices = { \$DEV } priority 10; flags offload;"
		echo "		ip saddr 10.0.0.1 counter drop"
		echo "		meta mark 5 drop"
		echo "		tcp dport { 22, 80 } drop"
		echo "		ip saddr 10.0.0.2 dup to eth2"
		echo "		ip daddr 10.0.0.3 fwd to eth3"
		echo "		udp dport 53 accept"
		echo "		@ll,112,16 10 drop"
		echo "	}"
		echo "	chain masks {"
		echo "		type filter hook ingress device $RX priority 20; flags offload;"
		one_bit_masks 33 | sed 's/^/		/'
		echo "	}"
		echo "	chain soft {"
		echo "		type filter hook ingress device $RX priority 30;"
		echo "		meta mark 5 drop"
		echo "	}"
		echo "}"
		echo "table inet i {"
		echo "	chain inetc {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		echo "		ip saddr 10.3.0.1 drop"
		echo "	}"
		echo "}"
		echo "table netdev other {"
		echo "	chain unattached {"
		echo "		type filter hook ingress device eth3 priority 10; flags offload;"
		echo "		ip saddr 10.2.0.1 drop"
		echo "	}"
		stages 9
		echo "}"
	} > "$F"
}

check_refusals() {
	write_ruleset
	"$XDPOFF" check --json "$F" > "$OUT"
	check_eq "check FILE with refused rules exits 1" 1 $?
	check_eq "an offloadable rule offloads" true "$(result in 0 offload)"
	check_eq "... its text as nft lists it, without counter values" \
		"ip saddr 10.0.0.1 counter drop" "$(result in 0 rule)"
	check "meta mark: nf_tables, the expression named" \
		refused in 1 nf_tables 'no offload for `meta mark 0x00000005`'
	check "an anonymous set: nf_tables, the expression named" \
		refused in 2 nf_tables 'no offload for `tcp dport { 22, 80 }`'
	check "dup: xdpoff's own reason" \
		refused in 3 xdpoff 'mirror and dup are not supported'
	check "fwd to a device not attached: xdpoff's reason" \
		refused in 4 xdpoff 'fwd target must be attached with xdpoff'
	check_eq "a rule after refused ones still offloads" true "$(result in 5 offload)"
	# nf_tables hands a TCI at offset 14 over as a vlan key without its
	# EtherType: a key xdpoff does not take.
	check "a vlan TCI without the vlan's EtherType: xdpoff's reason" \
		refused in 6 xdpoff 'match on vlan needs its ethertype (8021q or 8021ad)'
	# The limits count what came before: chain in holds 2 tables (ip
	# saddr, udp dport), so 30 of the one-bit masks get the 30 left.
	check_eq "the tables chain in left: 30 one-bit masks offload (rule 29)" \
		true "$(result masks 29 offload)"
	check "the 31st: xdpoff, no table left" \
		refused masks 30 xdpoff 'no table of the 32 takes this rule'
	check_eq "a chain without flags offload is not checked" "no result" \
		"$(result soft 0 offload)"
	check "priority 0: nf_tables offloads 1 to 65535 only" \
		refused p0 0 nf_tables 'priority 1 to 65535, not 0'
	check_eq "... suggested: priority 1, where it offloads" \
		'the chain at priority 1 (`priority 1;`): it and its rules offload there' \
		"$(result p0 0 suggestion)"
	check "an inet ingress chain: nf_tables offloads netdev chains only" \
		refused inetc 0 nf_tables 'only netdev family chains, not inet ones'
	check "a device not attached: xdpoff, how to attach it" \
		refused unattached 0 xdpoff 'eth3 is not attached to xdpoff (xdpoff attach eth3)'
	check_eq "8 chains on eth2 offload (the 8th)" true "$(result s8 0 offload)"
	check "the 9th: xdpoff, too many chains" \
		refused s9 0 xdpoff 'too many offloaded chains on the device'

}

check_suggestions() {
	{
		echo "table netdev t {"
		echo "	chain c {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		echo "		tcp dport { 22, 80, 443 } drop"
		echo "		ip saddr . udp dport { 10.0.0.2 . 53, 10.0.0.3 . 123 } accept"
		echo "		ip daddr { 10.5.0.0/16, 10.6.0.1 } ip ttl 3 drop"
		echo "	}"
		echo "}"
	} > "$F"
	"$XDPOFF" check --json "$F" > "$OUT"
	check_eq "a ruleset of sets exits 1" 1 $?
	check_eq "a set of 3 ports: 3 rules suggested" \
		"tcp dport 22 drop|tcp dport 80 drop|tcp dport 443 drop" \
		"$(result c 0 suggestion | paste -sd'|')"
	check_eq "a set of concatenations: a match per field" \
		"ip saddr 10.0.0.2 udp dport 53 accept|ip saddr 10.0.0.3 udp dport 123 accept" \
		"$(result c 1 suggestion | paste -sd'|')"
	check_eq "no suggestion where the expanded rules do not offload (ip ttl)" \
		null "$(result c 2 suggestion)"
	# The suggestions applied: each rule replaced by its suggestion.
	{
		echo "table netdev t {"
		echo "	chain c {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		result c 0 suggestion
		result c 1 suggestion
		echo "	}"
		echo "}"
	} > /tmp/check-applied.nft
	check "the suggestions applied: every rule offloads (exit 0)" \
		"$XDPOFF" check /tmp/check-applied.nft
	check "... and the file loads offloaded" nft -f /tmp/check-applied.nft
	check_eq "... 5 rules in XDP" 5 "$(map_count $RX xdpoff_rules)"
	nft flush ruleset
}

# --fallback: the file with flags offload out of the chains that cannot
# offload, which loads with the others offloaded (nft-load at boot).
check_fallback() {
	{
		echo "table netdev t {"
		echo "	chain hw {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		echo "		ip saddr 10.0.0.1 drop"
		echo "	}"
		echo "	chain soft {"
		echo "		type filter hook ingress device $RX priority 20; flags offload;"
		echo "		ip saddr 10.0.0.2 drop"
		echo "		meta mark 5 drop"
		echo "	}"
		echo "}"
	} > "$F"
	check_fails "the file does not load with offload" "Operation not supported" \
		nft -f "$F"
	"$XDPOFF" check --fallback "$F" > /tmp/check-fb.nft 2> /tmp/check-fb.err
	check_eq "check --fallback exits 0" 0 $?
	check_eq "... names the chain in software and why, on stderr" \
		'xdpoff: chain netdev t soft runs in software: rule 1 (meta mark 0x00000005 drop): nf_tables: no offload for `meta mark 0x00000005`' \
		"$(cat /tmp/check-fb.err)"
	check "... its output loads" nft -f /tmp/check-fb.nft
	check "... chain hw offloaded" \
		sh -c "nft list chain netdev t hw | grep -q 'flags offload'"
	check "... chain soft in software" \
		sh -c "! nft list chain netdev t soft | grep -q 'flags offload'"
	check_eq "... hw's rule in XDP, none of soft's" 1 "$(map_count $RX xdpoff_rules)"
	nft flush ruleset
}

# The live state: the ruleset with handles and counters, every map of
# both devices, their link counters, the pins, the module's devices, the
# network namespaces.
live_state() {
	nft -j list ruleset
	for d in $RX eth2; do
		for m in xdpoff_rules xdpoff_masks xdpoff_meta xdpoff_stats \
			xdpoff_flows xdpoff_filter; do
			map_dump $d $m
		done
		ip -s -j link show dev $d
	done
	"$XDPOFF" show --json
	find $PIN /sys/kernel/debug/xdpoff | sort
	lsns -n -t net -o NS | sort
	ip -br link
}

same_live_state() { [ "$(live_state)" = "$before" ]; }

check_live_unchanged() {
	{
		echo "table netdev live {"
		echo "	chain hw {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		echo "		ip saddr 10.0.0.1 counter drop"
		echo "	}"
		echo "	chain sw {"
		echo "		type filter hook ingress device $RX priority 20;"
		echo "		meta mark 5 counter drop"
		echo "	}"
		echo "}"
	} > /tmp/check-live.nft
	check "a live ruleset: an offloaded chain, a software one" \
		nft -f /tmp/check-live.nft
	before=$(live_state)

	"$XDPOFF" check --all > /tmp/check-live.txt
	check_eq "check of the running ruleset, --all: exit 1 (the software chain)" 1 $?
	check "... it checked the live offloaded chain: its rule offloads" \
		grep -q '^chain netdev live hw: 1 of 1 rule offload' /tmp/check-live.txt
	check "... and, --all, the chain without flags offload" \
		grep -q '^chain netdev live sw: 0 of 1 rule offload' /tmp/check-live.txt
	check "the text output: a line per rule, the reason under it" \
		grep -A1 -xF '    0  no   meta mark 0x00000005 counter drop' /tmp/check-live.txt
	check_eq "the live state is the same after check" "$before" "$(live_state)"

	# Killed midway: a chain of many rules, one by one (each a set).
	{
		echo "table netdev big {"
		echo "	chain c {"
		echo "		type filter hook ingress device $RX priority 10; flags offload;"
		for i in $(seq 1 300); do echo "		tcp dport { $i, $((i + 1000)) } drop"; done
		echo "	}"
		echo "}"
	} > "$F"
	"$XDPOFF" check "$F" > /dev/null 2>&1 &
	pid=$!
	# Until it works in its scratch namespace, some rules in.
	wait_for sh -c "[ \"\$(readlink /proc/$pid/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]"
	sleep 3
	kill -9 $pid
	wait $pid 2>/dev/null
	check "check killed midway: its namespace's last nft exits" \
		wait_for sh -c "! pgrep -x nft"
	check "... no scratch namespace, device or pin left: the live state the same" \
		wait_for same_live_state
	nft flush ruleset
}

check_bad_input() {
	check_fails "a FILE that does not exist: exit 2" "cannot read /nonexistent" \
		"$XDPOFF" check /nonexistent
	"$XDPOFF" check /nonexistent >/dev/null 2>&1
	check_eq "... status 2" 2 $?
	{
		echo "table netdev t {"
		echo "	chain c {"
		echo "		type filter hook ingress device $RX priority 10; flags offload; polcy accept;"
		echo "		ip saddr 10.0.0.1 drop"
		echo "	}"
		echo "}"
	} > "$F"
	out=$("$XDPOFF" check "$F" 2>&1)
	check_eq "nft's syntax error: exit 2" 2 $?
	check "... nft's message, with the file's name and line" \
		grep -qF "$F:3:" <<<"$out"
	check "... the line as written, flags offload included" \
		grep -qF "priority 10; flags offload; polcy accept;" <<<"$out"
	out=$("$XDPOFF" check a b 2>&1)
	check_eq "two files: a usage error, exit 2" 2 $?
	echo 'table netdev t { chain c { type filter hook ingress device eth9 priority 10; flags offload; } }' > "$F"
	out=$("$XDPOFF" check "$F" 2>&1)
	check_eq "a device this namespace has not: nft's error, exit 2" 2 $?
}

tests_run
