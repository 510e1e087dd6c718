// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: generic netlink control interface.  `xdpoff attach` hands over
 * the device and the fds of its maps; the fds resolve in the sender's
 * context, as IFLA_XDP_FD does.
 */

#include <linux/bpf.h>
#include <linux/jiffies.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>
#include <net/sock.h>

#include "xdpoff.h"

#define XDPOFF_MSG_OLD_CLI \
	"index maps are no longer used: the xdpoff CLI is older than the module"

/* The maps' fds (XDPOFF_MAPS). */
#define XDPOFF_NL_FD_POLICY(id, name, attr, type_, key_, val_)	\
	[attr] = { .type = NLA_U32 },

static const struct nla_policy xdpoff_nl_policy[XDPOFF_ATTR_MAX + 1] = {
	[XDPOFF_ATTR_IFINDEX]	= { .type = NLA_U32 },
	XDPOFF_MAPS(XDPOFF_NL_FD_POLICY)
	[XDPOFF_ATTR_NR_RULES]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_NR_BLOCKS]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_MAX_RULES]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_LAST_ERROR] = { .type = NLA_REJECT },
	[XDPOFF_ATTR_NR_FLOWS]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_XDP_MODE]	= NLA_POLICY_MAX(NLA_U32, XDPOFF_XDP_GENERIC),
	[XDPOFF_ATTR_PROG_FLAGS] = NLA_POLICY_MASK(NLA_U32, XDPOFF_PROG_FLAGS_ALL),
	/* the index maps of 0.2: a CLI that sends them is too old */
	[XDPOFF_ATTR_UNUSED1]	= { .type = NLA_REJECT,
				    .reject_message = XDPOFF_MSG_OLD_CLI },
	[XDPOFF_ATTR_UNUSED2]	= { .type = NLA_REJECT,
				    .reject_message = XDPOFF_MSG_OLD_CLI },
	[XDPOFF_ATTR_JIFFIES]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_HZ]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_PAD]	= { .type = NLA_REJECT },
	[XDPOFF_ATTR_REFUSALS]	= { .type = NLA_REJECT },
};

#define XDPOFF_NL_FD_ATTR(id, name, attr, type_, key_, val_)	\
	[XDPOFF_MAPI_##id] = attr,
static const int xdpoff_fd_attrs[XDPOFF_NR_MAPS] = {
	XDPOFF_MAPS(XDPOFF_NL_FD_ATTR)
};

static struct genl_family xdpoff_nl_family;

static void xdpoff_nl_put_maps(struct bpf_map *maps[XDPOFF_NR_MAPS], int n)
{
	while (n--)
		bpf_map_put(maps[n]);
}

static int xdpoff_nl_get_maps(struct genl_info *info, struct bpf_map *maps[XDPOFF_NR_MAPS])
{
	int i;

	for (i = 0; i < XDPOFF_NR_MAPS; i++) {
		struct nlattr *attr = info->attrs[xdpoff_fd_attrs[i]];

		maps[i] = bpf_map_get(nla_get_u32(attr));
		if (IS_ERR(maps[i])) {
			int err = PTR_ERR(maps[i]);

			NL_SET_ERR_MSG_ATTR(info->extack, attr,
					    "fd is not a BPF map");
			xdpoff_nl_put_maps(maps, i);
			return err;
		}
	}
	return 0;
}

static int xdpoff_nl_attach(struct sk_buff *skb, struct genl_info *info)
{
	struct net_device *netdev;
	struct bpf_map *maps[XDPOFF_NR_MAPS];
	u32 mode = XDPOFF_XDP_NATIVE, prog_flags = 0;
	int i, err;

	if (GENL_REQ_ATTR_CHECK(info, XDPOFF_ATTR_IFINDEX))
		return -EINVAL;
	for (i = 0; i < XDPOFF_NR_MAPS; i++)
		if (GENL_REQ_ATTR_CHECK(info, xdpoff_fd_attrs[i]))
			return -EINVAL;
	if (info->attrs[XDPOFF_ATTR_XDP_MODE])
		mode = nla_get_u32(info->attrs[XDPOFF_ATTR_XDP_MODE]);
	if (info->attrs[XDPOFF_ATTR_PROG_FLAGS])
		prog_flags = nla_get_u32(info->attrs[XDPOFF_ATTR_PROG_FLAGS]);

	netdev = dev_get_by_index(genl_info_net(info),
				  nla_get_u32(info->attrs[XDPOFF_ATTR_IFINDEX]));
	if (!netdev) {
		NL_SET_ERR_MSG_MOD(info->extack, "no such device");
		return -ENODEV;
	}

	err = xdpoff_nl_get_maps(info, maps);
	if (err)
		goto out_put_dev;

	err = xdpoff_dev_attach(netdev, maps, mode, prog_flags, info->extack);
	if (err)
		xdpoff_nl_put_maps(maps, XDPOFF_NR_MAPS);
out_put_dev:
	dev_put(netdev);
	return err;
}

static int xdpoff_nl_detach(struct sk_buff *skb, struct genl_info *info)
{
	struct xdpoff_dev *xdev;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, XDPOFF_ATTR_IFINDEX))
		return -EINVAL;

	mutex_lock(&xdpoff_lock);
	xdev = xdpoff_dev_find_ifindex(genl_info_net(info),
				       nla_get_u32(info->attrs[XDPOFF_ATTR_IFINDEX]));
	if (xdev) {
		err = xdpoff_dev_detach(xdev, info->extack);
	} else {
		NL_SET_ERR_MSG_MOD(info->extack, "device is not attached");
		err = -ENOENT;
	}
	mutex_unlock(&xdpoff_lock);
	return err;
}

