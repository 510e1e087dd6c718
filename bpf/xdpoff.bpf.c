// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff XDP program: the "hardware" of the offload.
 *
 * Parses Ethernet, IPv4/IPv6 and TCP/UDP/ICMP into struct xdpoff_fields,
 * runs a tuple-space search over the masks the module has installed, and
 * decides as software would: the tc ingress block and every offloaded nft
 * chain is a stage, the earliest matching rule of a stage decides it; drop
 * and redirect are final, accept ends only its stage.  Frames no final rule
 * takes pass to the stack, where the same rules run again.  An offloaded
 * flowtable is looked up at its hook's place among the rules: a frame of
 * one of its flows is NATed and forwarded as the software flowtable does.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>

#include "xdpoff/xdpoff.h"
#include "xdpoff_btf.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * The maps' capacities are set by `xdpoff attach` (--max-rules,
 * --max-flows); these are the defaults.  Hash maps preallocate their
 * elements: an update of an installed entry or of a new one within the
 * capacity never fails for want of memory.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPOFF_DEFAULT_MAX_RULES);
	__type(key, struct xdpoff_rule_key);
	__type(value, struct xdpoff_rule_val_btf);	/* xdpoff_btf.h */
} xdpoff_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPOFF_MAX_MASKS);
	__type(key, __u32);
	__type(value, struct xdpoff_mask_btf);
} xdpoff_masks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xdpoff_meta);
} xdpoff_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XDPOFF_DEFAULT_MAX_RULES);
	__type(key, __u32);
	__type(value, struct xdpoff_stats);
} xdpoff_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPOFF_FILTER_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} xdpoff_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPOFF_DEFAULT_MAX_FLOWS);
	__type(key, struct xdpoff_flow_key_btf);
	__type(value, struct xdpoff_flow_val_btf);
} xdpoff_flows SEC(".maps");

_Static_assert(sizeof(struct xdpoff_fields) % sizeof(__u64) == 0,
	       "xdpoff_fields must be a whole number of 64-bit words");
_Static_assert(XDPOFF_FIELD_WORDS <= XDPOFF_WORDS_LAST_SHIFT,
	       "xdpoff_mask.words is too narrow");
_Static_assert(XDPOFF_FIELD_WORDS == 9, "lookup_rule() walks 9 words");
_Static_assert(__builtin_offsetof(struct xdpoff_fields, dmac) % 8 == 0 &&
	       __builtin_offsetof(struct xdpoff_fields, smac) ==
	       __builtin_offsetof(struct xdpoff_fields, dmac) + ETH_ALEN,
	       "xdpoff_parse() copies dmac and smac as one 12-byte block");
_Static_assert(__builtin_offsetof(struct xdpoff_mask, words) == 92 &&
	       __builtin_offsetof(struct xdpoff_mask, hash_start) == 112 &&
	       __builtin_offsetof(struct xdpoff_mask, dups) == 120,
	       "tests/lib/keyindex.py reads words, hash_start and dups there");
_Static_assert(sizeof(struct xdpoff_rule_key) == 8,
	       "the rules map's key: the kernel hashes it whole, jhash() of 8 bytes");
_Static_assert((XDPOFF_MAX_STAGES & (XDPOFF_MAX_STAGES - 1)) == 0,
	       "XDPOFF_MAX_STAGES must be a power of two");
_Static_assert(__builtin_offsetof(struct xdpoff_flow_val, dmac) == 0 &&
	       __builtin_offsetof(struct xdpoff_flow_val, smac) == ETH_ALEN,
	       "ft_edit_frame() copies dmac and smac as a u64 and a u32");
_Static_assert(sizeof(struct xdpoff_flow_key) == 40 &&
	       __builtin_offsetof(struct xdpoff_flow_key, daddr) == 16,
	       "ft_classify() writes the tuple as five 64-bit words");
_Static_assert(__builtin_offsetof(struct xdpoff_flow_key, sport) % 8 == 0 &&
	       __builtin_offsetof(struct xdpoff_flow_key, dport) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 2 &&
	       __builtin_offsetof(struct xdpoff_flow_key, family) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 4 &&
	       __builtin_offsetof(struct xdpoff_flow_key, proto) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 5 &&
	       __builtin_offsetof(struct xdpoff_flow_key, pad) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 6,
	       "ft_classify() writes ports, family and protocol as one word");
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ft_classify() writes words as a little-endian machine"
#endif

#define IP_OFFSET	0x1fff
#define IP_MF		0x2000
#define ICMP_HLEN	8

/*
 * Ports as nf_tables loads them: the first four bytes of the transport
 * header, which is all a port match needs.  TCP flags and ICMP type and
 * code as tc flower's dissector reads them: from a whole header of an
 * unfragmented packet, else zero.  The XDPOFF_F_* flags gather in *@flags,
 * a register of the caller, which stores them once.
 */
