/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * xdpoff: the contract shared by the kernel module (kernel/), the XDP
 * program (bpf/) and the CLI (userspace/).
 *
 * Plain fixed-width types only: this header is compiled by Kbuild, by clang
 * -target bpf and by the host compiler.  The including file provides
 * __u8/__u16/__u32/__u64/__be16/__be32 (linux/types.h in all three).
 *
 * Classification is a tuple-space search over tables, TupleMerge's way.
 * A table is one slot of the masks array: a mask, and the rules filed
 * under it.  Every offloaded rule is one entry of the rules map, a BPF
 * hash map (`bpftool map dump` lists exactly the offloaded rules), keyed
 * by a 32-bit hash of its table's id and of its fields & the table's
 * mask; the value holds the rule's own mask and masked fields.  A rule
 * goes into a table whose mask is within its own (xdpoff_mask_within():
 * its address prefixes as long or shorter, the rest the same), so ip
 * saddr prefixes of many lengths share a few tables instead of one each.
 * The XDP program masks the parsed frame with every active table's mask,
 * hashes only the words the mask uses, looks the key up, compares the
 * frame under the rule's own mask and keeps the match with the lowest
 * order: the earliest rule wins, as in software.  A table holds one rule
 * per key (fields & table mask), so the first entry of a key that matches
 * is the only one.  Rules whose hashes are alike take the next
 * xdpoff_rule_key.dup, so no rule is ever refused for another's hash.  A
 * bit filter per table (xdpoff_filter) says which hashes some rule of the
 * table has, so a table the frame cannot match costs no map lookup, mostly.
 * Offloaded flowtable flows are entries of the flows map, a BPF hash map
 * keyed by the flow's tuple.
 */
#ifndef __XDPOFF_XDPOFF_H
#define __XDPOFF_XDPOFF_H

/*
 * Where `xdpoff attach DEV` pins the maps: XDPOFF_PIN_ROOT/DEV/<map name>
 * (XDPOFF_MAPS, at the end).
 */
#define XDPOFF_PIN_ROOT		"/sys/fs/bpf/xdpoff"

/*
 * The program's run priority in libxdp's dispatcher (lower runs first;
 * libxdp's default is 50, xdp-filter's 10).  The offloaded rules stand for
 * tc and nft ingress, which in software run after every XDP program: last
 * by default, so other programs see every frame as they would without
 * xdpoff.  `xdpoff attach --priority N` overrides it.
 */
#define XDPOFF_RUN_PRIO		200

/* Tables (mask slots) scanned per frame; bounds the XDP loop. */
#ifndef XDPOFF_MAX_MASKS
#define XDPOFF_MAX_MASKS	32
#endif

/* Stages (offloaded chains) per device, evaluated in hook order. */
#define XDPOFF_MAX_STAGES	8

/* Default capacity of the rules and stats maps (xdpoff attach --max-rules). */
#ifndef XDPOFF_DEFAULT_MAX_RULES
#define XDPOFF_DEFAULT_MAX_RULES	16384
#endif
/* --max-rules and --max-flows at most: maps of 16M preallocated entries. */
#define XDPOFF_MAX_RULES_LIMIT		((1U << 24) - 1)

/* Default capacity of the flows map (xdpoff attach --max-flows). */
#ifndef XDPOFF_DEFAULT_MAX_FLOWS
#define XDPOFF_DEFAULT_MAX_FLOWS	4096
#endif

/* Bits of xdpoff_fields.flags, set by the parser. */
#define XDPOFF_F_IPV4		(1U << 0)	/* valid IPv4 header */
#define XDPOFF_F_IPV6		(1U << 1)	/* valid IPv6 header */
#define XDPOFF_F_PROTO		(1U << 2)	/* ip_proto is the l4 protocol */
#define XDPOFF_F_L4		(1U << 3)	/* TCP/UDP ports present */
#define XDPOFF_F_VLAN		(1U << 4)	/* one VLAN tag or more */
#define XDPOFF_F_CVLAN		(1U << 5)	/* two VLAN tags or more */

/*
 * What the parser cannot decide the way software would, for one frame.
 * A mask that depends on it (xdpoff_mask.needs) cannot be looked up for
 * that frame: its stage is undetermined, and a final verdict after it is
 * not taken in XDP.
 */
