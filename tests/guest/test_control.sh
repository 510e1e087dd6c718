#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The control interface under bad and hostile input: malformed requests,
# fds that are no maps or the wrong maps, devices of other namespaces,
# unprivileged callers, a few thousand random requests; and a fwd target
# that disappears under an offloaded rule.  Every request must get a clear
# errno and change nothing; the rig fails the run on any kernel report.
set -u
. "$(dirname "$0")/../lib/lib.sh"

NLCTL="python3 $XDPOFF_ROOT/tests/lib/nlctl.py"
RX=eth1
NS=${PEER_NS}n
ALL_TESTS="
	control_malformed
	control_fds_and_maps
	control_netns
	control_privileges
	control_fuzz
	control_fwd_target_gone
"

cleanup() {
	nft flush ruleset 2>/dev/null
	ip link del xdv0 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	release_ns "$NS"
	cleanup_peer
	unload_module
}
trap cleanup EXIT

# nl NAME EXPECTED-ERRNO [MESSAGE] -- nlctl arguments
nl() {
	local name=$1 want=$2 msg="" out
	shift 2
	if [ "$1" != -- ]; then msg=$1; shift; fi
	shift
	out=$($NLCTL "$@" 2>&1)
	if [[ "$out" == "errno $want"* ]] && grep -q -- "$msg" <<<"$out"; then
		ok "$name"
	else
		not_ok "$name"
		echo "expected 'errno $want${msg:+ ... $msg}', got: $out" | diag
	fi
}

insmod "$XDPOFF_KO"
IFX=$(cat /sys/class/net/$RX/ifindex)
u32() { python3 -c "import struct,sys; print(struct.pack('I', int(sys.argv[1])).hex())" "$1"; }

# --- malformed requests ---------------------------------------------------------
control_malformed() {
	nl "attach without attributes" EINVAL -- raw 1
	nl "ifindex of 2 bytes: refused by the policy" EINVAL -- raw 1 1:0300
	nl "ifindex of 8 bytes: refused by the policy" EINVAL -- raw 1 1:0300000000000000
	nl "unknown attribute type" EINVAL -- raw 1 99:00000000
	nl "a read-only attribute in a request" EINVAL -- raw 1 "1:$(u32 $IFX)" 7:00000000
	nl "program flags with an unknown bit: refused by the policy" EINVAL -- \
		raw 1 "1:$(u32 $IFX)" "14:$(u32 2)"
	nl "unknown command" ENOTSUP -- raw 42
	nl "detach without ifindex" EINVAL -- raw 2
}

# --- fds and maps -------------------------------------------------------------------
control_fds_and_maps() {
	nl "an fd that is no map" EINVAL "fd is not a BPF map" -- attach-maps $IFX notmap
	nl "an fd that is not open" EBADF "fd is not a BPF map" -- attach-maps $IFX badfd
	nl "masks map of the wrong type" EINVAL "masks map has the wrong type" -- attach-maps $IFX hash
	nl "masks map of the wrong size" EINVAL "masks map has the wrong size" -- attach-maps $IFX small
	nl "rules map with the wrong value size" EINVAL "rules map has the wrong type" -- attach-maps $IFX value
	nl "rules map an array (0.2's)" EINVAL "rules map has the wrong type" -- attach-maps $IFX rulesarray
	nl "flows map an array (0.2's)" EINVAL "flows map has the wrong type" -- attach-maps $IFX flowsarray
	nl "rules map not preallocated" EINVAL "must be preallocated" -- attach-maps $IFX noprealloc
	nl "an index map's fd (0.2's CLI): refused by the policy" EINVAL \
		"index maps are no longer used" -- raw 1 "1:$(u32 $IFX)" "15:$(u32 0)"
	nl "maps in the wrong order" EINVAL "rules map has the wrong type" -- attach-maps $IFX order
	nl "no such device" ENODEV "no such device" -- attach-maps 9999 ok
	check_eq "... none of it attached anything" "" "$($NLCTL get)"
	nl "maps of the right layout: attached" 0 -- attach-maps $IFX ok
	check_eq "... listed" "$IFX" "$($NLCTL get)"
	nl "attached twice" EEXIST "already attached" -- attach-maps $IFX ok
	nl "detach" 0 -- detach $IFX
	nl "detach of a device not attached" ENOENT "not attached" -- detach $IFX
}

