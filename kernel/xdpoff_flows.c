// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: a device's offloaded flows (nft flowtable offload).
 *
 * nf_flow_table_offload.c hands each direction of a connection it
 * offloads to every block cb of the flowtable as a TC_SETUP_CLSFLOWER
 * command whose cookie is the address of that direction's tuple: a match
 * on meta ingress_ifindex, the addresses, the ports and TCP flags (FIN
 * and RST clear), and actions that rewrite the MAC addresses, NAT the
 * addresses and ports, and redirect.  The cb of the device the direction
 * comes in on takes it: one entry of that device's flows map, keyed by
 * the tuple, which the XDP program looks up at the flowtable's place
 * among the device's rules and forwards with, as
 * nf_flow_offload_ip_hook() does in software.  What XDP cannot do
 * exactly (VLAN, PPPoE, tunnels, GRE, an output device not attached) is
 * refused with a reason: the flow stays in the software flowtable.  The
 * flow_rule is gone when REPLACE returns; all that is needed is copied.
 * Commands come from nf_tables' workqueues, and REPLACE of an installed
 * cookie, or DESTROY and STATS of one never installed, are normal.
 */

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/slab.h>
#include <net/flow_offload.h>
#include <net/netfilter/nf_flow_table.h>

#include "xdpoff.h"

/* The match keys nf_flow_rule_match() uses without tunnels and VLANs. */
#define XDPOFF_FLOW_KEYS	(BIT_ULL(FLOW_DISSECTOR_KEY_META) |		\
				 BIT_ULL(FLOW_DISSECTOR_KEY_CONTROL) |		\
				 BIT_ULL(FLOW_DISSECTOR_KEY_BASIC) |		\
				 BIT_ULL(FLOW_DISSECTOR_KEY_IPV4_ADDRS) |	\
				 BIT_ULL(FLOW_DISSECTOR_KEY_IPV6_ADDRS) |	\
				 BIT_ULL(FLOW_DISSECTOR_KEY_TCP) |		\
				 BIT_ULL(FLOW_DISSECTOR_KEY_PORTS))

/* A flow parsed from its flow_rule. */
struct xdpoff_flow_parse {
	struct xdpoff_flow_key	key;
	struct xdpoff_flow_val	val;
	struct net_device	*out;
	u8			eth_keep[12];	/* bytes no mangle set yet */
	u32			ports;		/* XDPOFF_NAT_* with a port */
	u32			addrs;		/* XDPOFF_NAT_* with an address */
};

/* Which flows the cb of @xdev takes: those that come in on its device. */
static bool xdpoff_flow_ours(const struct flow_rule *rule,
			     const struct xdpoff_dev *xdev)
{
	struct flow_match_meta meta;

	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_META))
		return false;
	flow_rule_match_meta(rule, &meta);
	return meta.mask->ingress_ifindex == 0xffffffff &&
	       meta.key->ingress_ifindex == xdev->ifindex;
}

static int xdpoff_flow_parse_match(struct xdpoff_dev *xdev,
				   const struct flow_rule *rule,
				   struct xdpoff_flow_parse *p)
{
	struct flow_match_basic basic;
	struct flow_match_ports ports;
	struct flow_match_tcp tcp;

