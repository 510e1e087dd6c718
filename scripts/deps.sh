#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what xdpoff needs to build, boot its test guest and run its
# tests, from Debian's packages only.  Idempotent: a run with everything
# present does nothing.  The guest shares the host's root file system, so
# the tools the tests use inside the guest (nft, tc, bpftool, ...) are
# installed here too.
set -euo pipefail

PACKAGES=(
	# build: module, XDP object, CLI
	make gcc clang llvm libbpf-dev libelf-dev zlib1g-dev libmnl-dev
	libxdp-dev bpftool linux-headers-amd64
	# xdpoff check reads nft's JSON
	libjansson-dev
	# the manual: build/xdpoff.8 from doc/xdpoff.8.rst (rst2man), and
	# man to check it renders (tests/guest/test_cli_doc.sh)
	python3-docutils man-db
	# the second Debian 12 kernel (6.12, Debian 13's): not installed.
	# Its headers package depends on its image, which would land in
	# /boot: tests/vm/kernel-headers unpacks the headers into build/cache/
	# and tests/vm/prepare the image.  What their kbuild needs:
	gcc-12 pahole
	# test guest
	qemu-system-x86 busybox-static kmod cpio xz-utils zstd
	# used inside the guest
	nftables iproute2 ethtool python3 util-linux procps
	# the churn test drives nft in-process (libnftables)
	python3-nftables
	# the flowtable test: conntrack -L (HW_OFFLOAD), -D; a PPPoE session
	# (pppd with the kernel's PPPoE, pppoe-server) and a flow through it
	conntrack ppp pppoe
	# the libxdp test: xdp-filter and xdp-loader beside xdpoff
	xdp-tools
	# make deb, and the boot test, which installs the packages in the
	# guest (DKMS runs there, never here)
	dpkg-dev debhelper dh-dkms dkms lintian
	# make bench: plots on the host; perf inside the guest (linux-perf's
	# perf_6.1 matches the guest kernel)
	gnuplot-nox linux-perf
)
# `make check-debug` builds debug kernels from Debian's kernel sources
# (tests/vm/debug-kernel, which downloads linux-source-6.1 and -6.12 into
# build/cache/): what that build needs, only then, with --debug-kernel.
if [ "${1:-}" = --debug-kernel ]; then
	PACKAGES+=(bc bison flex libssl-dev libelf-dev)
fi

# --list: the packages, one a line, nothing installed (tests/vm/test-rig
# checks that none of them brings a kernel image).
if [ "${1:-}" = --list ]; then
	printf '%s\n' "${PACKAGES[@]}"
	exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null |
		grep -qx installed || missing+=("$p")
done

# linux-headers-amd64 pulls in the 6.1 headers the guest's kernel needs
# (tests/vm/kernel-version resolves its ABI); no linux-image-* is installed.
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
