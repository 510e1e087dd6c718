// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: a flow_rule (an nf_tables rule or a tc flower filter) parsed
 * into a struct xdpoff_match: its keys, what they depend on in the frame,
 * and its actions.  No state: nothing here depends on a device or a block.
 */

#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/in.h>
#include <linux/version.h>
#include <net/flow_offload.h>

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

int xdpoff_parse_rule(const struct flow_rule *rule, bool tc,
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
