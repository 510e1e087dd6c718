// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: the rules of a flow block (struct xdpoff_brule), each installed
 * on every port of the block: FLOW_CLS_REPLACE, DESTROY and STATS, tc's
 * mask and filter order, the tc filters left in software only, and the
 * commit of a tc replay.
 */

#include <linux/slab.h>
#include <net/flow_offload.h>
#include <net/netfilter/nf_tables.h>
#include <net/pkt_cls.h>

#include "xdpoff.h"

static u64 xdpoff_tc_order(u32 prio, struct xdpoff_tc_mask *tcm)
{
	return xdpoff_order_tc(prio, tcm->seq, ++tcm->filter_seq);
}

static struct xdpoff_tc_mask *xdpoff_tc_mask_get(struct xdpoff_block *blk,
						 const void *fl_mask)
{
	struct xdpoff_tc_mask *tcm;

	list_for_each_entry(tcm, &blk->tc_masks, list) {
		if (tcm->fl_mask == fl_mask) {
			tcm->refcnt++;
			return tcm;
		}
	}
	tcm = kzalloc(sizeof(*tcm), GFP_KERNEL);
	if (!tcm)
		return NULL;
	tcm->fl_mask = fl_mask;
	tcm->seq = ++blk->tc_mask_seq;
	tcm->refcnt = 1;
	list_add_tail(&tcm->list, &blk->tc_masks);
	return tcm;
}

static void xdpoff_tc_mask_put(struct xdpoff_tc_mask *tcm)
{
	if (!tcm || --tcm->refcnt)
		return;
	list_del(&tcm->list);
	kfree(tcm);
}

static struct xdpoff_brule *xdpoff_brule_find(struct xdpoff_block *blk,
					      unsigned long cookie)
{
	struct xdpoff_brule *br;

	hash_for_each_possible(blk->rules, br, node, cookie)
		if (br->cookie == cookie)
			return br;
	return NULL;
}

/* Remove the instances of @cookie from every port of @blk. */
static void xdpoff_brule_uninstall(struct xdpoff_block *blk,
				   unsigned long cookie)
{
	struct xdpoff_port *port;
	struct xdpoff_rule *r;

	list_for_each_entry(port, &blk->ports, block_node) {
		r = xdpoff_rule_find(port->xdev, cookie);
		if (r)
			xdpoff_rule_del(port->xdev, r);
	}
}

static void xdpoff_brule_free(struct xdpoff_brule *br)
{
	xdpoff_tc_mask_put(br->tc_mask);
	if (br->fwd)
		xdpoff_dev_put(br->fwd);
	kfree(br);
}

static void xdpoff_brule_del(struct xdpoff_block *blk,
			     struct xdpoff_brule *br)
{
	xdpoff_brule_uninstall(blk, br->cookie);
	list_del(&br->replay_node);
	hash_del(&br->node);
	xdpoff_brule_free(br);
}

/* A port whose device is gone takes no rules; unbind follows. */
static bool xdpoff_port_live(const struct xdpoff_port *port)
{
	return port->xdev->netdev;
}

/* Give @br its tc order and install it on every live port of @blk. */
static int xdpoff_brule_install(struct xdpoff_block *blk,
				struct xdpoff_brule *br,
				struct netlink_ext_ack *extack)
{
	struct xdpoff_port *port;
	int err;

	if (blk->tc) {
		br->tc_mask = xdpoff_tc_mask_get(blk, br->fl_mask);
		if (!br->tc_mask)
			return -ENOMEM;
		br->tc_order = xdpoff_tc_order(br->prio, br->tc_mask);
	}
	list_for_each_entry(port, &blk->ports, block_node) {
		if (!xdpoff_port_live(port))
			continue;
		err = xdpoff_rule_add(port, br, extack);
		if (err) {
			xdpoff_brule_uninstall(blk, br->cookie);
			return err;
		}
	}
	return 0;
}

static void xdpoff_block_error(struct xdpoff_block *blk,
			       struct netlink_ext_ack *extack);

static int xdpoff_block_replace(struct xdpoff_block *blk,
				struct flow_cls_offload *f,
				struct netlink_ext_ack *extack)
{
	struct flow_rule *rule = flow_cls_offload_flow_rule(f);
	struct xdpoff_brule *br, *old;
	int err;

	old = xdpoff_brule_find(blk, f->cookie);
	if (old)
		xdpoff_brule_del(blk, old);

	if (blk->tc && f->common.chain_index) {
		NL_SET_ERR_MSG_MOD(extack,
				   "filters in chains other than 0 are not supported");
		return -EOPNOTSUPP;
	}

	br = kzalloc(sizeof(*br), GFP_KERNEL);
	if (!br)
		return -ENOMEM;
	INIT_LIST_HEAD(&br->replay_node);
	br->cookie = f->cookie;
	br->prio = f->common.prio;
	err = xdpoff_parse_rule(rule, blk->tc, &br->m, extack);
	if (err)
		goto err_free;

	if (br->m.val.action == XDPOFF_ACT_REDIRECT) {
		br->fwd = br->m.fwd_dev ? xdpoff_dev_find(br->m.fwd_dev) : NULL;
		if (!br->fwd) {
			NL_SET_ERR_MSG_MOD(extack,
					   "fwd target must be attached with xdpoff (it takes XDP frames then)");
			err = -EOPNOTSUPP;
			goto err_free;
		}
		xdpoff_dev_hold(br->fwd);
	}

