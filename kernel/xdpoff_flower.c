// SPDX-License-Identifier: GPL-2.0
/* xdpoff: flow_rule -> map entries, and the driver's shadow rule table. */

#include <linux/bpf.h>
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/jhash.h>
#include <linux/slab.h>
#include <linux/version.h>
#include <net/flow_offload.h>
#include <net/netfilter/nf_tables.h>
#include <net/pkt_cls.h>

#include "xdpoff.h"

#define XDPOFF_KEY_MSG(key, what) \
	[FLOW_DISSECTOR_KEY_##key] = KBUILD_MODNAME ": match on " what \
				     " is not supported"

/* What nft/tc prints for a dissector key this driver does not handle. */
static const char * const xdpoff_key_unsupported[FLOW_DISSECTOR_KEY_MAX] = {
	XDPOFF_KEY_MSG(ARP, "arp"),
	XDPOFF_KEY_MSG(MPLS, "mpls"),
	XDPOFF_KEY_MSG(MPLS_ENTROPY, "mpls entropy"),
	XDPOFF_KEY_MSG(ENC_IP, "tunnel ip tos or ttl"),
	XDPOFF_KEY_MSG(CT, "conntrack state"),
	XDPOFF_KEY_MSG(HASH, "hash"),
	XDPOFF_KEY_MSG(NUM_OF_VLANS, "number of vlans"),
	XDPOFF_KEY_MSG(PPPOE, "pppoe"),
	XDPOFF_KEY_MSG(L2TPV3, "l2tpv3"),
	XDPOFF_KEY_MSG(ENC_KEYID, "tunnel key id"),
	XDPOFF_KEY_MSG(ENC_IPV4_ADDRS, "tunnel addresses"),
	XDPOFF_KEY_MSG(ENC_IPV6_ADDRS, "tunnel addresses"),
	XDPOFF_KEY_MSG(ENC_CONTROL, "tunnel control"),
	XDPOFF_KEY_MSG(ENC_PORTS, "tunnel ports"),
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
	 BIT_ULL(FLOW_DISSECTOR_KEY_PORTS) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_PORTS_RANGE) |		\
	 BIT_ULL(FLOW_DISSECTOR_KEY_IP) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_TCP) |			\
	 BIT_ULL(FLOW_DISSECTOR_KEY_ICMP))

/*
 * meta iif and iiftype (tc: indev): the maps belong to one device, so the
 * match is decided once per device (xdpoff_never()).
 */
static int xdpoff_parse_meta(const struct flow_rule *rule,
			     struct xdpoff_match *m,
			     struct netlink_ext_ack *extack)
{
	struct flow_match_meta match;

	flow_rule_match_meta(rule, &match);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	/*
	 * 6.5 added meta.l2_miss (flower's l2_miss; not in 6.1, in 6.12): a
	 * mark the bridge sets, which XDP cannot see.  Ignored, the rule
	 * would match every frame.
	 */
	if (match.mask->l2_miss) {
		NL_SET_ERR_MSG_MOD(extack, "match on l2_miss is not supported");
		return -EOPNOTSUPP;
	}
#endif
	m->iif = match.key->ingress_ifindex;
	m->iif_mask = match.mask->ingress_ifindex;
	m->iiftype = match.key->ingress_iftype;
	m->iiftype_mask = match.mask->ingress_iftype;
	return 0;
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
/*
 * The EtherType behind a tag, from the tag's own vlan_eth_type (flower's
 * vlan_ethtype) and from what else the rule says of it: both must agree.
 */
static int xdpoff_etype(__be16 *k, __be16 *mk, __be16 tag_k, __be16 tag_mk,
			struct netlink_ext_ack *extack)
{
	if (!tag_mk)
		return 0;
	if (*mk && (*mk != tag_mk || *k != tag_k)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on a vlan_ethtype other than the protocol behind the tags is not supported");
		return -EOPNOTSUPP;
	}
	*k = tag_k;
	*mk = tag_mk;
	return 0;
}

static int xdpoff_parse_vlan(const struct flow_rule *rule, bool tc,
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
	if (vlan.mask->vlan_tpid != htons(0xffff)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on vlan needs its ethertype (8021q or 8021ad)");
		return -EOPNOTSUPP;
	}
	k->n_proto = vlan.key->vlan_tpid;
	mk->n_proto = vlan.mask->vlan_tpid;
	xdpoff_tci(&vlan, &k->vlan_tci, &mk->vlan_tci);
	xdpoff_require(m, XDPOFF_F_VLAN);

	/*
	 * flower's dissector goes through the tags the rule does not match
	 * on: its n_proto is the EtherType behind the last tag, and what is
	 * behind it is read, where XDP reads behind the matched tags only.
	 */
	if (!flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CVLAN)) {
		k->vlan_etype = m->l3_proto;
		mk->vlan_etype = m->l3_proto_mask;
		if (xdpoff_etype(&k->vlan_etype, &mk->vlan_etype,
				 vlan.key->vlan_eth_type, vlan.mask->vlan_eth_type,
				 extack))
			return -EOPNOTSUPP;
		if (tc && mk->vlan_etype)
			m->needs |= XDPOFF_U_TAG2;
		return 0;
	}