static int xdpoff_nl_fill_dev(struct sk_buff *skb, struct xdpoff_dev *xdev,
			      u32 portid, u32 seq)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &xdpoff_nl_family, NLM_F_MULTI,
			  XDPOFF_CMD_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, XDPOFF_ATTR_IFINDEX, xdev->ifindex) ||
	    nla_put_u32(skb, XDPOFF_ATTR_NR_RULES, xdev->nr_rules) ||
	    nla_put_u32(skb, XDPOFF_ATTR_NR_BLOCKS, xdev->nr_blocks) ||
	    nla_put_u32(skb, XDPOFF_ATTR_MAX_RULES, xdev->max_rules) ||
	    nla_put_u32(skb, XDPOFF_ATTR_NR_FLOWS, xdev->nr_flows) ||
	    nla_put_u32(skb, XDPOFF_ATTR_XDP_MODE, xdev->generic ?
			XDPOFF_XDP_GENERIC : XDPOFF_XDP_NATIVE) ||
	    nla_put_u32(skb, XDPOFF_ATTR_PROG_FLAGS, xdev->prog_flags) ||
	    nla_put_u64_64bit(skb, XDPOFF_ATTR_JIFFIES, get_jiffies_64(),
			      XDPOFF_ATTR_PAD) ||
	    nla_put_u32(skb, XDPOFF_ATTR_HZ, HZ) ||
	    nla_put_u32(skb, XDPOFF_ATTR_REFUSALS, xdev->refusals) ||
	    (xdev->last_error &&
	     nla_put_string(skb, XDPOFF_ATTR_LAST_ERROR, xdev->last_error))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int xdpoff_nl_get_dumpit(struct sk_buff *skb,
				struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	struct xdpoff_dev *xdev;
	long idx = 0;

	mutex_lock(&xdpoff_lock);
	list_for_each_entry(xdev, &xdpoff_devs, list) {
		if (!net_eq(dev_net(xdev->netdev), net))
			continue;
		if (idx++ < cb->args[0])
			continue;
		if (xdpoff_nl_fill_dev(skb, xdev, NETLINK_CB(cb->skb).portid,
				       cb->nlh->nlmsg_seq)) {
			idx--;
			break;
		}
	}
	mutex_unlock(&xdpoff_lock);
	cb->args[0] = idx;
	return skb->len;
}

static const struct genl_small_ops xdpoff_nl_ops[] = {
	{
		.cmd	= XDPOFF_CMD_ATTACH,
		.doit	= xdpoff_nl_attach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= XDPOFF_CMD_DETACH,
		.doit	= xdpoff_nl_detach,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
	{
		.cmd	= XDPOFF_CMD_GET,
		.dumpit	= xdpoff_nl_get_dumpit,
		.flags	= GENL_UNS_ADMIN_PERM,
	},
};

static struct genl_family xdpoff_nl_family __ro_after_init = {
	.name		= XDPOFF_GENL_NAME,
	.version	= XDPOFF_GENL_VERSION,
	.maxattr	= XDPOFF_ATTR_MAX,
	.policy		= xdpoff_nl_policy,
	.netnsok	= true,
	.module		= THIS_MODULE,
	.small_ops	= xdpoff_nl_ops,
	.n_small_ops	= ARRAY_SIZE(xdpoff_nl_ops),
	.resv_start_op	= XDPOFF_CMD_GET + 1,
};

int xdpoff_nl_init(void)
{
	return genl_register_family(&xdpoff_nl_family);
}

void xdpoff_nl_uninit(void)
{
	genl_unregister_family(&xdpoff_nl_family);
}
