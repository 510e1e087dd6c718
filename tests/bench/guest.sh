#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/bench/guest.sh - the in-guest half of `make bench`.  Run by
# tests/bench/run through tests/vm/run, as root INSIDE THE TEST GUEST; it
# refuses to run anywhere else.  It prints one "@bench key=value ..." line
# per measurement (the host side turns them into tables and plots), "# "
# lines for people, "@mark ID" lines at the edges of each virtio window
# (tests/bench/run samples QEMU's vCPU threads then), and exits non-zero
# if a mode produced no number.
#
# --smoke (about a minute in the guest: every mode once, briefly, smaller
# rulesets) can also run from a test inside an existing guest, once the
# host ran `tests/bench/run --build`; its only assertion is its exit
# status: 0 when every mode produced a number.
#
# Usage: guest.sh [--quick | --smoke] [--reps N] [--dur SECONDS] [--no-perf]
#                 [--perf-freq HZ] [--sections virtio,fwd,netif,classify,insn]
#                 [--modes LIST]
#
# The rig: 2 vCPUs under TCG.  vCPU 0 takes eth1's receive interrupt and
# nothing else we can steer away from it (every other IRQ, this script and
# the commands it runs are on vCPU 1); pktgen transmits from vCPU 1.  Modes
# are measured round-robin (rep 1 of every mode, then rep 2, ...) so that
# a slow patch of the host (other guests share its 2 cores) smears over
# all modes instead of hitting one; the host side takes medians.
#
# Sections (sec= of the output lines):
#   virtio    pktgen 64-byte UDP eth0 -> eth1 through QEMU's virtio path:
#             frames/s at eth1, vCPU 0 busy time per frame (/proc/stat),
#             modes limit (bare XDP_DROP), xdpoff-1, xdpoff-1k (1,000 rules,
#             1 mask), xdpoff-10k8m (10,000 rules, 8 masks), xdpoff-generic
#             (the xdpoff program in generic mode), nft-sw, tc-sw, none
#   virtio_bpf  same traffic, a second window with
#             kernel.bpf_stats_enabled=1: the XDP program's run_time_ns /
#             run_cnt, and vCPU 0 per frame
#   perf      (not with --quick/--smoke) perf record on vCPU 0 during one
#             more window per mode in the last repetition: where the
#             receiving CPU's time goes, by area (perf-areas.awk)
#   fwd       the guest routes: pktgen 64-byte UDP eth0 -> eth1, routed
#             out of eth2 to eth3 (a bare XDP_DROP swallows them there),
#             one flow and FWD_MANY flows (source ports).  fwd_max:
#             pktgen as fast as it goes: frames/s at eth1, vCPU 0 per
#             frame (it receives on eth1 and transmits on eth2), bpf_stats'
#             XDP ns per run; fwd: vCPU 0 per frame with FWD_PPS frames/s
#             offered in every mode.  Modes fwd-limit (an XDP program that
#             only rewrites the MACs and redirects), ft-offload (nft flowtable with flags
#             offload: xdpoff), ft-sw (the software flowtable), nft-fwd
#             (an offloaded netdev chain `fwd to eth2`: xdpoff, no MAC,
#             TTL or NAT edit), route (plain routing, no netfilter); the
#             flowtable modes masquerade out of eth2.  perf: in the last
#             repetition, FWD_MANY flows, pktgen as fast as it goes.
#   insn      (a guest of its own, one vCPU, QEMU -icount: see sec_insn)
#             instructions per frame received on eth1, frames fed from the
#             host: modes limit, xdpoff-1, -1k, -10k8m, -1k32m (1,000
#             rules, 32 masks), -generic, nft-sw, tc-sw, none; insn_fwd:
#             the forwarding modes with FWD_MANY flows; _bpf: the XDP
#             program's own instructions per run; perf_insn: by area;
#             insn_cls: the classifier alone (BPF_PROG_TEST_RUN), now and
#             as it was before issue 16 (the baseline)
#   classify  BPF_PROG_TEST_RUN of the xdpoff program (tests/bench/classify)
#   netif     pktgen xmit_mode netif_receive into eth1 (no virtio leg):
#             frames/s through the software paths (nft, tc, none).  Not
#             generic XDP: pktgen holds a reference to the skb it injects,
#             generic XDP must expand its headroom (pktgen leaves 16 bytes,
#             XDP wants 256) and pskb_expand_head() BUGs on a shared skb,
#             whatever the burst (6.1).  xdpoff in generic mode is measured
#             on the virtio path instead (mode xdpoff-generic).
#   commit    wall time of one `nft -f` of 1,000 / 10,000 rules, with and
#             without flags offload
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../lib/lib.sh"
BENCH_BUILD=$BUILD/bench
CLASSIFY=$BENCH_BUILD/classify
DROP_OBJ=$BENCH_BUILD/xdp_drop.bpf.o
FWD_OBJ=$BENCH_BUILD/xdp_fwd.bpf.o
INSNWIN=$BENCH_BUILD/insnwin

RX=eth1
TX=eth0
RX_CPU=0		# eth1's interrupt, NAPI and the software paths
GEN_CPU=1		# pktgen (virtio path), this script, everything else
SADDR=198.18.0.1	# RFC 2544 benchmarking range, never routed
DADDR=198.18.0.2
NONE_SADDR=198.18.0.9	# the source no rule of the blocklist modes matches
PORT=9
WORK=/tmp/xdpoff-bench