	flow_rule_match_cvlan(rule, &cvlan);
	k->vlan_etype = cvlan.key->vlan_tpid;
	mk->vlan_etype = cvlan.mask->vlan_tpid;
	if (xdpoff_etype(&k->vlan_etype, &mk->vlan_etype,
			 vlan.key->vlan_eth_type, vlan.mask->vlan_eth_type,
			 extack))
		return -EOPNOTSUPP;
	xdpoff_tci(&cvlan, &k->cvlan_tci, &mk->cvlan_tci);
	k->cvlan_etype = m->l3_proto;
	mk->cvlan_etype = m->l3_proto_mask;
	if (xdpoff_etype(&k->cvlan_etype, &mk->cvlan_etype,
			 cvlan.key->vlan_eth_type, cvlan.mask->vlan_eth_type,
			 extack))
		return -EOPNOTSUPP;
	if (tc && mk->cvlan_etype)
		m->needs |= XDPOFF_U_TAG3;
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

/*
 * tc flower port ranges: the ranged port leaves the key, its bounds go
 * into the mask slot.
 */
static int xdpoff_parse_ports_range(const struct flow_rule *rule,
				    struct xdpoff_match *m,
				    struct netlink_ext_ack *extack)
{
	struct xdpoff_range *r = &m->range;
	struct flow_match_ports_range match;

	flow_rule_match_ports_range(rule, &match);
	if (match.mask->tp_min.src || match.mask->tp_max.src) {
		if (m->mask.sport) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on a source port and a source port range at once is not supported");
			return -EOPNOTSUPP;
		}
		r->ranges |= XDPOFF_RANGE_SPORT;
		r->sport_min = ntohs(match.key->tp_min.src);
		r->sport_max = ntohs(match.key->tp_max.src);
	}
	if (match.mask->tp_min.dst || match.mask->tp_max.dst) {
		if (m->mask.dport) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on a destination port and a destination port range at once is not supported");
			return -EOPNOTSUPP;
		}
		r->ranges |= XDPOFF_RANGE_DPORT;
		r->dport_min = ntohs(match.key->tp_min.dst);
		r->dport_max = ntohs(match.key->tp_max.dst);
	}
	return 0;
}

/* Keys only tc flower has: ip tos/ttl, tcp flags, icmp type/code. */
static void xdpoff_parse_flower_keys(const struct flow_rule *rule,
				     struct xdpoff_match *m)
{
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IP)) {
		struct flow_match_ip match;

		flow_rule_match_ip(rule, &match);
		k->tos = match.key->tos;
		mk->tos = match.mask->tos;
		k->ttl = match.key->ttl;
		mk->ttl = match.mask->ttl;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_TCP)) {
		struct flow_match_tcp match;

		flow_rule_match_tcp(rule, &match);
		k->tcp_flags = match.key->flags;
		mk->tcp_flags = match.mask->flags;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_ICMP)) {
		struct flow_match_icmp match;

		flow_rule_match_icmp(rule, &match);
		k->icmp_type = match.key->type;
		mk->icmp_type = match.mask->type;
		k->icmp_code = match.key->code;
		mk->icmp_code = match.mask->code;
	}
}

static int xdpoff_parse_keys(const struct flow_rule *rule, bool tc,
			     struct xdpoff_match *m,
			     struct netlink_ext_ack *extack)
{
	u64 unsupported = rule->match.dissector->used_keys &
			  ~XDPOFF_KEYS_SUPPORTED;
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;
	u16 addr_type = 0;
	int err;

