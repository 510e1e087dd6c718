// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: make a NIC an offload target for netfilter/tc rules.
 *
 * `attach` loads the xdpoff XDP program on a device in native mode, pins
 * its maps under XDPOFF_PIN_ROOT/DEV and hands the map fds to the xdpoff
 * kernel module, which from then on writes offloaded rules into them.
 * `detach` undoes that, `show` reads the rules and counters back.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/types.h>
#include <linux/genetlink.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdpoff/xdpoff.h"
#include "xdpoff.skel.h"
#include "cli.h"

bool verbose;

/* What `attach` pins under XDPOFF_PIN_ROOT/DEV; the maps come first. */
enum { PIN_RULES, PIN_MASKS, PIN_META, PIN_STATS, PIN_PROG, NR_PINS };
#define NR_MAPS PIN_PROG

static const char *const pin_names[NR_PINS] = {
	[PIN_RULES]	= XDPOFF_MAP_RULES,
	[PIN_MASKS]	= XDPOFF_MAP_MASKS,
	[PIN_META]	= XDPOFF_MAP_META,
	[PIN_STATS]	= XDPOFF_MAP_STATS,
	[PIN_PROG]	= "prog",
};

/* Attribute carrying each map's fd in XDPOFF_CMD_ATTACH. */
static const int pin_attrs[NR_MAPS] = {
	[PIN_RULES]	= XDPOFF_ATTR_RULES_FD,
	[PIN_MASKS]	= XDPOFF_ATTR_MASKS_FD,
	[PIN_META]	= XDPOFF_ATTR_META_FD,
	[PIN_STATS]	= XDPOFF_ATTR_STATS_FD,
};

struct args {
	const char	*dev;
	__u32		max_rules;
	bool		json;
};

/* ---- helpers ---------------------------------------------------------- */

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int require_root(void)
{
	if (geteuid() == 0)
		return 0;
	pr_warn("must be run as root\n");
	return -EPERM;
}

/* The name is used as a path component, so reject anything odd. */
static bool valid_ifname(const char *dev)
{
	return dev[0] && strlen(dev) < IFNAMSIZ && !strchr(dev, '/') &&
	       strcmp(dev, ".") && strcmp(dev, "..");
}

/* XDPOFF_PIN_ROOT/DEV, or XDPOFF_PIN_ROOT/DEV/<pin_names[pin]> if pin >= 0. */
static void pin_path(char *buf, size_t size, const char *dev, int pin)
{
	if (pin < 0)
		snprintf(buf, size, "%s/%s", XDPOFF_PIN_ROOT, dev);
	else
		snprintf(buf, size, "%s/%s/%s", XDPOFF_PIN_ROOT, dev,
			 pin_names[pin]);
}

static bool pin_dir_exists(const char *dev)
{
	char path[PATH_MAX];
	struct stat st;

	pin_path(path, sizeof(path), dev, -1);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Returns an fd or -errno. */
static int open_pin(const char *dev, int pin)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), dev, pin);
	return bpf_obj_get(path);
}

static __u32 prog_id(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (prog_fd < 0 || bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	return info.id;
}

static __u32 map_max_entries(int map_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return 0;
	return info.max_entries;
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

static struct xdpoff_bpf *load_prog(__u32 max_rules)
{
	struct xdpoff_bpf *skel;
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
		err = xdpoff_bpf__load(skel);
	if (err) {
		pr_warn("Couldn't load the XDP program: %s\n", strerror(-err));
		goto fail;
	}
	return skel;
fail:
	xdpoff_bpf__destroy(skel);
	return NULL;
}

/*
 * Remove our program from @ifindex.  With the program's fd, only that
 * program is detached and a foreign one is left alone; without it, whatever
 * runs in native mode goes.
 */
static int detach_xdp(int ifindex, const char *dev, int prog_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = prog_fd);
	__u32 ours = prog_id(prog_fd), cur = 0;
	int err;

	if (prog_fd >= 0) {
		err = bpf_xdp_query_id(ifindex, XDP_FLAGS_DRV_MODE, &cur);
		if (!err && !cur) {
			pr_debug("%s: no XDP program attached\n", dev);
			return 0;
		}
		if (!err && cur != ours) {
			pr_warn("%s: attached XDP program %u is not ours (%u), leaving it\n",
				dev, cur, ours);
			return 0;
		}
	}
	err = bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE,
			     prog_fd >= 0 ? &opts : NULL);
	if (err)
		pr_warn("Couldn't detach XDP program from %s: %s\n", dev,
			strerror(-err));
	else
		pr_debug("%s: detached XDP program %u\n", dev, ours);
	return err;
}

/* ---- module ----------------------------------------------------------- */

