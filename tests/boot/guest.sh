#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The boot test's driver inside the guest (tests/boot/run): run by
# xdpoff-boot-test.service at each boot, after nftables.service; the
# stage survives the reboot in /var/lib/xdpoff-boot (the disk).  KTAP on
# the serial console; at the end, status and kernel log into /xdpoff-io.
set -u
STATE=/var/lib/xdpoff-boot
IO=/xdpoff-io
export KTAP_COUNTER=$STATE/ktap.count
export PEER_NS=xpeer
. "$XDPOFF_BOOT_REPO/tests/lib/lib.sh"
XDPOFF=/usr/sbin/xdpoff
read -r V1 V2 <"$STATE/versions"
stage=$(cat "$STATE/stage" 2>/dev/null || echo 1)
cd /root/debs

finish() {
	echo "1..$(cat "$KTAP_COUNTER" 2>/dev/null || echo 0)"
	echo 0 >"$IO/status.tmp" && mv "$IO/status.tmp" "$IO/status"
	dmesg >"$IO/dmesg" 2>&1
	sync
	systemctl poweroff
	exit 0
}

# nft_drop_counter: packets of the boot ruleset's drop rule.
nft_drop_counter() {
	nft_counter netdev xdpoff_boot ingress drop9
}

# drops N: N frames to udp 9 from the peer, all dropped in XDP on eth1
# and counted by nft on top of what it had.
drops() {
	local base nbase
	base=$(xdp_drops eth1)
	nbase=$(nft_drop_counter)
	send eth0 eth1 --saddr 10.8.0.1 --daddr 10.8.0.2 --proto udp --dport 9 --count "$1"
	wait_for xdp_drops_are eth1 "$base" "$1" &&
		wait_for counter_is netdev xdpoff_boot ingress drop9 $(( nbase + $1 ))
}

# dkms_kernels VERSION: the kernels DKMS says VERSION is installed for.
dkms_kernels() {
	dkms status 2>/dev/null |
		sed -n "s|^xdpoff/$1, \([^,]*\), x86_64: installed.*|\1|p" | sort
}

