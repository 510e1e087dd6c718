/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff: an offload driver for NICs without rule-matching hardware.
 *
 * The module is the NIC's "driver": it binds to the flow blocks that
 * nf_tables creates for offloaded chains (through the indirect block path,
 * as the NIC has no ndo_setup_tc), translates each flow_rule into entries
 * of the BPF maps an XDP program on the NIC consults, and reports the
 * counters back.  The maps are created by the xdpoff CLI and handed over
 * with a generic netlink command.
 *
 * Locking: xdpoff_lock (a mutex) protects every structure below.  It is
 * taken last: under rtnl, nft's commit_mutex or flow_indr_block_lock.
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

struct bpf_map;
struct dentry;

/* The module's copy of one mask slot of the masks map. */
struct xdpoff_mask_slot {
	struct xdpoff_fields	mask;
	u32			stage;		/* a slot serves one stage */
	u32			needs;		/* XDPOFF_U_* */
	u64			min_order;	/* no rule of it is earlier */
	u32			id;		/* slot + 1 */
	u32			refcnt;		/* rules using it; 0: free */
	bool			used_before;	/* reuse needs a grace period */
};

/* A device handed over by `xdpoff attach`. */
struct xdpoff_dev {
	struct list_head	list;		/* xdpoff_devs */
	struct kref		ref;		/* list + each bound block */
	struct net_device	*netdev;	/* NULL once unregistered */
	netdevice_tracker	dev_tracker;
	int			ifindex;
	char			ifname[IFNAMSIZ];

	struct bpf_map		*rules;
	struct bpf_map		*masks;
	struct bpf_map		*meta;
	struct bpf_map		*stats;
	u32			max_rules;

	struct xdpoff_mask_slot	mask_slots[XDPOFF_MAX_MASKS];
	u32			nr_masks;	/* highest used slot + 1 */

	unsigned long		*stats_used;	/* bitmap, max_rules bits */

	DECLARE_HASHTABLE(by_cookie, XDPOFF_RULE_HASH_BITS);
	DECLARE_HASHTABLE(by_key, XDPOFF_RULE_HASH_BITS);
	u32			nr_rules;
	u32			seq;		/* arrival order of rules */

	struct list_head	blocks;		/* struct xdpoff_block */
	u32			nr_blocks;
	unsigned long		stages_used;	/* bitmap of blk->stage */
	u32			bind_seq;
	u32			fwd_refs;	/* fwd rules targeting it */
	const char		*last_error;	/* extack of the last refusal */

	struct dentry		*ddir;
};

/* One flow block (an offloaded chain) bound to a device. */
struct xdpoff_block {
	struct list_head	list;		/* xdpoff_dev.blocks */
	struct xdpoff_dev	*xdev;
	struct flow_block	*block;
	u32			stage;		/* xdpoff_rule_val.stage */
	u32			seq;		/* bind order on the device */
	/* flow_block_cb.driver_list lives here; nft list_del()s it. */
	struct list_head	driver_list;
};

/* One offloaded rule: the driver's shadow copy. */
struct xdpoff_rule {
	struct hlist_node	cookie_node;
	struct hlist_node	key_node;
	unsigned long		cookie;
	struct xdpoff_block	*blk;
	struct xdpoff_rule_key	key;
	struct xdpoff_rule_val	val;
	u32			mask_slot;
	struct xdpoff_dev	*fwd_dev;	/* redirect target, referenced */
	bool			never;		/* cannot match on this device */
	bool			installed;	/* owns the map entry of key */
	u64			reported_pkts;
	u64			reported_bytes;
};

/* A rule as parsed from a flow_rule, before it is installed. */
struct xdpoff_match {
	struct xdpoff_fields	key;
	struct xdpoff_fields	mask;
	__be16			l3_proto;	/* basic.n_proto of the rule */
	__be16			l3_proto_mask;
	u32			needs;		/* XDPOFF_U_* the mask depends on */
	u32			action;
	struct net_device	*fwd_dev;	/* FLOW_ACTION_REDIRECT target */
	bool			never;		/* meta iif/iiftype of another device */
};

extern struct mutex xdpoff_lock;

/* NL_SET_ERR_MSG() of 6.1 takes only literals; @msg must be static. */
static inline void xdpoff_set_err_msg(struct netlink_ext_ack *extack,
				      const char *msg)
{
	if (extack)
		extack->_msg = msg;
}

/* xdpoff_main.c */
struct xdpoff_dev *xdpoff_dev_find(const struct net_device *netdev);
struct xdpoff_dev *xdpoff_dev_find_ifindex(struct net *net, int ifindex);
int xdpoff_dev_attach(struct net_device *netdev, struct bpf_map *maps[4],
		      struct netlink_ext_ack *extack);
int xdpoff_dev_detach(struct xdpoff_dev *xdev, struct netlink_ext_ack *extack);
void xdpoff_dev_put(struct xdpoff_dev *xdev);
extern struct list_head xdpoff_devs;

/* xdpoff_block.c */
int xdpoff_indr_setup(struct net_device *netdev, struct Qdisc *sch,
		      void *cb_priv, enum tc_setup_type type, void *type_data,
		      void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb));
void xdpoff_block_release(void *cb_priv);

/* xdpoff_flower.c */
int xdpoff_flower_parse(struct xdpoff_dev *xdev, const struct flow_rule *rule,
			struct xdpoff_match *m, struct netlink_ext_ack *extack);
int xdpoff_flower_setup(struct xdpoff_block *blk, struct flow_cls_offload *f);
void xdpoff_rules_flush(struct xdpoff_dev *xdev, struct xdpoff_block *blk);

/* xdpoff_maps.c */
int xdpoff_maps_validate(struct bpf_map *maps[4],
			 struct netlink_ext_ack *extack);
int xdpoff_map_update(struct bpf_map *map, const void *key,
		      const void *value, u64 flags);
int xdpoff_map_delete(struct bpf_map *map, const void *key);
int xdpoff_mask_get(struct xdpoff_dev *xdev, u32 stage,
		    const struct xdpoff_fields *mask, u32 needs, u64 order,
		    u32 *slot, struct netlink_ext_ack *extack);
void xdpoff_mask_put(struct xdpoff_dev *xdev, u32 slot);
int xdpoff_stats_alloc(struct xdpoff_dev *xdev, u32 *slot);
void xdpoff_stats_free(struct xdpoff_dev *xdev, u32 slot);
void xdpoff_stats_read(struct xdpoff_dev *xdev, u32 slot,
		       struct xdpoff_stats *sum);

/* xdpoff_nl.c */
int xdpoff_nl_init(void);
void xdpoff_nl_uninit(void);

/* xdpoff_debugfs.c */
void xdpoff_debugfs_init(void);
void xdpoff_debugfs_uninit(void);
void xdpoff_debugfs_dev_add(struct xdpoff_dev *xdev);
void xdpoff_debugfs_dev_del(struct xdpoff_dev *xdev);

#endif /* _XDPOFF_H */