static int module_attach(struct xnl *nl, int ifindex, const char *dev,
			 struct xdpoff_bpf *skel)
{
	struct nlmsghdr *nlh = xnl_request(nl, XDPOFF_CMD_ATTACH, 0);
	struct bpf_map *map;
	int i, err;

	mnl_attr_put_u32(nlh, XDPOFF_ATTR_IFINDEX, ifindex);
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

static int cmd_attach(const struct args *a)
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

	skel = load_prog(a->max_rules);
	if (!skel)
		goto undo;
	prog_fd = bpf_program__fd(skel->progs.xdpoff_xdp);
	err = bpf_xdp_attach(ifindex, prog_fd,
			     XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
	if (err) {
		pr_warn("Couldn't attach XDP program to %s in native mode: %s\n",
			a->dev, strerror(-err));
		prog_fd = -1;
		goto undo;
	}
	if (pin_objects(skel, a->dev) ||
	    module_attach(&nl, ifindex, a->dev, skel))
		goto undo;

	pr_debug("%s: attached XDP program %u, up to %u rules\n", a->dev,
		 prog_id(prog_fd), a->max_rules);
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

static int cmd_detach(const struct args *a)
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

/* ---- show: reading -------------------------------------------------- */

struct rule {
	struct xdpoff_rule_key		key;
	struct xdpoff_rule_val		val;
	const struct xdpoff_fields	*mask;
	const struct xdpoff_mask	*slot;	/* mask, ranges */
	__u64				packets;
	__u64				bytes;
	__u64				consumed_packets;
};

/* Per-device state from XDPOFF_CMD_GET. */
struct kinfo {
	__u32	ifindex;
	__u32	nr_rules;
	__u32	nr_blocks;
	__u32	max_rules;
	char	last_error[256];	/* why the module refused a rule */
};

struct kinfos {
	struct kinfo	*v;
	size_t		n;
};

struct dev_info {
	const char		*name;
	int			ifindex;
	__u32			prog_id;
	__u32			attached_id;	/* on the device, native mode */
	__u32			max_rules;
	__u32			nr_masks;	/* active ones, in masks[] */
	struct xdpoff_mask	masks[XDPOFF_MAX_MASKS];
	struct rule		*rules;
	size_t			nr_rules;
	__u64			packets;
	__u64			bytes;
	const struct kinfo	*kinfo;		/* NULL: module did not say */
};

static int kinfo_cb(const struct nlmsghdr *nlh, void *data)
{
	struct kinfos *k = data;
	const struct nlattr *attr;
	struct kinfo ki = {};
	struct kinfo *v;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(attr) == XDPOFF_ATTR_LAST_ERROR) {
			snprintf(ki.last_error, sizeof(ki.last_error), "%.*s",
				 (int)mnl_attr_get_payload_len(attr),
				 mnl_attr_get_str(attr));
			continue;
		}
		if (mnl_attr_validate(attr, MNL_TYPE_U32) < 0)
			continue;
		switch (mnl_attr_get_type(attr)) {
		case XDPOFF_ATTR_IFINDEX:
			ki.ifindex = mnl_attr_get_u32(attr);
			break;
		case XDPOFF_ATTR_NR_RULES:
			ki.nr_rules = mnl_attr_get_u32(attr);
			break;
		case XDPOFF_ATTR_NR_BLOCKS:
			ki.nr_blocks = mnl_attr_get_u32(attr);
			break;
		case XDPOFF_ATTR_MAX_RULES:
			ki.max_rules = mnl_attr_get_u32(attr);
			break;
		}
	}
	v = realloc(k->v, (k->n + 1) * sizeof(*v));
	if (!v) {
		errno = ENOMEM;
		return MNL_CB_ERROR;
	}
	k->v = v;
	k->v[k->n++] = ki;
	return MNL_CB_OK;
}

/* Ask the module what it manages; best effort, show works without it. */
static void module_query(struct kinfos *k)
{
	struct nlmsghdr *nlh;
	struct xnl nl;
	int err;

	err = xnl_open(&nl);
	if (err) {
		pr_debug("kernel module not reachable: %s\n", strerror(-err));
		return;
	}
	nlh = xnl_request(&nl, XDPOFF_CMD_GET, 0);
	err = xnl_dump(&nl, nlh, kinfo_cb, k);
	if (err)
		pr_debug("XDPOFF_CMD_GET failed: %s\n", strerror(-err));
	xnl_close(&nl);
}

static const struct kinfo *find_kinfo(const struct kinfos *k, int ifindex)
{
	size_t i;

	for (i = 0; ifindex && i < k->n; i++)
		if (k->v[i].ifindex == (__u32)ifindex)
			return &k->v[i];
	return NULL;
}

