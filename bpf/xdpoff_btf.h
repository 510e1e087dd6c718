/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `bpftool map dump` shows of the maps: the BTF the XDP program's
 * object gives its map keys and values.  These types have exactly the
 * layout of those in xdpoff/xdpoff.h (checked below, field by field),
 * which the program, the module and the CLI use; only how a reader of the
 * BTF sees the bytes differs:
 *  - multi-byte fields in network byte order (addresses, ports,
 *    EtherTypes, VLAN tags, TCP flags) are byte arrays in wire order:
 *    bpftool prints ip daddr 192.168.10.2 as [192,168,10,2,0,...] and
 *    tcp dport 22 as [0,22], not as the integers a little-endian CPU
 *    reads there;
 *  - a rule's order is also shown split into its parts (nft: chain
 *    priority, bind, handle; tc: priority, mask, filter), see
 *    xdpoff_rule_order() and xdpoff_tc_order() in kernel/.
 * The program's code is the same whichever BTF the maps carry: the
 * verifier knows map values by size only.
 */
#ifndef __XDPOFF_BTF_H
#define __XDPOFF_BTF_H

#include "xdpoff/xdpoff.h"

struct xdpoff_fields_btf {
	__u8	n_proto[2];
	__u8	ip_proto;
	__u8	flags;
	__u8	sport[2];
	__u8	dport[2];
	__u8	saddr[16];
	__u8	daddr[16];
	__u8	tos;
	__u8	ttl;
	__u8	tcp_flags[2];
	__u8	icmp_type;
	__u8	icmp_code;
	__u16	pad;
	__u8	dmac[6];
	__u8	smac[6];
	__u8	vlan_tci[2];
	__u8	vlan_etype[2];
	__u8	cvlan_tci[2];
	__u8	cvlan_etype[2];
	__u32	pad2;
} __attribute__((aligned(8)));

/*
 * xdpoff_rule_val.order, as xdpoff_order_tc() and xdpoff_order_nft()
 * (xdpoff/xdpoff.h) lay it out; bit 63 tells which view applies: 1 nft,
 * 0 tc.
 */
union xdpoff_order_btf {
	__u64	order;
	struct {
		__u64	handle:32;	/* the rule's handle */
		__u64	bind:15;	/* 0x7fff - the chain's bind number */
		__u64	prio:16;	/* the chain's priority */
		__u64	nft:1;
	} nft;
	struct {
		__u64	filter:24;	/* the filter's age within its mask */
		__u64	mask:23;	/* the age of its flower mask */
		__u64	prio:16;	/* the filter's priority */
		__u64	nft:1;
	} tc;
};

struct xdpoff_rule_val_btf {
	union xdpoff_order_btf order;
	__u32	stats_slot;
	__u32	action;
	__u32	ifindex;
	__u32	stage;
	__u32	rewrite;
	__u8	vlan_proto[2];
	__u8	vlan_tci[2];
	__u8	vlan_tci_mask[2];
	__u8	eth_keep[12];
	__u8	eth_val[12];
	__u16	pad;
	__u32	mask_id;
	struct xdpoff_fields_btf fields;
	struct xdpoff_fields_btf mask;
	__u32	words;
	__u32	pad2;
};

struct xdpoff_mask_btf {
	struct xdpoff_fields_btf mask;
	__u32	id;
	__u32	active;
	__u32	needs;
	__u32	stage;
	__u32	ranges;
	__u32	words;
	__u16	sport_min, sport_max;
	__u16	dport_min, dport_max;
	union xdpoff_order_btf min_order;
	__u64	hash_start;
	__u32	dups;
	__u32	pad;
};

struct xdpoff_flow_key_btf {
	__u8	saddr[16];
	__u8	daddr[16];
	__u8	sport[2];
	__u8	dport[2];
	__u8	family;
	__u8	proto;
	__u16	pad;
};

struct xdpoff_flow_val_btf {
	__u8	dmac[6];
	__u8	smac[6];
	__u8	nat_saddr[16];
	__u8	nat_daddr[16];
	__u8	nat_sport[2];
	__u8	nat_dport[2];
	__u32	nat;
	__u32	ifindex;
	__u32	mtu;
	__u16	ip_csum;
	__u16	l4_csum;
	__u64	packets;
	__u64	bytes;
	__u64	last_used;
};