static __always_inline int parse_l4(void *l4, void *data_end, __u8 proto,
				    int frag, struct xdpoff_fields *f,
				    __u32 *flags)
{
	struct udphdr *uh = l4;	/* ports sit at the same place in TCP */
	struct tcphdr *th = l4;
	__u8 *ih = l4;

	switch (proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
		if (l4 + 4 > data_end)
			return l4 < data_end ? XDPOFF_U_L4 : 0;
		f->sport = uh->source;
		f->dport = uh->dest;
		*flags |= XDPOFF_F_L4;
		if (proto == IPPROTO_TCP && !frag &&
		    (void *)(th + 1) <= data_end && th->doff >= 5)
			f->tcp_flags = ((__be16 *)th)[6] & bpf_htons(0x0fff);
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (!frag && l4 + ICMP_HLEN <= data_end) {
			f->icmp_type = ih[0];
			f->icmp_code = ih[1];
		}
		break;
	}
	return 0;
}

/*
 * IPv4 as nf_tables validates it at ingress: version, ihl >= 5, total
 * length within the frame and covering the header.  Software still reads
 * addresses and protocol out of a header that fails this, XDP cannot say
 * what it finds there: XDPOFF_U_L3.  Non-first fragments carry no
 * transport header.
 */
static __always_inline int parse_ipv4(struct iphdr *iph, void *data_end,
				      struct xdpoff_fields *f, __u32 *flags)
{
	__u32 ihl, len;

	if ((void *)(iph + 1) > data_end)
		return XDPOFF_U_L3;
	ihl = iph->ihl * 4;
	len = bpf_ntohs(iph->tot_len);
	if (iph->version != 4 || ihl < sizeof(*iph) || len < ihl ||
	    len > (__u64)(data_end - (void *)iph))
		return XDPOFF_U_L3;

	*flags |= XDPOFF_F_IPV4 | XDPOFF_F_PROTO;
	f->ip_proto = iph->protocol;
	f->saddr[0] = iph->saddr;
	f->daddr[0] = iph->daddr;
	f->tos = iph->tos;
	f->ttl = iph->ttl;
	if (iph->frag_off & bpf_htons(IP_OFFSET))
		return XDPOFF_U_FRAG;
	if (iph->frag_off & bpf_htons(IP_MF))
		return XDPOFF_U_FRAG |
		       parse_l4((void *)iph + ihl, data_end, iph->protocol, 1,
				f, flags);
	return parse_l4((void *)iph + ihl, data_end, iph->protocol, 0, f,
			flags);
}

static __always_inline int ipv6_is_l4(__u8 nh)
{
	switch (nh) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_ESP:
	case IPPROTO_AH:
	case IPPROTO_DSTOPTS:
	case IPPROTO_MH:
	case 139:	/* HIP */
	case 140:	/* Shim6 */
	case 253:	/* experimental */
	case 254:
		return 0;
	}
	return 1;
}

/*
 * IPv6: without extension headers the next header is the transport
 * protocol, nf_tables' l4proto; behind extension headers XDP does not
 * look (XDPOFF_U_PROTO).
 */
static __always_inline int parse_ipv6(struct ipv6hdr *ip6h, void *data_end,
				      struct xdpoff_fields *f, __u32 *flags)
{
	__u8 nh;

	if ((void *)(ip6h + 1) > data_end)
		return XDPOFF_U_L3;
	if (ip6h->version != 6 ||
	    bpf_ntohs(ip6h->payload_len) >
	    (__u64)(data_end - (void *)(ip6h + 1)))
		return XDPOFF_U_L3;

	*flags |= XDPOFF_F_IPV6;
	__builtin_memcpy(f->saddr, &ip6h->saddr, sizeof(f->saddr));
	__builtin_memcpy(f->daddr, &ip6h->daddr, sizeof(f->daddr));
	f->tos = ip6h->priority << 4 | ip6h->flow_lbl[0] >> 4;
	f->ttl = ip6h->hop_limit;
	nh = ip6h->nexthdr;
	if (!ipv6_is_l4(nh))
		return XDPOFF_U_PROTO;
	*flags |= XDPOFF_F_PROTO;
	f->ip_proto = nh;
	return parse_l4(ip6h + 1, data_end, nh, 0, f, flags);
}

struct vlan_hdr {
	__be16	tci;
	__be16	encap_proto;
};

static __always_inline int is_tpid(__be16 proto)
{
	return proto == bpf_htons(ETH_P_8021Q) ||
	       proto == bpf_htons(ETH_P_8021AD);
}

/*
 * Fill @f from the frame; fields the frame does not carry stay zero.
 * Returns the XDPOFF_U_* bits of what cannot be decided as software
 * would, or -1 for a frame to leave alone.  The stack strips one VLAN
 * tag before nf_tables runs, so the network header is parsed behind at
 * most one tag, and the stack's protocol is then not the one at offset 12.
 * Inlined: as a function of its own it cost 22 instructions a frame
 * (call, saved registers, the caller's spills), and the verifier walks
 * a static function once per call anyway.
 */
