// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: `attach` and `detach`.  attach loads the XDP program (a
 * build the skeletons embed) and attaches it to the device, in native mode
 * unless asked otherwise, as one of the programs of libxdp's dispatcher
 * there (or alone, --no-libxdp); it pins the program and its maps under
 * XDPOFF_PIN_ROOT/DEV and hands the map fds to the kernel module.  detach
 * takes the device back from the module, detaches the program and removes
 * the pins.
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
#include <xdp/libxdp.h>

#include "xdpoff/xdpoff.h"
#include "xdpoff.skel.h"
#include "xdpoff_noadj.skel.h"
#include "cli.h"
#include "show.h"

/* Attribute carrying each map's fd in XDPOFF_CMD_ATTACH. */
#define PIN_FD_ATTR(id, name, attr, type_, key_, val_)	\
	[XDPOFF_MAPI_##id] = attr,
static const int pin_attrs[XDPOFF_NR_MAPS] = {
	XDPOFF_MAPS(PIN_FD_ATTR)
};

/*
 * The XDP program and its maps as attach loads them, from one of two
 * builds: the whole program, or the one without VLAN push and pop
 * (XDPOFF_NO_ADJUST), for a libxdp dispatcher that cannot run a program
 * moving the frame's start.
 */
struct prog {
	struct bpf_object	*obj;
	struct bpf_program	*xdp;
	bool			no_adjust;
};

static struct bpf_map *prog_map(const struct prog *p, int pin)
{
	return bpf_object__find_map_by_name(p->obj, pin_names[pin]);
}

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

static int pin_objects(const struct prog *p, const char *dev)
{
	char path[PATH_MAX];
	int i, err;

	for (i = 0; i < NR_PINS; i++) {
		pin_path(path, sizeof(path), dev, i);
		if (i == PIN_PROG)
			err = bpf_program__pin(p->xdp, path);
		else
			err = bpf_map__pin(prog_map(p, i), path);
		if (err) {
			pr_warn("Couldn't pin %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* What an attach by xdpoff 0.2 pinned besides: its index maps. */
static const char *const old_pins[] = { "xdpoff_index", "xdpoff_flow_index" };

/* Unpin whatever is there and remove the directory; quiet about absences. */
static void remove_pins(const char *dev)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < NR_PINS; i++) {
		pin_path(path, sizeof(path), dev, i);
		if (unlink(path) && errno != ENOENT)
			pr_warn("Couldn't remove %s: %s\n", path, strerror(errno));
	}
	for (i = 0; i < sizeof(old_pins) / sizeof(old_pins[0]); i++) {
		pin_path(path, sizeof(path), dev, -1);
		snprintf(path + strlen(path), sizeof(path) - strlen(path),
			 "/%s", old_pins[i]);
		if (unlink(path) && errno != ENOENT)
			pr_warn("Couldn't remove %s: %s\n", path, strerror(errno));
	}
	pin_path(path, sizeof(path), dev, -1);
	if (rmdir(path) && errno != ENOENT)
		pr_warn("Couldn't remove %s: %s\n", path, strerror(errno));
	rmdir(XDPOFF_PIN_ROOT);		/* only once the last device is gone */
}

/* ---- XDP -------------------------------------------------------------- */

static void close_prog(struct prog *p)
{
	bpf_object__close(p->obj);
	p->obj = NULL;
}

/* The program of one build, opened and sized but not loaded. */
static int open_prog(struct prog *p, bool no_adjust, __u32 max_rules,
		     __u32 max_flows)
{
	const void *elf;
	size_t size;
	int i, err;

	elf = no_adjust ? xdpoff_noadj_bpf__elf_bytes(&size) :
			  xdpoff_bpf__elf_bytes(&size);
	p->no_adjust = no_adjust;
	p->obj = bpf_object__open_mem(elf, size, NULL);
	err = libbpf_get_error(p->obj);
	if (err) {
		p->obj = NULL;
		pr_warn("Couldn't open the XDP program: %s\n", strerror(-err));
		return err;
	}
	p->xdp = bpf_object__find_program_by_name(p->obj, "xdpoff_xdp");
	for (i = 0; i < XDPOFF_NR_MAPS && p->xdp; i++)
		if (!prog_map(p, i))
			break;
	if (!p->xdp || i < XDPOFF_NR_MAPS) {
		pr_warn("XDP object without its program or map %s\n",
			p->xdp ? pin_names[i] : "");
		err = -ENOENT;
		goto fail;
	}
	err = bpf_map__set_max_entries(prog_map(p, XDPOFF_MAPI_RULES), max_rules);
	if (!err)
		err = bpf_map__set_max_entries(prog_map(p, XDPOFF_MAPI_STATS), max_rules);
	if (!err)
		err = bpf_map__set_max_entries(prog_map(p, XDPOFF_MAPI_FLOWS), max_flows);
	if (!err)
		return 0;
	pr_warn("Couldn't size the maps: %s\n", strerror(-err));
fail:
	close_prog(p);
	return err;
}

/*
 * Until the module writes it: no mask, no flowtable.  The zeroed entry
 * the map starts with passes every frame as well (its flowtable order is
 * not below its software order), so a program that runs before this
 * write (libxdp attaches as it loads) already does the right thing.
 */
static int init_meta(const struct prog *p)
{
	struct xdpoff_meta meta = {
		.software_from = XDPOFF_ORDER_NONE,
		.ft_order = XDPOFF_ORDER_NONE,
	};
	__u32 zero = 0;
	int err;

	err = bpf_map__update_elem(prog_map(p, XDPOFF_MAPI_META), &zero, sizeof(zero),
				   &meta, sizeof(meta), BPF_ANY);
	if (err)
		pr_warn("Couldn't write the meta map: %s\n", strerror(-err));
	return err;
}

static const char *mode_name(bool generic)
{
	return generic ? "generic (skb)" : "native";
}

static void attach_failed(const struct args *a, int err)
{
	pr_warn("Couldn't attach XDP program to %s in %s mode: %s\n", a->dev,
		mode_name(a->generic), strerror(-err));
	if (!a->generic && err == -EOPNOTSUPP)
		pr_info("%s: its driver has no native XDP; `xdpoff attach --mode skb %s` runs the program in generic mode\n",
			a->dev, a->dev);
}

/* --no-libxdp: load the program and attach it alone to the hook. */
static int attach_direct(const struct args *a, int ifindex,
			 const struct prog *p)
{
	int err;

	err = bpf_object__load(p->obj);
	if (err) {
		pr_warn("Couldn't load the XDP program: %s\n", strerror(-err));
		return err;
	}
	err = init_meta(p);
	if (err)
		return err;
	err = bpf_xdp_attach(ifindex, bpf_program__fd(p->xdp),
			     (a->generic ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE) |
			     XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (err == -EBUSY)
		pr_warn("%s: another XDP program holds the hook; without libxdp xdpoff needs it alone\n",
			a->dev);
	else if (err)
		attach_failed(a, err);
	return err;
}

/*
 * Whether libxdp can add a program to @ifindex's hook in the mode asked
 * for: free, or held by its dispatcher in that mode.  A program attached
 * without the dispatcher cannot be shared, and libxdp would refuse it
 * only after loading ours.
 */
static int hook_shareable(const struct args *a, int ifindex)
{
	struct xdp_multiprog *mp = xdp_hook(ifindex);
	struct xdp_program *main_prog;
	bool generic;
	int err = 0;

	if (!mp)
		return 0;
	main_prog = xdp_multiprog__main_prog(mp);
	generic = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB;
	if (xdp_multiprog__is_legacy(mp)) {
		pr_warn("%s: XDP program %u (%s) is attached without libxdp's dispatcher, so xdpoff cannot run beside it; detach it, or load it through libxdp (xdp-loader)\n",
			a->dev, xdp_program__id(main_prog),
			xdp_program__name(main_prog));
		err = -EBUSY;
	} else if (generic != a->generic) {
		pr_warn("%s: libxdp's dispatcher runs in %s mode there; attach with --mode %s to run beside its programs\n",
			a->dev, mode_name(generic), generic ? "skb" : "native");
		err = -EBUSY;
	}
	xdp_multiprog__close(mp);
	return err;
}

/* Load @p as one of the programs of @ifindex's dispatcher. */
static int join_dispatcher(const struct args *a, int ifindex,
			   const struct prog *p, struct xdp_program **xprog)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = p->obj,
			    .prog_name = "xdpoff_xdp");
	struct xdp_program *xp;
	int err;

	xp = xdp_program__create(&opts);
	err = libxdp_get_error(xp);
	if (err) {
		pr_warn("Couldn't open the XDP program for libxdp: %s\n",
			strerror(-err));
		return err;
	}
	if (a->run_prio >= 0)
		err = xdp_program__set_run_prio(xp, a->run_prio);
	if (!err)
		err = xdp_program__attach(xp, ifindex, a->generic ? XDP_MODE_SKB :
					  XDP_MODE_NATIVE, 0);
	if (err) {
		xdp_program__close(xp);
		return err;
	}
	*xprog = xp;
	return 0;
}

/*
 * The default: the program joins libxdp's dispatcher on the hook, at its
 * run priority, beside other programs; libxdp loads it as it attaches.
 * A kernel since 6.13 (and 6.12.y) refuses an extension that moves the
 * frame's start in place of a function that does not, and libxdp's
 * dispatchers before 1.5.5 have only such functions: EINVAL, before any
 * verification.  Then the build without VLAN push and pop goes in
 * instead.  Returns the libxdp program in *@xprog (to detach it on a
 * later failure); @p may be reopened.
 */
static int attach_libxdp(const struct args *a, int ifindex, struct prog *p,
			 struct xdp_program **xprog)
{
	int err;

	err = hook_shareable(a, ifindex);
	if (err)
		return err;
	/* libbpf's load log of a refusal we expect is no news. */
	libbpf_hold();
	err = join_dispatcher(a, ifindex, p, xprog);
	libbpf_release(err != -EINVAL);
	if (err == -EINVAL && !p->no_adjust) {
		pr_debug("%s: the dispatcher refused the program; trying the build without VLAN push and pop\n",
			 a->dev);
		close_prog(p);
		err = open_prog(p, true, a->max_rules, a->max_flows);
		if (err)
			return err;
		err = join_dispatcher(a, ifindex, p, xprog);
		if (!err)
			pr_info("%s: libxdp's dispatcher cannot run a program that moves the frame's start (libxdp before 1.5.5, on this kernel): tc filters that push or pop a VLAN tag before a redirect run in software (--no-libxdp: in XDP)\n",
				a->dev);
	}
	if (err) {
		attach_failed(a, err);
		return err;
	}
	return init_meta(p);
}

/*
 * Remove program @prog_fd (ours) from @ifindex, whether it runs alone on
 * the hook or in libxdp's dispatcher, in the mode it runs in; anything
 * else on the hook is left alone.  Without @prog_fd (its pin is gone), a
 * program alone on the native hook goes, a dispatcher is left alone.
 */
static int detach_xdp(int ifindex, const char *dev, int prog_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd);
	__u32 ours = prog_id(prog_fd), cur;
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;
	struct xdp_where w;
	int err;

	if (prog_fd >= 0) {
		cur = xdp_attached(ifindex, ours, &w);
		if (!cur) {
			pr_debug("%s: no XDP program attached\n", dev);
			return 0;
		}
		if (cur != ours) {
			pr_warn("%s: attached XDP program %u is not ours (%u), leaving it\n",
				dev, cur, ours);
			return 0;
		}
	} else {
		mp = xdp_hook(ifindex);
		w.libxdp = mp && !xdp_multiprog__is_legacy(mp);
		xdp_multiprog__close(mp);
		w.generic = false;
		if (w.libxdp) {
			pr_warn("%s: our XDP program's pin is gone; leaving libxdp's dispatcher alone (xdp-loader status %s)\n",
				dev, dev);
			return 0;
		}
	}
	if (!w.libxdp) {
		err = bpf_xdp_detach(ifindex, w.generic ? XDP_FLAGS_SKB_MODE :
				     XDP_FLAGS_DRV_MODE,
				     prog_fd >= 0 ? &opts : NULL);
	} else {
		/* libxdp rebuilds the dispatcher without it, or removes it. */
		mp = xdp_hook(ifindex);
		while (mp && (p = xdp_multiprog__next_prog(p, mp)))
			if (xdp_program__id(p) == ours)
				break;
		err = p ? xdp_program__detach(p, ifindex, w.generic ?
					      XDP_MODE_SKB : XDP_MODE_NATIVE, 0) :
			  -ENOENT;
		xdp_multiprog__close(mp);
	}
	if (err)
		pr_warn("Couldn't detach XDP program from %s: %s\n", dev,
			strerror(-err));
	else
		pr_debug("%s: detached XDP program %u%s\n", dev, ours,
			 w.libxdp ? " from libxdp's dispatcher" : "");
	return err;
}

/* ---- module ----------------------------------------------------------- */

static int module_attach(struct xnl *nl, int ifindex, const char *dev,
			 const struct prog *p, bool generic)
{
	struct nlmsghdr *nlh = xnl_request(nl, XDPOFF_CMD_ATTACH, 0);
	struct bpf_map *map;
	int i, err;

	mnl_attr_put_u32(nlh, XDPOFF_ATTR_IFINDEX, ifindex);
	mnl_attr_put_u32(nlh, XDPOFF_ATTR_XDP_MODE, generic ?
			 XDPOFF_XDP_GENERIC : XDPOFF_XDP_NATIVE);
	if (p->no_adjust)
		mnl_attr_put_u32(nlh, XDPOFF_ATTR_PROG_FLAGS,
				 XDPOFF_PROG_NO_ADJUST);
	for (i = 0; i < XDPOFF_NR_MAPS; i++) {
		map = prog_map(p, i);
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
	struct xdp_program *xprog = NULL;
	struct prog p = {};
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

	if (open_prog(&p, false, a->max_rules, a->max_flows))
		goto undo;
	err = a->no_libxdp ? attach_direct(a, ifindex, &p) :
			     attach_libxdp(a, ifindex, &p, &xprog);
	/* Only libxdp's path can fail after the attach (*xprog set). */
	if (!err || xprog)
		prog_fd = bpf_program__fd(p.xdp);
	if (err)
		goto undo;
	if (pin_objects(&p, a->dev) ||
	    module_attach(&nl, ifindex, a->dev, &p, a->generic))
		goto undo;

	pr_debug("%s: attached XDP program %u in %s mode%s, up to %u rules, %u flows\n",
		 a->dev, prog_id(prog_fd), a->generic ? "generic" : "native",
		 xprog ? " through libxdp" : "", a->max_rules, a->max_flows);
	/* The module replayed the tc blocks; nft chains are ours to redo. */
	nft_restore_chains(a->dev);
	ret = EXIT_OK;
	goto out;
undo:
	if (prog_fd >= 0)
		detach_xdp(ifindex, a->dev, prog_fd);
	remove_pins(a->dev);
out:
	xdp_program__close(xprog);
	close_prog(&p);
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
	/*
	 * A dispatcher that left the hook without libxdp (the device was
	 * deleted, `ip link set xdp off`) leaves libxdp's pins of it behind,
	 * and with them our program and its maps: remove such pins, as
	 * `xdp-loader clean` does (of every device when DEV is gone).
	 */
	libxdp_clean_references(ifindex);
	return err ? EXIT_FAIL : EXIT_OK;
}