	if (rule->match.dissector->used_keys & ~XDPOFF_FLOW_KEYS)
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow with VLAN or tunnel keys: not offloaded");
	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_BASIC))
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow without protocols");
	flow_rule_match_basic(rule, &basic);
	switch (basic.key->ip_proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		break;
	default:
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow of a protocol other than TCP and UDP: not offloaded");
	}
	p->key.proto = basic.key->ip_proto;

	if (basic.key->n_proto == htons(ETH_P_IP) &&
	    flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV4_ADDRS)) {
		struct flow_match_ipv4_addrs a;

		flow_rule_match_ipv4_addrs(rule, &a);
		p->key.family = XDPOFF_F_IPV4;
		p->key.saddr[0] = a.key->src;
		p->key.daddr[0] = a.key->dst;
	} else if (basic.key->n_proto == htons(ETH_P_IPV6) &&
		   flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV6_ADDRS)) {
		struct flow_match_ipv6_addrs a;

		flow_rule_match_ipv6_addrs(rule, &a);
		p->key.family = XDPOFF_F_IPV6;
		memcpy(p->key.saddr, &a.key->src, sizeof(p->key.saddr));
		memcpy(p->key.daddr, &a.key->dst, sizeof(p->key.daddr));
	} else {
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow without IPv4 or IPv6 addresses");
	}

	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_PORTS))
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow without ports");
	flow_rule_match_ports(rule, &ports);
	p->key.sport = ports.key->src;
	p->key.dport = ports.key->dst;

	/* TCP: FIN and RST clear; XDP leaves frames with them to software. */
	if (p->key.proto == IPPROTO_TCP) {
		if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_TCP))
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": TCP flow without its flags match");
		flow_rule_match_tcp(rule, &tcp);
		if (tcp.key->flags ||
		    tcp.mask->flags != cpu_to_be16(be32_to_cpu(TCP_FLAG_RST |
							       TCP_FLAG_FIN) >> 16))
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": TCP flow with another flags match than FIN and RST clear");
	}
	return 0;
}

/* The MAC addresses: (word & mask) | val on the first 12 bytes. */
static int xdpoff_flow_mangle_eth(const struct flow_action_entry *act,
				  struct xdpoff_flow_parse *p)
{
	u8 *mac = p->val.dmac;	/* dmac, then smac: 12 bytes */
	u32 off = act->mangle.offset, i;
	u8 m[4], v[4];

	BUILD_BUG_ON(offsetof(struct xdpoff_flow_val, smac) != 6);
	if (off > 8 || off % 4)
		return -EINVAL;
	memcpy(m, &act->mangle.mask, 4);
	memcpy(v, &act->mangle.val, 4);
	for (i = 0; i < 4; i++) {
		mac[off + i] = (mac[off + i] & m[i]) | v[i];
		p->eth_keep[off + i] &= m[i];
	}
	return 0;
}

/* An address replaced whole: IPv4 saddr/daddr, IPv6 one word of them. */
static int xdpoff_flow_mangle_ip(const struct flow_action_entry *act,
				 struct xdpoff_flow_parse *p)
{
	u32 off = act->mangle.offset, saddr, daddr, len;

	if (act->mangle.mask)
		return -EINVAL;
	if (act->mangle.htype == FLOW_ACT_MANGLE_HDR_TYPE_IP4) {
		if (p->key.family != XDPOFF_F_IPV4)
			return -EINVAL;
		saddr = offsetof(struct iphdr, saddr);
		daddr = offsetof(struct iphdr, daddr);
		len = 4;
	} else {
		if (p->key.family != XDPOFF_F_IPV6)
			return -EINVAL;
		saddr = offsetof(struct ipv6hdr, saddr);
		daddr = offsetof(struct ipv6hdr, daddr);
		len = 16;
	}
	if (off % 4)
		return -EINVAL;
	if (off >= saddr && off < saddr + len) {
		p->addrs |= XDPOFF_NAT_SRC;
		p->val.nat_saddr[(off - saddr) / 4] = act->mangle.val;
	} else if (off >= daddr && off < daddr + len) {
		p->addrs |= XDPOFF_NAT_DST;
		p->val.nat_daddr[(off - daddr) / 4] = act->mangle.val;
	} else {
		return -EINVAL;
	}
	return 0;
}

/* A port: the first word of the TCP/UDP header, one half replaced. */
static int xdpoff_flow_mangle_port(const struct flow_action_entry *act,
				   struct xdpoff_flow_parse *p)
{
	u8 m[4], v[4];

