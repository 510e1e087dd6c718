// SPDX-License-Identifier: GPL-2.0
/* xdpoff: flow_rule -> map entries, and the driver's shadow rule table. */

#include <linux/bpf.h>
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/jhash.h>
#include <linux/slab.h>
#include <net/flow_offload.h>
#include <net/netfilter/nf_tables.h>
#include <net/pkt_cls.h>

#include "xdpoff.h"

#define XDPOFF_KEY_MSG(key, what) \
	[FLOW_DISSECTOR_KEY_##key] = KBUILD_MODNAME ": match on " what \
				     " is not supported"

/* What nft/tc prints for a dissector key this driver does not handle. */
static const char * const xdpoff_key_unsupported[FLOW_DISSECTOR_KEY_MAX] = {
	XDPOFF_KEY_MSG(PORTS_RANGE, "port ranges"),
	XDPOFF_KEY_MSG(ICMP, "icmp type or code"),
	XDPOFF_KEY_MSG(ARP, "arp"),
	XDPOFF_KEY_MSG(TCP, "tcp flags"),
	XDPOFF_KEY_MSG(IP, "ip tos or ttl"),
	XDPOFF_KEY_MSG(MPLS, "mpls"),
	XDPOFF_KEY_MSG(CT, "conntrack state"),
	XDPOFF_KEY_MSG(ENC_KEYID, "tunnel key id"),
	XDPOFF_KEY_MSG(ENC_IPV4_ADDRS, "tunnel addresses"),
	XDPOFF_KEY_MSG(ENC_IPV6_ADDRS, "tunnel addresses"),
	XDPOFF_KEY_MSG(ENC_CONTROL, "tunnel control"),
	XDPOFF_KEY_MSG(ENC_PORTS, "tunnel ports"),
	XDPOFF_KEY_MSG(ENC_IP, "tunnel ip tos or ttl"),
	XDPOFF_KEY_MSG(ENC_OPTS, "tunnel options"),
};

#define XDPOFF_KEYS_SUPPORTED					\
	(BIT_ULL(FLOW_DISSECTOR_KEY_META) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_CONTROL) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_BASIC) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_ETH_ADDRS) |		\
	 BIT_ULL(FLOW_DISSECTOR_KEY_VLAN) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_CVLAN) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_IPV4_ADDRS) |		\
	 BIT_ULL(FLOW_DISSECTOR_KEY_IPV6_ADDRS) |		\
	 BIT_ULL(FLOW_DISSECTOR_KEY_PORTS))

/*
 * meta iif and iiftype: the maps belong to one device, so the match is
 * decided here, once.  A rule for another device (a chain bound to
 * several) never matches on this one.
 */
static void xdpoff_parse_meta(struct xdpoff_dev *xdev,
			      const struct flow_rule *rule,
			      struct xdpoff_match *m)
{
	struct flow_match_meta match;

	flow_rule_match_meta(rule, &match);
	if ((match.key->ingress_ifindex ^ xdev->ifindex) &
	    match.mask->ingress_ifindex)
		m->never = true;
	if ((match.key->ingress_iftype ^ xdev->netdev->type) &
	    match.mask->ingress_iftype)
		m->never = true;
}

/* Require key & mask bits of @flags in the frame's flags. */
static void xdpoff_require(struct xdpoff_match *m, u8 flags)
{
	m->key.flags |= flags;
	m->mask.flags |= flags;
}

/* A tag's TCI: nf_tables hands it over in host order (NETWORK2HOST). */
static void xdpoff_tci(const struct flow_match_vlan *match, __be16 *k,
		       __be16 *mk)
{
	*k = htons((__force u16)match->key->vlan_tci);
	*mk = htons((__force u16)match->mask->vlan_tci);
}

/*
 * VLAN keys in the flow dissector's convention (nft_flow_rule_transfer_vlan
 * rewrites nf_tables' payload matches into it): vlan.vlan_tpid is the
 * frame's EtherType (the outer TPID), cvlan.vlan_tpid the EtherType behind
 * the outer tag (the inner TPID), and basic.n_proto the EtherType behind
 * the last matched tag.  Map them onto the frame's layout.
 */
