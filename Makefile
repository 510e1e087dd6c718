# SPDX-License-Identifier: GPL-2.0
#
# xdpoff: one entry point.
#   make          build the module, the XDP object, the CLI and its manual
#                 (xdpoff.8) into build/; make install: the CLI, the manual
#                 and the bash completion under PREFIX=/usr/local
#   make demo     boot the guest and show an offloaded nft ruleset at work
#   make check    all tests (host and in-guest); ends with "N passed, N failed"
#   make check-boot   the boot test (packages, systemd, reboot, upgrade,
#                 remove) on every kernel; make check runs it on the newest
#   make check-debug  the same suite on debug kernels (KASAN, lockdep,
#                 kmemleak) built from Debian's linux-source-6.1 and -6.12
#                 (KERNELS) and cached
#   TESTS="tests/guest/test_churn.sh ..."  only those files, for both checks;
#                 FILE:CASE,CASE only those cases of FILE (its ALL_TESTS)
#   EACH_CASE=1   each case of each file in a process of its own (tests/check)
#   SHARD=K/N     only the K-th of N shards of those files (tests/check):
#                 make check-debug SHARD=1/4 ... SHARD=4/4 run the suite
#   KERNELS="6.1 6.12"  the Debian 12 kernels to build for and to test on
#                 (make check: one guest boot each); make bench: 6.1
#                 unless KERNELS names another
#
# Missing Debian packages are installed first (scripts/deps.sh).  V=1 shows
# the commands.

.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

ROOT	:= $(CURDIR)
BUILD	:= $(ROOT)/build
# Debian 12's two kernels.  Their ABIs (e.g. 6.1.0-57-amd64) are resolved
# when used, from the headers metapackages, which may not be installed yet.
KERNELS	?= 6.1 6.12

CLANG	?= clang
CC	?= gcc
BPFTOOL	?= bpftool
ARCH_INC := -I/usr/include/$(shell uname -m)-linux-gnu

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
MAKEFLAGS += --no-print-directory
endif

