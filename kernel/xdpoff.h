/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff: an offload driver for NICs without rule-matching hardware.
 *
 * The module is the NIC's "driver": it binds to the flow blocks that
 * nf_tables creates for offloaded chains and tc for ingress qdiscs
 * (through the indirect block path, as the NIC has no ndo_setup_tc),
 * translates each flow_rule into entries of the BPF maps an XDP program on
 * the NIC consults, and reports the counters back.  The maps are created
 * by the xdpoff CLI and handed over with a generic netlink command.
 *
 * One flow_block_cb serves a block however many devices it is bound to
 * (a tc shared block), as switch drivers do: struct xdpoff_block holds
 * the block's rules once, parsed (struct xdpoff_brule), and one
 * struct xdpoff_port per device, which has the rules installed in its
 * maps (struct xdpoff_rule).  nf_tables wants a block cb of its own for
 * each device of a chain, so its blocks have one port each.
 *
 * Locking: xdpoff_lock (a mutex) protects every structure below.  It is
 * taken last: under rtnl, nft's commit_mutex or flow_indr_block_lock.
 * FLOW_CLS_STATS cannot sleep (nf_tables asks from its rule dumps, under
 * rcu_read_lock()): it takes only xdpoff_stats_lock, a spinlock that
 * writers also hold, inside xdpoff_lock, to change what it reads: a
 * block's port list, a device's rules by cookie, a rule's reported
 * counters.
 */
#ifndef _XDPOFF_H
#define _XDPOFF_H

#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/netdevice.h>
#include <linux/types.h>
#include <net/flow_offload.h>

#include "xdpoff/xdpoff.h"

#define XDPOFF_RULE_HASH_BITS	10
#define XDPOFF_FLOW_HASH_BITS	10

struct bpf_map;
struct dentry;
struct nf_flowtable;

/* A port range of a tc flower rule: part of its mask slot. */
struct xdpoff_range {
	u32			ranges;		/* XDPOFF_RANGE_* */
	u16			sport_min, sport_max;
	u16			dport_min, dport_max;
};

/* The module's copy of one mask slot of the masks map: a table. */
struct xdpoff_mask_slot {
	struct xdpoff_fields	mask;
	struct xdpoff_range	range;
	u32			stage;		/* a slot serves one stage */
	u32			needs;		/* XDPOFF_U_* */
	u64			min_order;	/* no rule of it is earlier */
	u32			id;		/* slot + 1 */
	u32			refcnt;		/* rules using it; 0: free */
	u32			longer;		/* of them, of a longer mask */
	/*
	 * xdpoff_mask.dups: 1 + the highest dup its entries had since it
	 * last had none above 0; nr_dups: its entries of a dup above 0.
	 */
	u32			dups;
	u32			nr_dups;
	bool			used_before;	/* reuse needs a grace period */
	/*
	 * The slot's part of the filter map, and per filter bit the number
	 * of rules map entries of the slot whose hash sets it (at U16_MAX it
	 * sticks: the bit then stays set, which costs frames a lookup at
	 * worst).  Allocated with the slot's first use, kept until the
	 * device goes.
	 */
	u64			*filter;	/* XDPOFF_FILTER_WORDS */
	u16			*filter_refs;	/* 1 << XDPOFF_FILTER_BITS */
	/*
	 * Per element of the address index, the entries of the table that
	 * set its bit there (sticky at U16_MAX, as the filter's); per
	 * address, those that set it in index_any.  Allocated with the
	 * filter.
	 */
	u16			*index_refs;	/* XDPOFF_INDEX_ENTRIES */
	u32			any_refs[2];
};

/* A device handed over by `xdpoff attach`. */
struct xdpoff_dev {
	struct list_head	list;		/* xdpoff_devs */
	struct kref		ref;		/* list + each bound block */
	struct net_device	*netdev;	/* NULL once unregistered */
	netdevice_tracker	dev_tracker;
	int			ifindex;
	char			ifname[IFNAMSIZ];

