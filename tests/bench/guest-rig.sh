# SPDX-License-Identifier: GPL-2.0
# tests/bench/guest-rig.sh - the rig: helpers, IRQ pinning, windows, pktgen and the
# rulesets of the benchmark modes.
# Sourced by tests/bench/guest.sh, in the test guest; its globals and
# helpers are guest.sh's.

say() { echo "# $*"; }
emit() { echo "@bench $*"; }
die() { echo "guest.sh: $*" >&2; exit 1; }
now_ns() { date +%s%N; }

missing=0
# result NAME VALUE: an empty or non-numeric value is a missing number.
check_num() {
	case $2 in
	''|*[!0-9.]*) echo "guest.sh: no number for $1" >&2
		      missing=$((missing + 1)) ;;
	esac
}

# stall_check WINDOW: a window in which eth1 received no frame stalled
# (seen twice in fwd_max, at pktgen's full rate into an XDP_REDIRECT:
# vCPU 0 busy throughout, the program never run; report.py leaves such a
# window out).  Say what vCPU 0 is doing: perf's hottest symbols over 2 s
# and the softirqs it ran meanwhile, and the NICs' queue counters.  (Not
# sysrq's backtraces: the rig fails a run on a "Call Trace" in dmesg.)
stall_softirqs() {
	grep -E '^ *CPU|NET_RX|NET_TX|TIMER|SCHED' /proc/softirqs | sed 's/^/# stall: /'
}

stall_check() {
	local d
	case " $1 " in *" frames=0 "*) ;; *) return 0 ;; esac
	say "stall: ${1##*mark=}: eth1 received no frame; vCPU $RX_CPU now:"
	stall_softirqs
	perf record -q -C "$RX_CPU" -g -o "$WORK/stall.data" -- sleep 2 >/dev/null 2>&1 &&
		perf report -q -i "$WORK/stall.data" --stdio --no-children --sort sym \
			-g none 2>/dev/null | grep -v '^$' | head -20 | sed 's/^/# stall: /'
	stall_softirqs
	for d in $RX ${OUT_DEV:-}; do
		ethtool -S "$d" 2>/dev/null | grep -vE ': 0$' | tr -s ' ' |
			paste -sd ' ' | sed "s/^/# stall: $d: /"
	done
	rm -f "$WORK/stall.data"
}

# modes LIST...: LIST less what --modes leaves out.
modes() {
	local m
	for m in "$@"; do
		case ,${ONLY_MODES:-$m}, in
		*,$m,*) echo "$m" ;;
		esac
	done
}

# ---- the rig ---------------------------------------------------------------

# IRQ numbers of DEV's virtio queues of KIND (input, output, config).
dev_irqs() {
	local v
	v=$(basename "$(readlink -f "/sys/class/net/$1/device")")
	awk -v pfx="$v-$2" '$NF ~ "^" pfx { sub(":", "", $1); print $1 }' \
		/proc/interrupts
}

pin_rig() {
	local irq f
	taskset -pc $GEN_CPU $$ >/dev/null
	echo $((1 << GEN_CPU)) > /proc/irq/default_smp_affinity
	for f in /proc/irq/[0-9]*/smp_affinity; do
		echo $((1 << GEN_CPU)) > "$f" 2>/dev/null
	done
	RX_IRQ=$(dev_irqs $RX input)
	[ -n "$RX_IRQ" ] || die "no virtio input interrupt for $RX"
	for irq in $RX_IRQ; do
		echo $((1 << RX_CPU)) > /proc/irq/$irq/smp_affinity ||
			die "cannot pin IRQ $irq"
	done
	say "rig: $RX input IRQ $RX_IRQ on vCPU $RX_CPU; pktgen, other IRQs and this script on vCPU $GEN_CPU"
}

CLK_TCK=$(getconf CLK_TCK)

# mark ID: "@mark ID" on the console, at once (fd 3 is the script's
# stdout, also inside $(...)).  tests/bench/run, reading the console on the
# host, samples the CPU time QEMU's vCPU threads have used when it sees
# one: what the vCPU really executed, whatever the host's scheduler did.
exec 3>&1
mark() {
	echo "@mark $1" >&3
}

# rx_xdp DEV: "RECEIVED DECIDED": DEV's frames received (rx_packets, which
# virtio-net counts before XDP runs), and dropped or redirected by XDP
# (its per-queue counters, one ethtool -S; 6.12's ethtool -S no longer
# lists the queues' packets, which moved to netlink's qstats).
rx_xdp() {
	local n
	n=$(cat "/sys/class/net/$1/statistics/rx_packets")
	ethtool -S "$1" | awk -v n="$n" '
		$1 ~ /^rx(_queue_)?[0-9]+_xdp_(drops|redirects):$/ { d += $2 }
		END { print n + 0, d + 0 }'
}

