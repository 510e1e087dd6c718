// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: a device's whole life, from `xdpoff attach` to its last
 * reference.
 *
 *   xdpoff_dev_attach()   alloc, take the maps and the net_device, list,
 *                         debugfs, then replay what the kernel bound to
 *                         the device before (xdpoff_replay.c)
 *   xdpoff_dev_hold/put() the references: the list's, one per bound
 *                         block (port), per fwd rule and per offloaded
 *                         flow that targets the device
 *   xdpoff_dev_destroy()  out of service: its nft blocks orphaned, the
 *                         flows out through it and its rules gone,
 *                         unlisted, the net_device let go.  `xdpoff
 *                         detach`, the device's unregistration and module
 *                         exit all end a device here
 *   xdpoff_dev_release()  the last put: maps, debugfs and memory freed
 *
 * Every layer below looks devices up and holds them (xdpoff_dev_find(),
 * xdpoff_dev_hold(), xdpoff_dev_put()); the rest of this file calls only
 * into the layers below (kernel/xdpoff.h).
 */

#include <linux/bitmap.h>
#include <linux/bpf.h>
#include <linux/mm.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>

#include "xdpoff.h"

/* Protects xdpoff_devs and everything hanging off a device. */
DEFINE_MUTEX(xdpoff_lock);
DEFINE_SPINLOCK(xdpoff_stats_lock);
LIST_HEAD(xdpoff_devs);

struct xdpoff_dev *xdpoff_dev_find(const struct net_device *netdev)
{
	struct xdpoff_dev *xdev;

	list_for_each_entry(xdev, &xdpoff_devs, list)
		if (xdev->netdev == netdev)
			return xdev;
	return NULL;
}

struct xdpoff_dev *xdpoff_dev_find_ifindex(struct net *net, int ifindex)
{
	struct xdpoff_dev *xdev;

	list_for_each_entry(xdev, &xdpoff_devs, list)
		if (xdev->ifindex == ifindex &&
		    net_eq(dev_net(xdev->netdev), net))
			return xdev;
	return NULL;
}

void xdpoff_dev_hold(struct xdpoff_dev *xdev)
{
	kref_get(&xdev->ref);
}

static void xdpoff_dev_release(struct kref *ref)
{
	struct xdpoff_dev *xdev = container_of(ref, struct xdpoff_dev, ref);
	int i;

	/* xdpoff_dev_destroy() flushed them: never leave an entry behind. */
	xdpoff_rules_flush(xdev, NULL);
	xdpoff_debugfs_dev_del(xdev);
	for (i = 0; i < XDPOFF_NR_MAPS; i++)
		bpf_map_put(xdev->maps[i]);
	bitmap_free(xdev->stats_used);
	bitmap_free(xdev->slots_dirty);
	xdpoff_filter_free(xdev);
	for (i = 0; i < XDPOFF_MAX_MASKS; i++)
		WARN_ON_ONCE(xdev->mask_slots[i].refcnt);
	kvfree(xdev);
}

/* Caller holds xdpoff_lock. */
void xdpoff_dev_put(struct xdpoff_dev *xdev)
{
	kref_put(&xdev->ref, xdpoff_dev_release);
}

static struct xdpoff_dev *xdpoff_dev_alloc(struct bpf_map *maps[XDPOFF_NR_MAPS])
{
	struct xdpoff_dev *xdev;

	xdev = kvzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev)
		return NULL;
	xdev->max_rules = maps[XDPOFF_MAPI_RULES]->max_entries;
	xdev->max_flows = maps[XDPOFF_MAPI_FLOWS]->max_entries;
	xdev->stats_used = bitmap_zalloc(xdev->max_rules, GFP_KERNEL);
	xdev->slots_dirty = bitmap_zalloc(xdev->max_rules, GFP_KERNEL);
	if (!xdev->stats_used || !xdev->slots_dirty) {
		bitmap_free(xdev->stats_used);
		bitmap_free(xdev->slots_dirty);
		kvfree(xdev);
		return NULL;
	}
	xdev->seed = get_random_u64();
	snprintf(xdev->rules_full, sizeof(xdev->rules_full),
		 KBUILD_MODNAME ": rule table is full (%u rules)",
		 xdev->max_rules);
	snprintf(xdev->flows_full, sizeof(xdev->flows_full),
		 KBUILD_MODNAME ": flow table is full (%u flows)",
		 xdev->max_flows);
	kref_init(&xdev->ref);
	hash_init(xdev->by_cookie);
	hash_init(xdev->by_key);
	INIT_LIST_HEAD(&xdev->ports);
	hash_init(xdev->flow_table);
	hash_init(xdev->flow_keys);
	xdev->ft_order = XDPOFF_ORDER_NONE;
	memcpy(xdev->maps, maps, sizeof(xdev->maps));
	return xdev;
}

