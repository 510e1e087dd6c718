// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: module init, the devices handed over by `xdpoff attach`, and
 * the indirect flow block registration.
 */

#include <linux/bitmap.h>
#include <linux/bpf.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <net/genetlink.h>

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

static void xdpoff_dev_release(struct kref *ref)
{
	struct xdpoff_dev *xdev = container_of(ref, struct xdpoff_dev, ref);
	int i;

	xdpoff_rules_flush(xdev, NULL);
	xdpoff_debugfs_dev_del(xdev);
	bpf_map_put(xdev->rules);
	bpf_map_put(xdev->masks);
	bpf_map_put(xdev->meta);
	bpf_map_put(xdev->stats);
	bitmap_free(xdev->stats_used);
	for (i = 0; i < XDPOFF_MAX_MASKS; i++)
		WARN_ON_ONCE(xdev->mask_slots[i].refcnt);
	kfree(xdev);
}

/* Caller holds xdpoff_lock. */
void xdpoff_dev_put(struct xdpoff_dev *xdev)
{
	kref_put(&xdev->ref, xdpoff_dev_release);
}

/* Take @xdev off the list; bound blocks keep it alive until unbound. */
static void xdpoff_dev_unlist(struct xdpoff_dev *xdev)
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
int xdpoff_dev_attach(struct net_device *netdev, struct bpf_map *maps[4],
		      struct netlink_ext_ack *extack)
{
	struct xdpoff_dev *xdev;
	int err;

	if (xdpoff_dev_find(netdev)) {
		NL_SET_ERR_MSG_MOD(extack, "device is already attached");
		return -EEXIST;
	}
	if (!netdev->netdev_ops->ndo_bpf) {
		NL_SET_ERR_MSG_MOD(extack, "device does not support native XDP");
		return -EOPNOTSUPP;
	}
	err = xdpoff_maps_validate(maps, extack);
	if (err)
		return err;

	xdev = kzalloc(sizeof(*xdev), GFP_KERNEL);
	if (!xdev)
		return -ENOMEM;
	xdev->max_rules = maps[0]->max_entries;
	xdev->stats_used = bitmap_zalloc(xdev->max_rules, GFP_KERNEL);
	if (!xdev->stats_used) {
		kfree(xdev);
		return -ENOMEM;
	}

	kref_init(&xdev->ref);
	hash_init(xdev->by_cookie);
	hash_init(xdev->by_key);
	INIT_LIST_HEAD(&xdev->ports);
	xdev->rules = maps[0];
	xdev->masks = maps[1];
	xdev->meta = maps[2];
	xdev->stats = maps[3];
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
				   "offloaded chains are bound to the device, delete them first");
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

static int xdpoff_netdev_event(struct notifier_block *nb,
			       unsigned long event, void *ptr)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(ptr);
	struct xdpoff_dev *xdev;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;

	mutex_lock(&xdpoff_lock);
	xdev = xdpoff_dev_find(netdev);
	if (xdev) {
		xdpoff_block_dev_gone(xdev);
		xdpoff_dev_unlist(xdev);
	}
	mutex_unlock(&xdpoff_lock);
	return NOTIFY_DONE;
}

/* Ahead of nf_tables' notifiers (priority 0): its chains still exist. */
static struct notifier_block xdpoff_netdev_nb = {
	.notifier_call = xdpoff_netdev_event,
	.priority = 1,
};

static int __init xdpoff_init(void)
{
	int err;

	xdpoff_debugfs_init();
	err = register_netdevice_notifier(&xdpoff_netdev_nb);
	if (err)
		goto err_debugfs_uninit;
	err = xdpoff_nl_init();
	if (err)
		goto err_unregister_notifier;
	err = flow_indr_dev_register(xdpoff_indr_setup, NULL);
	if (err)
		goto err_nl_uninit;
	return 0;

err_nl_uninit:
	xdpoff_nl_uninit();
err_unregister_notifier:
	unregister_netdevice_notifier(&xdpoff_netdev_nb);
err_debugfs_uninit:
	xdpoff_debugfs_uninit();
	return err;
}

/*
 * Unregistering the indirect callback makes nf_tables unbind every block
 * (DESTROY of each rule, then release): the chains stay, in software only.
 */
static void __exit xdpoff_exit(void)
{
	struct xdpoff_dev *xdev, *tmp;

	xdpoff_nl_uninit();
	flow_indr_dev_unregister(xdpoff_indr_setup, NULL, xdpoff_block_release);
	unregister_netdevice_notifier(&xdpoff_netdev_nb);

	mutex_lock(&xdpoff_lock);
	list_for_each_entry_safe(xdev, tmp, &xdpoff_devs, list)
		xdpoff_dev_unlist(xdev);
	mutex_unlock(&xdpoff_lock);
	xdpoff_debugfs_uninit();
}

module_init(xdpoff_init);
module_exit(xdpoff_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Offload nftables rules into an XDP program's BPF maps");
MODULE_ALIAS_GENL_FAMILY(XDPOFF_GENL_NAME);
/*
 * bpf_map_get() (xdpoff_nl.c): 6.12 exports it in namespace BPF_INTERNAL
 * only (kernel/bpf/syscall.c), and its modpost refuses a module that does
 * not import it.  6.1 exports it plainly; the import is harmless there.
 * 6.12 still takes the namespace as an identifier (6.13: a string).
 */
MODULE_IMPORT_NS(BPF_INTERNAL);
