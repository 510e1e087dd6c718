// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: flow block bind/unbind through the indirect block path.
 *
 * nf_tables: a chain's block gets a block cb per device (nft requires a new
 * cb on every bind), identified by the net_device.
 *
 * tc: one block cb per block, identified by &xdpoff_tc_ident, whatever the
 * number of devices sharing it.  The first bind allocates it and tc replays
 * the block's filters into it; later binds take a reference with
 * flow_block_cb_incref() (tc lets a device join only while the block has
 * no filter in hardware); each unbind drops one with
 * flow_block_cb_decref(), and the last hands the cb back to tc, which
 * frees it (xdpoff_block_release()).  A filter added to the block is
 * installed on every device bound to it.
 *
 * nf_tables flowtables (TC_SETUP_FT): like a chain, a block cb per device
 * of the flowtable; each takes the flows that come in on its device
 * (xdpoff_flows.c).  The flowtable's hook runs among the device's nf
 * ingress hooks at its priority: that is where XDP looks its flows up.
 */

#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <net/flow_offload.h>
#include <net/netfilter/nf_flow_table.h>
#include <net/netfilter/nf_tables.h>
#include <net/pkt_cls.h>
#include <net/sch_generic.h>

#include "xdpoff.h"

static const int xdpoff_tc_ident;

/* The block cbs this driver owns; tc and nft list_del() driver_list. */
static LIST_HEAD(xdpoff_block_cb_list);

/*
 * A flowtable's flow commands: each reaches the cb of every device of the
 * flowtable; the one the flow comes in on takes it.  A port whose device
 * is gone takes nothing.
 */
static int xdpoff_ft_setup_cb(struct xdpoff_block *blk,
			      struct flow_cls_offload *f)
{
	struct xdpoff_port *port;
	int err = -EOPNOTSUPP;

	if (f->command == FLOW_CLS_STATS) {
		spin_lock(&xdpoff_stats_lock);
		port = list_first_entry_or_null(&blk->ports, struct xdpoff_port,
						block_node);
		if (port)
			xdpoff_flow_stats(port->xdev, f);
		spin_unlock(&xdpoff_stats_lock);
		return 0;
	}

	mutex_lock(&xdpoff_lock);
	port = list_first_entry_or_null(&blk->ports, struct xdpoff_port,
					block_node);
	if (port) {
		switch (f->command) {
		case FLOW_CLS_REPLACE:
			err = xdpoff_flow_replace(port, f);
			break;
		case FLOW_CLS_DESTROY:
			xdpoff_flow_destroy(port, f->cookie);
			err = 0;
			break;
		default:
			break;
		}
	}
	mutex_unlock(&xdpoff_lock);
	return err;
}

int xdpoff_block_setup_cb(enum tc_setup_type type, void *type_data,
			  void *cb_priv)
{
	struct flow_cls_offload *f = type_data;
	struct xdpoff_block *blk = cb_priv;
	int err;

	if (type != TC_SETUP_CLSFLOWER)
		return -EOPNOTSUPP;
	if (blk->ft)
		return xdpoff_ft_setup_cb(blk, f);

	if (f->command == FLOW_CLS_STATS) {
		/* No sleeping: see xdpoff_stats_lock. */
		spin_lock(&xdpoff_stats_lock);
		xdpoff_flower_stats(blk, f);
		spin_unlock(&xdpoff_stats_lock);
		return 0;
	}

	mutex_lock(&xdpoff_lock);
	/* An orphan has no device left: nothing to install or count. */
	err = blk->orphan ? 0 : xdpoff_flower_setup(blk, f);
	mutex_unlock(&xdpoff_lock);
	return err;
}

static bool xdpoff_is_orphan(const struct flow_block_cb *block_cb)
{
	return block_cb->cb == xdpoff_block_setup_cb &&
	       ((struct xdpoff_block *)block_cb->cb_priv)->orphan;
}