	if (unsupported) {
		int key = __ffs64(unsupported);
		const char *msg = key < FLOW_DISSECTOR_KEY_MAX ?
				  xdpoff_key_unsupported[key] : NULL;

		xdpoff_set_err_msg(extack, msg ? msg : KBUILD_MODNAME
				   ": match on this key is not supported");
		return -EOPNOTSUPP;
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_META)) {
		err = xdpoff_parse_meta(rule, m, extack);
		if (err)
			return err;
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_CONTROL)) {
		struct flow_match_control match;

		flow_rule_match_control(rule, &match);
		if (match.mask->addr_type)
			addr_type = match.key->addr_type;
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

	err = xdpoff_parse_vlan(rule, tc, m, extack);
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

	/*
	 * control.addr_type says which addresses the rule has: flower keeps
	 * them in a union and marks both keys used.
	 */
	if (addr_type == FLOW_DISSECTOR_KEY_IPV4_ADDRS ||
	    addr_type == FLOW_DISSECTOR_KEY_IPV6_ADDRS) {
		if (flow_rule_match_key(rule, addr_type))
			xdpoff_parse_addrs(rule, m, addr_type);
	} else if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV4_ADDRS) ||
		   flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_IPV6_ADDRS)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on addresses without their type is not supported");
		return -EOPNOTSUPP;
	}

	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_PORTS)) {
		struct flow_match_ports match;

		flow_rule_match_ports(rule, &match);
		k->sport = match.key->src;
		mk->sport = match.mask->src;
		k->dport = match.key->dst;
		mk->dport = match.mask->dst;
	}
	if (flow_rule_match_key(rule, FLOW_DISSECTOR_KEY_PORTS_RANGE)) {
		err = xdpoff_parse_ports_range(rule, m, extack);
		if (err)
			return err;
	}
	xdpoff_parse_flower_keys(rule, m);
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
static int xdpoff_check_deps(struct xdpoff_match *m, bool tc,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_fields *k = &m->key, *mk = &m->mask;
	bool addrs = xdpoff_any(mk->saddr, sizeof(mk->saddr)) ||
		     xdpoff_any(mk->daddr, sizeof(mk->daddr));
	bool ports = mk->sport || mk->dport || m->range.ranges;
	bool l4 = ports || mk->tcp_flags || mk->icmp_type || mk->icmp_code;

	if (mk->tos || mk->ttl) {
		if (m->l3_proto_mask != htons(0xffff) ||
		    (m->l3_proto != htons(ETH_P_IP) &&
		     m->l3_proto != htons(ETH_P_IPV6))) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on ip tos or ttl needs the protocol (ip or ipv6)");
			return -EOPNOTSUPP;
		}
		xdpoff_require(m, m->l3_proto == htons(ETH_P_IP) ?
				  XDPOFF_F_IPV4 : XDPOFF_F_IPV6);
		m->needs |= XDPOFF_U_L3;
	}
	if (l4 && mk->ip_proto != 0xff) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on the transport header needs ip_proto");
		return -EOPNOTSUPP;
	}
	if ((mk->icmp_type || mk->icmp_code) &&
	    k->ip_proto != IPPROTO_ICMP && k->ip_proto != IPPROTO_ICMPV6) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on icmp type or code needs ip_proto icmp or icmpv6");
		return -EOPNOTSUPP;
	}
	if (mk->tcp_flags && k->ip_proto != IPPROTO_TCP) {
		NL_SET_ERR_MSG_MOD(extack,
				   "match on tcp flags needs ip_proto tcp");
		return -EOPNOTSUPP;
	}
	/*
	 * flower reads what follows two tags, and through IPv6 extension
	 * headers, and no transport header of a fragment; XDP does none of
	 * that: such frames are software's.
	 */
	if (tc && (addrs || mk->ip_proto || mk->tos || mk->ttl))
		m->needs |= XDPOFF_U_L3 | XDPOFF_U_TAG2;
	if (tc && l4)
		m->needs |= XDPOFF_U_PROTO | XDPOFF_U_FRAG;

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
	if (ports) {
		if (k->ip_proto != IPPROTO_TCP && k->ip_proto != IPPROTO_UDP) {
			NL_SET_ERR_MSG_MOD(extack,
					   "match on ports is only supported for tcp and udp");
			return -EOPNOTSUPP;
		}
		/*
		 * nf_tables finds no ports where there is no transport
		 * header; flower finds zeroes.  XDP has zeroes there too.
		 */
		if (!tc)
			xdpoff_require(m, XDPOFF_F_L4);
		m->needs |= XDPOFF_U_L4;
	}
	return 0;
}

/* pedit of the Ethernet addresses: fold each 32-bit word into keep/val. */
static int xdpoff_parse_mangle(const struct flow_action_entry *act,
			       struct xdpoff_rule_val *val,
			       struct netlink_ext_ack *extack)
{
	u32 off = act->mangle.offset;
	const u8 *keep = (const u8 *)&act->mangle.mask;
	const u8 *set = (const u8 *)&act->mangle.val;
	int i;