#define XDPOFF_U_ETYPE		(1U << 0)	/* tagged or 802.3: the stack's
						 * protocol differs from offset 12 */
#define XDPOFF_U_L3		(1U << 1)	/* IP EtherType, invalid header */
#define XDPOFF_U_PROTO		(1U << 2)	/* IPv6 extension headers */
#define XDPOFF_U_L4		(1U << 3)	/* transport header cut short */
/*
 * tc flower's dissector reads further than XDP into some frames, and not
 * at all into others; rules of tc depend on these too.
 */
#define XDPOFF_U_TAG2		(1U << 4)	/* two VLAN tags or more */
#define XDPOFF_U_TAG3		(1U << 5)	/* three VLAN tags or more */
#define XDPOFF_U_FRAG		(1U << 6)	/* IPv4 fragment (MF or offset) */

/*
 * The frame fields a rule can match on.  Every byte is significant to the
 * hash lookup, so there is no implicit padding and writers zero the whole
 * struct.  Multi-byte fields are in network byte order, as in the frame.
 * The key hash reads it as 64-bit words (aligned, 72 bytes), and an nft
 * rule on IPv4 addresses and ports uses two or three of them: the first
 * (EtherType, protocol, flags, ports) and those of the addresses.
 */
struct xdpoff_fields {
	/* What nft rules match most, in the first 64-bit word. */
	__be16	n_proto;	/* EtherType at offset 12: the TPID if tagged */
	__u8	ip_proto;	/* IPv4 protocol / IPv6 next header */
	__u8	flags;		/* XDPOFF_F_* */
	__be16	sport;
	__be16	dport;
	/* IPv4/IPv6 of an untagged or single-tagged frame */
	__be32	saddr[4];	/* IPv4 in saddr[0], or IPv6 */
	__be32	daddr[4];
	/* Fields only tc flower matches on, as its dissector fills them. */
	__u8	tos;		/* IPv4 TOS, IPv6 traffic class */
	__u8	ttl;		/* IPv4 TTL, IPv6 hop limit */
	__be16	tcp_flags;	/* low 12 bits of the TCP flags word; 0 if the
				 * header is short or a fragment */
	__u8	icmp_type;	/* ICMP and ICMPv6; 0 if short or a fragment */
	__u8	icmp_code;
	__u16	pad;
	__u8	dmac[6];
	__u8	smac[6];
	__be16	vlan_tci;	/* outer tag */
	__be16	vlan_etype;	/* EtherType after the outer tag */
	__be16	cvlan_tci;	/* inner tag, when vlan_etype is a TPID */
	__be16	cvlan_etype;	/* EtherType after the inner tag */
	__u32	pad2;
} __attribute__((aligned(8)));

/* The words of the hash and of xdpoff_mask.words: 64 bits each. */
#define XDPOFF_FIELD_WORDS	(sizeof(struct xdpoff_fields) / sizeof(__u64))

/*
 * Key of the rules map: the low 32 bits of xdpoff_key_hash() of the rule's
 * mask id and masked fields, and dup.  Rules with the same mask and fields
 * share one entry (the earliest rule's; the module keeps the others).
 * Rules whose hashes are alike but whose mask or fields are not take dups
 * 0, 1, 2, ... in turn: the lowest dup that no other entry of the hash
 * has.  Entries come and go, so a hash's dups need not be contiguous; the
 * XDP program looks up dup 0 and, when that does not match, dups 1 to
 * xdpoff_mask.dups - 1 (the mask's bound, which the module raises before
 * it installs an entry of a higher dup).  Eight bytes: the kernel's
 * jhash() of the key is the lookup's largest cost.
 */
struct xdpoff_rule_key {
	__u32	hash;
	__u32	dup;
} __attribute__((aligned(8)));	/* the XDP program writes it as one u64 */

/*
 * The hash of a rule key: over the words of struct xdpoff_fields that its
 * mask uses (xdpoff_mask.words), from the last down to word 0 (the XDP
 * program enters the sequence at the mask's last word and falls through
 * to the first, skipping the words no mask of that length can use), from
 * a per-device random seed (xdpoff_meta.seed).  The rules map's key
 * takes its low 32 bits (xdpoff_rule_key), the filter its top bits.
 *
 * A product's bit k depends on its factor's bits up to k only, so each
 * step folds the product's top half into its bottom half: bit k of the
 * key (k < 32) is bits k and k + 32 of the last product, and depends on
 * the last word's bits up to k + 32.  Rules of a mask whose fields differ
 * in one word only (`udp dport N`: the ports are word 0's top 32 bits)
 * therefore never share a key: the last product's change is an odd
 * multiple of the word's change, whose bits from the lowest that changed
 * on up land in the key's top half.  (Until the bucket index went, a
 * further step of a zero word brought the ports to the index's low bits.)
 */