static __always_inline long xdpoff_parse(struct xdp_md *ctx,
					 struct xdpoff_fields *f)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct vlan_hdr *vh;
	void *nh = eth + 1;
	__u32 flags = 0;
	__be16 l3;
	int ret;

	if (!f || (void *)(eth + 1) > data_end)
		return -1;
	/*
	 * Both addresses in two loads: struct ethhdr is packed, and copied
	 * member by member it costs a load and a store per byte.
	 */
	*(__u64 *)f->dmac = *(__u64 *)data;
	*(__u32 *)(f->dmac + 8) = *(__u32 *)(data + 8);
	l3 = *(__be16 *)(data + 12);
	f->n_proto = l3;

	/* An 802.3 length: the EtherType's first byte, in one load. */
	if (*(__u8 *)(data + 12) < (ETH_P_802_3_MIN >> 8))
		return XDPOFF_U_ETYPE;
	if (is_tpid(l3)) {
		vh = nh;
		/* skb_vlan_untag() frees what is shorter than this. */
		if ((void *)(vh + 1) + sizeof(__be16) > data_end)
			return -1;
		f->vlan_tci = vh->tci;
		f->vlan_etype = vh->encap_proto;
		l3 = vh->encap_proto;
		nh = vh + 1;
		if (is_tpid(l3)) {
			vh = nh;
			if ((void *)(vh + 1) > data_end) {
				f->flags = XDPOFF_F_VLAN;
				return XDPOFF_U_ETYPE | XDPOFF_U_TAG2;
			}
			f->flags = XDPOFF_F_VLAN | XDPOFF_F_CVLAN;
			f->cvlan_tci = vh->tci;
			f->cvlan_etype = vh->encap_proto;
			return XDPOFF_U_ETYPE | XDPOFF_U_TAG2 |
			       (is_tpid(vh->encap_proto) ? XDPOFF_U_TAG3 : 0);
		}
		flags = XDPOFF_F_VLAN;
	}

	switch (l3) {
	case bpf_htons(ETH_P_IP):
		ret = parse_ipv4(nh, data_end, f, &flags);
		break;
	case bpf_htons(ETH_P_IPV6):
		ret = parse_ipv6(nh, data_end, f, &flags);
		break;
	default:
		ret = 0;
	}
	f->flags = flags;
	/*
	 * Read back: to the verifier a byte from the stack is any byte, so
	 * the caller is verified once for every return value of a parse
	 * path, not once more for each value of the flags.
	 */
	return ret | (((volatile struct xdpoff_fields *)f)->flags &
		      XDPOFF_F_VLAN ? XDPOFF_U_ETYPE : 0);
}

/*
 * Word n of the hash, and of the compare: cases of a switch on the mask's
 * last word + 1 that fall through down to word 0, so a mask of the first
 * words (an nft rule on IPv4 addresses and ports) does not test the others.
 * The hash skips the words the mask does not use (a zero word of the mask:
 * xdpoff_mask_words() sets the bits of the others, which the module's
 * hash tests); the compare need not test for them: a rule's fields are
 * zero outside its mask (the module installs no rule whose key has bits
 * there), and so is the masked frame.
 */
#define HASH_WORD(n)							\
	case (n) + 1:							\
		mw = msk[n];						\
		if (mw)							\
			h = xdpoff_hash_word(h, src[n] & mw);		\
		/* fallthrough */
#define SAME_WORD(n)							\
	case (n) + 1:							\
		if ((src[n] & msk[n]) != v[n])				\
			return 0;					\
		/* fallthrough */

/*
 * Whether the rule @val is of mask @m and its fields are those of frame
 * @f masked with @m.  The words are read as volatile: the compiler would
 * keep them all in registers across the map lookup (and the mask loop),
 * and spill them past the stack's 512 bytes.  So is the mask's last word,
 * read again here: kept from the hash's switch, the verifier would walk
 * everything in between once for each of its values, past its
 * 1,000,000-instruction limit.
 */
static __always_inline int same_rule(const struct xdpoff_rule_val *val,
				     const struct xdpoff_fields *f,
				     const struct xdpoff_mask *m)
{
	const volatile __u64 *src = (const volatile __u64 *)f;
	const volatile __u64 *msk = (const volatile __u64 *)&m->mask;
	const volatile __u32 *words = &m->words;
	const __u64 *v = (const __u64 *)&val->fields;

	if (val->mask_id != m->id)
		return 0;
	switch (XDPOFF_WORDS_LAST(*words)) {
	SAME_WORD(8) SAME_WORD(7) SAME_WORD(6) SAME_WORD(5) SAME_WORD(4)
	SAME_WORD(3) SAME_WORD(2) SAME_WORD(1) SAME_WORD(0)
	}
	return 1;
}

/* The rules of a hash beyond dup 0: lookup_dup()'s bpf_loop() state. */
struct dup_walk {
	const struct xdpoff_fields	*f;
	const struct xdpoff_mask	*m;
	struct xdpoff_rule_key		key;
	__u32				found;
};

static long dup_step(__u32 i, void *ctx)
{
	struct dup_walk *w = ctx;
	struct xdpoff_rule_val *val;

	w->key.dup = i + 1;
	val = bpf_map_lookup_elem(&xdpoff_rules, &w->key);
	if (!val || !same_rule(val, w->f, w->m))
		return 0;
	w->found = i + 1;
	return 1;
}

/*
 * The dup, from 1 up, of the rule of mask @m with key hash @hash that
 * matches @f, or 0.  Rules whose hashes are alike are rare (32 bits
 * each), so this is a function of its own, verified once (global), and
 * its loop a bpf_loop(): a hash's dups are as many as rules share it.
 */
