// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: `attach` and `detach`.  attach loads the XDP program (the
 * skeleton), attaches it to the device in native mode, pins it and its maps
 * under XDPOFF_PIN_ROOT/DEV and hands the map fds to the kernel module;
 * detach takes the device back from the module, detaches the program and
 * removes the pins.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/types.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdpoff/xdpoff.h"
#include "xdpoff.skel.h"
#include "cli.h"

/* Attribute carrying each map's fd in XDPOFF_CMD_ATTACH. */
static const int pin_attrs[NR_MAPS] = {
	[PIN_RULES]	= XDPOFF_ATTR_RULES_FD,
	[PIN_MASKS]	= XDPOFF_ATTR_MASKS_FD,
	[PIN_META]	= XDPOFF_ATTR_META_FD,
	[PIN_STATS]	= XDPOFF_ATTR_STATS_FD,
	[PIN_FLOWS]	= XDPOFF_ATTR_FLOWS_FD,
	[PIN_FILTER]	= XDPOFF_ATTR_FILTER_FD,
};

/* ---- helpers ---------------------------------------------------------- */

static int require_root(void)
{
	if (geteuid() == 0)
		return 0;
	pr_warn("must be run as root\n");
	return -EPERM;
}

static void pr_kernel_err(const struct xnl *nl, const char *what,
			  const char *dev, int err)
{
	if (nl->extack[0])
		pr_warn("Couldn't %s %s: %s (%s)\n", what, dev, nl->extack,
			strerror(-err));
	else
		pr_warn("Couldn't %s %s: %s\n", what, dev, strerror(-err));
}

/* Connect to the module's generic netlink family, explaining failures. */
static int open_module(struct xnl *nl)
{
	int err = xnl_open(nl);

	if (err == -ENOENT)
		pr_warn("kernel module not loaded (modprobe xdpoff / insmod xdpoff.ko)\n");
	else if (err)
		pr_warn("Couldn't talk to the kernel module: %s\n",
			strerror(-err));
	return err;
}

/* ---- pins ------------------------------------------------------------- */

