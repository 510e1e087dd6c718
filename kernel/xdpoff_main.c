// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: module init and exit: the indirect flow block registration, the
 * netlink family, and the netdev notifier that lets go of a device being
 * unregistered.
 */

#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/genetlink.h>

#include "xdpoff.h"

static int xdpoff_netdev_event(struct notifier_block *nb,
			       unsigned long event, void *ptr)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(ptr);
	struct xdpoff_dev *xdev;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;

	mutex_lock(&xdpoff_lock);
	xdev = xdpoff_dev_find(netdev);
	if (xdev)
		xdpoff_dev_destroy(xdev);
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
		xdpoff_dev_destroy(xdev);
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
