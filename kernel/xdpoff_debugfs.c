// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: read-only state for tests, netdevsim style:
 *   /sys/kernel/debug/xdpoff/<ifname>/rules	the shadow rule table
 *   /sys/kernel/debug/xdpoff/<ifname>/blocks	flow blocks bound
 *   /sys/kernel/debug/xdpoff/<ifname>/last_error	why the last rule was refused
 * and two knobs of fault injection into the map writes of a rule install:
 *   /sys/kernel/debug/xdpoff/fail_nth	the Nth from now on fails (-EIO), once
 *   /sys/kernel/debug/xdpoff/fail_permille  each fails with this probability
 *					(per thousand) until set back to 0
 */

#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "xdpoff.h"

static struct dentry *xdpoff_ddir;

/* One line per rule: cookie order action stats-slot mask-slot installed */
static int xdpoff_rules_show(struct seq_file *s, void *unused)
{
	struct xdpoff_dev *xdev = s->private;
	struct xdpoff_rule *r;
	int bkt;

	mutex_lock(&xdpoff_lock);
	hash_for_each(xdev->by_cookie, bkt, r, cookie_node)
		seq_printf(s, "%lx %llu %u %u %u %d\n", r->cookie,
			   r->val.order, r->val.action, r->val.stats_slot,
			   r->mask_slot, r->installed);
	mutex_unlock(&xdpoff_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(xdpoff_rules);

static int xdpoff_last_error_show(struct seq_file *s, void *unused)
{
	struct xdpoff_dev *xdev = s->private;

	mutex_lock(&xdpoff_lock);
	if (xdev->last_error)
		seq_printf(s, "%s\n", xdev->last_error);
	mutex_unlock(&xdpoff_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(xdpoff_last_error);

void xdpoff_debugfs_dev_add(struct xdpoff_dev *xdev)
{
	xdev->ddir = debugfs_create_dir(xdev->ifname, xdpoff_ddir);
	debugfs_create_file("rules", 0400, xdev->ddir, xdev,
			    &xdpoff_rules_fops);
	debugfs_create_u32("blocks", 0400, xdev->ddir, &xdev->nr_blocks);
	debugfs_create_u64("flow_replaces", 0400, xdev->ddir,
			   &xdev->flow_replaces);
	debugfs_create_file("last_error", 0400, xdev->ddir, xdev,
			    &xdpoff_last_error_fops);
}

void xdpoff_debugfs_dev_del(struct xdpoff_dev *xdev)
{
	debugfs_remove_recursive(xdev->ddir);
}

void xdpoff_debugfs_init(void)
{
	xdpoff_ddir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_u32("fail_nth", 0600, xdpoff_ddir, &xdpoff_fail_nth);
	debugfs_create_u32("fail_permille", 0600, xdpoff_ddir,
			   &xdpoff_fail_permille);
}

void xdpoff_debugfs_uninit(void)
{
	debugfs_remove_recursive(xdpoff_ddir);
}