static struct xdpoff_port *xdpoff_port_find(struct xdpoff_block *blk,
					    const struct net_device *netdev)
{
	struct xdpoff_port *port;

	list_for_each_entry(port, &blk->ports, block_node)
		if (port->netdev == netdev)
			return port;
	return NULL;
}

static struct xdpoff_port *xdpoff_port_add(struct xdpoff_block *blk,
					   struct xdpoff_dev *xdev,
					   struct net_device *netdev,
					   struct netlink_ext_ack *extack)
{
	struct xdpoff_port *port;
	unsigned long stage;

	stage = find_first_zero_bit(&xdev->stages_used, XDPOFF_MAX_STAGES);
	if (stage >= XDPOFF_MAX_STAGES)
		return ERR_PTR(xdpoff_refuse(xdev, extack, KBUILD_MODNAME
			": too many offloaded chains on the device"));

	port = kzalloc(sizeof(*port), GFP_KERNEL);
	if (!port)
		return ERR_PTR(-ENOMEM);
	port->blk = blk;
	port->xdev = xdev;
	port->netdev = netdev;
	port->stage = stage;
	port->seq = ++xdev->bind_seq;
	xdpoff_dev_hold(xdev);
	list_add_tail(&port->list, &xdev->ports);
	spin_lock(&xdpoff_stats_lock);
	list_add_tail(&port->block_node, &blk->ports);
	spin_unlock(&xdpoff_stats_lock);
	xdev->nr_blocks++;
	__set_bit(stage, &xdev->stages_used);
	/* The XDP program looks at stages up to the last one bound. */
	if (xdev->netdev)
		xdpoff_meta_sync(xdev);
	return port;
}

/* Remove @port's rules from its device and free it. */
static void xdpoff_port_del(struct xdpoff_port *port)
{
	struct xdpoff_dev *xdev = port->xdev;

	xdpoff_rules_flush(xdev, port);
	if (port->blk->ft) {
		xdpoff_flows_flush_port(port);
		if (!--xdev->nr_ft) {
			xdev->ft_order = XDPOFF_ORDER_NONE;
			if (xdev->netdev)
				xdpoff_meta_sync(xdev);
		}
	}
	list_del(&port->list);
	spin_lock(&xdpoff_stats_lock);
	list_del(&port->block_node);
	spin_unlock(&xdpoff_stats_lock);
	xdev->nr_blocks--;
	__clear_bit(port->stage, &xdev->stages_used);
	/*
	 * Its software-only filters no longer hold the device back, and its
	 * stage is no longer looked at.
	 */
	if (xdev->netdev)
		xdpoff_meta_sync(xdev);
	kfree(port);
	xdpoff_dev_put(xdev);
}

static struct xdpoff_block *xdpoff_block_alloc(struct flow_block *block,
					       bool tc, bool ft)
{
	struct xdpoff_block *blk;

	blk = kzalloc(sizeof(*blk), GFP_KERNEL);
	if (!blk)
		return NULL;
	blk->block = block;
	blk->tc = tc;
	blk->ft = ft;
	INIT_LIST_HEAD(&blk->ports);
	INIT_LIST_HEAD(&blk->tc_masks);
	INIT_LIST_HEAD(&blk->replayed);
	INIT_LIST_HEAD(&blk->sw_only);
	hash_init(blk->rules);
	return blk;
}

/* Called by flow_block_cb_free() once the block cb is off every list. */
void xdpoff_block_release(void *cb_priv)
{
	struct xdpoff_block *blk = cb_priv;
	struct xdpoff_port *port, *tmp;

	mutex_lock(&xdpoff_lock);
	/* DESTROY normally came first; never leave a rule behind. */
	list_for_each_entry_safe(port, tmp, &blk->ports, block_node)
		xdpoff_port_del(port);
	xdpoff_brules_flush(blk);
	xdpoff_sw_only_flush(blk);
	WARN_ON_ONCE(!list_empty(&blk->tc_masks));
	kfree(blk);
	mutex_unlock(&xdpoff_lock);
}