# xdp_decided DEV: frames XDP dropped or redirected on DEV.
xdp_decided() {
	local n d
	read -r n d <<<"$(rx_xdp "$1")"
	echo "$d"
}

# snap ID: S_T (us), S_RX (eth1 rx_packets), S_IDLE and S_BUSY (vCPU
# RX_CPU idle+iowait and busy, in USER_HZ ticks), then mark ID, then
# S_DROPS (eth1 frames dropped or redirected in XDP, ethtool: a fork,
# after the clock).  Builtins
# only between the clock and the mark: a fork costs milliseconds under TCG.
snap() {
	local name user nice system idle iowait irq softirq steal rest
	S_T=${EPOCHREALTIME/./}
	read -r S_RX < /sys/class/net/$RX/statistics/rx_packets
	while read -r name user nice system idle iowait irq softirq steal rest; do
		if [ "$name" = "cpu$RX_CPU" ]; then
			S_IDLE=$((idle + iowait))
			S_BUSY=$((user + nice + system + irq + softirq + steal))
			break
		fi
	done < /proc/stat
	mark "$1"
	S_DROPS=$(xdp_decided $RX)
}

# window SECONDS ID: measure one window; prints "secs frames rate cpu_ns
# busy_pct xdp_frac tick_ns mark=ID"; marks ID.a and ID.b around it.
#
# The receiving vCPU's busy time is the window less its idle time: with
# NO_HZ, /proc/stat's idle is measured (the time the CPU slept), while the
# busy fields are sampled by the tick, which is stopped while the CPU is
# idle and misses the short receive bursts between idle periods (at 60k
# frames/s and low load they count a fraction of the real time; tick_ns,
# the tick-sampled figure, is printed for comparison only).
window() {
	local t rx idle busy drops
	snap "$2.a"
	t=$S_T rx=$S_RX idle=$S_IDLE busy=$S_BUSY drops=$S_DROPS
	sleep "$1"
	snap "$2.b"
	awk -v id="$2" -v us=$((S_T - t)) -v frames=$((S_RX - rx)) \
	    -v idle=$((S_IDLE - idle)) -v ticks=$((S_BUSY - busy)) \
	    -v drops=$((S_DROPS - drops)) -v hz="$CLK_TCK" 'BEGIN {
		secs = us / 1e6
		busy = secs - idle / hz
		if (busy < 0)
			busy = 0
		printf "secs=%.3f frames=%d rate=%.0f cpu_ns=%.0f busy_pct=%.1f xdp_frac=%.3f tick_ns=%.0f mark=%s\n",
			secs, frames, frames / secs,
			frames ? busy * 1e9 / frames : 0, 100 * busy / secs,
			frames ? drops / frames : 0,
			frames ? ticks / hz * 1e9 / frames : 0, id
	}'
}

# ---- pktgen ----------------------------------------------------------------

PG=/proc/net/pktgen
pgset() {
	echo "$2" > "$PG/$1" || die "pktgen $1: $2"
	case $1 in
	kpktgend_*|pgctrl) ;;
	*) grep -q '^Result: OK' "$PG/$1" ||
		die "pktgen $1: $2: $(grep '^Result' "$PG/$1")" ;;
	esac
}

# pg_setup DEV THREAD XMIT_MODE BURST: one device, 64-byte UDP to eth1.
pg_setup() {
	local dev=$1 thread=$2 xmit=$3 burst=$4 t
	for t in $PG/kpktgend_*; do
		pgset "${t##*/}" rem_device_all
	done
	pgset "kpktgend_$thread" "add_device $dev"
	pgset "$dev" "xmit_mode $xmit"
	pgset "$dev" "count 0"
	pgset "$dev" "clone_skb 0"
	pgset "$dev" "pkt_size 60"		# 64 bytes with the FCS
	pgset "$dev" "delay 0"
	pgset "$dev" "burst $burst"
	pgset "$dev" "dst_mac $(cat /sys/class/net/$RX/address)"
	pgset "$dev" "src_min $SADDR"
	pgset "$dev" "src_max $SADDR"
	pgset "$dev" "dst $DADDR"
	pgset "$dev" "udp_src_min $PORT"
	pgset "$dev" "udp_src_max $PORT"
	pgset "$dev" "udp_dst_min $PORT"
	pgset "$dev" "udp_dst_max $PORT"
}