#define XDPOFF_HASH_MUL		0x9e3779b97f4a7c15ULL

static inline __u64 xdpoff_hash_start(__u64 seed, __u32 mask_id)
{
	return (seed ^ mask_id) * XDPOFF_HASH_MUL;
}

static inline __u64 xdpoff_hash_word(__u64 h, __u64 w)
{
	h = (h ^ w) * XDPOFF_HASH_MUL;
	return h ^ (h >> 32);
}

/*
 * The filter: per mask slot, 2^XDPOFF_FILTER_BITS bits in
 * XDPOFF_FILTER_WORDS elements (u64) of the xdpoff_filter array.  The bit
 * of a key hash, picked by its top bits, is set while the rules map holds
 * an entry of the slot with such a hash.  A frame that passes the filter
 * of a mask it does not match costs a lookup of the rules map (about 140
 * instructions on 6.1: the kernel's jhash() and memcmp()): 65,536 bits a
 * mask keep that to one frame in 50 at 1,250 rules of the mask.
 */
#define XDPOFF_FILTER_BITS	16
#define XDPOFF_FILTER_WORDS	((1U << XDPOFF_FILTER_BITS) / 64)
#define XDPOFF_FILTER_ENTRIES	(XDPOFF_MAX_MASKS * XDPOFF_FILTER_WORDS)

static inline __u32 xdpoff_filter_bitno(__u64 hash)
{
	return (__u32)(hash >> (64 - XDPOFF_FILTER_BITS));
}

/* The element of the filter array holding @hash's bit of mask @slot. */
static inline __u32 xdpoff_filter_index(__u32 slot, __u64 hash)
{
	return slot * XDPOFF_FILTER_WORDS + xdpoff_filter_bitno(hash) / 64;
}

static inline __u64 xdpoff_filter_bit(__u64 hash)
{
	return 1ULL << (xdpoff_filter_bitno(hash) % 64);
}

/*
 * Bit i set: word i of the mask is not zero; bits 24-31 (XDPOFF_WORDS_LAST):
 * the last such word's index + 1, 0 for a mask of no word.
 */
#define XDPOFF_WORDS_LAST_SHIFT	24
#define XDPOFF_WORDS_LAST(words) ((words) >> XDPOFF_WORDS_LAST_SHIFT)

static inline __u32 xdpoff_mask_words(const struct xdpoff_fields *mask)
{
	const __u64 *m = (const __u64 *)mask;
	__u32 i, words = 0, last = 0;

	for (i = 0; i < XDPOFF_FIELD_WORDS; i++)
		if (m[i]) {
			words |= 1U << i;
			last = i + 1;
		}
	return words | last << XDPOFF_WORDS_LAST_SHIFT;
}

/* @fields already masked. */
static inline __u64 xdpoff_key_hash(__u64 seed, __u32 mask_id, __u32 words,
				    const struct xdpoff_fields *fields)
{
	const __u64 *f = (const __u64 *)fields;
	__u64 h = xdpoff_hash_start(seed, mask_id);
	__u32 i;

	for (i = XDPOFF_FIELD_WORDS; i-- > 0;)
		if (words & (1U << i))
			h = xdpoff_hash_word(h, f[i]);
	return h;
}

/* Tables and the address index: xdpoff/xdpoff_tables.h. */
#include "xdpoff_tables.h"

/* Rule actions. */
enum xdpoff_action {
	XDPOFF_ACT_PASS = 0,	/* accept: ends the stage, next stage runs */
	XDPOFF_ACT_DROP = 1,	/* final */
	XDPOFF_ACT_REDIRECT = 2, /* final: XDP redirect to ifindex */
	/*
	 * final, but in software: the frame goes up unchanged and the stack
	 * runs the rule (a tc filter that rewrites and then continues).
	 */
	XDPOFF_ACT_SOFTWARE = 3,
	__XDPOFF_ACT_MAX,
};