/* Take over @netdev with the maps of its XDP program.  Under xdpoff_lock. */
static int xdpoff_dev_add(struct net_device *netdev,
			  struct bpf_map *maps[XDPOFF_NR_MAPS], u32 mode,
			  u32 prog_flags, struct netlink_ext_ack *extack,
			  struct xdpoff_dev **xdevp)
{
	struct xdpoff_dev *xdev;
	int err;

	if (xdpoff_dev_find(netdev)) {
		NL_SET_ERR_MSG_MOD(extack, "device is already attached");
		return -EEXIST;
	}
	if (mode == XDPOFF_XDP_NATIVE && !netdev->netdev_ops->ndo_bpf) {
		NL_SET_ERR_MSG_MOD(extack,
				   "device does not support native XDP (attach it in generic mode)");
		return -EOPNOTSUPP;
	}
	err = xdpoff_maps_validate(maps, extack);
	if (err)
		return err;

	xdev = xdpoff_dev_alloc(maps);
	if (!xdev)
		return -ENOMEM;
	xdev->generic = mode == XDPOFF_XDP_GENERIC;
	xdev->prog_flags = prog_flags;
	xdev->ifindex = netdev->ifindex;
	strscpy(xdev->ifname, netdev->name, IFNAMSIZ);
	netdev_hold(netdev, &xdev->dev_tracker, GFP_KERNEL);
	xdev->netdev = netdev;
	list_add_tail(&xdev->list, &xdpoff_devs);
	xdpoff_debugfs_dev_add(xdev);
	*xdevp = xdev;
	return 0;
}

/*
 * `xdpoff attach`: take over @netdev with the maps of its XDP program (on
 * success their references belong to the device), then bring in the tc
 * blocks the kernel bound to it before.  Takes rtnl and xdpoff_lock: the
 * blocks the replay binds stay until it is done.
 */
int xdpoff_dev_attach(struct net_device *netdev,
		      struct bpf_map *maps[XDPOFF_NR_MAPS], u32 mode,
		      u32 prog_flags, struct netlink_ext_ack *extack)
{
	struct xdpoff_dev *xdev;
	int err;

	rtnl_lock();
	mutex_lock(&xdpoff_lock);
	err = xdpoff_dev_add(netdev, maps, mode, prog_flags, extack, &xdev);
	mutex_unlock(&xdpoff_lock);
	if (!err)
		xdpoff_replay(xdev);
	rtnl_unlock();
	return err;
}

/*
 * Take @xdev out of service; bound blocks keep the memory until they
 * unbind.  Its nft blocks' ports go and the blocks become orphans (when
 * its net_device is being unregistered: detach refuses a bound device,
 * and at module exit every block is unbound already).  Flows of other
 * devices that go out through it go back to the software flowtable, and
 * its rules, which may reference other devices (fwd), are let go.  Caller
 * holds xdpoff_lock.
 */
void xdpoff_dev_destroy(struct xdpoff_dev *xdev)
{
	xdpoff_block_dev_gone(xdev);
	xdpoff_flows_flush_out(xdev);
	xdpoff_rules_flush(xdev, NULL);
	list_del(&xdev->list);
	netdev_put(xdev->netdev, &xdev->dev_tracker);
	xdev->netdev = NULL;
	xdpoff_dev_put(xdev);
}

/* `xdpoff detach`: refused while offloaded chains are bound. */
int xdpoff_dev_detach(struct xdpoff_dev *xdev, struct netlink_ext_ack *extack)
{
	if (xdev->nr_blocks) {
		NL_SET_ERR_MSG_MOD(extack,
				   "offloaded chains are bound to the device (or flowtables), delete them first");
		return -EBUSY;
	}
	if (xdev->fwd_refs) {
		NL_SET_ERR_MSG_MOD(extack,
				   "offloaded fwd rules target the device, delete them first");
		return -EBUSY;
	}
	xdpoff_dev_destroy(xdev);
	return 0;
}

/*
 * Whether the XDP program of @from can redirect frames to @to.  Generic
 * XDP hands the skb to @to's queue, whatever its driver.  Native XDP hands
 * an xdp_frame to @to's driver: its ndo_xdp_xmit, which virtio-net serves
 * only with the XDP resources a native program of its own sets up; a
 * device xdpoff runs on in generic mode may have neither.
 */
bool xdpoff_dev_can_redirect(const struct xdpoff_dev *from,
			     const struct xdpoff_dev *to)
{
	return from->generic ||
	       (!to->generic && to->netdev &&
		to->netdev->netdev_ops->ndo_xdp_xmit);
}
