// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: the devices handed over by `xdpoff attach`: their list
 * (xdpoff_devs) and the locks, lookup, attach and detach.
 */

#include <linux/bitmap.h>
#include <linux/bpf.h>
#include <linux/netdevice.h>
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

/* Take @xdev off the list; bound blocks keep it alive until unbound. */
void xdpoff_dev_unlist(struct xdpoff_dev *xdev)
{
	/* Rules may reference other devices (fwd): let go of them now. */
	xdpoff_rules_flush(xdev, NULL);
	list_del(&xdev->list);
	netdev_put(xdev->netdev, &xdev->dev_tracker);
	xdev->netdev = NULL;
	xdpoff_dev_put(xdev);
}

/*
 * Take over @netdev with the maps of its XDP program.  On success the map
 * references belong to the device.  Caller holds xdpoff_lock.
 */
int xdpoff_dev_attach(struct net_device *netdev,
		      struct bpf_map *maps[XDPOFF_NR_MAPS], u32 mode,
		      u32 prog_flags, struct netlink_ext_ack *extack)
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

	xdev = kzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev)
		return -ENOMEM;
	xdev->max_rules = maps[XDPOFF_MAPI_RULES]->max_entries;
	xdev->max_flows = maps[XDPOFF_MAPI_FLOWS]->max_entries;
	xdev->seed = get_random_u64();
	snprintf(xdev->rules_full, sizeof(xdev->rules_full),
		 KBUILD_MODNAME ": rule table is full (%u rules)",
		 xdev->max_rules);
	snprintf(xdev->flows_full, sizeof(xdev->flows_full),
		 KBUILD_MODNAME ": flow table is full (%u flows)",
		 xdev->max_flows);
	xdev->stats_used = bitmap_zalloc(xdev->max_rules, GFP_KERNEL);
	xdev->slots_dirty = bitmap_zalloc(xdev->max_rules, GFP_KERNEL);
	if (!xdev->stats_used || !xdev->slots_dirty) {
		bitmap_free(xdev->stats_used);
		bitmap_free(xdev->slots_dirty);
		kfree(xdev);
		return -ENOMEM;
	}

	kref_init(&xdev->ref);
	hash_init(xdev->by_cookie);
	hash_init(xdev->by_key);
	INIT_LIST_HEAD(&xdev->ports);
	hash_init(xdev->flow_table);
	hash_init(xdev->flow_keys);
	xdev->ft_order = XDPOFF_ORDER_NONE;
	xdev->rules = maps[XDPOFF_MAPI_RULES];
	xdev->masks = maps[XDPOFF_MAPI_MASKS];
	xdev->meta = maps[XDPOFF_MAPI_META];
	xdev->stats = maps[XDPOFF_MAPI_STATS];
	xdev->flows = maps[XDPOFF_MAPI_FLOWS];
	xdev->filter = maps[XDPOFF_MAPI_FILTER];
	xdev->generic = mode == XDPOFF_XDP_GENERIC;
	xdev->prog_flags = prog_flags;
	xdev->ifindex = netdev->ifindex;
	strscpy(xdev->ifname, netdev->name, IFNAMSIZ);
	netdev_hold(netdev, &xdev->dev_tracker, GFP_KERNEL);
	xdev->netdev = netdev;
	list_add_tail(&xdev->list, &xdpoff_devs);
	xdpoff_debugfs_dev_add(xdev);
	return 0;
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
	xdpoff_dev_unlist(xdev);
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