/* The same layout, field by field. */
#define XDPOFF_BTF_SAME(a, b, f)					\
	_Static_assert(__builtin_offsetof(struct a, f) ==		\
		       __builtin_offsetof(struct b, f) &&		\
		       sizeof(((struct a *)0)->f) ==			\
		       sizeof(((struct b *)0)->f),			\
		       #a "." #f " is not where " #b " has it")

#define XDPOFF_BTF_FIELDS(a, b)						\
	XDPOFF_BTF_SAME(a, b, n_proto); XDPOFF_BTF_SAME(a, b, ip_proto);\
	XDPOFF_BTF_SAME(a, b, flags); XDPOFF_BTF_SAME(a, b, sport);	\
	XDPOFF_BTF_SAME(a, b, dport); XDPOFF_BTF_SAME(a, b, saddr);	\
	XDPOFF_BTF_SAME(a, b, daddr); XDPOFF_BTF_SAME(a, b, tos);	\
	XDPOFF_BTF_SAME(a, b, ttl); XDPOFF_BTF_SAME(a, b, tcp_flags);	\
	XDPOFF_BTF_SAME(a, b, icmp_type);				\
	XDPOFF_BTF_SAME(a, b, icmp_code); XDPOFF_BTF_SAME(a, b, pad);	\
	XDPOFF_BTF_SAME(a, b, dmac); XDPOFF_BTF_SAME(a, b, smac);	\
	XDPOFF_BTF_SAME(a, b, vlan_tci);				\
	XDPOFF_BTF_SAME(a, b, vlan_etype);				\
	XDPOFF_BTF_SAME(a, b, cvlan_tci);				\
	XDPOFF_BTF_SAME(a, b, cvlan_etype);				\
	XDPOFF_BTF_SAME(a, b, pad2);					\
	_Static_assert(sizeof(struct a) == sizeof(struct b),		\
		       #a " and " #b " differ in size")

XDPOFF_BTF_FIELDS(xdpoff_fields_btf, xdpoff_fields);

XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, order);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, stats_slot);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, action);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, ifindex);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, stage);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, rewrite);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, vlan_proto);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, vlan_tci);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, vlan_tci_mask);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, eth_keep);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, eth_val);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, pad);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, mask_id);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, fields);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, mask);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, words);
XDPOFF_BTF_SAME(xdpoff_rule_val_btf, xdpoff_rule_val, pad2);
_Static_assert(sizeof(struct xdpoff_rule_val_btf) ==
	       sizeof(struct xdpoff_rule_val), "rule value sizes differ");

XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, mask);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, id);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, active);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, needs);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, stage);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, ranges);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, words);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, sport_min);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, sport_max);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, dport_min);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, dport_max);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, min_order);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, hash_start);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, dups);
XDPOFF_BTF_SAME(xdpoff_mask_btf, xdpoff_mask, pad);
_Static_assert(sizeof(struct xdpoff_mask_btf) == sizeof(struct xdpoff_mask),
	       "mask sizes differ");

XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, saddr);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, daddr);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, sport);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, dport);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, family);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, proto);
XDPOFF_BTF_SAME(xdpoff_flow_key_btf, xdpoff_flow_key, pad);
_Static_assert(sizeof(struct xdpoff_flow_key_btf) ==
	       sizeof(struct xdpoff_flow_key), "flow key sizes differ");

XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, dmac);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, smac);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, nat_saddr);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, nat_daddr);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, nat_sport);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, nat_dport);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, nat);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, ifindex);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, mtu);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, ip_csum);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, l4_csum);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, packets);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, bytes);
XDPOFF_BTF_SAME(xdpoff_flow_val_btf, xdpoff_flow_val, last_used);
_Static_assert(sizeof(struct xdpoff_flow_val_btf) ==
	       sizeof(struct xdpoff_flow_val), "flow value sizes differ");

#endif /* __XDPOFF_BTF_H */
