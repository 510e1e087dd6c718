/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff CLI: what `show` reads about a device (show.c) and how it prints
 * it, as text (format.c) or JSON (json.c).
 */
#ifndef __XDPOFF_SHOW_H
#define __XDPOFF_SHOW_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/types.h>

#include "xdpoff/xdpoff.h"

struct rule {
	struct xdpoff_rule_val		val;
	const struct xdpoff_mask	*slot;	/* its table: ranges */
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
	__u32	nr_flows;
	__u32	hz;			/* 0: the module did not say */
	__u64	jiffies;		/* then, against flows' last_used */
	__u32	refusals;		/* how many it refused */
	char	last_error[256];	/* why the module refused a rule */
};

/* Every device's struct kinfo, from XDPOFF_CMD_GET's dump. */
struct kinfos {
	struct kinfo	*v;
	size_t		n;
};

/*
 * Ask the module what it manages in this network namespace; best effort
 * (show works without it): 0, -ENOENT without the module, or -errno.
 * free(k->v).
 */
int kinfos_read(struct kinfos *k);

/* One offloaded flowtable flow direction, as the flows map holds it. */
struct flow {
	struct xdpoff_flow_key	key;
	struct xdpoff_flow_val	val;
	double			idle;	/* seconds since XDP last forwarded; <0: never, or unknown */
};

/* How a program runs on a device (xdp_attached(), pins.c). */
struct xdp_where {
	bool		generic;	/* generic (skb) mode */
	bool		libxdp;		/* one of libxdp's dispatcher's programs */
	unsigned int	run_prio;	/* ... at this run priority */
};

struct dev_info {
	char			name[IF_NAMESIZE];
	int			ifindex;
	__u32			prog_id;
	__u32			attached_id;	/* on the device ... */
	struct xdp_where	xdp;		/* ... how, if it is prog_id */
	__u32			max_rules;
	__u32			nr_masks;	/* active ones, in masks[] */
	struct xdpoff_mask	masks[XDPOFF_MAX_MASKS];
	struct rule		*rules;
	size_t			nr_rules;
	__u32			max_flows;
	struct flow		*flows;
	size_t			nr_flows;
	__u64			packets;
	__u64			bytes;
	__u64			rx_packets;	/* the driver's count */
	const struct kinfo	*kinfo;		/* NULL: module did not say */
};

/* Every attached device (or one), read at one moment. */
struct devs {
	struct dev_info		*v;
	size_t			n;
	struct kinfo		*kinfo;		/* the module's, for v[].kinfo */
	struct timespec		when;		/* CLOCK_MONOTONIC, after reading */
};

/*
 * Read @dev, or every device under XDPOFF_PIN_ROOT, into @ds (devs_free()
 * it).  0, or EXIT_FAIL if a device could not be read: the others are in
 * @ds.
 */
int devs_read(const char *dev, int ncpus, struct devs *ds);
void devs_free(struct devs *ds);

/* watch.c: show --watch */
struct args;
int show_watch(const struct args *a, int ncpus);

/* format.c: helpers json.c shares */

#define ADDR_LEN	INET6_ADDRSTRLEN	/* an address or a MAC */

const char *action_name(__u32 action);
bool all_ones(const void *p, size_t n);
bool is_zero(const void *p, size_t n);
char *fmt_mac(char *buf, const __u8 *mac);
char *fmt_ip(char *buf, int family, const __be32 *addr);
int addr_bytes(int family);
int rule_family(const struct xdpoff_fields *v);
void format_rewrite(const struct xdpoff_rule_val *val, char *out,
		    size_t size);
const char *order_hook(__u64 order);
const char *ifname_of(__u32 ifindex);
const char *l4_name(__u8 proto);
void format_flow(const struct flow *fl, char *out, size_t size);
void format_match(const struct rule *r, char *out, size_t size);
void print_rule_hook(const struct rule *r);

/* json.c: @s as a JSON string, quoted and escaped. */
void json_str(const char *s);

/* One device, as text (format.c) or as a JSON object (json.c). */
void print_dev_text(const struct dev_info *d);
void print_dev_json(const struct dev_info *d);

#endif /* __XDPOFF_SHOW_H */