	struct bpf_map		*maps[XDPOFF_NR_MAPS];	/* xdpoff_map() */
	u32			max_rules;
	u32			max_flows;
	u64			seed;		/* xdpoff_meta.seed */
	/* The refusals of a full table, with its capacity (extack, static). */
	char			rules_full[64];
	char			flows_full[64];

	struct xdpoff_mask_slot	mask_slots[XDPOFF_MAX_MASKS];
	u32			nr_masks;	/* highest used slot + 1 */
	u32			tables;		/* xdpoff_meta.tables */
	u32			index_any[2];	/* xdpoff_meta.index_any */

	/*
	 * Stats slots (elements of the stats array), max_rules bits each: in
	 * use; freed since the last grace period waited for (frames in
	 * flight may still count into them), and that grace period's cookie.
	 */
	unsigned long		*stats_used;
	unsigned long		*slots_dirty;
	unsigned long		slots_gp;

	DECLARE_HASHTABLE(by_cookie, XDPOFF_RULE_HASH_BITS);
	DECLARE_HASHTABLE(by_key, XDPOFF_RULE_HASH_BITS); /* by key.hash */
	u32			nr_rules;
	u32			seq;		/* arrival order of rules */

	struct list_head	ports;		/* struct xdpoff_port */
	u32			nr_blocks;	/* ports: blocks bound */
	unsigned long		stages_used;	/* bitmap of blk->stage */
	u32			bind_seq;
	u32			fwd_refs;	/* fwd rules targeting it */
	const char		*last_error;	/* extack of the last refusal */
	u32			refusals;	/* how many, ever */
	bool			hold;		/* XDP matches nothing (replay) */
	bool			generic;	/* XDP runs in generic mode */
	u32			prog_flags;	/* XDPOFF_PROG_* */

	/*
	 * Flowtable offload: the flowtables bound here (all at one
	 * priority: a ruleset reloaded with `flush ruleset` binds the new
	 * flowtable before it unbinds the old one), their flows.
	 */
	u32			nr_ft;
	int			ft_prio;
	u64			ft_order;	/* xdpoff_meta.ft_order */
	DECLARE_HASHTABLE(flow_table, XDPOFF_FLOW_HASH_BITS); /* by cookie */
	DECLARE_HASHTABLE(flow_keys, XDPOFF_FLOW_HASH_BITS); /* by map key */
	u32			nr_flows;
	u64			flow_replaces;	/* REPLACEs of its flows taken */

	struct dentry		*ddir;
};

/* xdpoff_map(xdev, RULES): the device's map of XDPOFF_MAPS' ID RULES. */
#define xdpoff_map(xdev, id)	((xdev)->maps[XDPOFF_MAPI_##id])

#define XDPOFF_BLOCK_HASH_BITS	8

/*
 * A flow block: an offloaded nft chain on one device, an offloaded nft
 * flowtable on one of its devices, or the rules of a tc ingress block on
 * every device it is bound to.  The cb_priv of its flow_block_cb.
 */
struct xdpoff_block {
	struct flow_block	*block;
	struct flow_block_cb	*block_cb;
	bool			tc;
	bool			ft;		/* an nft flowtable's */
	bool			orphan;		/* nft: its device is gone */
	struct list_head	ports;		/* xdpoff_port.block_node */
	DECLARE_HASHTABLE(rules, XDPOFF_BLOCK_HASH_BITS); /* xdpoff_brule */
	struct list_head	tc_masks;	/* struct xdpoff_tc_mask */
	u32			tc_mask_seq;
	/* tc: filters replayed at attach, newest first, not installed yet */
	bool			replaying;
	struct list_head	replayed;	/* xdpoff_brule.replay_node */
	struct list_head	sw_only;	/* tc: struct xdpoff_sw_only */
};

/*
 * A tc filter the driver refused: tc keeps it, in software only (filters
 * without skip_sw), where it runs before the later ones.  XDP takes no
 * verdict from its order on (xdpoff_meta.software_from).
 */
struct xdpoff_sw_only {
	struct list_head	list;
	unsigned long		cookie;
	u64			order;		/* the first of its priority */
};