/* xdpoff_rule_val.rewrite: what a redirect does to the frame first. */
#define XDPOFF_RW_VLAN_POP	(1U << 0)	/* remove the outer tag */
#define XDPOFF_RW_VLAN_PUSH	(1U << 1)	/* add vlan_proto/vlan_tci */
#define XDPOFF_RW_VLAN_MODIFY	(1U << 2)	/* outer tag: proto, tci bits */
#define XDPOFF_RW_ETH		(1U << 3)	/* addresses: (a & keep) ^ val */

/*
 * xdpoff_rule_val.order: a rule's place among the rules of a device, in
 * the order software evaluates them (lower first).  The orders of two
 * stages never interleave.
 *
 *   bit  63      the hook: 0 tc, 1 nft (nft's ingress hook runs after tc's)
 *   bits 47-62   the priority: the tc filter's, the nft chain's (1..65535)
 *   nft: bits 32-46  0x7fff - the chain's bind number: at one priority,
 *                    the chain bound last runs first
 *        bits  0-31  the rule's handle: its position (offloaded chains
 *                    only append)
 *   tc:  bits 24-46  the age of the filter's flower mask: flower tries
 *                    its masks oldest first
 *        bits  0-23  the filter's age among those of its mask
 *
 * The helpers below are the only code that knows the bits; bpftool shows
 * them through the BTF union xdpoff_order_btf (bpf/xdpoff_btf.h).
 */
#define XDPOFF_ORDER_NFT	(1ULL << 63)

static inline __u64 xdpoff_order_tc(__u32 prio, __u32 mask_age,
				    __u32 filter_age)
{
	return (__u64)(prio & 0xffff) << 47 |
	       (__u64)(mask_age & 0x7fffff) << 24 | (filter_age & 0xffffff);
}

static inline __u64 xdpoff_order_nft(__u32 prio, __u32 bind, __u32 handle)
{
	return XDPOFF_ORDER_NFT | (__u64)(prio & 0xffff) << 47 |
	       (__u64)(0x7fff - (bind & 0x7fff)) << 32 | handle;
}

static inline int xdpoff_order_is_nft(__u64 order)
{
	return !!(order & XDPOFF_ORDER_NFT);
}

static inline __u32 xdpoff_order_prio(__u64 order)
{
	return (order >> 47) & 0xffff;
}

/* nft: the rule's handle. */
static inline __u32 xdpoff_order_handle(__u64 order)
{
	return (__u32)order;
}

/*
 * Value of the rules map.  stats_slot is the rule's element of the stats
 * array, which the module allocates; order its place (above).
 */
struct xdpoff_rule_val {
	__u64	order;		/* lower runs first */
	__u32	stats_slot;	/* its element of the stats array */
	__u32	action;		/* enum xdpoff_action */
	__u32	ifindex;	/* redirect target; 0 when unused */
	__u32	stage;		/* 0..XDPOFF_MAX_STAGES-1: the chain */
	__u32	rewrite;	/* XDPOFF_RW_*, with XDPOFF_ACT_REDIRECT */
	__be16	vlan_proto;	/* push, modify */
	__be16	vlan_tci;	/* push; modify: the bits of vlan_tci_mask */
	__be16	vlan_tci_mask;	/* modify */
	__u8	eth_keep[12];	/* dst, src */
	__u8	eth_val[12];
	__u16	pad;
	__u32	mask_id;	/* xdpoff_mask.id of the rule's table */
	struct xdpoff_fields fields; /* the rule's: frame fields & mask */
	struct xdpoff_fields mask;   /* the rule's own, within its table's */
	__u32	words;		/* xdpoff_mask_words(&mask) */
	__u32	pad2;
};

/*
 * Value of the masks array, a table; slots [0, xdpoff_meta.nr_masks) are
 * scanned.
 */