PG_PID=
pg_start() {
	echo start > $PG/pgctrl &
	PG_PID=$!
}

pg_stop() {
	[ -n "$PG_PID" ] || return 0
	echo stop > $PG/pgctrl
	wait "$PG_PID" 2>/dev/null
	PG_PID=
}

# pg_sofar DEV: SOFAR (frames sent so far) and SOFAR_T (us), builtins only.
pg_sofar() {
	local l
	SOFAR_T=${EPOCHREALTIME/./}
	while read -r l; do
		case $l in
		pkts-sofar:*) set -- $l; SOFAR=$2; return ;;
		esac
	done < "$PG/$1"
}

# ---- rulesets --------------------------------------------------------------

# gen_rules N MASKS OFFLOAD: an nft ruleset on eth1 of N rules over MASKS
# distinct masks (up to 8: ip saddr none, /8, /12, /16, /20, /24, /28,
# /32; more, up to 33: none, /1, /2, ..., /32; all with ip daddr and udp
# dport).  Only the last rule matches the benchmark traffic (198.18.0.1 ->
# 198.18.0.2 udp 9); it is in the last mask (/32).
gen_rules() {
	awk -v n="$1" -v m="$2" -v off="$3" -v dev=$RX -v sa=$SADDR \
	    -v da=$DADDR -v port=$PORT 'BEGIN {
		if (m <= 8) {
			split("- 198.0.0.0/8 198.16.0.0/12 198.18.0.0/16 198.18.0.0/20 198.18.0.0/24 198.18.0.0/28 198.18.0.1", pfx, " ")
			pfx[m] = sa
		} else {
			split(sa, o, ".")
			a = ((o[1] * 256 + o[2]) * 256 + o[3]) * 256 + o[4]
			for (k = 1; k < m - 1; k++) {
				b = 2 ^ (32 - k)
				net = int(a / b) * b
				pfx[k + 1] = sprintf("%d.%d.%d.%d/%d", int(net / 16777216),
					int(net / 65536) % 256, int(net / 256) % 256, net % 256, k)
			}
			pfx[m] = sa
		}
		print "table netdev bench {"
		print "\tchain ingress {"
		printf "\t\ttype filter hook ingress device %s priority 10; policy accept;\n", dev
		if (off)
			print "\t\tflags offload;"
		for (j = 0; j < n - 1; j++) {
			k = j % m
			s = k ? "ip saddr " pfx[k + 1] " " : ""
			printf "\t\t%sip daddr 10.%d.%d.%d udp dport %d drop\n", s,
				int(j / 65536) % 256, int(j / 256) % 256, j % 256, port
		}
		s = m > 1 ? "ip saddr " sa " " : ""
		printf "\t\t%sip daddr %s udp dport %d counter drop\n", s, da, port
		print "\t}"
		print "}"
	}'
}

make_rulesets() {
	mkdir -p $WORK
	gen_rules 1 1 1 > $WORK/off1.nft
	gen_rules 1 1 0 > $WORK/plain1.nft
	gen_rules $BIG1 1 1 > $WORK/off1k.nft
	gen_rules $BIG1 1 0 > $WORK/plain1k.nft
	gen_rules $BIG2 8 1 > $WORK/off10k.nft
	gen_rules $BIG2 8 0 > $WORK/plain10k.nft
	gen_rules $BIG1 32 1 > $WORK/off1k32.nft
	python3 "$HERE/blocklist.py" $RX 1 $SADDR $NONE_SADDR $BLOCK_V4 $BLOCK_V6 \
		> $WORK/offblock.nft || die "blocklist.py"
	python3 "$HERE/blocklist.py" $RX 0 $SADDR $NONE_SADDR $BLOCK_V4 $BLOCK_V6 \
		> $WORK/plainblock.nft || die "blocklist.py"
	BLOCK_RULES=$((BLOCK_V4 + BLOCK_V6 + 1))
}

# nft_commit FILE: time one `nft -f FILE`, in ms.
nft_commit() {
	local t0 t1
	t0=$(now_ns)
	nft -f "$1" || die "nft -f $1 failed"
	t1=$(now_ns)
	echo $(( (t1 - t0) / 1000000 ))
}

XDP_PROG_ID=
xdp_prog_id() {
	ip -d link show dev $RX | sed -n 's/.*prog\/xdp[a-z]* id \([0-9]*\).*/\1/p' | head -1
}