__noinline int lookup_dup(const struct xdpoff_fields *f,
			  const struct xdpoff_mask *m, __u32 hash)
{
	struct dup_walk w = { .f = f, .m = m, .key = { .hash = hash } };

	if (!f || !m || m->dups < 2)
		return 0;
	bpf_loop(m->dups - 1, dup_step, &w, 0);
	return w.found;
}

/*
 * The rule of mask @m (in @slot) that matches @f, if any: the hash of only
 * the words @m uses, its bit in the slot's filter, then the rules map's
 * entry of the hash (dup 0: another hash's rules share it only if their
 * hashes are alike), whose mask and fields must be @m's and the frame's.
 * @key is the caller's scratch space for the lookups.  The hash starts
 * from the mask's hash_start, which the module computes from the
 * device's seed and the mask id.
 */
static __always_inline struct xdpoff_rule_val *
lookup_rule(const struct xdpoff_fields *f, const struct xdpoff_mask *m,
	    __u32 slot, struct xdpoff_rule_key *key)
{
	const volatile __u64 *src = (const volatile __u64 *)f;
	const volatile __u64 *msk = (const volatile __u64 *)&m->mask;
	const volatile __u32 *words = &m->words;
	struct xdpoff_rule_val *val;
	__u64 h, mw, *bits;
	__u32 idx;

	h = m->hash_start;
	switch (XDPOFF_WORDS_LAST(*words)) {
	HASH_WORD(8) HASH_WORD(7) HASH_WORD(6) HASH_WORD(5) HASH_WORD(4)
	HASH_WORD(3) HASH_WORD(2) HASH_WORD(1) HASH_WORD(0)
	}
	idx = xdpoff_filter_index(slot, h);
	bits = bpf_map_lookup_elem(&xdpoff_filter, &idx);
	if (!bits || !(*bits & xdpoff_filter_bit(h)))
		return NULL;
	/* hash and dup 0, one store */
	*(__u64 *)key = (__u32)h;
	val = bpf_map_lookup_elem(&xdpoff_rules, key);
	if (val && same_rule(val, f, m))
		return val;
	if (m->dups < 2)
		return NULL;
	key->dup = lookup_dup(f, m, (__u32)h);
	if (!key->dup)
		return NULL;
	val = bpf_map_lookup_elem(&xdpoff_rules, key);
	if (val && same_rule(val, f, m))
		return val;
	return NULL;
}

/*
 * Per stage: the best rule, as scalars (the verifier does not keep
 * pointers at variable stack offsets), and the earliest order a mask this
 * frame could not be looked up in may hold (undetermined stage).
 */
struct stage_best {
	__u64	order[XDPOFF_MAX_STAGES];
	__u64	unknown[XDPOFF_MAX_STAGES];
	__u32	slot[XDPOFF_MAX_STAGES];
	__u32	ifindex[XDPOFF_MAX_STAGES];
	/*
	 * action | rewrite << 8 | mask slot << 16, one word: the stack is
	 * the XDP program's scarcest resource.
	 */
	__u32	info[XDPOFF_MAX_STAGES];
};
#define INFO(action, rewrite, mask)	((action) | (rewrite) << 8 | (mask) << 16)
#define INFO_ACTION(info)		((info) & 0xff)
#define INFO_REWRITE(info)		(((info) >> 8) & 0xff)
#define INFO_MASK(info)			((info) >> 16)
_Static_assert(__XDPOFF_ACT_MAX <= 256 && XDPOFF_MAX_MASKS <= 256 &&
	       XDPOFF_RW_ETH < 256, "stage_best's info is too narrow");

#define NO_MATCH	(~0ULL)

/* A port range slot: the frame's port must lie within it. */
static __always_inline int out_of_range(const struct xdpoff_mask *m,
					const struct xdpoff_fields *f)
{
	__u16 p;

	if (m->ranges & XDPOFF_RANGE_SPORT) {
		p = bpf_ntohs(f->sport);
		if (p < m->sport_min || p > m->sport_max)
			return 1;
	}
	if (m->ranges & XDPOFF_RANGE_DPORT) {
		p = bpf_ntohs(f->dport);
		if (p < m->dport_min || p > m->dport_max)
			return 1;
	}
	return 0;
}

/*
 * The edits of a tc filter that redirects, in tc's order: the VLAN action
 * (pop removes the outer tag, push adds one outside, modify rewrites the
 * outer one; each a no-op where act_vlan's is), then pedit of the
 * addresses.  Returns -1 when the frame cannot be edited here (no
 * headroom): software then does it all.
 */
static __always_inline int rewrite(struct xdp_md *ctx,
				   const struct xdpoff_rule_val *val)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct vlan_hdr *vh;
#ifndef XDPOFF_NO_ADJUST
	__u32 addrs[3];
#endif
	__u8 *a;
	int i;

	if ((void *)(eth + 1) + sizeof(*vh) > data_end)
		return -1;
	vh = (void *)(eth + 1);
#ifdef XDPOFF_NO_ADJUST
	/*
	 * The build for a dispatcher that cannot run a program moving the
	 * frame's start (the module knows, XDPOFF_PROG_NO_ADJUST, and leaves
	 * such rules to software): a guard only.
	 */
	if (val->rewrite & (XDPOFF_RW_VLAN_POP | XDPOFF_RW_VLAN_PUSH))
		return -1;