	if (act->mangle.offset ||
	    (act->mangle.htype == FLOW_ACT_MANGLE_HDR_TYPE_TCP) !=
	    (p->key.proto == IPPROTO_TCP))
		return -EINVAL;
	memcpy(m, &act->mangle.mask, 4);
	memcpy(v, &act->mangle.val, 4);
	if (!m[0] && !m[1] && m[2] == 0xff && m[3] == 0xff) {
		memcpy(&p->val.nat_sport, v, 2);
		p->ports |= XDPOFF_NAT_SRC;
	} else if (m[0] == 0xff && m[1] == 0xff && !m[2] && !m[3]) {
		memcpy(&p->val.nat_dport, v + 2, 2);
		p->ports |= XDPOFF_NAT_DST;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int xdpoff_flow_parse_actions(struct xdpoff_dev *xdev,
				     const struct flow_rule *rule,
				     struct xdpoff_flow_parse *p)
{
	const struct flow_action_entry *act;
	int i, err;

	memset(p->eth_keep, 0xff, sizeof(p->eth_keep));
	flow_action_for_each(i, act, &rule->action) {
		switch (act->id) {
		case FLOW_ACTION_MANGLE:
			switch (act->mangle.htype) {
			case FLOW_ACT_MANGLE_HDR_TYPE_ETH:
				err = xdpoff_flow_mangle_eth(act, p);
				break;
			case FLOW_ACT_MANGLE_HDR_TYPE_IP4:
			case FLOW_ACT_MANGLE_HDR_TYPE_IP6:
				err = xdpoff_flow_mangle_ip(act, p);
				break;
			case FLOW_ACT_MANGLE_HDR_TYPE_TCP:
			case FLOW_ACT_MANGLE_HDR_TYPE_UDP:
				err = xdpoff_flow_mangle_port(act, p);
				break;
			default:
				err = -EINVAL;
			}
			if (err)
				return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
					": flow with a header edit the flowtable does not make");
			break;
		case FLOW_ACTION_CSUM:
			/* XDP updates the checksums as software does. */
			break;
		case FLOW_ACTION_REDIRECT:
			if (p->out)
				return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
					": flow with two output devices");
			p->out = act->dev;
			break;
		case FLOW_ACTION_VLAN_POP:
		case FLOW_ACTION_VLAN_PUSH:
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": flow through a VLAN device: not offloaded");
		case FLOW_ACTION_PPPOE_PUSH:
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": PPPoE flow: not offloaded");
		case FLOW_ACTION_TUNNEL_ENCAP:
		case FLOW_ACTION_TUNNEL_DECAP:
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": tunnel flow: not offloaded");
		default:
			return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
				": flow with an action xdpoff does not know");
		}
	}
	if (memchr_inv(p->eth_keep, 0, sizeof(p->eth_keep)))
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow without both MAC addresses");
	if (!p->out)
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow without an output device");
	/* nf_flow_rule_route_ipv4/6() edit a port with each address. */
	if (p->ports != p->addrs)
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow with NAT of an address without its port");
	p->val.nat = p->addrs;
	xdpoff_flow_csum_diffs(&p->key, &p->val);
	return 0;
}

static struct xdpoff_flow *xdpoff_flow_find(struct xdpoff_dev *xdev,
					    unsigned long cookie)
{
	struct xdpoff_flow *fl;

	hash_for_each_possible(xdev->flow_table, fl, node, cookie)
		if (fl->cookie == cookie)
			return fl;
	return NULL;
}

static u32 xdpoff_flow_key_hash(const struct xdpoff_flow_key *key)
{
	return jhash(key, sizeof(*key), 0);
}

/* The flow that holds @key in the map, whichever its cookie. */
static struct xdpoff_flow *xdpoff_flow_find_key(struct xdpoff_dev *xdev,
						const struct xdpoff_flow_key *key)
{
	struct xdpoff_flow *fl;

	hash_for_each_possible(xdev->flow_keys, fl, key_node,
			       xdpoff_flow_key_hash(key))
		if (!memcmp(&fl->key, key, sizeof(*key)))
			return fl;
	return NULL;
}