XDPOFF_H	:= $(wildcard $(ROOT)/xdpoff/*.h)
KERNEL_SRCS	:= $(wildcard kernel/*.c kernel/*.h) kernel/Kbuild
USER_SRCS	:= $(wildcard userspace/*.c)
USER_HDRS	:= $(wildcard userspace/*.h)

# One module per kernel ABI: build/kernel/<ABI>/xdpoff.ko, which the guest
# finds as build/kernel/$(uname -r)/xdpoff.ko.
BPF_OBJ	:= $(BUILD)/xdpoff.bpf.o
SKEL	:= $(BUILD)/xdpoff.skel.h
BPF_NOADJ_OBJ := $(BUILD)/xdpoff_noadj.bpf.o
NOADJ_SKEL := $(BUILD)/xdpoff_noadj.skel.h
CLI	:= $(BUILD)/xdpoff

CFLAGS_USER := -O2 -g -Wall -Wextra -Werror -I$(ROOT) -I$(BUILD)
LIBS_USER   := -lxdp -lbpf -lelf -lz -lmnl -ljansson -lm

all: deps modules $(CLI)

# XDPOFF_NO_DEPS=1: build without the package check (debian/rules, which
# has its Build-Depends).
DEPS_STAMP := $(if $(XDPOFF_NO_DEPS),,$(BUILD)/.deps)

deps: $(BUILD)/.deps
$(BUILD)/.deps: scripts/deps.sh
	$(call msg,DEPS,scripts/deps.sh)
	$(Q)$(ROOT)/scripts/deps.sh
	$(Q)mkdir -p $(BUILD) && touch $@

modules: deps
	$(Q)for k in $(KERNELS); do \
		v=$$($(ROOT)/tests/vm/kernel-version $$k) && \
		$(MAKE) $(BUILD)/kernel/$$v/xdpoff.ko || exit; \
	done

# Kbuild writes next to the sources: build a copy under build/kernel/<ABI>.
# Against the installed headers (6.1) or, for a kernel whose headers
# package would install its image (6.12), headers unpacked into
# build/cache/ (tests/vm/kernel-headers): make puts no kernel into /boot.
$(BUILD)/kernel/%/xdpoff.ko: $(KERNEL_SRCS) $(XDPOFF_H) $(BUILD)/.deps
	$(call msg,KBUILD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cp $(KERNEL_SRCS) $(@D)/
	$(Q)kdir=$$($(ROOT)/tests/vm/kernel-headers $*) && \
		$(MAKE) -C $$kdir M=$(@D) XDPOFF_ROOT=$(ROOT) $(if $(Q),-s) modules

$(BPF_OBJ): bpf/xdpoff.bpf.c $(wildcard bpf/*.h) $(XDPOFF_H) $(DEPS_STAMP)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CLANG) -O2 -g -Wall -Werror -target bpf $(ARCH_INC) -I$(ROOT) \
		-c $< -o $@

# The same program without bpf_xdp_adjust_head() (no VLAN push or pop),
# for libxdp dispatchers that cannot run a program moving the frame's
# start (libxdp before 1.5.5, on kernels since 6.13 and 6.12.y): attach
# falls back to it (userspace/attach.c).
$(BPF_NOADJ_OBJ): bpf/xdpoff.bpf.c $(wildcard bpf/*.h) $(XDPOFF_H) $(DEPS_STAMP)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(CLANG) -O2 -g -Wall -Werror -target bpf $(ARCH_INC) -I$(ROOT) \
		-DXDPOFF_NO_ADJUST -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name xdpoff_bpf > $@

$(NOADJ_SKEL): $(BPF_NOADJ_OBJ)
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name xdpoff_noadj_bpf > $@

$(CLI): $(USER_SRCS) $(USER_HDRS) $(SKEL) $(NOADJ_SKEL) $(XDPOFF_H)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_USER) $(CPPFLAGS) $(LDFLAGS) -o $@ $(USER_SRCS) $(LIBS_USER)

cli: $(CLI)

# Test programs the in-guest tests run (not installed).
CSUMCHECK := $(BUILD)/tests/csumcheck
$(CSUMCHECK): tests/lib/csumcheck.c $(XDPOFF_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -Wall -Wextra -Werror -I$(ROOT) -o $@ $<
KEYCOLLIDE := $(BUILD)/tests/keycollide
$(KEYCOLLIDE): tests/lib/keycollide.c $(XDPOFF_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -Wall -Wextra -Werror -I$(ROOT) -o $@ $<

# The manual, xdpoff(8): build/xdpoff.8 from doc/xdpoff.8.rst by rst2man,
# as bpftool's pages are made; part of make all.  make install puts the
# CLI, the manual and the bash completion under $(DESTDIR)$(PREFIX) (the
# Debian package xdpoff installs the same files under /usr);
# make uninstall removes them.
RST2MAN	?= rst2man
MAN	:= $(BUILD)/xdpoff.8
PREFIX	?= /usr/local
INSTALL	?= install
INST_FILES := $(PREFIX)/sbin/xdpoff $(PREFIX)/share/man/man8/xdpoff.8 \
	$(PREFIX)/share/bash-completion/completions/xdpoff

all: man
man: $(MAN)
$(MAN): doc/xdpoff.8.rst $(DEPS_STAMP)
	$(call msg,RST2MAN,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)$(RST2MAN) --strip-comments --halt=warning $< >$@

install: $(CLI) $(MAN)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -D -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/sbin/xdpoff
	$(Q)$(INSTALL) -D -m 0644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man8/xdpoff.8
	$(Q)$(INSTALL) -D -m 0644 packaging/xdpoff.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/xdpoff

uninstall:
	$(call msg,UNINST,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INST_FILES))

.PHONY: man install uninstall

# Debian packages (debian/): xdpoff-dkms and xdpoff, built from a copy of
# the tree (tracked and untracked files, not ignored ones) into build/deb/,
# then checked by lintian.  DEB_VERSION=V builds version V instead of
# debian/changelog's (an upgrade to test).
DEB_DIR	?= $(BUILD)/deb
deb: deps
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	$(Q)git ls-files -co --exclude-standard -z | \
		xargs -0 tar -cf - | tar -xf - -C $(DEB_DIR)/src
	$(Q)if [ -n "$(DEB_VERSION)" ]; then \
		{ printf 'xdpoff (%s) bookworm; urgency=medium\n\n  * Build %s (make deb DEB_VERSION=%s).\n\n -- %s  %s\n\n' \
			"$(DEB_VERSION)" "$(DEB_VERSION)" "$(DEB_VERSION)" \
			"$$(sed -n 's/^ -- \(.*>\)  .*/\1/p' debian/changelog | head -n1)" \
			"$$(date -R)"; cat debian/changelog; } >$(DEB_DIR)/src/debian/changelog; \
	fi
	$(call msg,DPKG,$(DEB_DIR))
	$(Q)cd $(DEB_DIR)/src && dpkg-buildpackage -b -us -uc $(if $(Q),>../build.log 2>&1 || { tail -n 40 ../build.log; exit 1; })
	$(call msg,LINTIAN,$(DEB_DIR)/*.deb)
	$(Q)lintian --fail-on error $(DEB_DIR)/*.deb
	$(Q)ls $(DEB_DIR)/*.deb

vm: deps
	$(Q)for k in $(KERNELS); do \
		XDPOFF_KVER=$$($(ROOT)/tests/vm/kernel-version $$k) \
		$(ROOT)/tests/vm/prepare || exit; \
	done

demo: all vm
	$(Q)$(ROOT)/tests/vm/run -- $(ROOT)/tests/demo.sh

check: all vm $(CSUMCHECK) $(KEYCOLLIDE)
	$(Q)KERNELS="$(KERNELS)" $(ROOT)/tests/check $(TESTS)

# The boot test (tests/boot/run) on every kernel of KERNELS; make check
# runs it on the newest only.
check-boot: all vm
	$(Q)KERNELS="$(KERNELS)" BOOT_KERNELS="$(KERNELS)" XDPOFF_BOOT_ONLY=1 \
		$(ROOT)/tests/check

# The debug kernels (tests/vm/debug-kernel SERIES, cached in
# build/cache/debug-kernel/SERIES/) and xdpoff.ko built against each; the
# suite runs with both, on each kernel of KERNELS, one guest boot each
# (SHARD=K/N: a shard of the suite).  KASAN and lockdep under TCG are
# slow: a longer guest timeout and polling budget, a quarter of the
# differential test's pairs unless XDPOFF_DIFF_PAIRS says, 150 churn
# transactions unless XDPOFF_CHURN says (1,000 in make check), no debug
# objects (built in, switched off for speed), a log buffer that keeps
# every report, and 4-level paging (no5lvl): with -cpu max's LA57, an
# interrupt that lands while the boot CPU's features are re-read sees
# LA57 off, and KASAN reports the access a wild one.  (Booting takes ~4
# minutes: ACPI's AML loops time out at 30 s each; ACPI stays,
# test_unplug.sh needs its PCI hotplug.)  Each kernel's results in
# build/check-debug-SERIES.log; the make fails if any kernel's run does.
check-debug: all vm $(CSUMCHECK) $(KEYCOLLIDE)
	$(Q)rc=0; for k in $(KERNELS); do \
		img=$$($(ROOT)/tests/vm/debug-kernel $$k) || exit; \
		kdir=$(BUILD)/debug/$$k/kernel; \
		printf '  %-8s %s\n' KBUILD $$kdir/xdpoff.ko; \
		mkdir -p $$kdir && cp $(KERNEL_SRCS) $$kdir/ && \
		$(MAKE) -C $$(dirname $$img)/obj M=$$kdir XDPOFF_ROOT=$(ROOT) \
			$(if $(Q),-s) modules || exit; \
		XDPOFF_VM_IMAGE=$$img XDPOFF_KO=$$kdir/xdpoff.ko \
		XDPOFF_VM_ENV="XDPOFF_KO WAIT_TIMEOUT XDPOFF_DIFF_PAIRS XDPOFF_CHURN" \
		WAIT_TIMEOUT=60 XDPOFF_DIFF_PAIRS=$${XDPOFF_DIFF_PAIRS:-1280} \
		XDPOFF_CHURN=$${XDPOFF_CHURN:-150} \
		XDPOFF_VM_MEM=3G XDPOFF_VM_TIMEOUT=$${XDPOFF_VM_TIMEOUT:-7200} \
		XDPOFF_VM_APPEND="no_debug_objects log_buf_len=8M no5lvl $${XDPOFF_VM_APPEND}" \
		XDPOFF_CHECK_LOG=$(BUILD)/check-debug-$$k.log \
			$(ROOT)/tests/check $(TESTS) || rc=1; \
	done; exit $$rc

# QUICK=1: a short run (see tests/bench/run); results in build/bench/.
# On 6.1, or on the first kernel KERNELS names (make bench KERNELS=6.12).
BENCH_KERNEL = $(if $(filter command line environment,$(origin KERNELS)),$(firstword $(KERNELS)),6.1)
bench: all vm
	$(Q)XDPOFF_KVER=$$($(ROOT)/tests/vm/kernel-version $(BENCH_KERNEL)) \
		$(ROOT)/tests/bench/run $(if $(filter 1,$(QUICK)),--quick)

clean:
	$(Q)rm -rf $(BUILD)/kernel $(BPF_OBJ) $(SKEL) $(BPF_NOADJ_OBJ) $(NOADJ_SKEL) $(CLI)

distclean:
	$(Q)rm -rf $(BUILD)

.PHONY: all deps modules cli deb vm demo check check-boot check-debug bench clean distclean