	if (blk->tc) {
		br->fl_mask = rule->match.mask;
		/* Replayed newest first: installed oldest first, later. */
		if (blk->replaying) {
			list_add(&br->replay_node, &blk->replayed);
			hash_add(blk->rules, &br->node, br->cookie);
			return 0;
		}
	} else {
		/* The cookie of an nf_tables rule is its struct nft_rule. */
		br->handle = lower_32_bits(((struct nft_rule *)f->cookie)->handle);
	}
	err = xdpoff_brule_install(blk, br, extack);
	if (err)
		goto err_free;
	hash_add(blk->rules, &br->node, br->cookie);
	return 0;

err_free:
	xdpoff_brule_free(br);
	return err;
}

static void xdpoff_sw_only_set(struct xdpoff_block *blk, unsigned long cookie,
			       u32 prio, bool on);

/*
 * The end of a tc replay (xdpoff_replay()): flower hands its filters
 * over newest first (fl_reoffload() walks head->hw_filters, where each
 * filter is added at the head); @blk->replayed holds them oldest first.
 * Installed in that order, they get their mask's place and their place
 * in it as if they had been added one by one: flower tries its masks in
 * the order they were created, which is that of their oldest filter
 * unless that filter was deleted since (doc/design.md: Lifecycle).
 */
void xdpoff_replay_commit(struct xdpoff_block *blk)
{
	struct netlink_ext_ack extack = {};
	struct xdpoff_brule *br, *tmp;

	blk->replaying = false;
	list_for_each_entry_safe(br, tmp, &blk->replayed, replay_node) {
		list_del_init(&br->replay_node);
		if (!xdpoff_brule_install(blk, br, &extack))
			continue;
		xdpoff_block_error(blk, &extack);
		xdpoff_sw_only_set(blk, br->cookie, br->prio, true);
		hash_del(&br->node);
		xdpoff_brule_free(br);
	}
}

/* FLOW_CLS_STATS, under xdpoff_stats_lock only. */
void xdpoff_flower_stats(struct xdpoff_block *blk, struct flow_cls_offload *f)
{
	struct xdpoff_port *port;
	struct xdpoff_rule *r;
	u64 pkts = 0, bytes = 0;

	list_for_each_entry(port, &blk->ports, block_node) {
		r = xdpoff_rule_find(port->xdev, f->cookie);
		if (r)
			xdpoff_rule_stats(port->xdev, r, &pkts, &bytes);
	}
	flow_stats_update(&f->stats, bytes, pkts, 0, pkts ? jiffies : 0,
			  FLOW_ACTION_HW_STATS_IMMEDIATE);
}

static void xdpoff_block_error(struct xdpoff_block *blk,
			       struct netlink_ext_ack *extack)
{
	struct xdpoff_port *port;

	if (!extack->_msg)
		return;
	list_for_each_entry(port, &blk->ports, block_node)
		xdpoff_refuse(port->xdev, NULL, extack->_msg);
}

/* Mark (@on) or unmark the tc filter @cookie as running in software only. */
static void xdpoff_sw_only_set(struct xdpoff_block *blk, unsigned long cookie,
			       u32 prio, bool on)
{
	struct xdpoff_sw_only *so, *found = NULL;
	struct xdpoff_port *port;

	if (!blk->tc)
		return;
	list_for_each_entry(so, &blk->sw_only, list)
		if (so->cookie == cookie)
			found = so;
	if (on == !!found)
		return;
	if (on) {
		so = kzalloc(sizeof(*so), GFP_KERNEL);
		/* No memory: the filter's frames may be decided in XDP. */
		if (!so)
			return;
		so->cookie = cookie;
		so->order = xdpoff_order_tc(prio, 0, 0);
		list_add(&so->list, &blk->sw_only);
	} else {
		list_del(&found->list);
		kfree(found);
	}
	list_for_each_entry(port, &blk->ports, block_node)
		xdpoff_meta_sync(port->xdev);
}

void xdpoff_sw_only_flush(struct xdpoff_block *blk)
{
	struct xdpoff_sw_only *so, *tmp;

	list_for_each_entry_safe(so, tmp, &blk->sw_only, list) {
		list_del(&so->list);
		kfree(so);
	}
}

int xdpoff_flower_setup(struct xdpoff_block *blk, struct flow_cls_offload *f)
{
	struct netlink_ext_ack local = {};
	struct xdpoff_brule *br;
	int err;

	switch (f->command) {
	case FLOW_CLS_REPLACE:
		/*
		 * tc hands its extack to drivers for skip_sw filters only
		 * (which it refuses for indirect blocks), and nf_tables
		 * drops it: the reason is kept for `xdpoff show` either way.
		 */
		err = xdpoff_block_replace(blk, f, f->common.extack ?: &local);
		if (err)
			xdpoff_block_error(blk, f->common.extack ?: &local);
		xdpoff_sw_only_set(blk, f->cookie, f->common.prio, err);
		return err;
	case FLOW_CLS_DESTROY:
		/* Unknown and repeated DESTROYs are normal. */
		br = xdpoff_brule_find(blk, f->cookie);
		if (br)
			xdpoff_brule_del(blk, br);
		xdpoff_sw_only_set(blk, f->cookie, f->common.prio, false);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Forget the block's rules; their instances are gone already. */
void xdpoff_brules_flush(struct xdpoff_block *blk)
{
	struct xdpoff_brule *br;
	struct hlist_node *tmp;
	int bkt;

	hash_for_each_safe(blk->rules, bkt, tmp, br, node)
		xdpoff_brule_del(blk, br);
}