/*
 * A further device on a tc block already bound elsewhere.  For a device
 * bound through the indirect path, tcf_block_offload_bind() fails the
 * qdisc when the block has filters in hardware already, after asking us:
 * refuse first, or the device would be bound here and never unbound.
 */
static int xdpoff_block_bind_more(struct flow_block_cb *block_cb,
				  struct xdpoff_dev *xdev,
				  struct net_device *netdev,
				  struct netlink_ext_ack *extack,
				  struct xdpoff_block **blkp)
{
	struct xdpoff_block *blk = flow_block_cb_priv(block_cb);
	struct xdpoff_port *port;

	if (xdpoff_port_find(blk, netdev))
		return -EEXIST;
	if (!hash_empty(blk->rules))
		return xdpoff_refuse(xdev, extack, KBUILD_MODNAME
			": a device joins a shared block only while no filter of it is offloaded");
	port = xdpoff_port_add(blk, xdev, netdev, extack);
	if (IS_ERR(port))
		return PTR_ERR(port);
	flow_block_cb_incref(block_cb);
	*blkp = blk;
	return 0;
}

/*
 * Where a flowtable's hook runs among the device's rules: an nft order
 * (xdpoff_order_nft()) of its priority and bind number.  Chains have
 * priorities 1..65535, a flowtable any: one above them runs after every
 * chain, one below before.
 */
static u64 xdpoff_ft_order(int prio, u32 seq)
{
	return xdpoff_order_nft(clamp(prio, 0, 0xffff), prio > 0xffff ? 0 : seq,
				0);
}

int xdpoff_block_bind(struct xdpoff_dev *xdev, struct flow_block_offload *bo,
		      struct net_device *netdev, struct Qdisc *sch,
		      struct nf_flowtable *ft, void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb),
		      struct xdpoff_block **blkp)
{
	const void *ident = sch ? (const void *)&xdpoff_tc_ident : netdev;
	struct flow_block_cb *block_cb;
	struct xdpoff_block *blk;
	struct xdpoff_port *port;

	block_cb = flow_block_cb_lookup(bo->block, xdpoff_block_setup_cb,
					(void *)ident);
	if (block_cb) {
		if (!sch)
			return -EEXIST;
		return xdpoff_block_bind_more(block_cb, xdev, netdev,
					      bo->extack, blkp);
	}

	/*
	 * The flows of every flowtable of the device are looked up at one
	 * place in its hook order; a second flowtable at the same priority
	 * (a reloaded ruleset's, say) shares it.
	 */
	if (ft && xdev->nr_ft && ft->priority != xdev->ft_prio)
		return xdpoff_refuse(xdev, bo->extack, KBUILD_MODNAME
			": the device is in an offloaded flowtable of another priority already");

	blk = xdpoff_block_alloc(bo->block, sch, ft);
	if (!blk)
		return -ENOMEM;
	port = xdpoff_port_add(blk, xdev, netdev, bo->extack);
	if (IS_ERR(port)) {
		kfree(blk);
		return PTR_ERR(port);
	}
	if (ft && !xdev->nr_ft++) {
		xdev->ft_prio = ft->priority;
		xdev->ft_order = xdpoff_ft_order(ft->priority, port->seq);
		xdpoff_meta_sync(xdev);
	}

	block_cb = flow_indr_block_cb_alloc(xdpoff_block_setup_cb,
					    (void *)ident, blk,
					    xdpoff_block_release, bo, netdev,
					    sch, data, NULL, cleanup);
	if (IS_ERR(block_cb)) {
		xdpoff_port_del(port);
		kfree(blk);
		return PTR_ERR(block_cb);
	}
	blk->block_cb = block_cb;
	flow_block_cb_incref(block_cb);
	flow_block_cb_add(block_cb, bo);
	list_add_tail(&block_cb->driver_list, &xdpoff_block_cb_list);
	*blkp = blk;
	return 0;
}