#else
	if ((val->rewrite & XDPOFF_RW_VLAN_POP) && is_tpid(eth->h_proto)) {
		__builtin_memcpy(addrs, eth, sizeof(addrs));
		__builtin_memcpy((void *)eth + sizeof(*vh), addrs,
				 sizeof(addrs));
		if (bpf_xdp_adjust_head(ctx, sizeof(*vh)))
			return -1;
	} else if (val->rewrite & XDPOFF_RW_VLAN_PUSH) {
		if (bpf_xdp_adjust_head(ctx, -(int)sizeof(*vh)))
			return -1;
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
		eth = data;
		if ((void *)(eth + 1) + sizeof(*vh) > data_end)
			return -1;
		__builtin_memcpy(addrs, (void *)eth + sizeof(*vh),
				 sizeof(addrs));
		__builtin_memcpy(eth, addrs, sizeof(addrs));
		vh = (void *)(eth + 1);
		vh->tci = val->vlan_tci;
		eth->h_proto = val->vlan_proto;
	} else
#endif
	if ((val->rewrite & XDPOFF_RW_VLAN_MODIFY) && is_tpid(eth->h_proto)) {
		eth->h_proto = val->vlan_proto;
		vh->tci = (vh->tci & ~val->vlan_tci_mask) | val->vlan_tci;
	}

	if (val->rewrite & XDPOFF_RW_ETH) {
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
		a = data;
		if ((void *)(a + 12) > data_end)
			return -1;
#pragma unroll
		for (i = 0; i < 12; i++)
			a[i] = (a[i] & val->eth_keep[i]) ^ val->eth_val[i];
	}
	return 0;
}

static __always_inline void count(__u32 slot, __u64 len, int consumed)
{
	struct xdpoff_stats *st;

	st = bpf_map_lookup_elem(&xdpoff_stats, &slot);
	if (!st)
		return;
	st->packets++;
	st->bytes += len;
	if (consumed) {
		st->consumed_packets++;
		st->consumed_bytes += len;
	}
}

/* The lookups' keys: one at a time, in one place on the stack. */
union lookup_key {
	struct xdpoff_rule_key	rule;	/* aligned(8): written as a u64 */
	struct xdpoff_flow_key	flow;
	__u64			align;	/* the flow key is written as u64s */
};

/* What the flowtable does with a frame (nf_flow_tuple_ip/ipv6()). */
#define FT_NONE		0	/* not a candidate: software does not look */
#define FT_UNSURE	1	/* software looks it up: maybe a flow XDP lacks */
#define FT_HIT		2	/* an offloaded flow the fast path takes */

/* The headers of a frame ft_classify() found a flow for. */
struct ft_frame {
	void		*eth;		/* the frame's start */
	struct iphdr	*iph;		/* IPv4, or */
	struct ipv6hdr	*ip6h;		/* IPv6 */
	__u16		*l4;		/* sport, dport, ... */
	__u16		*csum;		/* the transport checksum */
	int		udp;
	__u64		len;		/* from the network header on */
};

/*
 * A frame the flowtable could forward: untagged IPv4 without options or
 * fragmentation, or IPv6, TCP or UDP behind it, the TTL / hop limit above
 * 1, the transport header whole.  Tagged and PPPoE frames, and GRE, are
 * left to software: XDP holds no such flow, but software may.  The flow
 * is the flows map's entry of the frame's tuple, a key built in @fk (the
 * caller's scratch space).  FT_HIT: the flow in *@valp, and if @fr the
 * headers, bounds checked for ft_edit_frame(), and the length in *@fr
 * (decide() passes NULL: the pointers kept on the stack through its paths
 * would cost the verifier too many states; ft_edit() finds them again).
 */