/* Frames stop finding it at once. */
static void xdpoff_flow_free(struct xdpoff_dev *xdev, struct xdpoff_flow *fl)
{
	xdpoff_map_delete(xdpoff_map(xdev, FLOWS), &fl->key);
	hash_del(&fl->key_node);
	spin_lock(&xdpoff_stats_lock);
	hash_del(&fl->node);
	spin_unlock(&xdpoff_stats_lock);
	xdev->nr_flows--;
	xdpoff_dev_put(fl->out);
	kfree(fl);
}

/*
 * FLOW_CLS_REPLACE of a flow, from @port's flowtable.  -EOPNOTSUPP for a
 * flow of another device (each device's cb sees every flow of the
 * flowtable) or one refused.
 */
int xdpoff_flow_replace(const struct xdpoff_port *port,
			struct flow_cls_offload *f)
{
	const struct flow_offload_tuple *tuple = (const void *)f->cookie;
	struct xdpoff_dev *xdev = port->xdev;
	struct flow_rule *rule = flow_cls_offload_flow_rule(f);
	struct xdpoff_flow_parse p = {};
	struct xdpoff_flow *fl, *old;
	struct xdpoff_dev *out;
	int err;

	if (!xdev->netdev || !xdpoff_flow_ours(rule, xdev))
		return -EOPNOTSUPP;
	/*
	 * Frames that come in tagged or in a PPPoE session: the flow_rule
	 * says so for a VLAN (a VLAN match), not for PPPoE (6.1 and 6.12
	 * match and pop no PPPoE header); the tuple does.  XDP leaves such
	 * frames to software: a flow held for them would never be used,
	 * and conntrack would say [HW_OFFLOAD].
	 */
	if (tuple->encap_num)
		return xdpoff_refuse(xdev, NULL,
			tuple->encap[0].proto == htons(ETH_P_PPP_SES) ?
			KBUILD_MODNAME ": PPPoE flow: not offloaded" :
			KBUILD_MODNAME ": flow through a VLAN device: not offloaded");

	err = xdpoff_flow_parse_match(xdev, rule, &p);
	if (err)
		return err;
	err = xdpoff_flow_parse_actions(xdev, rule, &p);
	if (err)
		return err;
	out = xdpoff_dev_find(p.out);
	if (!out)
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow to an output device not attached with xdpoff");
	if (!xdpoff_dev_can_redirect(xdev, out))
		return xdpoff_refuse(xdev, NULL, KBUILD_MODNAME
			": flow to an output device in generic XDP mode, native XDP cannot send to it");
	p.val.ifindex = out->ifindex;
	/*
	 * The route's MTU is not in the flow_rule: the cookie is the
	 * tuple, which lives until DESTROY (nf_flow_offload_tuple()).
	 */
	p.val.mtu = tuple->mtu;

	xdev->flow_replaces++;
	old = xdpoff_flow_find(xdev, f->cookie);
	/*
	 * The flowtable offers an offloaded flow again whenever its software
	 * path refreshes the flow's timeout (flow_offload_refresh(), for a
	 * frame that reached software: sent before the flow was installed,
	 * or held back by a tc filter in software).  The flow stays as it
	 * is, its counters too: reinstalled, frames would miss it meanwhile,
	 * and what XDP counted since the last FLOW_CLS_STATS would be lost.
	 */
	if (old && old->port == port && old->out == out &&
	    !memcmp(&old->key, &p.key, sizeof(p.key)) &&
	    !memcmp(&old->val, &p.val, sizeof(p.val)))
		return 0;
	if (old)
		xdpoff_flow_free(xdev, old);
	/*
	 * The map entry of a connection torn down whose DESTROY has not come
	 * yet (the flowtable adds and deletes from separate workqueues): the
	 * new flow takes it over, the late DESTROY finds nothing.
	 */
	old = xdpoff_flow_find_key(xdev, &p.key);
	if (old)
		xdpoff_flow_free(xdev, old);
	if (xdev->nr_flows >= xdev->max_flows)
		return xdpoff_refuse(xdev, NULL, xdev->flows_full);