static int read_masks(struct dev_info *d, int masks_fd, int meta_fd)
{
	struct xdpoff_meta meta;
	struct xdpoff_mask m;
	__u32 i = 0;
	int err;

	err = bpf_map_lookup_elem(meta_fd, &i, &meta);
	for (i = 0; !err && i < meta.nr_masks && i < XDPOFF_MAX_MASKS; i++) {
		err = bpf_map_lookup_elem(masks_fd, &i, &m);
		if (err)
			break;
		if (m.active)
			d->masks[d->nr_masks++] = m;
	}
	return err;
}

static const struct xdpoff_mask *find_mask(const struct dev_info *d, __u32 id)
{
	__u32 i;

	for (i = 0; i < d->nr_masks; i++)
		if (d->masks[i].id == id)
			return &d->masks[i];
	return NULL;
}

/* Sum a rule's per-CPU counters into @r; @buf holds @ncpus values. */
static void read_stats(struct rule *r, int stats_fd, struct xdpoff_stats *buf,
		       int ncpus)
{
	int i;

	if (bpf_map_lookup_elem(stats_fd, &r->val.stats_slot, buf))
		return;
	for (i = 0; i < ncpus; i++) {
		r->packets += buf[i].packets;
		r->bytes += buf[i].bytes;
		r->consumed_packets += buf[i].consumed_packets;
	}
}

static int cmp_rules(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;

	if (x->val.order != y->val.order)
		return x->val.order < y->val.order ? -1 : 1;
	return (x->val.stats_slot > y->val.stats_slot) -
	       (x->val.stats_slot < y->val.stats_slot);
}

