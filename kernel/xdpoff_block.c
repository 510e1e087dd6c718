// SPDX-License-Identifier: GPL-2.0
/* xdpoff: flow block bind/unbind through the indirect block path. */

#include <linux/slab.h>
#include <net/flow_offload.h>
#include <net/pkt_cls.h>

#include "xdpoff.h"

static int xdpoff_block_setup_cb(enum tc_setup_type type, void *type_data,
				 void *cb_priv)
{
	struct xdpoff_block *blk = cb_priv;
	int err;

	if (type != TC_SETUP_CLSFLOWER)
		return -EOPNOTSUPP;

	mutex_lock(&xdpoff_lock);
	err = xdpoff_flower_setup(blk, type_data);
	mutex_unlock(&xdpoff_lock);
	return err;
}

/* Called by flow_block_cb_free() once the block cb is off every list. */
void xdpoff_block_release(void *cb_priv)
{
	struct xdpoff_block *blk = cb_priv;
	struct xdpoff_dev *xdev = blk->xdev;

	mutex_lock(&xdpoff_lock);
	/* DESTROY normally came first; never leave a rule behind. */
	xdpoff_rules_flush(xdev, blk);
	list_del(&blk->list);
	xdev->nr_blocks--;
	__clear_bit(blk->stage, &xdev->stages_used);
	kfree(blk);
	xdpoff_dev_put(xdev);
	mutex_unlock(&xdpoff_lock);
}

static int xdpoff_block_bind(struct xdpoff_dev *xdev,
			     struct flow_block_offload *bo,
			     struct net_device *netdev, struct Qdisc *sch,
			     void *data,
			     void (*cleanup)(struct flow_block_cb *block_cb))
{
	struct flow_block_cb *block_cb;
	struct xdpoff_block *blk;

	unsigned long stage;

	if (flow_block_cb_lookup(bo->block, xdpoff_block_setup_cb, netdev))
		return -EEXIST;

	stage = find_first_zero_bit(&xdev->stages_used, XDPOFF_MAX_STAGES);
	if (stage >= XDPOFF_MAX_STAGES) {
		xdev->last_error = KBUILD_MODNAME
			": too many offloaded chains on the device";
		return -EOPNOTSUPP;
	}

	blk = kzalloc(sizeof(*blk), GFP_KERNEL);
	if (!blk)
		return -ENOMEM;
	blk->xdev = xdev;
	blk->block = bo->block;
	blk->stage = stage;
	blk->seq = ++xdev->bind_seq;
	INIT_LIST_HEAD(&blk->driver_list);

	block_cb = flow_indr_block_cb_alloc(xdpoff_block_setup_cb, netdev, blk,
					    xdpoff_block_release, bo, netdev,
					    sch, data, NULL, cleanup);
	if (IS_ERR(block_cb)) {
		kfree(blk);
		return PTR_ERR(block_cb);
	}

	kref_get(&xdev->ref);
	list_add_tail(&blk->list, &xdev->blocks);
	xdev->nr_blocks++;
	__set_bit(stage, &xdev->stages_used);
	flow_block_cb_add(block_cb, bo);
	list_add_tail(&block_cb->driver_list, &blk->driver_list);
	return 0;
}

/*
 * Unbind finds the block cb by its ident, the net_device pointer, so it
 * also works after the device left xdpoff_devs (NETDEV_UNREGISTER).
 */
static int xdpoff_block_unbind(struct flow_block_offload *bo,
			       struct net_device *netdev)
{
	struct flow_block_cb *block_cb;

	block_cb = flow_block_cb_lookup(bo->block, xdpoff_block_setup_cb,
					netdev);
	if (!block_cb)
		return -ENOENT;

	/* The caller frees it, and xdpoff_block_release() then frees blk. */
	flow_indr_block_cb_remove(block_cb, bo);
	list_del_init(&block_cb->driver_list);
	return 0;
}

/*
 * The indirect block callback, called for every flow block bound to any
 * device.  Only ingress blocks of nf_tables (sch == NULL) on devices handed
 * over by `xdpoff attach` are taken; for anything else the block's cb_list
 * stays empty and the kernel reports EOPNOTSUPP.
 */
int xdpoff_indr_setup(struct net_device *netdev, struct Qdisc *sch,
		      void *cb_priv, enum tc_setup_type type, void *type_data,
		      void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb))
{
	struct flow_block_offload *bo = type_data;
	struct xdpoff_dev *xdev;
	int err;

	if (type != TC_SETUP_BLOCK || !bo)
		return -EOPNOTSUPP;
	if (bo->binder_type != FLOW_BLOCK_BINDER_TYPE_CLSACT_INGRESS)
		return -EOPNOTSUPP;
	/* tc blocks come with their qdisc; only nf_tables is served yet. */
	if (sch)
		return -EOPNOTSUPP;

	mutex_lock(&xdpoff_lock);
	switch (bo->command) {
	case FLOW_BLOCK_BIND:
		xdev = xdpoff_dev_find(netdev);
		if (!xdev || !net_eq(dev_net(netdev), bo->net)) {
			err = -EOPNOTSUPP;
			break;
		}
		bo->unlocked_driver_cb = true;
		err = xdpoff_block_bind(xdev, bo, netdev, sch, data, cleanup);
		break;
	case FLOW_BLOCK_UNBIND:
		err = xdpoff_block_unbind(bo, netdev);
		break;
	default:
		err = -EOPNOTSUPP;
	}
	mutex_unlock(&xdpoff_lock);
	return err;
}