static __always_inline int ft_classify(struct xdp_md *ctx,
				       struct xdpoff_flow_key *fk,
				       struct xdpoff_flow_val **valp,
				       struct ft_frame *fr)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct xdpoff_flow_val *fv;
	struct ipv6hdr *ip6h = NULL;
	struct iphdr *iph = NULL;
	__u64 *k = (__u64 *)fk;
	__u64 len;
	__u8 proto, family;
	__u16 *csum;
	__be16 h_proto;
	__u32 hdrsize;
	void *l4;

	/*
	 * @family, not whether iph is set, tells the two apart: to the
	 * verifier a packet pointer may be NULL, and the other one is not
	 * a pointer on that path.  It is a constant on each path to the
	 * verifier, opaque to the compiler (barrier_var()), which would
	 * test h_proto again instead, a value the verifier no longer knows
	 * once spilled.
	 */
	if ((void *)(eth + 1) > data_end)
		return FT_NONE;
	/* (a 16-bit load: ethhdr is packed, clang would read bytes) */
	h_proto = *(__be16 *)(data + offsetof(struct ethhdr, h_proto));
	if (h_proto == bpf_htons(ETH_P_IP)) {
		family = XDPOFF_F_IPV4;
		barrier_var(family);
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end)
			return FT_NONE;
		/*
		 * Options or a fragment: ihl (the low half of the first byte)
		 * and frag_off (the last two bytes), one load.
		 */
		if ((*(__u64 *)iph &
		     (0x0f | (__u64)bpf_htons(IP_MF | IP_OFFSET) << 48)) != 5)
			return FT_NONE;
		proto = iph->protocol;
		if (iph->ttl <= 1)
			return FT_NONE;
		l4 = iph + 1;
	} else if (h_proto == bpf_htons(ETH_P_IPV6)) {
		family = XDPOFF_F_IPV6;
		barrier_var(family);
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end)
			return FT_NONE;
		proto = ip6h->nexthdr;
		if (ip6h->hop_limit <= 1)
			return FT_NONE;
		l4 = ip6h + 1;
	} else if (is_tpid(h_proto) || h_proto == bpf_htons(ETH_P_PPP_SES)) {
		return FT_UNSURE;
	} else {
		return FT_NONE;
	}

	if (proto == IPPROTO_TCP) {
		hdrsize = sizeof(struct tcphdr);
	} else if (proto == IPPROTO_UDP) {
		hdrsize = sizeof(struct udphdr);
	} else if (proto == IPPROTO_GRE) {
		/* GRE version 0; a GRE header is 4 bytes at least */
		if (l4 + 4 > data_end)
			return FT_NONE;
		return (*(__u8 *)(l4 + 1) & 7) ? FT_NONE : FT_UNSURE;
	} else {
		return FT_NONE;
	}
	if (l4 + hdrsize > data_end)
		return FT_NONE;
	/*
	 * The tuple as 64-bit words: the addresses (IPv4's in the first
	 * bytes of each half, the rest zero), then the ports as a 32-bit
	 * load of the transport header reads them, family, protocol, pad 0.
	 */
	if (family == XDPOFF_F_IPV4) {
		k[0] = iph->saddr;
		k[1] = 0;
		k[2] = iph->daddr;
		k[3] = 0;
	} else {
		const __u64 *a = (const __u64 *)&ip6h->saddr;

		/* saddr, daddr: adjacent in both */
		k[0] = a[0];
		k[1] = a[1];
		k[2] = a[2];
		k[3] = a[3];
	}
	k[4] = *(__u32 *)l4 | (__u64)family << 32 | (__u64)proto << 40;
	fv = bpf_map_lookup_elem(&xdpoff_flows, fk);
	if (!fv)
		return FT_UNSURE;
	/* Over the route's MTU; a FIN or RST (software tears down). */
	len = data_end - data - ETH_HLEN;
	if (len > fv->mtu)
		return FT_UNSURE;
	/*
	 * The bounds again, each header's own: the compiler may keep
	 * hdrsize and proto apart, and the verifier would then see a TCP
	 * read bounded by a UDP header.
	 */
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return FT_NONE;
		if (th->fin || th->rst)
			return FT_UNSURE;
		csum = &th->check;
	} else {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end)
			return FT_NONE;
		csum = &uh->check;
	}
	if (fr) {
		fr->eth = data;
		fr->iph = iph;
		fr->ip6h = ip6h;
		fr->l4 = l4;
		fr->csum = csum;
		fr->udp = proto == IPPROTO_UDP;
		fr->len = len;
	}
	*valp = fv;
	return FT_HIT;
}

/*
 * NAT, TTL / hop limit, MAC addresses of the frame ft_classify() took,
 * whose headers @fr holds, bounds checked: nf_flow_offload_ip(v6)_hook()'s
 * edits, each checksum updated once with what the flow's edits add to it
 * (xdpoff_csum_update()).
 */
static __always_inline void ft_edit_frame(const struct ft_frame *fr,
					  const struct xdpoff_flow_val *val)
{
	if (fr->iph) {
		/* the NAT's csum_replace4()s, then ip_decrease_ttl() */
		fr->iph->check = xdpoff_csum_update(fr->iph->check,
						    val->ip_csum);
		fr->iph->ttl--;
		if (val->nat) {
			fr->iph->saddr = val->nat_saddr[0];
			fr->iph->daddr = val->nat_daddr[0];
		}
	} else if (fr->ip6h) {
		fr->ip6h->hop_limit--;
		if (val->nat) {
			/* saddr, daddr: adjacent in both (words: see below) */
			__u64 *a = (void *)&fr->ip6h->saddr;
			const void *n = val->nat_saddr;

			a[0] = *(const __u64 *)n;
			a[1] = *(const __u64 *)(n + 8);
			a[2] = *(const __u64 *)(n + 16);
			a[3] = *(const __u64 *)(n + 24);
		}
	}
	if (val->nat) {
		*(__u32 *)fr->l4 = *(const __u32 *)&val->nat_sport;
		*fr->csum = xdpoff_l4_csum_update(*fr->csum, val->l4_csum,
						  fr->udp);
	}
	/*
	 * dmac and smac, 12 bytes in both: words, not bytes (through a
	 * void pointer: clang writes a packed struct's u64 byte by byte).
	 */
	*(__u64 *)fr->eth = *(const __u64 *)val->dmac;
	*(__u32 *)(fr->eth + 8) = *(const __u32 *)(val->dmac + 8);
}

/*
 * ft_edit_frame() for decide(), in a frame of its own (decide()'s stack
 * is full): the headers found again.
 */