	fl = kzalloc(sizeof(*fl), GFP_KERNEL);
	if (!fl)
		return -ENOMEM;
	fl->cookie = f->cookie;
	fl->port = port;
	fl->key = p.key;
	fl->val = p.val;
	/* Counters zero; the key no other flow holds (freed above). */
	err = xdpoff_map_update(xdpoff_map(xdev, FLOWS), &fl->key, &fl->val,
				BPF_NOEXIST);
	if (err) {
		kfree(fl);
		return err;
	}
	fl->out = out;
	xdpoff_dev_hold(out);
	xdev->nr_flows++;
	hash_add(xdev->flow_keys, &fl->key_node, xdpoff_flow_key_hash(&fl->key));
	spin_lock(&xdpoff_stats_lock);
	hash_add(xdev->flow_table, &fl->node, fl->cookie);
	spin_unlock(&xdpoff_stats_lock);
	return 0;
}

void xdpoff_flow_destroy(const struct xdpoff_port *port, unsigned long cookie)
{
	struct xdpoff_flow *fl = xdpoff_flow_find(port->xdev, cookie);

	if (fl && fl->port == port)
		xdpoff_flow_free(port->xdev, fl);
}

/*
 * FLOW_CLS_STATS: what XDP forwarded since the last report (the flowtable
 * adds it to conntrack's counters with its `counter` flag) and when it
 * last forwarded a frame (keeps the flow from timing out).  Under
 * xdpoff_stats_lock.
 */
void xdpoff_flow_stats(struct xdpoff_dev *xdev, struct flow_cls_offload *f)
{
	struct xdpoff_flow_val *v;
	struct bpf_map *map;
	struct xdpoff_flow *fl;
	u64 pkts, bytes, used;

	lockdep_assert_held(&xdpoff_stats_lock);
	hash_for_each_possible(xdev->flow_table, fl, node, f->cookie) {
		if (fl->cookie != f->cookie)
			continue;
		rcu_read_lock();
		map = xdpoff_map(xdev, FLOWS);
		v = map->ops->map_lookup_elem(map, &fl->key);
		if (v) {
			pkts = READ_ONCE(v->packets);
			bytes = READ_ONCE(v->bytes);
			used = READ_ONCE(v->last_used);
		}
		rcu_read_unlock();
		if (!v || pkts < fl->reported_pkts)
			return;
		/* lastused: XDP keeps the jiffies of its last frame */
		flow_stats_update(&f->stats, bytes - fl->reported_bytes,
				  pkts - fl->reported_pkts, 0, used,
				  FLOW_ACTION_HW_STATS_DELAYED);
		fl->reported_pkts = pkts;
		fl->reported_bytes = bytes;
		return;
	}
}

/* Remove the flows @port's flowtable put on its device (unbound). */
void xdpoff_flows_flush_port(const struct xdpoff_port *port)
{
	struct xdpoff_flow *fl;
	struct hlist_node *tmp;
	int bkt;

	lockdep_assert_held(&xdpoff_lock);
	hash_for_each_safe(port->xdev->flow_table, bkt, tmp, fl, node)
		if (fl->port == port)
			xdpoff_flow_free(port->xdev, fl);
}

/* Remove the flows of every device that go out through @out (gone). */
void xdpoff_flows_flush_out(struct xdpoff_dev *out)
{
	struct xdpoff_flow *fl;
	struct hlist_node *tmp;
	struct xdpoff_dev *d;
	int bkt;

	lockdep_assert_held(&xdpoff_lock);
	list_for_each_entry(d, &xdpoff_devs, list)
		hash_for_each_safe(d->flow_table, bkt, tmp, fl, node)
			if (fl->out == out)
				xdpoff_flow_free(d, fl);
}