static int xdpoff_parse_vlan(const struct flow_rule *rule,
			     struct xdpoff_match *m,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;
	struct flow_match_vlan vlan, cvlan;

	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_VLAN)) {
		if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CVLAN)) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on inner vlan without outer vlan is not supported");
			return -EOPNOTSUPP;
		}
		/*
		 * The stack strips a tag before nf_tables reads the
		 * protocol, XDP sees it: an EtherType match without a vlan
		 * key takes untagged frames only.
		 */
		k->n_proto = m->l3_proto;
		mk->n_proto = m->l3_proto_mask;
		if (mk->n_proto) {
			mk->flags |= XDPOFF_F_VLAN;
			m->needs |= XDPOFF_U_ETYPE;
		}
		return 0;
	}

	flow_rule_match_vlan(rule, &vlan);
	if (vlan.mask->vlan_eth_type) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on vlan eth_type is not supported");
		return -EOPNOTSUPP;
	}
	if (vlan.mask->vlan_tpid != htons(0xffff)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on vlan needs its ethertype (8021q or 8021ad)");
		return -EOPNOTSUPP;
	}
	k->n_proto = vlan.key->vlan_tpid;
	mk->n_proto = vlan.mask->vlan_tpid;
	xdpoff_tci(&vlan, &k->vlan_tci, &mk->vlan_tci);
	xdpoff_require(m, XDPOFF_F_VLAN);

	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CVLAN)) {
		k->vlan_etype = m->l3_proto;
		mk->vlan_etype = m->l3_proto_mask;
		return 0;
	}

	flow_rule_match_cvlan(rule, &cvlan);
	if (cvlan.mask->vlan_eth_type) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on inner vlan eth_type is not supported");
		return -EOPNOTSUPP;
	}
	k->vlan_etype = cvlan.key->vlan_tpid;
	mk->vlan_etype = cvlan.mask->vlan_tpid;
	xdpoff_tci(&cvlan, &k->cvlan_tci, &mk->cvlan_tci);
	k->cvlan_etype = m->l3_proto;
	mk->cvlan_etype = m->l3_proto_mask;
	xdpoff_require(m, XDPOFF_F_CVLAN);
	return 0;
}

static void xdpoff_parse_addrs(const struct flow_rule *rule,
			       struct xdpoff_match *m, u16 addr_type)
{
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;

	if (addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS) {
		struct flow_match_ipv4_addrs match;

		flow_rule_match_ipv4_addrs(rule, &match);
		k->saddr[0] = match.key->src;
		mk->saddr[0] = match.mask->src;
		k->daddr[0] = match.key->dst;
		mk->daddr[0] = match.mask->dst;
	} else {
		struct flow_match_ipv6_addrs match;

		flow_rule_match_ipv6_addrs(rule, &match);
		memcpy(k->saddr, &match.key->src, sizeof(k->saddr));
		memcpy(mk->saddr, &match.mask->src, sizeof(mk->saddr));
		memcpy(k->daddr, &match.key->dst, sizeof(k->daddr));
		memcpy(mk->daddr, &match.mask->dst, sizeof(mk->daddr));
	}
}

static int xdpoff_parse_keys(struct xdpoff_dev *xdev,
			     const struct flow_rule *rule,
			     struct xdpoff_match *m,
			     struct netlink_ext_ack *extack)
{
	u64 unsupported = rule->match.dissector->used_keys &
			  ~XDPOFF_KEYS_SUPPORTED;
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;
	int err;

	if (unsupported) {
		int key = __ffs64(unsupported);
		const char *msg = key < FLOW_DISSECTOR_KEY_MAX ?
				  xdpoff_key_unsupported[key] : NULL;

		xdpoff_set_err_msg(extack, msg ? msg : KBUILD_MODNAME
				   ": match on this key is not supported");
		return -EOPNOTSUPP;
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_META))
		xdpoff_parse_meta(xdev, rule, m);

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CONTROL)) {
		struct flow_match_control match;

		flow_rule_match_control(rule, &match);
		if (match.mask->flags) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on fragment flags is not supported");
			return -EOPNOTSUPP;
		}
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_BASIC)) {
		struct flow_match_basic match;

		flow_rule_match_basic(rule, &match);
		m->l3_proto = match.key->n_proto;
		m->l3_proto_mask = match.mask->n_proto;
		k->ip_proto = match.key->ip_proto;
		mk->ip_proto = match.mask->ip_proto;
	}

	err = xdpoff_parse_vlan(rule, m, extack);
	if (err)
		return err;

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ETH_ADDRS)) {
		struct flow_match_eth_addrs match;

		flow_rule_match_eth_addrs(rule, &match);
		ether_addr_copy(k->dmac, match.key->dst);
		ether_addr_copy(mk->dmac, match.mask->dst);
		ether_addr_copy(k->smac, match.key->src);
		ether_addr_copy(mk->smac, match.mask->src);
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV4_ADDRS) &&
	    flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV6_ADDRS)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on ip and ip6 addresses at once is not supported");
		return -EOPNOTSUPP;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV4_ADDRS))
		xdpoff_parse_addrs(rule, m, FLOW_DISSECTOR_KEY_IPV4_ADDRS);
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV6_ADDRS))
		xdpoff_parse_addrs(rule, m, FLOW_DISSECTOR_KEY_IPV6_ADDRS);

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_PORTS)) {
		struct flow_match_ports match;

		flow_rule_match_ports(rule, &match);
		k->sport = match.key->src;
		mk->sport = match.mask->src;
		k->dport = match.key->dst;
		mk->dport = match.mask->dst;
	}
	return 0;
}