	if (act->mangle.htype != FLOW_ACT_MANGLE_HDR_TYPE_ETH) {
		NL_SET_ERR_MSG_MOD(extack,
				   "pedit of headers other than the Ethernet addresses is not supported");
		return -EOPNOTSUPP;
	}
	if (off % 4 || off + 4 > sizeof(val->eth_keep)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "pedit beyond the Ethernet addresses is not supported");
		return -EOPNOTSUPP;
	}
	if (!(val->rewrite & XDPOFF_RW_ETH)) {
		memset(val->eth_keep, 0xff, sizeof(val->eth_keep));
		memset(val->eth_val, 0, sizeof(val->eth_val));
		val->rewrite |= XDPOFF_RW_ETH;
	}
	/* pedit: x = (x & mask) ^ val, one word after the other */
	for (i = 0; i < 4; i++) {
		val->eth_val[off + i] = (val->eth_val[off + i] & keep[i]) ^
					set[i];
		val->eth_keep[off + i] &= keep[i];
	}
	return 0;
}

static int xdpoff_parse_vlan_act(const struct flow_action_entry *act,
				 struct xdpoff_rule_val *val,
				 struct netlink_ext_ack *extack)
{
	u16 tci = act->vlan.vid | (u16)act->vlan.prio << VLAN_PRIO_SHIFT;

	if (val->rewrite & (XDPOFF_RW_VLAN_POP | XDPOFF_RW_VLAN_PUSH |
			    XDPOFF_RW_VLAN_MODIFY)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "one vlan action per filter is supported");
		return -EOPNOTSUPP;
	}
	switch (act->id) {
	case FLOW_ACTION_VLAN_POP:
		val->rewrite |= XDPOFF_RW_VLAN_POP;
		return 0;
	case FLOW_ACTION_VLAN_PUSH:
		val->rewrite |= XDPOFF_RW_VLAN_PUSH;
		val->vlan_proto = act->vlan.proto;
		val->vlan_tci = htons(tci);
		return 0;
	default:
		/*
		 * act_vlan keeps the priority bits when none was given, but
		 * the offload API says 0 then: priority 0 keeps them here.
		 */
		val->rewrite |= XDPOFF_RW_VLAN_MODIFY;
		val->vlan_proto = act->vlan.proto;
		val->vlan_tci = htons(tci);
		val->vlan_tci_mask = htons(VLAN_VID_MASK |
					   (act->vlan.prio ? VLAN_PRIO_MASK : 0));
		return 0;
	}
}

/*
 * One final action, last: accept (nft accept, tc pass/ok), drop, or a
 * redirect (nft fwd, tc mirred egress redirect).  tc may put VLAN and
 * pedit edits before it; with a redirect XDP makes them, with accept (or
 * no final action: tc's pipe) the frame goes up unchanged for the stack
 * to make them and go on.
 */
static int xdpoff_parse_actions(const struct flow_rule *rule, bool tc,
				struct xdpoff_match *m,
				struct netlink_ext_ack *extack)
{
	const struct flow_action_entry *act;
	struct xdpoff_rule_val *val = &m->val;
	bool final = false;
	int i, err;

	if (!tc && rule->action.num_entries != 1) {
		NL_SET_ERR_MSG_MOD(extack,
				   "exactly one action per rule is supported");
		return -EOPNOTSUPP;
	}