/* A block bound to one device: a stage of its XDP program. */
struct xdpoff_port {
	struct list_head	list;		/* xdpoff_dev.ports */
	struct list_head	block_node;	/* xdpoff_block.ports */
	struct xdpoff_block	*blk;
	struct xdpoff_dev	*xdev;		/* referenced */
	struct net_device	*netdev;	/* ident, not referenced */
	u32			stage;		/* xdpoff_rule_val.stage */
	u32			seq;		/* bind order on the device */
};

/*
 * A mask of a tc flower classifier: flower tries its masks in the order
 * they were created, and the filters of a mask in the order they were
 * added; the rule order follows.  flower's mask is the flow_rule's
 * match.mask, so that pointer identifies it while filters use it.
 */
struct xdpoff_tc_mask {
	struct list_head	list;
	const void		*fl_mask;
	u32			seq;
	u32			filter_seq;
	u32			refcnt;
};

/*
 * One offloaded rule on one device: the driver's shadow of its entry.
 * Rules with the same mask and masked fields share the entry (and its
 * key); the earliest owns it.  by_key hashes the map key's hash.
 */
struct xdpoff_rule {
	struct hlist_node	cookie_node;
	struct hlist_node	key_node;
	unsigned long		cookie;
	struct xdpoff_port	*port;
	struct xdpoff_rule_key	key;		/* of its rules map entry */
	u64			hash;		/* xdpoff_key_hash(): key, filter */
	struct xdpoff_rule_val	val;		/* val.fields: its fields */
	u32			mask_slot;	/* its table */
	struct xdpoff_dev	*fwd_dev;	/* redirect target, referenced */
	bool			never;		/* cannot match on this device */
	bool			longer;		/* its mask is longer than its table's */
	bool			installed;	/* owns the entry of key */
	u64			reported_pkts;
	u64			reported_bytes;
};

/* A rule as parsed from a flow_rule: what does not depend on the device. */
struct xdpoff_match {
	struct xdpoff_fields	key;
	struct xdpoff_fields	mask;
	struct xdpoff_range	range;
	__be16			l3_proto;	/* basic.n_proto of the rule */
	__be16			l3_proto_mask;
	u32			needs;		/* XDPOFF_U_* the mask depends on */
	/* action, rewrite and its fields; the rest is the device's */
	struct xdpoff_rule_val	val;
	struct net_device	*fwd_dev;	/* FLOW_ACTION_REDIRECT target */
	/* meta iif and iiftype, decided per device */
	int			iif, iif_mask;
	u16			iiftype, iiftype_mask;
};

/* A rule of a block, installed on each of its ports. */
struct xdpoff_brule {
	struct hlist_node	node;		/* xdpoff_block.rules */
	unsigned long		cookie;
	struct xdpoff_match	m;
	struct xdpoff_dev	*fwd;		/* redirect target, referenced */
	u32			prio;
	u32			handle;		/* nft: the rule's handle */
	u64			tc_order;	/* tc: the whole order */
	struct xdpoff_tc_mask	*tc_mask;
	const void		*fl_mask;	/* tc: flower's mask, an ident */
	struct list_head	replay_node;	/* xdpoff_block.replayed */
};

/*
 * One direction of a connection in an offloaded flowtable, on the device
 * it comes in on: the driver's shadow of its flows map entry.
 */
struct xdpoff_flow {
	struct hlist_node	node;		/* xdpoff_dev.flow_table */
	struct hlist_node	key_node;	/* xdpoff_dev.flow_keys */
	const struct xdpoff_port *port;		/* its flowtable's, on the device */
	unsigned long		cookie;		/* the direction's tuple */
	struct xdpoff_flow_key	key;
	struct xdpoff_flow_val	val;		/* as installed */
	struct xdpoff_dev	*out;		/* output device, referenced */
	u64			reported_pkts;
	u64			reported_bytes;
};

extern struct mutex xdpoff_lock;
extern spinlock_t xdpoff_stats_lock;

/* NL_SET_ERR_MSG() of 6.1 takes only literals; @msg must be static. */
static inline void xdpoff_set_err_msg(struct netlink_ext_ack *extack,
				      const char *msg)
{
	if (extack)
		extack->_msg = msg;
}