# header_kernels: the kernels under /lib/modules that have headers
# (DKMS can build for them): all of them must get the module.
header_kernels() {
	local d
	for d in /lib/modules/*/; do
		[ -e "$d/build/Makefile" ] && basename "$d"
	done | sort
}

# install_debs VERSION WHAT: apt install of VERSION's two packages; DKMS
# builds the module for every kernel that has headers.
install_debs() {
	local v=$1 out rc
	out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y \
		"$PWD/$v"/xdpoff-dkms_"$v"_all.deb "$PWD/$v"/xdpoff_"$v"_*.deb 2>&1)
	rc=$?
	tail -n 15 <<<"$out" | diag
	check_eq "$2: apt install ./xdpoff-dkms_${v}_all.deb ./xdpoff_${v}_amd64.deb" 0 "$rc"
	check "DKMS installed $v for the running kernel" \
		grep -qx "$(uname -r)" <<<"$(dkms_kernels "$v")"
	check_eq "... and for every kernel with headers" \
		"$(header_kernels | paste -sd' ')" "$(dkms_kernels "$v" | paste -sd' ')"
}

if [ "$stage" = 1 ]; then
	echo "TAP version 13"
	echo "# guest kernel $(uname -r)"
	echo "# boot 1: install, enable, reboot"
	install_debs "$V1" install
	check "the unit and the nftables drop-in are installed" \
		test -f /lib/systemd/system/xdpoff@.service -a \
		     -f /lib/systemd/system/nftables.service.d/xdpoff.conf
	cat >/etc/nftables.conf <<'EOT'
#!/usr/sbin/nft -f
flush ruleset
table netdev xdpoff_boot {
	chain ingress {
		type filter hook ingress device eth1 priority 10; policy accept; flags offload;
		udp dport 9 counter drop comment "drop9"
	}
}
table netdev xdpoff_boot_soft {
	chain soft {
		type filter hook ingress device eth1 priority 20; policy accept; flags offload;
		meta mark 5 counter drop
	}
}
EOT
	check "systemctl enable xdpoff@eth1 nftables.service" \
		systemctl enable xdpoff@eth1.service nftables.service
	echo 2 >"$STATE/stage"
	sync
	echo "# rebooting"
	systemctl reboot
	exit 0
fi

echo "# boot 2: after the reboot"
check "xdpoff@eth1.service is active" systemctl is-active xdpoff@eth1.service
check "nftables.service is active" systemctl is-active nftables.service
a=$(systemctl show -P ExecMainExitTimestampMonotonic xdpoff@eth1.service)
n=$(systemctl show -P ExecMainStartTimestampMonotonic nftables.service)
check "eth1 was attached before nftables.service loaded the ruleset ($a < $n us)" \
	test "$a" -gt 0 -a "$a" -lt "$n"
check_eq "the module is the one DKMS built" \
	"/lib/modules/$(uname -r)/updates/dkms/xdpoff.ko" \
	"$(modinfo -n xdpoff 2>&1 | sed 's/\.ko\..*$/.ko/')"
check_eq "the offloaded chain's rule is in eth1's maps at boot" 1 \
	"$(map_count eth1 xdpoff_rules)"
# The ruleset has a chain that cannot offload: nft-load loaded it with that
# chain in software and the other offloaded (xdpoff check --fallback), and
# the unit's journal says which and why.
check "nft-load: the chain that can offload is offloaded" \
	sh -c "nft list chain netdev xdpoff_boot ingress | grep -q 'flags offload'"
check "... the one that cannot runs in software" \
	sh -c "nft list chain netdev xdpoff_boot_soft soft | grep -q 'meta mark' &&
	       ! nft list chain netdev xdpoff_boot_soft soft | grep -q 'flags offload'"
check "... nftables.service's journal names the chain and the reason" \
	sh -c "journalctl -b -o cat -u nftables.service | grep -qF 'chain netdev xdpoff_boot_soft soft runs in software: rule 0 (meta mark 0x00000005 counter drop): nf_tables: no offload for \`meta mark 0x00000005\`'"
setup_peer eth0
ip link set eth1 promisc on
check "frames to udp 9 are dropped in XDP and counted by nft" drops 10
prog1=$(bpftool -j prog show pinned "$PIN/eth1/prog" 2>/dev/null | sed -n 's/.*"id":\([0-9]*\).*/\1/p')

install_debs "$V2" "upgrade to $V2"
check_eq "no build of $V1 is left" "" "$(dkms_kernels "$V1")"
prog2=$(bpftool -j prog show pinned "$PIN/eth1/prog" 2>/dev/null | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
check "eth1 was attached again (XDP program $prog1 -> $prog2)" \
	test -n "$prog2" -a "$prog1" != "$prog2"
check_eq "the rule came back into XDP by itself" 1 "$(map_count eth1 xdpoff_rules)"
check "frames are dropped in XDP again; nft's counter went on from its value" drops 10

# Hotplug: the NIC goes (the instance stops with it) and comes back (the
# instance starts when it appears: WantedBy its .device; udev names it
# eth1 again by its MAC, tests/boot/run's .link file).
export XDPOFF_VM_IO=$IO
if vm_monitor info pci >/dev/null 2>&1; then
	check "device_del of eth1 through the QEMU monitor" vm_monitor device_del nic1
	WAIT_TIMEOUT=60 check "... eth1 goes, and xdpoff@eth1 stops with it" \
		wait_for sh -c "! ip link show eth1 && ! systemctl -q is-active xdpoff@eth1.service"
	check "device_add plugs it back" vm_monitor device_add \
		"virtio-net-pci,id=nic1,netdev=n1,romfile=,mac=52:54:00:00:00:01"
	name="... and xdpoff@eth1 attaches the NIC when it appears"
	if WAIT_TIMEOUT=180 wait_for sh -c \
		"systemctl -q is-active xdpoff@eth1.service && [ -e $PIN/eth1/prog ]"; then
		ok "$name"
	else
		not_ok "$name"
		{ ip -br link; systemctl status --no-pager -n 20 xdpoff@eth1.service \
			sys-subsystem-net-devices-eth1.device; } 2>&1 | diag
	fi
else
	skip "hotplug of eth1" "no QEMU monitor (not run by tests/vm/run)"
fi

out=$(DEBIAN_FRONTEND=noninteractive apt-get remove -y xdpoff xdpoff-dkms 2>&1)
rc=$?
tail -n 10 <<<"$out" | diag
check_eq "apt remove xdpoff xdpoff-dkms" 0 "$rc"
check "no module loaded" test ! -e /sys/module/xdpoff
check "no pin left" test ! -e "$PIN/eth1"
check_eq "no XDP program on eth1" "" "$(ip -d link show eth1 | grep -o 'prog/xdp id [0-9]*')"
check "no unit file, no enabled instance left" \
	test ! -e /lib/systemd/system/xdpoff@.service -a \
	     ! -L /etc/systemd/system/sysinit.target.wants/xdpoff@eth1.service
check_eq "no module file left in any kernel's tree" "" \
	"$(find /lib/modules -name 'xdpoff.ko*' 2>/dev/null)"
cleanup_peer
finish