	val->action = XDPOFF_ACT_PASS;
	flow_action_for_each(i, act, &rule->action) {
		if (final) {
			NL_SET_ERR_MSG_MOD(extack,
					   "actions after drop, pass or redirect are not supported");
			return -EOPNOTSUPP;
		}
		switch (act->id) {
		case FLOW_ACTION_ACCEPT:
			final = true;
			break;
		case FLOW_ACTION_DROP:
			val->action = XDPOFF_ACT_DROP;
			final = true;
			break;
		case FLOW_ACTION_REDIRECT:
			val->action = XDPOFF_ACT_REDIRECT;
			m->fwd_dev = act->dev;
			final = true;
			break;
		case FLOW_ACTION_VLAN_POP:
		case FLOW_ACTION_VLAN_PUSH:
		case FLOW_ACTION_VLAN_MANGLE:
			err = xdpoff_parse_vlan_act(act, val, extack);
			if (err)
				return err;
			break;
		case FLOW_ACTION_MANGLE:
			err = xdpoff_parse_mangle(act, val, extack);
			if (err)
				return err;
			break;
		case FLOW_ACTION_MIRRED:
		case FLOW_ACTION_MIRRED_INGRESS:
			NL_SET_ERR_MSG_MOD(extack,
					   "mirror and dup are not supported: XDP cannot clone frames");
			return -EOPNOTSUPP;
		case FLOW_ACTION_REDIRECT_INGRESS:
			NL_SET_ERR_MSG_MOD(extack,
					   "redirect to ingress is not supported, only egress");
			return -EOPNOTSUPP;
		case FLOW_ACTION_GOTO:
			NL_SET_ERR_MSG_MOD(extack, "goto chain is not supported");
			return -EOPNOTSUPP;
		case FLOW_ACTION_POLICE:
			NL_SET_ERR_MSG_MOD(extack, "police is not supported");
			return -EOPNOTSUPP;
		case FLOW_ACTION_ADD:
			NL_SET_ERR_MSG_MOD(extack, "pedit add is not supported");
			return -EOPNOTSUPP;
		default:
			NL_SET_ERR_MSG_MOD(extack, "action is not supported");
			return -EOPNOTSUPP;
		}
	}

	if (val->action == XDPOFF_ACT_PASS && val->rewrite)
		val->action = XDPOFF_ACT_SOFTWARE;
	/* Only a redirect edits in XDP: no edit state in the map otherwise. */
	if (val->action != XDPOFF_ACT_REDIRECT) {
		u32 action = val->action;

		memset(val, 0, sizeof(*val));
		val->action = action;
	}
	return 0;
}

int xdpoff_flower_parse(const struct flow_rule *rule, bool tc,
			struct xdpoff_match *m, struct netlink_ext_ack *extack)
{
	int err;