static bool xdpoff_any(const void *p, size_t len)
{
	return memchr_inv(p, 0, len) != NULL;
}

/*
 * The XDP parser fills the l3 fields only for a valid IPv4 or IPv6 header,
 * ip_proto only when it is the transport protocol (no IPv6 extension
 * headers), ports only for the first fragment of TCP or UDP.  nf_tables
 * takes the same care, and more, so a rule matching on those fields needs
 * them present: the flags make that part of the key.  Frames XDP cannot
 * parse are left to software.
 */
static int xdpoff_check_deps(struct xdpoff_match *m,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;
	bool addrs = xdpoff_any(mk->saddr, sizeof(mk->saddr)) ||
		     xdpoff_any(mk->daddr, sizeof(mk->daddr));

	if (addrs) {
		if (mk->cvlan_tci || mk->cvlan_etype) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on addresses behind two vlan tags is not supported");
			return -EOPNOTSUPP;
		}
		if (m->l3_proto_mask != htons(0xffff) ||
		    (m->l3_proto != htons(ETH_P_IP) &&
		     m->l3_proto != htons(ETH_P_IPV6))) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on addresses needs the protocol (ip or ip6)");
			return -EOPNOTSUPP;
		}
		xdpoff_require(m, m->l3_proto == htons(ETH_P_IP) ?
				  XDPOFF_F_IPV4 : XDPOFF_F_IPV6);
		m->needs |= XDPOFF_U_L3;
	}
	/* ip protocol reads the header, meta l4proto needs it valid: same key */
	if (mk->ip_proto) {
		xdpoff_require(m, XDPOFF_F_PROTO);
		m->needs |= XDPOFF_U_L3 | XDPOFF_U_PROTO;
	}
	if (mk->sport || mk->dport) {
		if (mk->ip_proto != 0xff ||
		    (k->ip_proto != IPPROTO_TCP && k->ip_proto != IPPROTO_UDP)) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on ports is only supported for tcp and udp");
			return -EOPNOTSUPP;
		}
		xdpoff_require(m, XDPOFF_F_L4);
		m->needs |= XDPOFF_U_L4;
	}
	return 0;
}

static int xdpoff_parse_actions(const struct flow_rule *rule,
				struct xdpoff_match *m,
				struct netlink_ext_ack *extack)
{
	const struct flow_action_entry *act;
	int i;

	if (rule->action.num_entries != 1) {
		NL_SET_ERR_MSG_MOD(extack,
				   "exactly one action per rule is supported");
		return -EOPNOTSUPP;
	}