static __noinline int ft_edit(struct xdp_md *ctx,
			      const struct xdpoff_flow_val *val)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ft_frame frame = {}, *fr = &frame;
	struct udphdr *uh;
	struct tcphdr *th;
	__u8 proto;

	fr->eth = data;
	if (data + ETH_HLEN > data_end)
		return -1;
	if (*(__be16 *)(data + offsetof(struct ethhdr, h_proto)) ==
	    bpf_htons(ETH_P_IP)) {
		fr->iph = data + ETH_HLEN;
		fr->l4 = (void *)(fr->iph + 1);
		if ((void *)(fr->iph + 1) > data_end)
			return -1;
		proto = fr->iph->protocol;
	} else {
		fr->ip6h = data + ETH_HLEN;
		fr->l4 = (void *)(fr->ip6h + 1);
		if ((void *)(fr->ip6h + 1) > data_end)
			return -1;
		proto = fr->ip6h->nexthdr;
	}
	if (proto == IPPROTO_UDP) {
		uh = (void *)fr->l4;
		if ((void *)(uh + 1) > data_end)
			return -1;
		fr->csum = &uh->check;
		fr->udp = 1;
	} else {
		th = (void *)fr->l4;
		if ((void *)(th + 1) > data_end)
			return -1;
		fr->csum = &th->check;
	}
	ft_edit_frame(fr, val);
	return 0;
}

static __always_inline void ft_count(struct xdpoff_flow_val *val, __u64 len)
{
	__sync_fetch_and_add(&val->packets, 1);
	__sync_fetch_and_add(&val->bytes, len);
	/* jiffies, as lastused wants them: a load once the verifier inlines it */
	val->last_used = bpf_jiffies64();
}

/* Not one of enum xdpoff_action: the flowtable forwards. */
#define ACT_FLOW	0x100

/*
 * What the frame's best rules of each stage, and the flowtable, decide.
 * Built twice: @nr_stages is a constant, 1 (every rule in stage 0) or
 * XDPOFF_MAX_STAGES, so the common case of one chain or tc block needs
 * neither the loops over the stages nor a variable stage.
 */
static __always_inline int decide(struct xdp_md *ctx,
				  const struct xdpoff_meta *meta,
				  const struct xdpoff_fields *f,
				  const struct stage_best *best,
				  union lookup_key *key, const __u32 nr_stages)
{
	__u64 verdict_order = NO_MATCH, undecided = NO_MATCH, len;
	struct xdpoff_flow_val *flow = NULL;
	__u32 i, v = 0, act;

	/*
	 * Stages run in order: the earliest stage whose best rule is final
	 * (drop, fwd, software) decides; accept ends only its own stage.  A
	 * stage where a rule XDP could not evaluate may come first is
	 * undecided, and so is the frame if that stage runs before the
	 * deciding one (the orders of two stages never interleave).
	 */
	for (i = 0; i < XDPOFF_MAX_STAGES && i < nr_stages; i++) {
		if (best->unknown[i] < best->order[i]) {
			if (best->unknown[i] < undecided)
				undecided = best->unknown[i];
			continue;
		}
		if (best->order[i] != NO_MATCH &&
		    INFO_ACTION(best->info[i]) != XDPOFF_ACT_PASS &&
		    best->order[i] < verdict_order) {
			verdict_order = best->order[i];
			v = i;
		}
	}
	/*
	 * The flowtable's hook, at its place among the rules: it forwards a
	 * frame of an offloaded flow; a frame it might know but XDP does not
	 * (or would not take in software) is software's from there on.
	 */
	if (meta->ft_order < verdict_order && meta->ft_order < undecided) {
		switch (ft_classify(ctx, &key->flow, &flow, NULL)) {
		case FT_HIT:
			verdict_order = meta->ft_order;
			break;
		case FT_UNSURE:
			undecided = meta->ft_order;
			break;
		}
	}
	if (undecided != NO_MATCH && undecided < verdict_order)
		return XDP_PASS;
	/* A filter only software runs comes before the verdict. */
	if (verdict_order != NO_MATCH && verdict_order >= meta->software_from)
		return XDP_PASS;

	/* Bytes from the network header on, as the stack counts them. */
	len = (__u64)ctx->data_end - ctx->data - ETH_HLEN -
	      (f->flags & XDPOFF_F_VLAN ? 4 : 0);	/* 64-bit: no truncation */
	v &= XDPOFF_MAX_STAGES - 1;
	if (verdict_order == NO_MATCH)
		act = XDPOFF_ACT_PASS;
	else if (flow && verdict_order == meta->ft_order)
		act = ACT_FLOW;
	else
		act = INFO_ACTION(best->info[v]);

	if (act == XDPOFF_ACT_REDIRECT && INFO_REWRITE(best->info[v])) {
		struct xdpoff_rule_val *val = NULL;
		struct xdpoff_mask *m;
		__u32 slot = INFO_MASK(best->info[v]);

		m = bpf_map_lookup_elem(&xdpoff_masks, &slot);
		if (m)
			val = lookup_rule(f, m, slot, &key->rule);
		/* The rule went away meanwhile, or no room to edit. */
		if (!val || val->order != verdict_order || rewrite(ctx, val))
			act = XDPOFF_ACT_SOFTWARE;
	}