	memset(m, 0, sizeof(*m));
	err = xdpoff_parse_keys(rule, tc, m, extack);
	if (err)
		return err;
	err = xdpoff_check_deps(m, tc, extack);
	if (err)
		return err;
	return xdpoff_parse_actions(rule, tc, m, extack);
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
 * Where the rule runs in software.  tc's ingress hook runs before
 * nf_tables' (bit 63 clear): filter priority, then flower's mask order,
 * then the filter's place among those of its mask (xdpoff_tc_order()).
 * For nf_tables: chain priority, then bind order among equal priorities
 * (nf_hook_entries_grow() puts a new hook before those of the same
 * priority: the chain bound last runs first), then the rule's position.
 * Offloaded chains only append (nf_tables refuses insert and replace), so
 * the rule handle is the position, and it survives a DESTROY/REPLACE
 * round trip of an aborted transaction.
 */
static u64 xdpoff_rule_order(const struct xdpoff_port *port,
			     const struct xdpoff_brule *br)
{
	if (port->blk->tc)
		return br->tc_order;
	return BIT_ULL(63) | (u64)(br->prio & 0xffff) << 47 |
	       (u64)(0x7fff - (port->seq & 0x7fff)) << 32 | br->handle;
}

static u64 xdpoff_tc_order(u32 prio, struct xdpoff_tc_mask *tcm)
{
	return (u64)(prio & 0xffff) << 47 | (u64)(tcm->seq & 0x7fffff) << 24 |
	       (++tcm->filter_seq & 0xffffff);
}

static struct xdpoff_tc_mask *xdpoff_tc_mask_get(struct xdpoff_block *blk,
						 const void *fl_mask)
{
	struct xdpoff_tc_mask *tcm;

	list_for_each_entry(tcm, &blk->tc_masks, list) {
		if (tcm->fl_mask == fl_mask) {
			tcm->refcnt++;
			return tcm;
		}
	}
	tcm = kzalloc(sizeof(*tcm), GFP_KERNEL);
	if (!tcm)
		return NULL;
	tcm->fl_mask = fl_mask;
	tcm->seq = ++blk->tc_mask_seq;
	tcm->refcnt = 1;
	list_add_tail(&tcm->list, &blk->tc_masks);
	return tcm;
}

static void xdpoff_tc_mask_put(struct xdpoff_tc_mask *tcm)
{
	if (!tcm || --tcm->refcnt)
		return;
	list_del(&tcm->list);
	kfree(tcm);
}

/* meta iif/iiftype of another device: the rule never matches here. */
static bool xdpoff_never(const struct xdpoff_dev *xdev,
			 const struct xdpoff_match *m)
{
	return ((m->iif ^ xdev->ifindex) & m->iif_mask) ||
	       ((m->iiftype ^ xdev->netdev->type) & m->iiftype_mask);
}

/* fwd to DEV: DEV must take XDP frames, so it must run xdpoff too. */
static int xdpoff_rule_fwd(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			   struct xdpoff_dev *tdev,
			   struct netlink_ext_ack *extack)
{
	if (!tdev || !tdev->netdev ||
	    !net_eq(dev_net(tdev->netdev), dev_net(xdev->netdev))) {
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

/* Install the block rule @br on @port's device. */
static int __xdpoff_rule_add(struct xdpoff_port *port,
			     const struct xdpoff_brule *br,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_dev *xdev = port->xdev;
	const struct xdpoff_match *m = &br->m;
	struct xdpoff_rule *r;
	int err;

	if (xdev->nr_rules >= xdev->max_rules) {
		NL_SET_ERR_MSG_MOD(extack, "rule table is full");
		return -ENOSPC;
	}

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->cookie = br->cookie;
	r->port = port;
	r->never = xdpoff_never(xdev, m);
	r->val = m->val;
	r->val.stage = port->stage;
	r->val.order = xdpoff_rule_order(port, br);

	if (m->val.action == XDPOFF_ACT_REDIRECT) {
		err = xdpoff_rule_fwd(xdev, r, br->fwd, extack);
		if (err)
			goto err_free_rule;
	}

	/* A rule for another device is kept, but has nothing to install. */
	if (r->never)
		goto out_add;

	err = xdpoff_mask_get(xdev, port->stage, &m->mask, &m->range,
			      m->needs, r->val.order, &r->mask_slot, extack);
	if (err)
		goto err_unfwd;
	r->key.mask_id = xdev->mask_slots[r->mask_slot].id;
	r->key.fields = m->key;

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
	spin_lock(&xdpoff_stats_lock);
	hash_add(xdev->by_cookie, &r->cookie_node, r->cookie);
	spin_unlock(&xdpoff_stats_lock);
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

static int xdpoff_rule_add(struct xdpoff_port *port,
			   const struct xdpoff_brule *br,
			   struct netlink_ext_ack *extack)
{
	int err;

	xdpoff_fault_armed = true;
	err = __xdpoff_rule_add(port, br, extack);
	xdpoff_fault_armed = false;
	return err;
}

/*
 * Remove @r: its map entry goes to the next rule with the same key, or is
 * deleted before the mask can go.
 */
static void xdpoff_rule_del(struct xdpoff_dev *xdev, struct xdpoff_rule *r)
{
	struct xdpoff_rule *owner, *best;

	spin_lock(&xdpoff_stats_lock);
	hash_del(&r->cookie_node);
	spin_unlock(&xdpoff_stats_lock);
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
 * What XDP consumed since the last report (nf_tables and tc add it to the
 * rule's counters).  Frames XDP passed up meet the software rule, which
 * counts them itself.  XDP counts bytes as the stack does, from the
 * network header on (skb->len at ingress).
 */
static void xdpoff_rule_stats(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			      u64 *pkts, u64 *bytes)
{
	struct xdpoff_stats st;

	if (r->never)
		return;

	xdpoff_stats_read(xdev, r->val.stats_slot, &st);
	*pkts += st.consumed_packets - r->reported_pkts;
	*bytes += st.consumed_bytes - r->reported_bytes;
	r->reported_pkts = st.consumed_packets;
	r->reported_bytes = st.consumed_bytes;
}

static struct xdpoff_brule *xdpoff_brule_find(struct xdpoff_block *blk,
					      unsigned long cookie)
{
	struct xdpoff_brule *br;

	hash_for_each_possible(blk->rules, br, node, cookie)
		if (br->cookie == cookie)
			return br;
	return NULL;
}

/* Remove the instances of @cookie from every port of @blk. */
static void xdpoff_brule_uninstall(struct xdpoff_block *blk,
				   unsigned long cookie)
{
	struct xdpoff_port *port;
	struct xdpoff_rule *r;

	list_for_each_entry(port, &blk->ports, block_node) {
		r = xdpoff_rule_find(port->xdev, cookie);
		if (r)
			xdpoff_rule_del(port->xdev, r);
	}
}

static void xdpoff_brule_free(struct xdpoff_brule *br)
{
	xdpoff_tc_mask_put(br->tc_mask);
	if (br->fwd)
		xdpoff_dev_put(br->fwd);
	kfree(br);
}

static void xdpoff_brule_del(struct xdpoff_block *blk,
			     struct xdpoff_brule *br)
{
	xdpoff_brule_uninstall(blk, br->cookie);
	list_del(&br->replay_node);
	hash_del(&br->node);
	xdpoff_brule_free(br);
}

/* A port whose device is gone takes no rules; unbind follows. */
static bool xdpoff_port_live(const struct xdpoff_port *port)
{
	return port->xdev->netdev;
}

/* Give @br its tc order and install it on every live port of @blk. */
static int xdpoff_brule_install(struct xdpoff_block *blk,
				struct xdpoff_brule *br,
				struct netlink_ext_ack *extack)
{
	struct xdpoff_port *port;
	int err;

	if (blk->tc) {
		br->tc_mask = xdpoff_tc_mask_get(blk, br->fl_mask);
		if (!br->tc_mask)
			return -ENOMEM;
		br->tc_order = xdpoff_tc_order(br->prio, br->tc_mask);
	}
	list_for_each_entry(port, &blk->ports, block_node) {
		if (!xdpoff_port_live(port))
			continue;
		err = xdpoff_rule_add(port, br, extack);
		if (err) {
			xdpoff_brule_uninstall(blk, br->cookie);
			return err;
		}
	}
	return 0;
}

static void xdpoff_block_error(struct xdpoff_block *blk,
			       struct netlink_ext_ack *extack);

static int xdpoff_block_replace(struct xdpoff_block *blk,
				struct flow_cls_offload *f,
				struct netlink_ext_ack *extack)
{
	struct flow_rule *rule = flow_cls_offload_flow_rule(f);
	struct xdpoff_brule *br, *old;
	int err;

	old = xdpoff_brule_find(blk, f->cookie);
	if (old)
		xdpoff_brule_del(blk, old);

	if (blk->tc && f->common.chain_index) {
		NL_SET_ERR_MSG_MOD(extack,
				   "filters in chains other than 0 are not supported");
		return -EOPNOTSUPP;
	}

	br = kzalloc(sizeof(*br), GFP_KERNEL);
	if (!br)
		return -ENOMEM;
	INIT_LIST_HEAD(&br->replay_node);
	br->cookie = f->cookie;
	br->prio = f->common.prio;
	err = xdpoff_flower_parse(rule, blk->tc, &br->m, extack);
	if (err)
		goto err_free;

	if (br->m.val.action == XDPOFF_ACT_REDIRECT) {
		br->fwd = br->m.fwd_dev ? xdpoff_dev_find(br->m.fwd_dev) : NULL;
		if (!br->fwd) {
			NL_SET_ERR_MSG_MOD(extack,
					   "fwd target must be attached with xdpoff (it takes XDP frames then)");
			err = -EOPNOTSUPP;
			goto err_free;
		}
		kref_get(&br->fwd->ref);
	}

	if (blk->tc) {
		br->fl_mask = rule->match.mask;
		/* Replayed newest first: installed oldest first, later. */
		if (blk->replaying) {
			list_add(&br->replay_node, &blk->replayed);
			hash_add(blk->rules, &br->node, br->cookie);
			return 0;
		}
	} else {
		/* The cookie of an nf_tables rule is its struct nft_rule. */
		br->handle = lower_32_bits(((struct nft_rule *)f->cookie)->handle);
	}
	err = xdpoff_brule_install(blk, br, extack);
	if (err)
		goto err_free;
	hash_add(blk->rules, &br->node, br->cookie);
	return 0;

err_free:
	xdpoff_brule_free(br);
	return err;
}

static void xdpoff_sw_only_set(struct xdpoff_block *blk, unsigned long cookie,
			       u32 prio, bool on);

/*
 * The end of a tc replay (xdpoff_dev_replay()): flower hands its filters
 * over newest first (fl_reoffload() walks head->hw_filters, where each
 * filter is added at the head); @blk->replayed holds them oldest first.
 * Installed in that order, they get their mask's place and their place
 * in it as if they had been added one by one: flower tries its masks in
 * the order they were created, which is that of their oldest filter
 * unless that filter was deleted since (README: Lifecycle).
 */
void xdpoff_replay_commit(struct xdpoff_block *blk)
{
	struct netlink_ext_ack extack = {};
	struct xdpoff_brule *br, *tmp;

	blk->replaying = false;
	list_for_each_entry_safe(br, tmp, &blk->replayed, replay_node) {
		list_del_init(&br->replay_node);
		if (!xdpoff_brule_install(blk, br, &extack))
			continue;
		xdpoff_block_error(blk, &extack);
		xdpoff_sw_only_set(blk, br->cookie, br->prio, true);
		hash_del(&br->node);
		xdpoff_brule_free(br);
	}
}

/* FLOW_CLS_STATS, under xdpoff_stats_lock only. */
void xdpoff_flower_stats(struct xdpoff_block *blk, struct flow_cls_offload *f)
{
	struct xdpoff_port *port;
	struct xdpoff_rule *r;
	u64 pkts = 0, bytes = 0;

	list_for_each_entry(port, &blk->ports, block_node) {
		r = xdpoff_rule_find(port->xdev, f->cookie);
		if (r)
			xdpoff_rule_stats(port->xdev, r, &pkts, &bytes);
	}
	flow_stats_update(&f->stats, bytes, pkts, 0, pkts ? jiffies : 0,
			  FLOW_ACTION_HW_STATS_IMMEDIATE);
}

static void xdpoff_block_error(struct xdpoff_block *blk,
			       struct netlink_ext_ack *extack)
{
	struct xdpoff_port *port;

	if (!extack->_msg)
		return;
	list_for_each_entry(port, &blk->ports, block_node)
		port->xdev->last_error = extack->_msg;
}

u64 xdpoff_dev_software_from(struct xdpoff_dev *xdev)
{
	u64 from = XDPOFF_ORDER_NONE;
	struct xdpoff_sw_only *so;
	struct xdpoff_port *port;

	list_for_each_entry(port, &xdev->ports, list)
		list_for_each_entry(so, &port->blk->sw_only, list)
			from = min(from, so->order);
	return from;
}

/* Mark (@on) or unmark the tc filter @cookie as running in software only. */
static void xdpoff_sw_only_set(struct xdpoff_block *blk, unsigned long cookie,
			       u32 prio, bool on)
{
	struct xdpoff_sw_only *so, *found = NULL;
	struct xdpoff_port *port;

	if (!blk->tc)
		return;
	list_for_each_entry(so, &blk->sw_only, list)
		if (so->cookie == cookie)
			found = so;
	if (on == !!found)
		return;
	if (on) {
		so = kzalloc(sizeof(*so), GFP_KERNEL);
		/* No memory: the filter's frames may be decided in XDP. */
		if (!so)
			return;
		so->cookie = cookie;
		so->order = (u64)(prio & 0xffff) << 47;
		list_add(&so->list, &blk->sw_only);
	} else {
		list_del(&found->list);
		kfree(found);
	}
	list_for_each_entry(port, &blk->ports, block_node)
		xdpoff_dev_meta_sync(port->xdev);
}

void xdpoff_sw_only_flush(struct xdpoff_block *blk)
{
	struct xdpoff_sw_only *so, *tmp;

	list_for_each_entry_safe(so, tmp, &blk->sw_only, list) {
		list_del(&so->list);
		kfree(so);
	}
}

int xdpoff_flower_setup(struct xdpoff_block *blk, struct flow_cls_offload *f)
{
	struct netlink_ext_ack local = {};
	struct xdpoff_brule *br;
	int err;

	switch (f->command) {
	case FLOW_CLS_REPLACE:
		/*
		 * tc hands its extack to drivers for skip_sw filters only
		 * (which it refuses for indirect blocks), and nf_tables
		 * drops it: the reason is kept for `xdpoff show` either way.
		 */
		err = xdpoff_block_replace(blk, f, f->common.extack ?: &local);
		if (err)
			xdpoff_block_error(blk, f->common.extack ?: &local);
		xdpoff_sw_only_set(blk, f->cookie, f->common.prio, err);
		return err;
	case FLOW_CLS_DESTROY:
		/* Unknown and repeated DESTROYs are normal. */
		br = xdpoff_brule_find(blk, f->cookie);
		if (br)
			xdpoff_brule_del(blk, br);
		xdpoff_sw_only_set(blk, f->cookie, f->common.prio, false);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* Forget the block's rules; their instances are gone already. */
void xdpoff_brules_flush(struct xdpoff_block *blk)
{
	struct xdpoff_brule *br;
	struct hlist_node *tmp;
	int bkt;

	hash_for_each_safe(blk->rules, bkt, tmp, br, node)
		xdpoff_brule_del(blk, br);
}

/* Remove every rule of @port, or of the whole device when @port is NULL. */
void xdpoff_rules_flush(struct xdpoff_dev *xdev, struct xdpoff_port *port)
{
	struct hlist_node *tmp;
	struct xdpoff_rule *r;
	int bkt;

	hash_for_each_safe(xdev->by_cookie, bkt, tmp, r, cookie_node)
		if (!port || r->port == port)
			xdpoff_rule_del(xdev, r);
}