struct xdpoff_mask {
	struct xdpoff_fields	mask;
	__u32			id;	/* xdpoff_rule_val.mask_id, != 0 */
	__u32			active;	/* as its bit of xdpoff_meta.tables */
	__u32			needs;	/* XDPOFF_U_* the mask depends on */
	__u32			stage;	/* the stage of its rules */
	/*
	 * Port ranges (tc flower), inclusive, host order: the slot serves
	 * the rules of one range; the ranged port is masked out of the key.
	 */
	__u32			ranges;	/* bit 0: sport, bit 1: dport */
	__u32			words;	/* xdpoff_mask_words(&mask) */
	__u16			sport_min, sport_max;
	__u16			dport_min, dport_max;
	__u64			min_order; /* no rule of the mask is earlier */
	/*
	 * xdpoff_hash_start(xdpoff_meta.seed, id): where the hash of the
	 * mask's keys starts, so the XDP program does not compute it.
	 */
	__u64			hash_start;
	/*
	 * The dups to look up a key of the mask in: 1 + the highest dup
	 * (xdpoff_rule_key) of an entry of the mask; 1 while none of its
	 * entries shares its hash with another's.
	 */
	__u32			dups;
	__u32			pad;
};
#define XDPOFF_RANGE_SPORT	(1U << 0)
#define XDPOFF_RANGE_DPORT	(1U << 1)

/* Single entry (key 0) of the meta array. */
struct xdpoff_meta {
	__u32	nr_masks;	/* highest used mask slot + 1 */
	__u32	nr_stages;	/* highest stage bound to the device + 1 */
	/*
	 * No verdict at or after this order is taken in XDP: a tc filter
	 * there could not be offloaded and runs in software only, where it
	 * comes first.  Frames such a verdict would decide go up unchanged.
	 * XDPOFF_ORDER_NONE: every filter is offloaded.
	 */
	__u64	software_from;
	/*
	 * Where the device's flowtable hook runs among the rules (an nf
	 * ingress hook at the flowtable's priority): a frame of an offloaded
	 * flow is forwarded at this order, as if a rule there had matched.
	 * XDPOFF_ORDER_NONE: no flowtable is bound to the device.
	 */
	__u64	ft_order;
	__u64	seed;		/* of xdpoff_key_hash(), random per device */
	/*
	 * Bit t: table t is looked up (its masks element is complete).  The
	 * element's active word says the same to readers of the map.
	 */
	__u32	tables;
	__u32	index_any[2];	/* the address index's (above) */
	__u32	pad;
};
#define XDPOFF_ORDER_NONE	(~0ULL)

/*
 * Flowtable offload (nft `flowtable ... flags offload`): one entry of the
 * flows map per direction of an offloaded connection, in the maps of the
 * device the direction comes in on, keyed by its tuple as the software
 * flowtable keys its rhashtable (nf_flow_offload_ip_hook() looks up the
 * same fields).  Only frames the software fast path would take are
 * forwarded (no IP options, no fragment, TTL / hop limit above 1, TCP
 * without FIN and RST, no longer than the route's MTU, untagged); the
 * others go up unchanged.  IPv4 addresses in saddr[0] and daddr[0], the
 * rest of both and pad zero.
 */
struct xdpoff_flow_key {
	__be32	saddr[4];	/* IPv4 in [0], or IPv6 */
	__be32	daddr[4];
	__be16	sport;
	__be16	dport;
	__u8	family;		/* XDPOFF_F_IPV4 or XDPOFF_F_IPV6 */
	__u8	proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	__u16	pad;
};

/* xdpoff_flow_val.nat: the NAT edits of the direction. */
#define XDPOFF_NAT_SRC		(1U << 0)	/* sport and saddr */
#define XDPOFF_NAT_DST		(1U << 1)	/* dport and daddr */

/*
 * What XDP does to a frame of the flow, as nf_flow_offload_ip_hook() and
 * nf_flow_offload_ipv6_hook() do in software: NAT ports and addresses
 * with incremental checksum updates, TTL / hop limit minus one, the MAC
 * addresses of the output route, then XDP_REDIRECT to ifindex.  With
 * NAT, the frame's addresses and ports become nat_saddr ... nat_dport,
 * the key's where NAT leaves them (xdpoff_flow_csum_diffs() sets those);
 * ip_csum and l4_csum are what the edits add to the checksums
 * (xdpoff_csum_update()).  packets, bytes (from the network header on)
 * and last_used (jiffies) are of the frames XDP forwarded; the module
 * reports them with FLOW_CLS_STATS.
 */