	/*
	 * Count the rules software would have met on the way; they are
	 * consumed when XDP takes the frame away from software.
	 */
	for (i = 0; i < XDPOFF_MAX_STAGES && i < nr_stages; i++)
		if (best->order[i] != NO_MATCH && best->order[i] <= verdict_order)
			count(best->slot[i], len, act == XDPOFF_ACT_DROP ||
			      act == XDPOFF_ACT_REDIRECT || act == ACT_FLOW);

	switch (act) {
	case XDPOFF_ACT_DROP:
		return XDP_DROP;
	case XDPOFF_ACT_REDIRECT:
		return bpf_redirect(best->ifindex[v], 0);
	case ACT_FLOW:
		if (!flow)
			return XDP_PASS;
		if (ft_edit(ctx, flow))
			return XDP_PASS;
		ft_count(flow, len);
		return bpf_redirect(flow->ifindex, 0);
	}
	return XDP_PASS;
}

/*
 * Its place in libxdp's dispatcher (`xdpoff attach` without --no-libxdp):
 * XDPOFF_RUN_PRIO, and only a frame it passes goes on to the next program.
 */
struct {
	__uint(priority, XDPOFF_RUN_PRIO);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xdpoff_xdp);

SEC("xdp")
int xdpoff_xdp(struct xdp_md *ctx)
{
	struct xdpoff_flow_val *flow = NULL;
	struct xdpoff_fields f;		/* zeroed past the flowtable's path */
	struct ft_frame fr;
	union lookup_key scratch, *key = &scratch; /* on the stack once */
	struct xdpoff_meta *meta;
	struct stage_best best;
	__u32 zero = 0, i, nr_stages;
	__u64 mi, nr;	/* 64-bit: no zero extension at every turn of the loop */
	long unknown;	/* as xdpoff_parse() returns it: no sign extension */
	long pass = XDP_PASS;

	/*
	 * XDP_PASS in a register the compiler cannot see through: as a
	 * constant it would set it again before each exit of the no-rule
	 * path (a move per check).
	 */
	barrier_var(pass);
	meta = bpf_map_lookup_elem(&xdpoff_meta, &zero);
	if (!meta)
		return pass;
	nr = meta->nr_masks;
	if (!nr) {
		/*
		 * No rule: the flowtable alone (a router's NIC), or nothing.
		 * What the loops below would decide, without the parse: no
		 * stage has a best rule, the flowtable's hook decides.  A
		 * frame ft_classify() forwards is untagged IP with its L4
		 * header, which xdpoff_parse() never leaves alone.
		 */
		if (meta->ft_order >= meta->software_from ||
		    ft_classify(ctx, &key->flow, &flow, &fr) != FT_HIT)
			return pass;
		ft_edit_frame(&fr, flow);
		ft_count(flow, fr.len);
		return bpf_redirect(flow->ifindex, 0);
	}

	__builtin_memset(&f, 0, sizeof(f));
	unknown = xdpoff_parse(ctx, &f);
	if (unknown < 0)
		return XDP_PASS;

	/*
	 * Stages are bound from 0 up: with one (one chain or tc block, the
	 * common case) only stage 0 holds rules.  The table is set up for
	 * the stages decide() reads, and the count is read once for both: a
	 * mask of a stage being bound meanwhile writes where no one reads.
	 */
	nr_stages = ((volatile struct xdpoff_meta *)meta)->nr_stages;
	best.order[0] = NO_MATCH;
	best.unknown[0] = NO_MATCH;
	if (nr_stages > 1) {
		for (i = 1; i < XDPOFF_MAX_STAGES; i++) {
			best.order[i] = NO_MATCH;
			best.unknown[i] = NO_MATCH;
		}
	}

	for (mi = 0; mi < XDPOFF_MAX_MASKS && mi < nr; mi++) {
		struct xdpoff_rule_val *val;
		struct xdpoff_mask *m;
		__u32 slot = mi;	/* on the stack for the helper; mi stays a register */
		__u32 st;

		m = bpf_map_lookup_elem(&xdpoff_masks, &slot);
		if (!m || !m->active)
			continue;
		st = m->stage & (XDPOFF_MAX_STAGES - 1);
		/* No rule of the mask can beat its stage's best so far. */
		if (m->min_order >= best.order[st])
			continue;
		if (m->needs & unknown) {
			if (m->min_order < best.unknown[st])
				best.unknown[st] = m->min_order;
			continue;
		}
		if (m->ranges && out_of_range(m, &f))
			continue;
		val = lookup_rule(&f, m, mi, &key->rule);
		if (!val)
			continue;
		st = val->stage & (XDPOFF_MAX_STAGES - 1);
		if (val->order < best.order[st]) {
			best.order[st] = val->order;
			best.slot[st] = val->stats_slot;
			best.info[st] = INFO(val->action & 0xff,
					     val->rewrite & 0xff, mi);
			best.ifindex[st] = val->ifindex;
		}
	}

	/* One stage: decide() built for it, without the loops over stages. */
	if (nr_stages <= 1)
		return decide(ctx, meta, &f, &best, key, 1);
	return decide(ctx, meta, &f, &best, key, XDPOFF_MAX_STAGES);
}