/*
 * Refuse an offload on @xdev: -EOPNOTSUPP, @msg (static) to the caller's
 * extack if it has one, and to `xdpoff show` (last_error): nf_tables
 * drops a driver's extack, and a flowtable's flows have none.
 */
static inline int xdpoff_refuse(struct xdpoff_dev *xdev,
				struct netlink_ext_ack *extack, const char *msg)
{
	xdpoff_set_err_msg(extack, msg);
	xdev->last_error = msg;
	xdev->refusals++;
	return -EOPNOTSUPP;
}

/*
 * The files, lowest layer first.  Each calls only into the files before
 * it, and any may look a device up and hold a reference to it
 * (xdpoff_dev_find*(), xdpoff_dev_hold(), xdpoff_dev_put() of
 * xdpoff_dev.c); the structs above are shared.  A rule's journey: a bind
 * (xdpoff_block.c), FLOW_CLS_REPLACE (xdpoff_brules.c), the flow_rule
 * parsed (xdpoff_parse.c), the rule in the device's table
 * (xdpoff_rules.c), its entry in the maps (xdpoff_maps.c), where the XDP
 * program finds it (bpf/xdpoff.bpf.c); its counters come back with
 * FLOW_CLS_STATS (xdpoff_brules.c, xdpoff_rules.c).
 *
 *   xdpoff_maps.c	the BPF maps				(calls none)
 *   xdpoff_debugfs.c	debugfs					(calls none)
 *   xdpoff_parse.c	flow_rule -> struct xdpoff_match	(calls none)
 *   xdpoff_rules.c	a device's rule table
 *   xdpoff_flows.c	a device's flowtable flows: parse, install, stats
 *   xdpoff_brules.c	a block's rules: FLOW_CLS_*, tc order, sw_only
 *   xdpoff_block.c	block bind/unbind, a device's blocks when it goes
 *   xdpoff_replay.c	replay at attach: the tc blocks bound before
 *   xdpoff_dev.c	a device's life: attach, references, destroy
 *   xdpoff_nl.c	generic netlink: attach, detach, dump
 *   xdpoff_main.c	module init/exit, netdev notifier
 */

/* xdpoff_maps.c */
int xdpoff_maps_validate(struct bpf_map *maps[XDPOFF_NR_MAPS],
			 struct netlink_ext_ack *extack);
int xdpoff_map_update(struct bpf_map *map, const void *key,
		      const void *value, u64 flags);
extern u32 xdpoff_fail_nth;
extern u32 xdpoff_fail_permille;
extern bool xdpoff_fault_armed;
void xdpoff_meta_hold(struct xdpoff_dev *xdev, bool hold);
void xdpoff_meta_sync(struct xdpoff_dev *xdev);
int xdpoff_mask_new(struct xdpoff_dev *xdev, u32 stage,
		    const struct xdpoff_fields *mask,
		    const struct xdpoff_range *range, u32 needs, u64 order,
		    u32 *slot, struct netlink_ext_ack *extack);
int xdpoff_mask_ref(struct xdpoff_dev *xdev, u32 slot, u64 order,
		    struct netlink_ext_ack *extack);
void xdpoff_mask_put(struct xdpoff_dev *xdev, u32 slot);
void xdpoff_filter_get(struct xdpoff_dev *xdev, u32 slot, u64 hash);
void xdpoff_filter_put(struct xdpoff_dev *xdev, u32 slot, u64 hash);
void xdpoff_filter_free(struct xdpoff_dev *xdev);
void xdpoff_index_get(struct xdpoff_dev *xdev, u32 slot,
		      const struct xdpoff_rule_val *val);
void xdpoff_index_put(struct xdpoff_dev *xdev, u32 slot,
		      const struct xdpoff_rule_val *val);
int xdpoff_mask_dup_get(struct xdpoff_dev *xdev, u32 slot, u32 dup);
void xdpoff_mask_dup_put(struct xdpoff_dev *xdev, u32 slot, u32 dup);
void xdpoff_map_delete(struct bpf_map *map, const void *key);
int xdpoff_stats_slot_get(struct xdpoff_dev *xdev, u32 *slot);
void xdpoff_stats_slot_put(struct xdpoff_dev *xdev, u32 slot);
void xdpoff_stats_read(struct xdpoff_dev *xdev, u32 slot,
		       struct xdpoff_stats *sum);