struct xdpoff_flow_val {
	__u8	dmac[6];
	__u8	smac[6];
	__be32	nat_saddr[4];	/* the tuple after NAT */
	__be32	nat_daddr[4];
	__be16	nat_sport;
	__be16	nat_dport;
	__u32	nat;		/* XDPOFF_NAT_*; 0: the tuple stays */
	__u32	ifindex;	/* output device */
	__u32	mtu;		/* the route's: longer frames go to software */
	__u16	ip_csum;	/* IPv4 header: the NAT's and the TTL's change */
	__u16	l4_csum;	/* transport checksum: the NAT's change */
	__u64	packets;
	__u64	bytes;
	__u64	last_used;	/* jiffies_64; 0: none yet */
};

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * A flow's checksum updates, one per checksum and frame, whatever the NAT.
 *
 * The software flowtable edits a frame in steps (nf_flow_table_ip.c):
 * each NATed port, then address, updates the transport checksum with
 * inet_proto_csum_replace2/4/16(), each IPv4 address the header's with
 * csum_replace4(), then ip_decrease_ttl() adds htons(0x0100) to it.  Each
 * csum_replace step computes ~fold(S), S = ~(u32)check + the sum of ~from
 * + to over the words it replaces, a one's complement sum: S is never 0
 * (its first term is at least 0xffff0000), so fold(S) is in [1, 0xffff],
 * congruent to S modulo 0xffff, and the new checksum in [0, 0xfffe]: the
 * one value there congruent to ~check + sum(to - from).
 * ip_decrease_ttl() keeps to that: check + 1 for check up to 0xfffd, 0
 * for 0xfffe, 1 for 0xffff.  A chain of such steps therefore leaves the
 * value of [0, 0xfffe] congruent to ~check + the sum of every step's
 * change, whatever their order and number, and one update with the sum
 * of the changes, computed once per flow, gives the same bytes.  UDP: a
 * zero checksum is left alone, and a result of 0 is written 0xffff
 * (CSUM_MANGLED_0), which the next step takes as 0 would be taken
 * (xdpoff_l4_csum_update()).  tests/lib/csumcheck.c checks it all
 * against the steps.
 */
static __always_inline __u16 xdpoff_csum_update(__u16 check, __u16 diff)
{
	/*
	 * ~check + diff: congruent to ~(u32)check + diff, and not 0 with
	 * @diff in [1, 0xffff], as xdpoff_flow_csum_diffs() leaves it: in
	 * [1, 0x1fffe], which one fold brings to [1, 0xffff].
	 */
	__u32 s = 0xffff + diff - check;

	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

/* The transport checksum: UDP's only when set, and never set to 0. */
static __always_inline __u16 xdpoff_l4_csum_update(__u16 check, __u16 diff,
						   int udp)
{
	__u16 c;

	if (udp && !check)
		return 0;
	c = xdpoff_csum_update(check, diff);
	return udp && !c ? 0xffff : c;
}

/*
 * @s (a sum of 32-bit words, below 2^48) folded to 16 bits, congruent
 * modulo 0xffff, and not 0 unless @s is.
 */
static __always_inline __u16 xdpoff_csum_fold64(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)((s & 0xffff) + (s >> 16));
}

/* The TTL's step: ip_decrease_ttl() adds htons(0x0100) to the checksum. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define XDPOFF_CSUM_TTL		0xfffe	/* ~htons(0x0100) */
#else
#define XDPOFF_CSUM_TTL		0xfeff
#endif

/*
 * A flow's tuple after NAT, where NAT leaves it as @key has it, and the
 * checksums' changes: the sum of ~from + to over the words that change
 * (ports as inet_proto_csum_replace2() widens them), and the TTL's.
 * Neither sum is 0 (~from + to is not), nor is either change once folded.
 */
static inline void xdpoff_flow_csum_diffs(const struct xdpoff_flow_key *key,
					  struct xdpoff_flow_val *val)
{
	int i, n = key->family == XDPOFF_F_IPV4 ? 1 : 4;
	__u64 ip = 0, l4 = 0;