/*
 * Hand the orphaned cbs of an nft block back with this unbind: nf_tables
 * frees them with the device's own.  Called under flow_indr_block_lock and
 * nft's commit_mutex, which protect the lists.
 */
static int xdpoff_orphans_sweep(struct flow_block_offload *bo)
{
	struct flow_block_cb *block_cb, *next;
	int n = 0;

	list_for_each_entry_safe(block_cb, next, &bo->block->cb_list, list) {
		if (!xdpoff_is_orphan(block_cb))
			continue;
		flow_indr_block_cb_remove(block_cb, bo);
		list_del(&block_cb->driver_list);
		n++;
	}
	return n;
}

/*
 * Unbind finds the block cb by its ident, so it also works after the
 * device left xdpoff_devs (NETDEV_UNREGISTER).
 */
static int xdpoff_block_unbind(struct flow_block_offload *bo,
			       struct net_device *netdev, struct Qdisc *sch)
{
	const void *ident = sch ? (const void *)&xdpoff_tc_ident : netdev;
	struct flow_block_cb *block_cb;
	struct xdpoff_block *blk;
	struct xdpoff_port *port;
	int swept = sch ? 0 : xdpoff_orphans_sweep(bo);

	block_cb = flow_block_cb_lookup(bo->block, xdpoff_block_setup_cb,
					(void *)ident);
	if (!block_cb)
		return swept ? 0 : -ENOENT;
	blk = flow_block_cb_priv(block_cb);
	port = xdpoff_port_find(blk, netdev);
	if (!port)
		return swept ? 0 : -ENOENT;

	xdpoff_port_del(port);
	if (flow_block_cb_decref(block_cb))
		return 0;

	/* The caller frees it, and xdpoff_block_release() then frees blk. */
	flow_indr_block_cb_remove(block_cb, bo);
	list_del(&block_cb->driver_list);
	return 0;
}

/* The cleanup of an orphan whose chain nf_tables freed: leave ->list be. */
static void xdpoff_orphan_cleanup(struct flow_block_cb *block_cb)
{
	mutex_lock(&xdpoff_lock);
	list_del(&block_cb->driver_list);
	mutex_unlock(&xdpoff_lock);
	flow_block_cb_free(block_cb);
}

/* Does the chain go away with @netdev, its last device? */
static bool xdpoff_chain_dies(struct nft_base_chain *basechain,
			      const struct net_device *netdev)
{
	struct nft_hook *hook;
	bool others = false;

	rcu_read_lock();
	list_for_each_entry_rcu(hook, &basechain->hook_list, list)
		if (hook->ops.dev != netdev)
			others = true;
	rcu_read_unlock();
	return !others;
}

/*
 * The orphans of @block, whose chain is left without a device: nf_tables
 * must not hand them to nft_indr_block_cleanup() at rmmod.
 *
 * 6.12 (nft_chain_filter.c, nft_netdev_event(); upstream 6.14, in 6.12.y)
 * no longer frees a netdev chain with its last device: the chain lives on
 * without one, and may be deleted, or its namespace dismantled, with no
 * unbind (nft_flow_block_chain() walks the devices), or outlive the module.
 * Either way the cbs must leave its list now, while it surely exists.
 * nft's commit_mutex is out of reach (nf_tables_net_id is not exported):
 * an unbind of the chain waits for xdpoff_lock in xdpoff_indr_setup()
 * before it touches the list, and a walk of it (nft_setup_cb_call()) that
 * stands on an orphan goes on through its ->next, left as it was: the cb
 * is freed at rmmod only, by xdpoff_orphan_cleanup().
 */
static void xdpoff_orphans_unlink(struct flow_block *block)
{
	struct flow_block_cb *block_cb, *next;

	list_for_each_entry_safe(block_cb, next, &block->cb_list, list) {
		if (!xdpoff_is_orphan(block_cb))
			continue;
		block_cb->indr.cleanup = xdpoff_orphan_cleanup;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)
		__list_del_entry(&block_cb->list);
#endif
	}
}