	flow_action_for_each(i, act, &rule->action) {
		switch (act->id) {
		case FLOW_ACTION_ACCEPT:
			m->action = XDPOFF_ACT_PASS;
			break;
		case FLOW_ACTION_DROP:
			m->action = XDPOFF_ACT_DROP;
			break;
		case FLOW_ACTION_REDIRECT:
			m->action = XDPOFF_ACT_REDIRECT;
			m->fwd_dev = act->dev;
			break;
		case FLOW_ACTION_MIRRED:
			NL_SET_ERR_MSG_MOD(extack,
					   "dup is not supported: XDP cannot clone frames");
			return -EOPNOTSUPP;
		default:
			NL_SET_ERR_MSG_MOD(extack, "action is not supported");
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

int xdpoff_flower_parse(struct xdpoff_dev *xdev, const struct flow_rule *rule,
			struct xdpoff_match *m, struct netlink_ext_ack *extack)
{
	int err;

	memset(m, 0, sizeof(*m));
	err = xdpoff_parse_keys(xdev, rule, m, extack);
	if (err)
		return err;
	err = xdpoff_check_deps(m, extack);
	if (err)
		return err;
	return xdpoff_parse_actions(rule, m, extack);
}

static u32 xdpoff_key_hash(const struct xdpoff_rule_key *key)
{
	return jhash(key, sizeof(*key), 0);
}

static struct xdpoff_rule *xdpoff_rule_find(struct xdpoff_dev *xdev,
					    unsigned long cookie)
{
	struct xdpoff_rule *r;

	hash_for_each_possible(xdev->by_cookie, r, cookie_node, cookie)
		if (r->cookie == cookie)
			return r;
	return NULL;
}

/* The rule that owns the map entry of @key, and the best other one. */
static void xdpoff_key_rules(struct xdpoff_dev *xdev,
			     const struct xdpoff_rule_key *key,
			     const struct xdpoff_rule *skip,
			     struct xdpoff_rule **owner,
			     struct xdpoff_rule **best)
{
	struct xdpoff_rule *r;

	*owner = NULL;
	*best = NULL;
	hash_for_each_possible(xdev->by_key, r, key_node, xdpoff_key_hash(key)) {
		if (r == skip || memcmp(&r->key, key, sizeof(*key)))
			continue;
		if (r->installed)
			*owner = r;
		if (!*best || r->val.order < (*best)->val.order)
			*best = r;
	}
}

/*
 * Where the rule runs in software: nft hooks after tc (bit 63), then chain
 * priority, then bind order among equal priorities (nf_hook_entries_grow()
 * puts a new hook before those of the same priority: the chain bound last
 * runs first), then the rule's position.  Offloaded chains only
 * append (nf_tables refuses insert and replace), so the rule handle is the
 * position, and it survives a DESTROY/REPLACE round trip of an aborted
 * transaction.  The cookie of an nf_tables rule is its struct nft_rule.
 */
static u64 xdpoff_rule_order(struct xdpoff_block *blk,
			     struct flow_cls_offload *f)
{
	const struct nft_rule *rule = (const struct nft_rule *)f->cookie;

	return BIT_ULL(63) | (u64)(f->common.prio & 0xffff) << 47 |
	       (u64)(0x7fff - (blk->seq & 0x7fff)) << 32 |
	       lower_32_bits(rule->handle);
}

/* fwd to DEV: DEV must take XDP frames, so it must run xdpoff too. */
static int xdpoff_rule_fwd(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			   struct net_device *target,
			   struct netlink_ext_ack *extack)
{
	struct xdpoff_dev *tdev = target ? xdpoff_dev_find(target) : NULL;

	if (!tdev || !net_eq(dev_net(target), dev_net(xdev->netdev))) {
		NL_SET_ERR_MSG_MOD(extack,
				   "fwd target must be attached with xdpoff (it takes XDP frames then)");
		return -EOPNOTSUPP;
	}
	r->fwd_dev = tdev;
	r->val.ifindex = tdev->ifindex;
	tdev->fwd_refs++;
	kref_get(&tdev->ref);
	return 0;
}

static void xdpoff_rule_unfwd(struct xdpoff_rule *r)
{
	if (!r->fwd_dev)
		return;
	r->fwd_dev->fwd_refs--;
	xdpoff_dev_put(r->fwd_dev);
	r->fwd_dev = NULL;
}

/* Write @r's entry unless an earlier rule with the same key holds it. */
static int xdpoff_rule_install(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			       struct netlink_ext_ack *extack)
{
	struct xdpoff_rule *owner, *best;
	int err;

	xdpoff_key_rules(xdev, &r->key, NULL, &owner, &best);
	if (owner && owner->val.order < r->val.order)
		return 0;

	err = xdpoff_map_update(xdev->rules, &r->key, &r->val, BPF_ANY);
	if (err) {
		NL_SET_ERR_MSG_MOD(extack, "failed to write the rules map");
		return err;
	}
	r->installed = true;
	if (owner)
		owner->installed = false;
	return 0;
}

static int xdpoff_rule_add(struct xdpoff_block *blk,
			   struct flow_cls_offload *f)
{
	struct netlink_ext_ack *extack = f->common.extack;
	struct xdpoff_dev *xdev = blk->xdev;
	struct xdpoff_match m;
	struct xdpoff_rule *r;
	int err;

	err = xdpoff_flower_parse(xdev, flow_cls_offload_flow_rule(f), &m,
				  extack);
	if (err)
		return err;

	if (xdev->nr_rules >= xdev->max_rules) {
		NL_SET_ERR_MSG_MOD(extack, "rule table is full");
		return -ENOSPC;
	}

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->cookie = f->cookie;
	r->blk = blk;
	r->never = m.never;
	r->val.action = m.action;
	r->val.stage = blk->stage;
	r->val.order = xdpoff_rule_order(blk, f);

	if (m.action == XDPOFF_ACT_REDIRECT) {
		err = xdpoff_rule_fwd(xdev, r, m.fwd_dev, extack);
		if (err)
			goto err_free_rule;
	}

	/* A rule for another device is kept, but has nothing to install. */
	if (r->never)
		goto out_add;

	err = xdpoff_mask_get(xdev, blk->stage, &m.mask, m.needs, r->val.order,
			      &r->mask_slot, extack);
	if (err)
		goto err_unfwd;
	r->key.mask_id = xdev->mask_slots[r->mask_slot].id;
	r->key.fields = m.key;

	err = xdpoff_stats_alloc(xdev, &r->val.stats_slot);
	if (err) {
		NL_SET_ERR_MSG_MOD(extack, "rule table is full");
		goto err_put_mask;
	}

	err = xdpoff_rule_install(xdev, r, extack);
	if (err)
		goto err_free_stats;
	hash_add(xdev->by_key, &r->key_node, xdpoff_key_hash(&r->key));
out_add:
	hash_add(xdev->by_cookie, &r->cookie_node, r->cookie);
	xdev->nr_rules++;
	return 0;

err_free_stats:
	xdpoff_stats_free(xdev, r->val.stats_slot);
err_put_mask:
	xdpoff_mask_put(xdev, r->mask_slot);
err_unfwd:
	xdpoff_rule_unfwd(r);
err_free_rule:
	kfree(r);
	return err;
}

/*
 * Remove @r: its map entry goes to the next rule with the same key, or is
 * deleted before the mask can go.
 */
static void xdpoff_rule_del(struct xdpoff_dev *xdev, struct xdpoff_rule *r)
{
	struct xdpoff_rule *owner, *best;

	hash_del(&r->cookie_node);
	xdev->nr_rules--;
	if (r->never)
		goto out_free;

	hash_del(&r->key_node);
	if (r->installed) {
		xdpoff_key_rules(xdev, &r->key, r, &owner, &best);
		if (best && !xdpoff_map_update(xdev->rules, &best->key,
					       &best->val, BPF_EXIST))
			best->installed = true;
		else
			xdpoff_map_delete(xdev->rules, &r->key);
	}
	xdpoff_stats_free(xdev, r->val.stats_slot);
	xdpoff_mask_put(xdev, r->mask_slot);
out_free:
	xdpoff_rule_unfwd(r);
	kfree(r);
}

/*
 * Report what XDP consumed since the last report (nf_tables adds it to the
 * rule's counter).  Frames XDP passed up meet the software rule, which
 * counts them itself.  XDP counts bytes as the stack does, from the
 * network header on (skb->len at ingress).
 */
static void xdpoff_rule_stats(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			      struct flow_cls_offload *f)
{
	struct xdpoff_stats st;
	u64 pkts, bytes;

	if (r->never)
		return;

	xdpoff_stats_read(xdev, r->val.stats_slot, &st);
	pkts = st.consumed_packets - r->reported_pkts;
	bytes = st.consumed_bytes - r->reported_bytes;
	flow_stats_update(&f->stats, bytes, pkts, 0, 0,
			  FLOW_ACTION_HW_STATS_DELAYED);
	r->reported_pkts = st.consumed_packets;
	r->reported_bytes = st.consumed_bytes;
}

int xdpoff_flower_setup(struct xdpoff_block *blk, struct flow_cls_offload *f)
{
	struct xdpoff_dev *xdev = blk->xdev;
	struct xdpoff_rule *r;
	int err;

	r = xdpoff_rule_find(xdev, f->cookie);
	switch (f->command) {
	case FLOW_CLS_REPLACE:
		if (!xdev->netdev) {
			NL_SET_ERR_MSG_MOD(f->common.extack, "device is gone");
			return -ENODEV;
		}
		if (r)
			xdpoff_rule_del(xdev, r);
		err = xdpoff_rule_add(blk, f);
		if (err && f->common.extack)
			xdev->last_error = f->common.extack->_msg;
		return err;
	case FLOW_CLS_DESTROY:
		/* Unknown and repeated DESTROYs are normal. */
		if (r)
			xdpoff_rule_del(xdev, r);
		return 0;
	case FLOW_CLS_STATS:
		if (r)
			xdpoff_rule_stats(xdev, r, f);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Remove every rule of @blk, or of the whole device when @blk is NULL. */
void xdpoff_rules_flush(struct xdpoff_dev *xdev, struct xdpoff_block *blk)
{
	struct hlist_node *tmp;
	struct xdpoff_rule *r;
	int bkt;

	hash_for_each_safe(xdev->by_cookie, bkt, tmp, r, cookie_node)
		if (!blk || r->blk == blk)
			xdpoff_rule_del(xdev, r);
}