# --- network namespaces -----------------------------------------------------------
control_netns() {
	ip netns add "$NS"
	ip link set eth3 netns "$NS"
	IFX3=$(ip netns exec "$NS" cat /sys/class/net/eth3/ifindex)
	nl "a device of another namespace, by its ifindex" ENODEV "no such device" -- attach-maps "$IFX3" ok
	if ! ip -n "$NS" -o link | grep -q "^$IFX:"; then
		check_eq "from the other namespace, this namespace's ifindex is no device" \
			"errno ENODEV xdpoff: no such device" \
			"$(ip netns exec "$NS" $NLCTL attach-maps "$IFX" ok)"
	else
		skip "from the other namespace, this namespace's ifindex is no device" \
			"ifindex $IFX exists in both namespaces"
	fi
	"$XDPOFF" attach $RX
	check_eq "a namespace's dump lists its devices only" "" "$(ip netns exec "$NS" $NLCTL get)"
	check_eq "... the root's lists eth1" "$IFX" "$($NLCTL get)"
	check_eq "detach of eth1's ifindex from the other namespace finds nothing" \
		"errno ENOENT" "$(ip netns exec "$NS" $NLCTL detach "$IFX" | cut -d' ' -f1-2)"
	check_eq "... eth1 stays attached" "$IFX" "$($NLCTL get)"
	"$XDPOFF" detach $RX
	release_ns "$NS"
}

# --- privileges --------------------------------------------------------------------
# uid 65534 runs a copy of the helper in tmpfs: the checkout may be where
# that user cannot enter (a mode 0700 home or mktemp -d directory).  If
# even the copy cannot run, every check below fails: none may pass on an
# error of python's instead of the module's.
unpriv() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	--bounding-set=-all "$@"; }
# (Cases from here on start with eth1 attached, and detach it at their end.)
control_privileges() {
	"$XDPOFF" attach $RX >/dev/null
	UNLCTL="python3 $(world_copy "$XDPOFF_ROOT/tests/lib/nlctl.py")"
	check_eq "unprivileged: the caller runs the helper (a tmpfs copy)" \
		"nlctl runs as uid 65534" "$(unpriv $UNLCTL hello 2>&1)"
	check_eq "unprivileged: dump refused" "errno EPERM" "$(unpriv $UNLCTL get 2>&1 | cut -d' ' -f1-2)"
	check_eq "unprivileged: detach refused" "errno EPERM" \
		"$(unpriv $UNLCTL detach "$IFX" 2>&1 | cut -d' ' -f1-2)"
	check_eq "unprivileged: attach refused" "errno EPERM" \
		"$(unpriv $UNLCTL raw 1 "1:$(u32 $IFX)" 2:00000000 3:00000000 4:00000000 5:00000000 2>&1 | cut -d' ' -f1-2)"
	check_eq "... eth1 still attached" "$IFX" "$($NLCTL get)"
	# A user namespace of its own: CAP_NET_ADMIN there, over its own network
	# namespace only.
	if unpriv unshare -Urn true 2>/dev/null; then
		check_eq "own user namespace: eth1's ifindex attaches nothing there" \
			"errno ENODEV" \
			"$(unpriv unshare -Urn $UNLCTL attach "$IFX" 0 0 0 0 0 0 0 | cut -d' ' -f1-2)"
		check_eq "own user namespace: detach of eth1's ifindex finds nothing" \
			"errno ENOENT" \
			"$(unpriv unshare -Urn $UNLCTL detach "$IFX" | cut -d' ' -f1-2)"
		check_eq "own user namespace: its lo takes no fds that are no maps" \
			"errno EINVAL" \
			"$(unpriv unshare -Urn $UNLCTL attach 1 0 0 0 0 0 0 0 | cut -d' ' -f1-2)"
		check_eq "... eth1 still attached, as it was" "$IFX" "$($NLCTL get)"
	else
		for t in "eth1's ifindex attaches nothing there" "detach finds nothing" \
			"lo takes no fds" "eth1 still attached"; do
			skip "own user namespace: $t" "unprivileged user namespaces are off"
		done
	fi
	"$XDPOFF" detach $RX
}