static int read_rules(struct dev_info *d, int rules_fd, int stats_fd,
		      int ncpus)
{
	__u32 limit = d->max_rules ? d->max_rules : UINT32_MAX;
	struct xdpoff_rule_key key, next;
	struct xdpoff_stats *buf;
	size_t cap = 0;
	struct rule *r;
	void *prev = NULL;
	int err = 0;
	__u32 n;

	buf = calloc(ncpus, sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	/* The module may rewrite the hash under us: bound the walk. */
	for (n = 0; n < limit; n++) {
		err = bpf_map_get_next_key(rules_fd, prev, &next);
		if (err)
			break;
		key = next;
		prev = &key;
		if (d->nr_rules == cap) {
			cap = cap ? 2 * cap : 64;
			r = realloc(d->rules, cap * sizeof(*r));
			if (!r) {
				err = -ENOMEM;
				break;
			}
			d->rules = r;
		}
		r = &d->rules[d->nr_rules];
		memset(r, 0, sizeof(*r));
		r->key = key;
		if (bpf_map_lookup_elem(rules_fd, &key, &r->val))
			continue;	/* deleted meanwhile */
		r->slot = find_mask(d, key.mask_id);
		r->mask = r->slot ? &r->slot->mask : NULL;
		if (!r->mask) {
			pr_debug("%s: rule with inactive mask %u skipped\n",
				 d->name, key.mask_id);
			continue;
		}
		read_stats(r, stats_fd, buf, ncpus);
		d->packets += r->packets;
		d->bytes += r->bytes;
		d->nr_rules++;
	}
	free(buf);
	if (err && err != -ENOENT)
		return err;
	if (d->nr_rules)
		qsort(d->rules, d->nr_rules, sizeof(*d->rules), cmp_rules);
	return 0;
}

static int read_dev(struct dev_info *d, int ncpus)
{
	int fds[NR_PINS], i, err = 0;
	__u32 cur = 0;

	d->ifindex = if_nametoindex(d->name);
	for (i = 0; i < NR_PINS; i++) {
		fds[i] = open_pin(d->name, i);
		if (fds[i] < 0 && i != PIN_PROG && !err) {
			err = fds[i];
			pr_warn("Couldn't open pinned map %s of %s: %s\n",
				pin_names[i], d->name, strerror(-err));
		}
	}
	if (err)
		goto out;

	d->prog_id = prog_id(fds[PIN_PROG]);
	d->max_rules = map_max_entries(fds[PIN_RULES]);
	if (!d->ifindex)
		pr_warn("%s: device is gone\n", d->name);
	else if (!bpf_xdp_query_id(d->ifindex, XDP_FLAGS_DRV_MODE, &cur))
		d->attached_id = cur;

	err = read_masks(d, fds[PIN_MASKS], fds[PIN_META]);
	if (!err)
		err = read_rules(d, fds[PIN_RULES], fds[PIN_STATS], ncpus);
	if (err)
		pr_warn("Couldn't read the maps of %s: %s\n", d->name,
			strerror(-err));
out:
	for (i = 0; i < NR_PINS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return err;
}

/* ---- show: formatting ------------------------------------------------- */

#define ADDR_LEN	INET6_ADDRSTRLEN	/* an address or a MAC */

static const char *action_name(__u32 action)
{
	switch (action) {
	case XDPOFF_ACT_PASS:	return "pass";
	case XDPOFF_ACT_DROP:	return "drop";
	case XDPOFF_ACT_REDIRECT: return "fwd";
	case XDPOFF_ACT_SOFTWARE: return "software";
	default:		return "unknown";
	}
}

static bool all_ones(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++ != 0xff)
			return false;
	return true;
}

static bool is_zero(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

static char *fmt_mac(char *buf, const __u8 *mac)
{
	snprintf(buf, ADDR_LEN, "%02x:%02x:%02x:%02x:%02x:%02x",
		 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

/* An address of the rule's family: IPv4 in the first word. */
static char *fmt_ip(char *buf, int family, const __be32 *addr)
{
	inet_ntop(family, addr, buf, ADDR_LEN);
	return buf;
}

static int addr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* Prefix length of a network-order netmask, -1 if it is not a prefix. */
static int prefix_len(int family, const __be32 *mask)
{
	const __u8 *b = (const __u8 *)mask;
	int i, len = 0;

	for (i = 0; i < addr_bytes(family) && b[i] == 0xff; i++)
		len += 8;
	if (i == addr_bytes(family))
		return len;
	len += __builtin_popcount(b[i]);
	if ((__u8)(b[i] << __builtin_popcount(b[i])))
		return -1;
	for (i++; i < addr_bytes(family); i++)
		if (b[i])
			return -1;
	return len;
}

/* The address family of a rule's address fields. */
static int rule_family(const struct xdpoff_fields *v)
{
	return v->flags & XDPOFF_F_IPV6 ? AF_INET6 : AF_INET;
}

static const char *proto_name(__u8 proto)
{
	switch (proto) {
	case IPPROTO_ICMP:	return "icmp";
	case IPPROTO_TCP:	return "tcp";
	case IPPROTO_UDP:	return "udp";
	default:		return NULL;
	}
}

/* Bounded string builder; every add is one space-separated token group. */
struct sbuf {
	char	*s;
	size_t	len;
	size_t	size;
};

__attribute__((format(printf, 2, 3)))
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len && b->len + 1 < b->size)
		b->s[b->len++] = ' ';
	if (b->len + 1 >= b->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + n < b->size ? b->len + n : b->size - 1;
}

static void sb_mac(struct sbuf *b, const char *what, const __u8 *v,
		   const __u8 *m)
{
	char vs[ADDR_LEN], ms[ADDR_LEN];

	if (is_zero(m, 6))
		return;
	if (all_ones(m, 6))
		sb_add(b, "%s %s", what, fmt_mac(vs, v));
	else
		sb_add(b, "%s %s/%s", what, fmt_mac(vs, v), fmt_mac(ms, m));
}

static void sb_ip(struct sbuf *b, const char *what, int family,
		  const __be32 *v, const __be32 *m)
{
	const char *pfx = family == AF_INET ? "ip" : "ip6";
	char vs[ADDR_LEN], ms[ADDR_LEN];
	int plen = prefix_len(family, m);

	if (is_zero(m, addr_bytes(family)))
		return;
	if (plen == addr_bytes(family) * 8)
		sb_add(b, "%s %s %s", pfx, what, fmt_ip(vs, family, v));
	else if (plen > 0)
		sb_add(b, "%s %s %s/%d", pfx, what, fmt_ip(vs, family, v), plen);
	else
		sb_add(b, "%s %s %s/%s", pfx, what, fmt_ip(vs, family, v),
		       fmt_ip(ms, family, m));
}

/* A 16-bit field in network order: decimal or hex value, hex mask. */
static void sb_u16(struct sbuf *b, const char *proto, const char *field,
		   __be16 v, __be16 m, bool hex)
{
	char vs[16];

	if (!m)
		return;
	if (hex)
		snprintf(vs, sizeof(vs), "0x%04x", ntohs(v));
	else
		snprintf(vs, sizeof(vs), "%u", ntohs(v));
	if (m == 0xffff)
		sb_add(b, "%s %s %s", proto, field, vs);
	else
		sb_add(b, "%s %s %s/0x%04x", proto, field, vs, ntohs(m));
}

/*
 * nft-like text: "ether saddr .. ip saddr 10.0.0.0/8 tcp dport 22".  The
 * EtherType is left out when IPv4 fields imply it, the protocol when
 * "tcp"/"udp" port matches imply it.
 */
static void format_match(const struct rule *r, char *out, size_t size)
{
	const struct xdpoff_fields *v = &r->key.fields, *m = r->mask;
	bool ports = m->sport || m->dport;
	bool addrs = !is_zero(m->saddr, sizeof(m->saddr)) ||
		     !is_zero(m->daddr, sizeof(m->daddr));
	int family = rule_family(v);
	bool l4_named = m->ip_proto == 0xff && (v->ip_proto == IPPROTO_TCP ||
						v->ip_proto == IPPROTO_UDP);
	const char *l4 = l4_named ? proto_name(v->ip_proto) : "th";
	const char *pname = proto_name(v->ip_proto);
	struct sbuf b = { .s = out, .size = size };

	out[0] = '\0';
	sb_mac(&b, "ether saddr", v->smac, m->smac);
	sb_mac(&b, "ether daddr", v->dmac, m->dmac);
	if (m->n_proto == 0xffff && v->n_proto == htons(ETH_P_IP)) {
		if (!addrs)
			sb_add(&b, "meta protocol ip");
	} else if (m->n_proto == 0xffff && v->n_proto == htons(ETH_P_IPV6)) {
		if (!addrs)
			sb_add(&b, "meta protocol ip6");
	} else {
		sb_u16(&b, "ether", "type", v->n_proto, m->n_proto, true);
	}
	sb_u16(&b, "vlan", "tci", v->vlan_tci, m->vlan_tci, true);
	sb_u16(&b, "vlan", "type", v->vlan_etype, m->vlan_etype, true);
	sb_u16(&b, "cvlan", "tci", v->cvlan_tci, m->cvlan_tci, true);
	sb_u16(&b, "cvlan", "type", v->cvlan_etype, m->cvlan_etype, true);
	sb_ip(&b, "saddr", family, v->saddr, m->saddr);
	sb_ip(&b, "daddr", family, v->daddr, m->daddr);
	if (m->ip_proto && !(l4_named && ports)) {
		if (m->ip_proto != 0xff)
			sb_add(&b, "meta l4proto %u/0x%02x", v->ip_proto,
			       m->ip_proto);
		else if (pname)
			sb_add(&b, "meta l4proto %s", pname);
		else
			sb_add(&b, "meta l4proto %u", v->ip_proto);
	}
	sb_u16(&b, l4, "sport", v->sport, m->sport, false);
	sb_u16(&b, l4, "dport", v->dport, m->dport, false);
	if (r->slot->ranges & XDPOFF_RANGE_SPORT)
		sb_add(&b, "%s sport %u-%u", l4, r->slot->sport_min,
		       r->slot->sport_max);
	if (r->slot->ranges & XDPOFF_RANGE_DPORT)
		sb_add(&b, "%s dport %u-%u", l4, r->slot->dport_min,
		       r->slot->dport_max);
	if (m->tos)
		sb_add(&b, "ip tos 0x%02x/0x%02x", v->tos, m->tos);
	if (m->ttl)
		sb_add(&b, "ip ttl %u/0x%02x", v->ttl, m->ttl);
	if (m->tcp_flags)
		sb_add(&b, "tcp flags 0x%03x/0x%03x", ntohs(v->tcp_flags),
		       ntohs(m->tcp_flags));
	if (m->icmp_type)
		sb_add(&b, "icmp type %u", v->icmp_type);
	if (m->icmp_code)
		sb_add(&b, "icmp code %u", v->icmp_code);
	if (!b.len)
		sb_add(&b, "any");
}

/* The edits a redirecting tc filter makes, as tc names them. */
static void format_rewrite(const struct xdpoff_rule_val *val, char *out,
			   size_t size)
{
	struct sbuf b = { .s = out, .size = size };
	char mac[ADDR_LEN];
	int i;

	out[0] = '\0';
	if (val->rewrite & XDPOFF_RW_VLAN_POP)
		sb_add(&b, "vlan pop");
	if (val->rewrite & XDPOFF_RW_VLAN_PUSH)
		sb_add(&b, "vlan push proto 0x%04x tci 0x%04x",
		       ntohs(val->vlan_proto), ntohs(val->vlan_tci));
	if (val->rewrite & XDPOFF_RW_VLAN_MODIFY)
		sb_add(&b, "vlan modify proto 0x%04x tci 0x%04x/0x%04x",
		       ntohs(val->vlan_proto), ntohs(val->vlan_tci),
		       ntohs(val->vlan_tci_mask));
	if (val->rewrite & XDPOFF_RW_ETH) {
		for (i = 0; i < 2; i++) {
			const __u8 *k = val->eth_keep + 6 * i;
			const __u8 *v = val->eth_val + 6 * i;

			if (all_ones(k, 6) && is_zero(v, 6))
				continue;
			if (is_zero(k, 6))
				sb_add(&b, "eth %s set %s", i ? "src" : "dst",
				       fmt_mac(mac, v));
			else
				sb_add(&b, "eth %s edit", i ? "src" : "dst");
		}
	}
}

/*
 * xdpoff_rule_val.order: hook bit (set: nft), priority; nft: chain bind
 * order, rule handle; tc: mask and filter age.
 */
static unsigned int order_prio(__u64 order)
{
	return (order >> 47) & 0xffff;
}

static const char *order_hook(__u64 order)
{
	return order >> 63 ? "nft" : "tc";
}

static unsigned int order_handle(__u64 order)
{
	return (__u32)order;
}

static const char *ifname_of(__u32 ifindex)
{
	static char name[IF_NAMESIZE];

	if (!if_indextoname(ifindex, name))
		snprintf(name, sizeof(name), "if%u", ifindex);
	return name;
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

static void print_dev_text(const struct dev_info *d)
{
	const struct rule *r;
	char match[512], edits[256];

	printf("%s: xdp prog id %u, %zu rule%s, %u mask%s", d->name,
	       d->prog_id, d->nr_rules, plural(d->nr_rules), d->nr_masks,
	       plural(d->nr_masks));
	if (d->kinfo)
		printf(", %u block%s", d->kinfo->nr_blocks,
		       plural(d->kinfo->nr_blocks));
	printf("\n");
	if (d->attached_id != d->prog_id)
		printf("  xdp program %u not attached to %s (%s): rules run in software only\n",
		       d->prog_id, d->name, d->attached_id ?
		       "another program is" : "none is");
	if (d->kinfo && d->kinfo->last_error[0])
		printf("  last error: %s\n", d->kinfo->last_error);
	for (r = d->rules; r < d->rules + d->nr_rules; r++) {
		format_match(r, match, sizeof(match));
		format_rewrite(&r->val, edits, sizeof(edits));
		if (r->val.order >> 63)
			printf("  prio %u handle %u", order_prio(r->val.order),
			       order_handle(r->val.order));
		else
			printf("  tc prio %u", order_prio(r->val.order));
		printf("  %s%s%s%s%s  %s  packets %llu bytes %llu\n",
		       edits, edits[0] ? ", " : "",
		       action_name(r->val.action),
		       r->val.action == XDPOFF_ACT_REDIRECT ? " to " : "",
		       r->val.action == XDPOFF_ACT_REDIRECT ?
		       ifname_of(r->val.ifindex) : "",
		       match,
		       (unsigned long long)r->packets,
		       (unsigned long long)r->bytes);
	}
	if (d->nr_rules > 1)
		printf("  total  packets %llu bytes %llu\n",
		       (unsigned long long)d->packets,
		       (unsigned long long)d->bytes);
}

/* ---- show: JSON ------------------------------------------------------- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Print `"key":` preceded by a comma unless it opens the object. */
static void json_key(bool *first, const char *key, const char *suffix)
{
	char k[64];

	snprintf(k, sizeof(k), "%s%s", key, suffix);
	if (!*first)
		putchar(',');
	*first = false;
	json_str(k);
	putchar(':');
}

static void json_u64(bool *first, const char *key, __u64 v)
{
	json_key(first, key, "");
	printf("%llu", (unsigned long long)v);
}

/*
 * Match fields in JSON: only the fields the mask selects appear, each as
 * "<name>": value, plus "<name>_mask": mask when the mask is not exact.
 * Names: smac dmac n_proto saddr daddr ip_proto sport dport.  MACs and IPv4
 * addresses (and their masks) are strings, the others host-order numbers.
 */
static void json_mac(bool *first, const char *key, const __u8 *v,
		     const __u8 *m)
{
	char buf[ADDR_LEN];

	if (is_zero(m, 6))
		return;
	json_key(first, key, "");
	json_str(fmt_mac(buf, v));
	if (!all_ones(m, 6)) {
		json_key(first, key, "_mask");
		json_str(fmt_mac(buf, m));
	}
}

static void json_ip(bool *first, const char *key, int family,
		    const __be32 *v, const __be32 *m)
{
	char buf[ADDR_LEN];

	if (is_zero(m, addr_bytes(family)))
		return;
	json_key(first, key, "");
	json_str(fmt_ip(buf, family, v));
	if (!all_ones(m, addr_bytes(family))) {
		json_key(first, key, "_mask");
		json_str(fmt_ip(buf, family, m));
	}
}

static void json_num(bool *first, const char *key, unsigned int v,
		     unsigned int m, unsigned int exact)
{
	if (!m)
		return;
	json_u64(first, key, v);
	if (m != exact) {
		json_key(first, key, "_mask");
		printf("%u", m);
	}
}

static void print_match_json(const struct rule *r)
{
	const struct xdpoff_fields *v = &r->key.fields, *m = r->mask;
	bool first = true;

	putchar('{');
	json_mac(&first, "smac", v->smac, m->smac);
	json_mac(&first, "dmac", v->dmac, m->dmac);
	json_num(&first, "n_proto", ntohs(v->n_proto), ntohs(m->n_proto), 0xffff);
	json_num(&first, "vlan_tci", ntohs(v->vlan_tci), ntohs(m->vlan_tci), 0xffff);
	json_num(&first, "vlan_etype", ntohs(v->vlan_etype), ntohs(m->vlan_etype), 0xffff);
	json_num(&first, "cvlan_tci", ntohs(v->cvlan_tci), ntohs(m->cvlan_tci), 0xffff);
	json_num(&first, "cvlan_etype", ntohs(v->cvlan_etype), ntohs(m->cvlan_etype), 0xffff);
	json_ip(&first, "saddr", rule_family(v), v->saddr, m->saddr);
	json_ip(&first, "daddr", rule_family(v), v->daddr, m->daddr);
	json_num(&first, "ip_proto", v->ip_proto, m->ip_proto, 0xff);
	json_num(&first, "sport", ntohs(v->sport), ntohs(m->sport), 0xffff);
	json_num(&first, "dport", ntohs(v->dport), ntohs(m->dport), 0xffff);
	if (r->slot->ranges & XDPOFF_RANGE_SPORT) {
		json_u64(&first, "sport_min", r->slot->sport_min);
		json_u64(&first, "sport_max", r->slot->sport_max);
	}
	if (r->slot->ranges & XDPOFF_RANGE_DPORT) {
		json_u64(&first, "dport_min", r->slot->dport_min);
		json_u64(&first, "dport_max", r->slot->dport_max);
	}
	json_num(&first, "tos", v->tos, m->tos, 0xff);
	json_num(&first, "ttl", v->ttl, m->ttl, 0xff);
	json_num(&first, "tcp_flags", ntohs(v->tcp_flags), ntohs(m->tcp_flags), 0x0fff);
	json_num(&first, "icmp_type", v->icmp_type, m->icmp_type, 0xff);
	json_num(&first, "icmp_code", v->icmp_code, m->icmp_code, 0xff);
	putchar('}');
}

static void print_dev_json(const struct dev_info *d)
{
	const struct rule *r;
	bool first = true, rfirst;

	putchar('{');
	json_key(&first, "ifname", "");
	json_str(d->name);
	json_u64(&first, "ifindex", d->ifindex);
	json_u64(&first, "prog_id", d->prog_id);
	json_key(&first, "xdp_attached", "");
	printf(d->attached_id == d->prog_id ? "true" : "false");
	json_u64(&first, "max_rules", d->max_rules);
	json_u64(&first, "masks", d->nr_masks);
	if (d->kinfo)
		json_u64(&first, "blocks", d->kinfo->nr_blocks);
	if (d->kinfo && d->kinfo->last_error[0]) {
		json_key(&first, "last_error", "");
		json_str(d->kinfo->last_error);
	}
	json_u64(&first, "packets", d->packets);
	json_u64(&first, "bytes", d->bytes);
	json_key(&first, "rules", "");
	putchar('[');
	for (r = d->rules; r < d->rules + d->nr_rules; r++) {
		if (r != d->rules)
			putchar(',');
		rfirst = true;
		putchar('{');
		json_key(&rfirst, "hook", "");
		json_str(order_hook(r->val.order));
		json_u64(&rfirst, "prio", order_prio(r->val.order));
		if (r->val.order >> 63)
			json_u64(&rfirst, "handle", order_handle(r->val.order));
		json_u64(&rfirst, "stage", r->val.stage);
		json_key(&rfirst, "action", "");
		json_str(action_name(r->val.action));
		json_key(&rfirst, "match", "");
		print_match_json(r);
		if (r->val.action == XDPOFF_ACT_REDIRECT) {
			char edits[256];

			json_key(&rfirst, "fwd", "");
			json_str(ifname_of(r->val.ifindex));
			format_rewrite(&r->val, edits, sizeof(edits));
			if (edits[0]) {
				json_key(&rfirst, "edits", "");
				json_str(edits);
			}
		}
		json_u64(&rfirst, "packets", r->packets);
		json_u64(&rfirst, "bytes", r->bytes);
		json_u64(&rfirst, "consumed_packets", r->consumed_packets);
		putchar('}');
	}
	printf("]}");
}

/* ---- show ------------------------------------------------------------- */

static int is_dev_dir(const struct dirent *de)
{
	return de->d_type == DT_DIR && de->d_name[0] != '.';
}

static int cmd_show(const struct args *a)
{
	struct kinfos kin = { 0 };
	struct dirent **names = NULL;
	int i, n = 0, ncpus, ret = EXIT_OK;
	bool shown = false;

	if (a->dev && !(valid_ifname(a->dev) && pin_dir_exists(a->dev))) {
		pr_warn("%s is not attached\n", a->dev);
		return EXIT_FAIL;
	}
	if (!a->dev) {
		n = scandir(XDPOFF_PIN_ROOT, &names, is_dev_dir, alphasort);
		if (n < 0 && errno != ENOENT) {
			pr_warn("Couldn't read %s: %s\n", XDPOFF_PIN_ROOT,
				strerror(errno));
			return EXIT_FAIL;
		}
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0) {
		pr_warn("Couldn't get the number of CPUs: %s\n",
			strerror(-ncpus));
		return EXIT_FAIL;
	}
	module_query(&kin);

	if (a->json)
		putchar('[');
	for (i = 0; i < (a->dev ? 1 : n); i++) {
		struct dev_info d = { .name = a->dev ? a->dev : names[i]->d_name };

		if (read_dev(&d, ncpus)) {
			ret = EXIT_FAIL;
		} else {
			d.kinfo = find_kinfo(&kin, d.ifindex);
			if (a->json && shown)
				putchar(',');
			if (a->json)
				print_dev_json(&d);
			else
				print_dev_text(&d);
			shown = true;
		}
		free(d.rules);
	}
	if (a->json)
		printf("]\n");

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(kin.v);
	return ret;
}

/* ---- command line ----------------------------------------------------- */

struct cmd {
	const char	*name;
	int		(*func)(const struct args *a);
	const char	*usage;		/* arguments */
	const char	*help;
	const char	*opts;		/* accepted command options (short names) */
	int		min_args;	/* DEV arguments */
	int		max_args;
};

static int cmd_help(const struct args *a);

static const struct cmd cmds[] = {
	{ "attach", cmd_attach, "DEV [--max-rules N]",
	  "load the XDP program on DEV and hand it to the kernel module", "m", 1, 1 },
	{ "detach", cmd_detach, "DEV",
	  "take DEV back from the kernel module and unload the XDP program", "", 1, 1 },
	{ "show", cmd_show, "[DEV] [--json]",
	  "list the offloaded rules and their counters", "j", 0, 1 },
	{ "help", cmd_help, "", "show this help", "", 0, 0 },
};

static const struct option long_opts[] = {
	{ "max-rules",	required_argument,	NULL, 'm' },
	{ "json",	no_argument,		NULL, 'j' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: xdpoff [-v] COMMAND [ARGS]\n\nCommands:\n");
	for (i = 0; i < MNL_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-6s %-26s %s\n", cmds[i].name, cmds[i].usage,
			cmds[i].help);
	fprintf(f, "\nOptions:\n"
		"  -v, --verbose         debug output, including libbpf's\n"
		"  -h, --help            show this help\n"
		"  --max-rules N         capacity of the rules map (default %u)\n"
		"  --json                JSON output for show\n",
		XDPOFF_DEFAULT_MAX_RULES);
}

static int cmd_help(const struct args *a)
{
	(void)a;
	usage(stdout);
	return EXIT_OK;
}

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < MNL_ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static int parse_max_rules(const char *s, __u32 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || !v || v > UINT32_MAX || s[0] == '-') {
		pr_warn("invalid --max-rules: %s\n", s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/*
 * Parse argv (argv[0] is the command name) into @a.  Returns -1 to run the
 * command, otherwise the exit code.
 */
static int parse_args(const struct cmd *cmd, int argc, char **argv,
		      struct args *a)
{
	int c, nargs;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hv", long_opts, NULL)) != -1) {
		if (c == 'v') {
			verbose = true;
		} else if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else if (c == '?') {
			return EXIT_USAGE;
		} else if (!strchr(cmd->opts, c)) {
			pr_warn("option --%s is not valid for %s\n",
				c == 'm' ? "max-rules" : "json", cmd->name);
			return EXIT_USAGE;
		} else if (c == 'm') {
			if (parse_max_rules(optarg, &a->max_rules))
				return EXIT_USAGE;
		} else if (c == 'j') {
			a->json = true;
		}
	}
	nargs = argc - optind;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		fprintf(stderr, "Usage: xdpoff %s %s\n", cmd->name, cmd->usage);
		return EXIT_USAGE;
	}
	a->dev = nargs ? argv[optind] : NULL;
	return -1;
}

int main(int argc, char **argv)
{
	struct args a = { .max_rules = XDPOFF_DEFAULT_MAX_RULES };
	const struct cmd *cmd;
	int c, ret;

	libbpf_set_print(libbpf_print);

	/* Global options, up to the command name. */
	while ((c = getopt_long(argc, argv, "+hv", long_opts, NULL)) != -1) {
		if (c == 'v') {
			verbose = true;
		} else if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = find_cmd(argv[optind]);
	if (!cmd) {
		pr_warn("unknown command: %s\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = parse_args(cmd, argc - optind, argv + optind, &a);
	if (ret >= 0)
		return ret;
	return cmd->func(&a);
}