/* xdpoff_debugfs.c */
void xdpoff_debugfs_init(void);
void xdpoff_debugfs_uninit(void);
void xdpoff_debugfs_dev_add(struct xdpoff_dev *xdev);
void xdpoff_debugfs_dev_del(struct xdpoff_dev *xdev);

/* xdpoff_parse.c */
int xdpoff_parse_rule(const struct flow_rule *rule, bool tc,
		      struct xdpoff_match *m, struct netlink_ext_ack *extack);

/* xdpoff_rules.c */
struct xdpoff_rule *xdpoff_rule_find(struct xdpoff_dev *xdev,
				     unsigned long cookie);
int xdpoff_rule_add(struct xdpoff_port *port, const struct xdpoff_brule *br,
		    struct netlink_ext_ack *extack);
void xdpoff_rule_del(struct xdpoff_dev *xdev, struct xdpoff_rule *r);
void xdpoff_rule_stats(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
		       u64 *pkts, u64 *bytes);
void xdpoff_rules_flush(struct xdpoff_dev *xdev, struct xdpoff_port *port);

/* xdpoff_flows.c */
int xdpoff_flow_replace(const struct xdpoff_port *port,
			struct flow_cls_offload *f);
void xdpoff_flow_destroy(const struct xdpoff_port *port, unsigned long cookie);
void xdpoff_flow_stats(struct xdpoff_dev *xdev, struct flow_cls_offload *f);
void xdpoff_flows_flush_port(const struct xdpoff_port *port);
void xdpoff_flows_flush_out(struct xdpoff_dev *out);

/* xdpoff_brules.c */
int xdpoff_flower_setup(struct xdpoff_block *blk, struct flow_cls_offload *f);
void xdpoff_flower_stats(struct xdpoff_block *blk, struct flow_cls_offload *f);
void xdpoff_replay_commit(struct xdpoff_block *blk);
void xdpoff_sw_only_flush(struct xdpoff_block *blk);
void xdpoff_brules_flush(struct xdpoff_block *blk);

/* xdpoff_block.c */
int xdpoff_indr_setup(struct net_device *netdev, struct Qdisc *sch,
		      void *cb_priv, enum tc_setup_type type, void *type_data,
		      void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb));
int xdpoff_block_setup_cb(enum tc_setup_type type, void *type_data,
			  void *cb_priv);
int xdpoff_block_bind(struct xdpoff_dev *xdev, struct flow_block_offload *bo,
		      struct net_device *netdev, struct Qdisc *sch,
		      struct nf_flowtable *ft, void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb),
		      struct xdpoff_block **blkp);
void xdpoff_block_release(void *cb_priv);
void xdpoff_block_dev_gone(struct xdpoff_dev *xdev);

/* xdpoff_replay.c */
void xdpoff_replay(struct xdpoff_dev *xdev);

/* xdpoff_dev.c */
extern struct list_head xdpoff_devs;
struct xdpoff_dev *xdpoff_dev_find(const struct net_device *netdev);
struct xdpoff_dev *xdpoff_dev_find_ifindex(struct net *net, int ifindex);
void xdpoff_dev_hold(struct xdpoff_dev *xdev);
void xdpoff_dev_put(struct xdpoff_dev *xdev);
int xdpoff_dev_attach(struct net_device *netdev,
		      struct bpf_map *maps[XDPOFF_NR_MAPS], u32 mode,
		      u32 prog_flags, struct netlink_ext_ack *extack);
void xdpoff_dev_destroy(struct xdpoff_dev *xdev);
int xdpoff_dev_detach(struct xdpoff_dev *xdev, struct netlink_ext_ack *extack);
bool xdpoff_dev_can_redirect(const struct xdpoff_dev *from,
			     const struct xdpoff_dev *to);

/* xdpoff_nl.c */
int xdpoff_nl_init(void);
void xdpoff_nl_uninit(void);

#endif /* _XDPOFF_H */
