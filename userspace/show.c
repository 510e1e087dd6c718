// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: `show`.  Reads each attached device's pinned maps (masks,
 * rules, per-CPU counters) and the module's per-device state
 * (XDPOFF_CMD_GET) into struct dev_info, then prints it as text (format.c)
 * or JSON (json.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/types.h>
#include <linux/genetlink.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"
#include "show.h"

/* ---- show: reading -------------------------------------------------- */

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
		if (mnl_attr_get_type(attr) == XDPOFF_ATTR_JIFFIES) {
			if (mnl_attr_validate(attr, MNL_TYPE_U64) >= 0)
				ki.jiffies = mnl_attr_get_u64(attr);
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
		case XDPOFF_ATTR_NR_FLOWS:
			ki.nr_flows = mnl_attr_get_u32(attr);
			break;
		case XDPOFF_ATTR_HZ:
			ki.hz = mnl_attr_get_u32(attr);
			break;
		case XDPOFF_ATTR_REFUSALS:
			ki.refusals = mnl_attr_get_u32(attr);
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

int kinfos_read(struct kinfos *k)
{
	struct nlmsghdr *nlh;
	struct xnl nl;
	int err;

	err = xnl_open(&nl);
	if (err) {
		pr_debug("kernel module not reachable: %s\n", strerror(-err));
		return err;
	}
	nlh = xnl_request(&nl, XDPOFF_CMD_GET, 0);
	err = xnl_dump(&nl, nlh, kinfo_cb, k);
	if (err)
		pr_debug("XDPOFF_CMD_GET failed: %s\n", strerror(-err));
	xnl_close(&nl);
	return err;
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

/* Entries read per BPF_MAP_LOOKUP_BATCH, at first. */
#define MAP_BATCH	1024

/*
 * Every entry of the hash map @fd, by BPF_MAP_LOOKUP_BATCH, each passed to
 * @fn.  A batch takes whole buckets of the map: a bucket of more entries
 * than the batch holds fails it with ENOSPC, and the batch doubles.
 */
static int read_hash(int fd, size_t key_size, size_t val_size,
		     int (*fn)(void *ctx, const void *key, const void *val),
		     void *ctx)
{
	DECLARE_LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 in, out, count, i, n = MAP_BATCH;
	char *keys = NULL, *vals = NULL;
	void *batch = NULL;
	int err = 0, done = 0;

	while (!done) {
		if (!keys) {
			keys = calloc(n, key_size);
			vals = calloc(n, val_size);
			if (!keys || !vals) {
				err = -ENOMEM;
				break;
			}
		}
		count = n;
		err = bpf_map_lookup_batch(fd, batch, &out, keys, vals, &count,
					   &opts);
		if (err == -ENOSPC && n < (1U << 24)) {
			free(keys);
			free(vals);
			keys = vals = NULL;
			n *= 2;		/* then the same batch again */
			continue;
		}
		if (err == -ENOENT || (!err && !count))
			done = 1;	/* the last entries, or none */
		else if (err)
			break;
		err = 0;
		in = out;
		batch = &in;
		for (i = 0; i < count && !err; i++)
			err = fn(ctx, keys + i * key_size, vals + i * val_size);
		if (err)
			break;
	}
	free(keys);
	free(vals);
	return err;
}

/* What read_rules() passes read_hash() for each entry. */
struct rules_ctx {
	struct dev_info		*d;
	size_t			cap;
	int			stats_fd;
	int			ncpus;
	struct xdpoff_stats	*buf;
};

/*
 * One entry of the rules map, an offloaded rule, at the end of d->rules;
 * kept if its table is active (the module writes the table first), with its
 * counters.
 */
static int add_rule(void *ctx, const void *key, const void *val)
{
	struct rules_ctx *c = ctx;
	struct dev_info *d = c->d;
	struct rule *r;

	(void)key;
	if (d->nr_rules == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		r = realloc(d->rules, c->cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		d->rules = r;
	}
	r = &d->rules[d->nr_rules];
	memset(r, 0, sizeof(*r));
	memcpy(&r->val, val, sizeof(r->val));
	r->slot = find_mask(d, r->val.mask_id);
	if (!r->slot) {
		pr_debug("%s: rule with inactive mask %u skipped\n",
			 d->name, r->val.mask_id);
		return 0;
	}
	read_stats(r, c->stats_fd, c->buf, c->ncpus);
	d->packets += r->packets;
	d->bytes += r->bytes;
	d->nr_rules++;
	return 0;
}

/* The rules map: every entry is an offloaded rule. */
static int read_rules(struct dev_info *d, int rules_fd, int stats_fd,
		      int ncpus)
{
	struct rules_ctx c = {
		.d = d, .stats_fd = stats_fd, .ncpus = ncpus,
	};
	int err;

	c.buf = calloc(ncpus, sizeof(*c.buf));
	if (!c.buf)
		return -ENOMEM;
	err = read_hash(rules_fd, sizeof(struct xdpoff_rule_key),
			sizeof(struct xdpoff_rule_val), add_rule, &c);
	free(c.buf);
	if (err)
		return err;
	if (d->nr_rules)
		qsort(d->rules, d->nr_rules, sizeof(*d->rules), cmp_rules);
	return 0;
}

static int cmp_flows(const void *a, const void *b)
{
	return memcmp(&((const struct flow *)a)->key,
		      &((const struct flow *)b)->key, sizeof(struct xdpoff_flow_key));
}

/* One entry of the flows map, at the end of d->flows. */
static int add_flow(void *ctx, const void *key, const void *val)
{
	struct dev_info *d = ctx;
	struct flow *fl;

	if (d->nr_flows >= d->max_flows)
		return 0;
	if (!d->flows) {
		d->flows = calloc(d->max_flows, sizeof(*d->flows));
		if (!d->flows)
			return -ENOMEM;
	}
	fl = &d->flows[d->nr_flows++];
	memcpy(&fl->key, key, sizeof(fl->key));
	memcpy(&fl->val, val, sizeof(fl->val));
	return 0;
}

/*
 * The flows map: every offloaded flow direction coming in on the device,
 * keyed by its tuple.
 */
static int read_flows(struct dev_info *d, int flows_fd)
{
	int err;

	d->max_flows = map_max_entries(flows_fd);
	err = read_hash(flows_fd, sizeof(struct xdpoff_flow_key),
			sizeof(struct xdpoff_flow_val), add_flow, d);
	if (err)
		return err;
	if (d->nr_flows)
		qsort(d->flows, d->nr_flows, sizeof(*d->flows), cmp_flows);
	return 0;
}

/*
 * The rules and flows maps are hash maps, keyed as xdpoff.h says; an
 * attach by xdpoff 0.2 made arrays of them.
 */
static bool maps_current(int rules_fd, int flows_fd)
{
	struct bpf_map_info r = {}, f = {};
	__u32 len = sizeof(r);

	if (bpf_obj_get_info_by_fd(rules_fd, &r, &len))
		return false;
	len = sizeof(f);
	if (bpf_obj_get_info_by_fd(flows_fd, &f, &len))
		return false;
	return r.type == BPF_MAP_TYPE_HASH &&
	       r.key_size == sizeof(struct xdpoff_rule_key) &&
	       r.value_size == sizeof(struct xdpoff_rule_val) &&
	       f.type == BPF_MAP_TYPE_HASH &&
	       f.key_size == sizeof(struct xdpoff_flow_key) &&
	       f.value_size == sizeof(struct xdpoff_flow_val);
}

static int read_dev(struct dev_info *d, int ncpus)
{
	int fds[NR_PINS], i, err = 0;

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
	d->max_rules = map_max_entries(fds[XDPOFF_MAPI_RULES]);
	if (!d->ifindex)
		pr_warn("%s: device is gone\n", d->name);
	else
		d->attached_id = xdp_attached(d->ifindex, d->prog_id, &d->xdp);

	if (!maps_current(fds[XDPOFF_MAPI_RULES], fds[XDPOFF_MAPI_FLOWS])) {
		pr_warn("%s: maps not of this xdpoff (attached by an older one?): detach and attach it again\n",
			d->name);
		err = -EINVAL;
		goto out;
	}
	err = read_masks(d, fds[XDPOFF_MAPI_MASKS], fds[XDPOFF_MAPI_META]);
	if (!err)
		err = read_rules(d, fds[XDPOFF_MAPI_RULES], fds[XDPOFF_MAPI_STATS], ncpus);
	if (!err)
		err = read_flows(d, fds[XDPOFF_MAPI_FLOWS]);
	if (err)
		pr_warn("Couldn't read the maps of %s: %s\n", d->name,
			strerror(-err));
out:
	for (i = 0; i < NR_PINS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return err;
}

/* ---- reading every device ------------------------------------------- */

static int is_dev_dir(const struct dirent *de)
{
	return de->d_type == DT_DIR && de->d_name[0] != '.';
}

/* The device's received frames, as the driver counts them; 0 if gone. */
static __u64 read_rx_packets(const char *dev)
{
	unsigned long long v = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_packets",
		 dev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/*
 * How long ago XDP last forwarded a frame of each flow: its last_used
 * against the module's jiffies (not known without the module: -1, as
 * for a flow with no frame yet).
 */
static void flows_idle(struct dev_info *d)
{
	const struct kinfo *k = d->kinfo;
	__u32 i;

	for (i = 0; i < d->nr_flows; i++) {
		struct flow *fl = &d->flows[i];
		__u64 used = fl->val.last_used;

		fl->idle = k && k->hz && used ?
			(double)(k->jiffies - (used < k->jiffies ? used : k->jiffies)) /
			k->hz : -1;
	}
}

int devs_read(const char *dev, int ncpus, struct devs *ds)
{
	struct dirent **names = NULL;
	struct kinfos kin = { 0 };
	int i, n = 0, ret = 0;

	memset(ds, 0, sizeof(*ds));
	if (!dev) {
		n = scandir(XDPOFF_PIN_ROOT, &names, is_dev_dir, alphasort);
		if (n < 0 && errno != ENOENT) {
			pr_warn("Couldn't read %s: %s\n", XDPOFF_PIN_ROOT,
				strerror(errno));
			return EXIT_FAIL;
		}
		if (n < 0)
			n = 0;
	} else {
		n = 1;
	}
	kinfos_read(&kin);
	ds->kinfo = kin.v;
	ds->v = calloc(n ? n : 1, sizeof(*ds->v));
	if (!ds->v) {
		ret = EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct dev_info *d = &ds->v[ds->n];
		const char *name = dev ? dev : names[i]->d_name;

		if (!valid_ifname(name))
			continue;	/* no device's pins */
		snprintf(d->name, sizeof(d->name), "%.*s", IF_NAMESIZE - 1,
			 name);
		if (read_dev(d, ncpus)) {
			free(d->rules);
			free(d->flows);
			memset(d, 0, sizeof(*d));
			ret = EXIT_FAIL;
			continue;
		}
		d->rx_packets = read_rx_packets(d->name);
		d->kinfo = find_kinfo(&kin, d->ifindex);
		flows_idle(d);
		ds->n++;
	}
	clock_gettime(CLOCK_MONOTONIC, &ds->when);
out:
	for (i = 0; !dev && i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

void devs_free(struct devs *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++) {
		free(ds->v[i].rules);
		free(ds->v[i].flows);
	}
	free(ds->v);
	free(ds->kinfo);
	memset(ds, 0, sizeof(*ds));
}

/* ---- show ------------------------------------------------------------- */

int cmd_show(const struct args *a)
{
	struct devs ds;
	int ncpus, ret;
	size_t i;

	if (a->dev && !(valid_ifname(a->dev) && pin_dir_exists(a->dev))) {
		pr_warn("%s is not attached\n", a->dev);
		return EXIT_FAIL;
	}
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0) {
		pr_warn("Couldn't get the number of CPUs: %s\n",
			strerror(-ncpus));
		return EXIT_FAIL;
	}
	if (a->watch)
		return show_watch(a, ncpus);

	ret = devs_read(a->dev, ncpus, &ds);
	if (a->json)
		putchar('[');
	for (i = 0; i < ds.n; i++) {
		if (a->json && i)
			putchar(',');
		if (a->json)
			print_dev_json(&ds.v[i]);
		else
			print_dev_text(&ds.v[i]);
	}
	if (a->json)
		printf("]\n");
	devs_free(&ds);
	return ret ? EXIT_FAIL : EXIT_OK;
}