# --- random requests ------------------------------------------------------------------
# Well-formed attaches and detaches are in the mix, eth1's among them: the
# fuzz checks the module's state against what its successful requests
# imply, then the state of before is put back (eth1 detached and attached
# again with the CLI, so its XDP program and maps belong together again).
control_fuzz() {
	"$XDPOFF" attach $RX >/dev/null
	seed=${XDPOFF_FUZZ_SEED:-$RANDOM}
	out=$($NLCTL fuzz 3000 "$seed" "$IFX" 2>&1)
	rc=$?
	name="3000 random requests (seed $seed, XDPOFF_FUZZ_SEED repeats it): each answered, the module's state what the answers imply"
	if [ $rc = 0 ]; then ok "$name"; else not_ok "$name"; fi
	echo "$out" | diag
	for ifx in $($NLCTL get); do
		[ "$ifx" = "$IFX" ] || $NLCTL detach "$ifx" >/dev/null
	done
	check "... the fuzz's attaches undone, eth1 detached and attached again" \
		sh -c "'$XDPOFF' detach $RX && '$XDPOFF' attach $RX"
	check_eq "... the module's state is as before" "$IFX" "$($NLCTL get)"
	"$XDPOFF" detach $RX
}

# --- a fwd target that disappears -------------------------------------------------
control_fwd_target_gone() {
	"$XDPOFF" attach $RX >/dev/null
	setup_peer eth0
	ip link set $RX promisc on
	ip link add xdv0 type veth peer name xdv1
	ip link set xdv0 up
	ip link set xdv1 up
	check "a veth attached as fwd target" "$XDPOFF" attach xdv0
	XDV0=$(cat /sys/class/net/xdv0/ifindex)
	nft -f - <<EOT
table netdev t {
	chain hw {
		type filter hook ingress device $RX priority 10; policy accept; flags offload;
		udp dport 77 counter fwd to xdv0 comment "fwd"
	}
}
EOT
	check_eq "the fwd rule is offloaded" 1 "$(map_count $RX xdpoff_rules)"
	check "the target is deleted under the rule" ip link del xdv0
	send eth0 $RX --saddr 10.1.2.3 --daddr 10.0.0.2 --proto udp --dport 77 --count 3
	check "frames for the gone target are dropped, as software drops them" \
		wait_for counter_is netdev t hw fwd 3
	# nf_tables rebuilds the flow_rule of a rule it deletes from an offloaded
	# chain, and fwd's offload looks the target up by ifindex: with the
	# target gone, nf_tables itself refuses the delete.
	check_fails "nf_tables cannot delete it while the target is gone" \
		"Operation not supported" nft flush ruleset
	ip link add xdv0 index "$XDV0" type dummy
	check "with a device of that ifindex back, the rule is deleted" nft flush ruleset
	ip link del xdv0
	check_eq "... the maps are empty" 0 "$(map_count $RX xdpoff_rules)"
	check "eth1 detaches" "$XDPOFF" detach $RX
	# Every device is gone from the module now: it holds none of their maps
	# (the flows map's reference was once kept forever), and with the pins
	# gone no map of xdpoff is left in the kernel: xdv0's pins stayed when the
	# device was deleted under them, and so did libxdp's of its dispatcher,
	# which hold the program; detach of the deleted device removes both.
	check "detach of the deleted xdv0 removes its pins" \
		sh -c "'$XDPOFF' detach xdv0 && [ ! -e $PIN/xdv0 ] &&
		       ! ls /sys/fs/bpf/xdp 2>/dev/null | grep -q '^dispatch-$XDV0-'"
	check_eq "no xdpoff map left once every device is detached" "" \
		"$(bpftool -j map list | python3 -c '
import json, sys
print(" ".join(sorted(m.get("name", "") for m in json.load(sys.stdin)
                      if m.get("name", "").startswith("xdpoff_"))))')"
	ip link set $RX promisc off
	cleanup_peer
}

tests_run