/* Create XDPOFF_PIN_ROOT/DEV; its existence is what "attached" means. */
static int make_pin_dir(const char *dev)
{
	char path[PATH_MAX];
	struct statfs sfs;
	int err;

	if (mkdir(XDPOFF_PIN_ROOT, 0700) && errno != EEXIST) {
		err = -errno;
		pr_warn("Couldn't create %s: %s (is bpffs mounted?)\n",
			XDPOFF_PIN_ROOT, strerror(-err));
		return err;
	}
	if (statfs(XDPOFF_PIN_ROOT, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		pr_warn("%s is not on a bpf filesystem (mount -t bpf bpf /sys/fs/bpf)\n",
			XDPOFF_PIN_ROOT);
		return -EINVAL;
	}
	pin_path(path, sizeof(path), dev, -1);
	if (mkdir(path, 0700)) {
		err = -errno;
		if (err == -EEXIST)
			pr_warn("%s is already attached\n", dev);
		else
			pr_warn("Couldn't create %s: %s\n", path, strerror(-err));
		return err;
	}
	return 0;
}

static int pin_objects(struct xdpoff_bpf *skel, const char *dev)
{
	char path[PATH_MAX];
	int i, err;

	for (i = 0; i < NR_PINS; i++) {
		pin_path(path, sizeof(path), dev, i);
		if (i == PIN_PROG)
			err = bpf_program__pin(skel->progs.xdpoff_xdp, path);
		else
			err = bpf_map__pin(bpf_object__find_map_by_name(skel->obj,
						pin_names[i]), path);
		if (err) {
			pr_warn("Couldn't pin %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Unpin whatever is there and remove the directory; quiet about absences. */
static void remove_pins(const char *dev)
{
	char path[PATH_MAX];
	int i;

	for (i = 0; i < NR_PINS; i++) {
		pin_path(path, sizeof(path), dev, i);
		if (unlink(path) && errno != ENOENT)
			pr_warn("Couldn't remove %s: %s\n", path, strerror(errno));
	}
	pin_path(path, sizeof(path), dev, -1);
	if (rmdir(path) && errno != ENOENT)
		pr_warn("Couldn't remove %s: %s\n", path, strerror(errno));
	rmdir(XDPOFF_PIN_ROOT);		/* only once the last device is gone */
}

/* ---- XDP -------------------------------------------------------------- */

static struct xdpoff_bpf *load_prog(__u32 max_rules, __u32 max_flows)
{
	struct xdpoff_meta meta = {
		.software_from = XDPOFF_ORDER_NONE,
		.ft_order = XDPOFF_ORDER_NONE,
	};
	struct xdpoff_bpf *skel;
	__u32 zero = 0;
	int i, err;

	skel = xdpoff_bpf__open();
	if (!skel) {
		pr_warn("Couldn't open the XDP program: %s\n", strerror(errno));
		return NULL;
	}
	for (i = 0; i < NR_MAPS; i++) {
		if (!bpf_object__find_map_by_name(skel->obj, pin_names[i])) {
			pr_warn("XDP program has no map %s\n", pin_names[i]);
			err = -ENOENT;
			goto fail;
		}
	}
	err = bpf_map__set_max_entries(skel->maps.xdpoff_rules, max_rules);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.xdpoff_stats, max_rules);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.xdpoff_flows, max_flows);
	if (!err)
		err = xdpoff_bpf__load(skel);
	if (err) {
		pr_warn("Couldn't load the XDP program: %s\n", strerror(-err));
		goto fail;
	}
	/* Until the module writes it: no mask, no flowtable. */
	err = bpf_map__update_elem(skel->maps.xdpoff_meta, &zero, sizeof(zero),
				   &meta, sizeof(meta), BPF_ANY);
	if (err) {
		pr_warn("Couldn't write the meta map: %s\n", strerror(-err));
		goto fail;
	}
	return skel;
fail:
	xdpoff_bpf__destroy(skel);
	return NULL;
}

/*
 * Remove our program from @ifindex, in the mode it runs in.  With the
 * program's fd, only that program is detached and a foreign one is left
 * alone; without it, whatever runs in native mode goes.
 */
static int detach_xdp(int ifindex, const char *dev, int prog_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd);
	__u32 ours = prog_id(prog_fd), cur = 0;
	bool generic = false;
	int err;

	if (prog_fd >= 0) {
		cur = xdp_attached(ifindex, ours, &generic);
		if (!cur) {
			pr_debug("%s: no XDP program attached\n", dev);
			return 0;
		}
		if (cur != ours) {
			pr_warn("%s: attached XDP program %u is not ours (%u), leaving it\n",
				dev, cur, ours);
			return 0;
		}
	}
	err = bpf_xdp_detach(ifindex, generic ? XDP_FLAGS_SKB_MODE :
			     XDP_FLAGS_DRV_MODE, prog_fd >= 0 ? &opts : NULL);
	if (err)
		pr_warn("Couldn't detach XDP program from %s: %s\n", dev,
			strerror(-err));
	else
		pr_debug("%s: detached XDP program %u\n", dev, ours);
	return err;
}

/* ---- module ----------------------------------------------------------- */

static int module_attach(struct xnl *nl, int ifindex, const char *dev,
			 struct xdpoff_bpf *skel, bool generic)
{
	struct nlmsghdr *nlh = xnl_request(nl, XDPOFF_CMD_ATTACH, 0);
	struct bpf_map *map;
	int i, err;

	mnl_attr_put_u32(nlh, XDPOFF_ATTR_IFINDEX, ifindex);
	mnl_attr_put_u32(nlh, XDPOFF_ATTR_XDP_MODE, generic ?
			 XDPOFF_XDP_GENERIC : XDPOFF_XDP_NATIVE);
	for (i = 0; i < NR_MAPS; i++) {
		map = bpf_object__find_map_by_name(skel->obj, pin_names[i]);
		mnl_attr_put_u32(nlh, pin_attrs[i], bpf_map__fd(map));
	}
	err = xnl_doit(nl, nlh);
	if (err)
		pr_kernel_err(nl, "hand over", dev, err);
	return err;
}

/* 0, -ENOENT if the module does not know @ifindex (or is absent), or -errno. */
static int module_detach(int ifindex, const char *dev)
{
	struct nlmsghdr *nlh;
	struct xnl nl;
	int err;

	err = xnl_open(&nl);
	if (err == -ENOENT) {
		pr_debug("kernel module not loaded\n");
		return -ENOENT;
	}
	if (err) {
		pr_warn("Couldn't talk to the kernel module: %s\n",
			strerror(-err));
		return err;
	}
	nlh = xnl_request(&nl, XDPOFF_CMD_DETACH, 0);
	mnl_attr_put_u32(nlh, XDPOFF_ATTR_IFINDEX, ifindex);
	err = xnl_doit(&nl, nlh);
	if (err == -ENODEV)
		err = -ENOENT;
	if (err == -ENOENT)
		pr_debug("%s: not attached in the kernel module\n", dev);
	else if (err)
		pr_kernel_err(&nl, "detach", dev, err);
	xnl_close(&nl);
	return err;
}

/* ---- attach / detach -------------------------------------------------- */

int cmd_attach(const struct args *a)
{
	struct xdpoff_bpf *skel = NULL;
	int ifindex, err, prog_fd = -1;
	int ret = EXIT_FAIL;
	struct xnl nl;

	if (require_root())
		return EXIT_FAIL;
	ifindex = valid_ifname(a->dev) ? if_nametoindex(a->dev) : 0;
	if (!ifindex) {
		pr_warn("no such device: %s\n", a->dev);
		return EXIT_FAIL;
	}
	if (open_module(&nl))
		return EXIT_FAIL;
	if (make_pin_dir(a->dev))
		goto out;

	skel = load_prog(a->max_rules, a->max_flows);
	if (!skel)
		goto undo;
	prog_fd = bpf_program__fd(skel->progs.xdpoff_xdp);
	err = bpf_xdp_attach(ifindex, prog_fd,
			     (a->generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE) |
			     XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (err) {
		pr_warn("Couldn't attach XDP program to %s in %s mode: %s\n",
			a->dev, a->generic ? "generic (skb)" : "native",
			strerror(-err));
		if (!a->generic && err == -EOPNOTSUPP)
			pr_info("%s: its driver has no native XDP; `xdpoff attach --mode skb %s` runs the program in generic mode\n",
				a->dev, a->dev);
		prog_fd = -1;
		goto undo;
	}
	if (pin_objects(skel, a->dev) ||
	    module_attach(&nl, ifindex, a->dev, skel, a->generic))
		goto undo;

	pr_debug("%s: attached XDP program %u in %s mode, up to %u rules, %u flows\n",
		 a->dev, prog_id(prog_fd), a->generic ? "generic" : "native",
		 a->max_rules, a->max_flows);
	/* The module replayed the tc blocks; nft chains are ours to redo. */
	nft_restore_chains(a->dev);
	ret = EXIT_OK;
	goto out;
undo:
	if (prog_fd >= 0)
		detach_xdp(ifindex, a->dev, prog_fd);
	remove_pins(a->dev);
out:
	xdpoff_bpf__destroy(skel);
	xnl_close(&nl);
	return ret;
}

int cmd_detach(const struct args *a)
{
	int ifindex, prog_fd, err;
	bool pinned;

	if (require_root())
		return EXIT_FAIL;
	if (!valid_ifname(a->dev)) {
		pr_warn("no such device: %s\n", a->dev);
		return EXIT_FAIL;
	}
	ifindex = if_nametoindex(a->dev);
	pinned = pin_dir_exists(a->dev);
	if (!ifindex && !pinned) {
		pr_warn("no such device: %s\n", a->dev);
		return EXIT_FAIL;
	}

	/* The module goes first: it refuses while flow blocks are bound. */
	if (ifindex) {
		err = module_detach(ifindex, a->dev);
		if (err && err != -ENOENT)
			return EXIT_FAIL;
		if (err && !pinned) {
			pr_warn("%s is not attached\n", a->dev);
			return EXIT_FAIL;
		}
		if (err)
			pr_info("%s: unknown to the kernel module, removing the XDP program and pins\n",
				a->dev);
	}
	if (!pinned)
		return EXIT_OK;

	err = 0;
	prog_fd = open_pin(a->dev, PIN_PROG);
	if (ifindex)
		err = detach_xdp(ifindex, a->dev, prog_fd);
	if (prog_fd >= 0)
		close(prog_fd);
	remove_pins(a->dev);
	return err ? EXIT_FAIL : EXIT_OK;
}