/*
 * @xdev's device is being unregistered (we run before nf_tables: see
 * xdpoff_netdev_nb).  tc unbound its qdiscs' blocks already
 * (dev_shutdown()).  nf_tables does not unbind in 6.1: nft_netdev_event()
 * drops the device's hook, and a chain left without a device is freed with
 * our cb still on it; at rmmod flow_indr_dev_unregister() would hand that
 * cb to nft_indr_block_cleanup(), which uses the freed chain and device.
 * So each nft cb of the device becomes an orphan: its port (rules, maps)
 * goes now, the cb stays inert until
 *  - the chain is left without a device: the cb's cleanup becomes
 *    xdpoff_orphan_cleanup(), which never touches the chain.  6.1 frees
 *    the chain right after us.  6.12 keeps it, without devices (see
 *    xdpoff_orphans_unlink()), and no unbind ever comes;
 *  - or the chain lives on with its other devices: the cb stays on it, is
 *    swept by the next unbind of the block (xdpoff_block_unbind()), or is
 *    cleaned up by nf_tables at rmmod, with the namespace's loopback
 *    device (alive as long as the chain) in place of the gone one.
 * Caller holds xdpoff_lock.
 */
void xdpoff_block_dev_gone(struct xdpoff_dev *xdev)
{
	struct net_device *netdev = xdev->netdev;
	struct xdpoff_port *port, *tmp;
	struct xdpoff_block *blk;

	list_for_each_entry_safe(port, tmp, &xdev->ports, list) {
		blk = port->blk;
		/* tc and flowtables unbind the device themselves. */
		if (blk->tc || blk->ft)
			continue;
		xdpoff_port_del(port);
		blk->orphan = true;
		/* A new device at the same address must not find it. */
		blk->block_cb->cb_ident = NULL;
		if (!xdpoff_chain_dies(blk->block_cb->indr.data, netdev)) {
			blk->block_cb->indr.dev = dev_net(netdev)->loopback_dev;
			continue;
		}
		xdpoff_orphans_unlink(blk->block);
	}
}

/*
 * The indirect block callback, called for every flow block bound to any
 * device.  Ingress blocks of nf_tables (sch == NULL) and of tc's ingress
 * or clsact qdisc, on devices handed over by `xdpoff attach`, are taken;
 * for anything else the block's cb_list stays empty and the kernel
 * reports EOPNOTSUPP.
 */
int xdpoff_indr_setup(struct net_device *netdev, struct Qdisc *sch,
		      void *cb_priv, enum tc_setup_type type, void *type_data,
		      void *data,
		      void (*cleanup)(struct flow_block_cb *block_cb))
{
	struct flow_block_offload *bo = type_data;
	struct xdpoff_block *blk;
	struct xdpoff_dev *xdev;
	int err;

	if ((type != TC_SETUP_BLOCK && type != TC_SETUP_FT) || !bo)
		return -EOPNOTSUPP;
	if (bo->binder_type != FLOW_BLOCK_BINDER_TYPE_CLSACT_INGRESS)
		return -EOPNOTSUPP;
	/*
	 * A flowtable, always without a qdisc.  Never a bind replayed by
	 * flow_indr_dev_register() (no block): the kernel keeps the record
	 * of a flowtable whose bind failed, and its data is freed memory.
	 */
	if (type == TC_SETUP_FT && (sch || !bo->block))
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
		err = xdpoff_block_bind(xdev, bo, netdev, sch,
					type == TC_SETUP_FT ? data : NULL,
					data, cleanup, &blk);
		break;
	case FLOW_BLOCK_UNBIND:
		err = xdpoff_block_unbind(bo, netdev, sch);
		break;
	default:
		err = -EOPNOTSUPP;
	}
	mutex_unlock(&xdpoff_lock);
	return err;
}