	if (!(val->nat & XDPOFF_NAT_SRC)) {
		for (i = 0; i < 4; i++)
			val->nat_saddr[i] = key->saddr[i];
		val->nat_sport = key->sport;
	}
	if (!(val->nat & XDPOFF_NAT_DST)) {
		for (i = 0; i < 4; i++)
			val->nat_daddr[i] = key->daddr[i];
		val->nat_dport = key->dport;
	}
	for (i = 0; i < n; i++) {
		ip += (__u32)~(__u32)key->saddr[i] + (__u64)(__u32)val->nat_saddr[i];
		ip += (__u32)~(__u32)key->daddr[i] + (__u64)(__u32)val->nat_daddr[i];
	}
	l4 = ip;
	l4 += (__u32)~(__u32)key->sport + (__u64)val->nat_sport;
	l4 += (__u32)~(__u32)key->dport + (__u64)val->nat_dport;
	val->ip_csum = xdpoff_csum_fold64(ip + XDPOFF_CSUM_TTL);
	val->l4_csum = xdpoff_csum_fold64(l4);
}

/*
 * Per-CPU value of the stats array, one slot per installed rule.  A rule
 * is hit when it decides its stage for a frame and the frame reaches that
 * stage in software order.  Consumed hits are those on frames XDP then
 * dropped or redirected: software never sees them, so they are what
 * FLOW_CLS_STATS reports.
 */
struct xdpoff_stats {
	__u64	packets;
	__u64	bytes;
	__u64	consumed_packets;
	__u64	consumed_bytes;
};

/*
 * Generic netlink control interface of the module.  All commands need
 * CAP_NET_ADMIN in the network namespace of the requesting socket.
 */
#define XDPOFF_GENL_NAME	"xdpoff"
#define XDPOFF_GENL_VERSION	1

enum xdpoff_cmd {
	XDPOFF_CMD_UNSPEC,
	XDPOFF_CMD_ATTACH,	/* IFINDEX + the five *_FD: manage the device */
	XDPOFF_CMD_DETACH,	/* IFINDEX: forget it (EBUSY while bound) */
	XDPOFF_CMD_GET,		/* dump: attached devices and their state */
	__XDPOFF_CMD_MAX,
};
#define XDPOFF_CMD_MAX (__XDPOFF_CMD_MAX - 1)

enum xdpoff_xdp_mode {
	XDPOFF_XDP_NATIVE,	/* the driver's XDP (xdpdrv) */
	XDPOFF_XDP_GENERIC,	/* generic XDP, on an skb (xdpgeneric) */
};

/*
 * XDPOFF_ATTR_PROG_FLAGS.  NO_ADJUST: the program cannot move the frame's
 * start (the build attach falls back to under a libxdp dispatcher that
 * cannot run one that does), so a redirect that pushes or pops a VLAN tag
 * is software's: the frame goes up to tc, which makes it.
 */
#define XDPOFF_PROG_NO_ADJUST	(1U << 0)
#define XDPOFF_PROG_FLAGS_ALL	XDPOFF_PROG_NO_ADJUST

enum xdpoff_attr {
	XDPOFF_ATTR_UNSPEC,
	XDPOFF_ATTR_IFINDEX,		/* u32 */
	XDPOFF_ATTR_RULES_FD,		/* u32: fd of the rules hash map */
	XDPOFF_ATTR_MASKS_FD,		/* u32: fd of the masks array */
	XDPOFF_ATTR_META_FD,		/* u32: fd of the meta array */
	XDPOFF_ATTR_STATS_FD,		/* u32: fd of the per-CPU stats array */
	XDPOFF_ATTR_NR_RULES,		/* u32: rules installed (GET) */
	XDPOFF_ATTR_NR_BLOCKS,		/* u32: flow blocks bound (GET) */
	XDPOFF_ATTR_MAX_RULES,		/* u32: capacity (GET) */
	/* string: why the last rule was refused (GET); nf_tables does not
	 * pass the driver's extack on to nft.
	 */
	XDPOFF_ATTR_LAST_ERROR,
	XDPOFF_ATTR_FLOWS_FD,		/* u32: fd of the flows hash map */
	XDPOFF_ATTR_NR_FLOWS,		/* u32: flows installed (GET) */
	XDPOFF_ATTR_FILTER_FD,		/* u32: fd of the filter array */
	/*
	 * u32, enum xdpoff_xdp_mode: the mode the XDP program runs in on the
	 * device (ATTACH, optional: native; GET).
	 */
	XDPOFF_ATTR_XDP_MODE,
	/*
	 * u32, XDPOFF_PROG_*: what the device's program cannot do
	 * (ATTACH, optional: 0; GET).
	 */
	XDPOFF_ATTR_PROG_FLAGS,
	/* the index maps' fds in 0.2: no longer accepted */
	XDPOFF_ATTR_UNUSED1,
	XDPOFF_ATTR_UNUSED2,
	/*
	 * u64, u32: the kernel's jiffies_64 and HZ (GET), against which a
	 * flow's last_used reads as a time.
	 */
	XDPOFF_ATTR_JIFFIES,
	XDPOFF_ATTR_HZ,
	XDPOFF_ATTR_PAD,
	XDPOFF_ATTR_INDEX_FD,		/* u32: fd of the address index array */
	/*
	 * u32 (GET): the rules, chains and flows the module has refused on
	 * the device since it was attached; LAST_ERROR says why the last.
	 * `xdpoff check` tells the module's refusals from nf_tables' by it.
	 */
	XDPOFF_ATTR_REFUSALS,
	__XDPOFF_ATTR_MAX,
};
#define XDPOFF_ATTR_MAX (__XDPOFF_ATTR_MAX - 1)