MODE=full
REPS=3
DUR=4			# seconds per measurement window
WARM=1			# seconds of traffic before a window opens
CLS_REPEAT=1000000	# BPF_PROG_TEST_RUN repetitions per run
CLS_RUNS=3
INSN_CLS_REPEAT=20000	# section insn: exact counts, few repetitions
PERF=1
PERF_FREQ=997		# samples per second of vCPU 0 (guest time)
BIG1=1000		# rules of xdpoff-1k (1 mask)
BIG2=10000		# rules of xdpoff-10k8m (8 masks)
FWD_MANY=1000		# flows of the fwd section's many-flow runs
BLOCK_V4=10000		# the blocklist modes' IPv4 prefixes (tests/bench/blocklist.py)
BLOCK_V6=1000		# and IPv6 prefixes
SECTIONS=virtio,fwd,netif,classify
ONLY_MODES=		# comma-separated filter of modes (development)
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=quick; REPS=2; DUR=2; CLS_REPEAT=200000; CLS_RUNS=2
		 PERF=0 ;;
	--smoke) MODE=smoke; REPS=1; DUR=0.5; WARM=0.2; CLS_REPEAT=1000
		 INSN_CLS_REPEAT=1000
		 CLS_RUNS=1; PERF=0; BIG1=100; BIG2=200; FWD_MANY=100
		 BLOCK_V4=200; BLOCK_V6=20 ;;
	--reps) REPS=$2; shift ;;
	--dur) DUR=$2; shift ;;
	--no-perf) PERF=0 ;;
	--perf-freq) PERF_FREQ=$2; shift ;;
	--sections) SECTIONS=$2; shift ;;
	--modes) ONLY_MODES=$2; shift ;;
	*) echo "usage: $0 [--quick|--smoke] [--reps N] [--dur S] [--no-perf] [--perf-freq HZ] [--sections LIST] [--modes LIST]" >&2
	   exit 2 ;;
	esac
	shift
done

if [ "${XDPOFF_VM:-}" != 1 ] || [ ! -d /run/xdpoff-vm ]; then
	echo "guest.sh: runs inside the test guest only (tests/bench/run)" >&2
	exit 2
fi

# The parts, in the order their sections run.
for part in rig virtio fwd netif insn; do
	. "$HERE/guest-$part.sh"
done

# ---- classifier ------------------------------------------------------------

sec_classify() {
	local grid
	case $MODE in
	smoke) grid="1:1 100:8 1000:32" ;;
	*) grid="1:1 100:1 10000:1 100000:1"
	   for m in 2 4 8 16 32; do
		grid+=" 100:$m 10000:$m 100000:$m"
	   done ;;
	esac
	say "classifier: BPF_PROG_TEST_RUN, repeat $CLS_REPEAT, $CLS_RUNS runs per point"
	"$CLASSIFY" --repeat "$CLS_REPEAT" --runs "$CLS_RUNS" $grid |
		sed 's/^classify /@bench sec=classify /' ||
		missing=$((missing + 1))
}

# ---- main ------------------------------------------------------------------

cleanup() {
	perf_stop
	pg_stop
	nft delete table netdev bench 2>/dev/null
	tc qdisc del dev $RX ingress 2>/dev/null
	ip link set dev $RX xdpgeneric off 2>/dev/null
	ip link set dev $RX xdpdrv off 2>/dev/null
	"$XDPOFF" detach $RX >/dev/null 2>&1
	nft delete table inet bench 2>/dev/null
	ip link set dev $OUT_DEV xdpdrv off 2>/dev/null
	"$XDPOFF" detach $OUT_DEV >/dev/null 2>&1
	fwd_rig_down 2>/dev/null
}
trap cleanup EXIT

for f in "$CLASSIFY" "$DROP_OBJ" "$FWD_OBJ" "$INSNWIN" "$XDPOFF" "$XDPOFF_KO"; do
	[ -e "$f" ] || die "$f missing (run tests/bench/run, which builds it)"
done

start=$(now_ns)
emit "sec=info mode=$MODE reps=$REPS dur=$DUR warm=$WARM cls_repeat=$CLS_REPEAT cls_runs=$CLS_RUNS kernel=$(uname -r) cpus=$(nproc)"
# One vCPU (the insn section's guest): nothing to pin.
[ "$(nproc)" -gt 1 ] && pin_rig
modprobe pktgen || die "modprobe pktgen"
modprobe sch_ingress; modprobe cls_flower; modprobe act_gact
load_module
make_rulesets
# Warm the page cache of the tools (9p) before anything is timed.
nft -f $WORK/plain1.nft && nft delete table netdev bench
"$XDPOFF" attach --no-libxdp $RX >/dev/null && "$XDPOFF" detach $RX >/dev/null

for s in ${SECTIONS//,/ }; do
	case $s in
	virtio|fwd|netif|classify|insn)
		t0=$(now_ns)
		sec_$s
		emit "sec=info section=$s elapsed_s=$(( ($(now_ns) - t0) / 1000000000 ))" ;;
	*) die "unknown section $s" ;;
	esac
done

emit "sec=info elapsed_s=$(( ($(now_ns) - start) / 1000000000 ))"
if [ "$missing" -gt 0 ]; then
	echo "guest.sh: $missing measurements produced no number" >&2
	exit 1
fi
