// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: replay at attach, of the tc ingress blocks the kernel bound to
 * the device before (a qdisc created before `xdpoff attach`, or one that
 * outlived an rmmod).
 *
 * flow_indr_dev_register() hands a new callback every bind the kernel
 * recorded (flow_indir_dev_list, net/core/flow_offload.c), with no block,
 * net or extack, and splices the block cbs it gets onto the recorded
 * block; it never replays rules.  The tc filters are then played back the
 * way tcf_block_playback_offloads() does for a bind (cls_api.c, static):
 * each classifier's ->reoffload(), under rtnl and the block's cb_lock.
 * The records of nf_tables' chains are left alone: nf_tables never
 * replays rules either, and 6.1 keeps the record of a chain freed with
 * its last device (the chain and device it names may be gone).
 * `xdpoff attach` re-creates the offloaded chains itself
 * (userspace/replay.c).
 */

#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/flow_offload.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>

#include "xdpoff.h"

struct xdpoff_replay {
	struct xdpoff_dev	*xdev;
	unsigned int		n;
	struct xdpoff_block	*blks[XDPOFF_MAX_STAGES];
	struct tcf_block	*tc_blocks[XDPOFF_MAX_STAGES];
};

static int xdpoff_indr_replay(struct net_device *netdev, struct Qdisc *sch,
			      void *cb_priv, enum tc_setup_type type,
			      void *type_data, void *data,
			      void (*cleanup)(struct flow_block_cb *block_cb))
{
	struct flow_block_offload *bo = type_data;
	struct xdpoff_replay *r = cb_priv;
	struct tcf_block *tcb = data;
	struct xdpoff_block *blk;
	int err;

	/* Only recorded binds (no block), of tc (a qdisc), of our device. */
	if (type != TC_SETUP_BLOCK || !bo || bo->block || !sch ||
	    bo->command != FLOW_BLOCK_BIND ||
	    bo->binder_type != FLOW_BLOCK_BINDER_TYPE_CLSACT_INGRESS ||
	    netdev != r->xdev->netdev || r->n == ARRAY_SIZE(r->blks))
		return -EOPNOTSUPP;

	bo->block = &tcb->flow_block;
	bo->net = dev_net(netdev);
	bo->block_shared = tcf_block_shared(tcb);
	bo->unlocked_driver_cb = true;

	mutex_lock(&xdpoff_lock);
	err = xdpoff_block_bind(r->xdev, bo, netdev, sch, NULL, data, cleanup,
				&blk);
	if (!err) {
		r->blks[r->n] = blk;
		r->tc_blocks[r->n++] = tcb;
	}
	mutex_unlock(&xdpoff_lock);
	return err;
}

/* A block cb that bind_more() joined is on the block list already. */
static void xdpoff_tc_playback(struct xdpoff_block *blk,
			       struct tcf_block *tcb)
{
	struct tcf_chain *chain;
	struct tcf_proto *tp;

	down_write(&tcb->cb_lock);
	mutex_lock(&xdpoff_lock);
	blk->replaying = true;
	mutex_unlock(&xdpoff_lock);
	/* The exported iterators drop their references only at the end. */
	for (chain = tcf_get_next_chain(tcb, NULL); chain;
	     chain = tcf_get_next_chain(tcb, chain))
		for (tp = tcf_get_next_proto(chain, NULL); tp;
		     tp = tcf_get_next_proto(chain, tp))
			if (tp->ops->reoffload)
				tp->ops->reoffload(tp, true,
						   xdpoff_block_setup_cb, blk,
						   NULL);
	mutex_lock(&xdpoff_lock);
	xdpoff_replay_commit(blk);
	mutex_unlock(&xdpoff_lock);
	up_write(&tcb->cb_lock);
}

/*
 * Called right after @xdev is attached, under rtnl: no qdisc can be
 * destroyed, and no block unbound, until the playback is over.  The
 * device is held meanwhile: its XDP program matches nothing until every
 * replayed filter is in, so it never holds a later filter without an
 * earlier one.
 */
void xdpoff_replay(struct xdpoff_dev *xdev)
{
	struct xdpoff_replay *r;
	unsigned int i;

	ASSERT_RTNL();
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return;
	r->xdev = xdev;

	mutex_lock(&xdpoff_lock);
	xdpoff_meta_hold(xdev, true);
	mutex_unlock(&xdpoff_lock);

	if (!flow_indr_dev_register(xdpoff_indr_replay, r))
		flow_indr_dev_unregister(xdpoff_indr_replay, r,
					 xdpoff_block_release);
	for (i = 0; i < r->n; i++)
		xdpoff_tc_playback(r->blks[i], r->tc_blocks[i]);

	mutex_lock(&xdpoff_lock);
	xdpoff_meta_hold(xdev, false);
	mutex_unlock(&xdpoff_lock);
	kfree(r);
}