/*
 * The XDP program's maps, the one list of them:
 *
 *   X(ID, name, fd attribute, map type, key type, value type)
 *
 * ID: XDPOFF_MAPI_ID, the map's index in the module's and the CLI's
 * arrays, in this order.  name: the map's C identifier in
 * bpf/xdpoff.bpf.c, its name in bpftool and its pin under
 * XDPOFF_PIN_ROOT/DEV (XDPOFF_MAP_NAME()).  fd attribute: what carries its
 * fd in XDPOFF_CMD_ATTACH.  Type, key and value: what the module checks
 * the handed maps against, and the XDP program its definitions
 * (XDPOFF_MAP_CHECK()).
 */
#define XDPOFF_MAPS(X)							\
	X(RULES,  xdpoff_rules,  XDPOFF_ATTR_RULES_FD,			\
	  BPF_MAP_TYPE_HASH, struct xdpoff_rule_key, struct xdpoff_rule_val) \
	X(MASKS,  xdpoff_masks,  XDPOFF_ATTR_MASKS_FD,			\
	  BPF_MAP_TYPE_ARRAY, __u32, struct xdpoff_mask)		\
	X(META,   xdpoff_meta,   XDPOFF_ATTR_META_FD,			\
	  BPF_MAP_TYPE_ARRAY, __u32, struct xdpoff_meta)		\
	X(STATS,  xdpoff_stats,  XDPOFF_ATTR_STATS_FD,			\
	  BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct xdpoff_stats)	\
	X(FLOWS,  xdpoff_flows,  XDPOFF_ATTR_FLOWS_FD,			\
	  BPF_MAP_TYPE_HASH, struct xdpoff_flow_key, struct xdpoff_flow_val) \
	X(FILTER, xdpoff_filter, XDPOFF_ATTR_FILTER_FD,			\
	  BPF_MAP_TYPE_ARRAY, __u32, __u64)				\
	X(INDEX,  xdpoff_index,  XDPOFF_ATTR_INDEX_FD,			\
	  BPF_MAP_TYPE_ARRAY, __u32, __u32)

#define XDPOFF_MAP_INDEX(id, name, attr, type_, key_, val_) XDPOFF_MAPI_##id,
enum xdpoff_map_index {
	XDPOFF_MAPS(XDPOFF_MAP_INDEX)
	XDPOFF_NR_MAPS,
};
#undef XDPOFF_MAP_INDEX

/* The map's name, a string: "xdpoff_rules" ... */
#define XDPOFF_MAP_NAME(name)	#name

/*
 * In the XDP program, after the maps' definitions: XDPOFF_MAPS(XDPOFF_MAP_CHECK)
 * fails the build where a definition's type, key or value size is not the
 * list's.  (libbpf's __uint(type, N) is a pointer to int[N], __type(key, T)
 * a pointer to T.)
 */
#define XDPOFF_MAP_CHECK(id, name, attr, type_, key_, val_)		\
	_Static_assert(sizeof(*name.type) / sizeof(int) == (type_) &&	\
		       sizeof(*name.key) == sizeof(key_) &&		\
		       sizeof(*name.value) == sizeof(val_),		\
		       #name " is not defined as XDPOFF_MAPS says");

#endif /* __XDPOFF_XDPOFF_H */
