// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff XDP program: the "hardware" of the offload.
 *
 * Parses Ethernet, IPv4 and TCP/UDP into struct xdpoff_fields, runs a
 * tuple-space search over the masks the module has installed and acts on
 * the earliest matching rule.  No match passes the frame to the stack,
 * where the same rules run again in software.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdpoff/xdpoff.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPOFF_DEFAULT_MAX_RULES);
	__type(key, struct xdpoff_rule_key);
	__type(value, struct xdpoff_rule_val);
} xdpoff_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPOFF_MAX_MASKS);
	__type(key, __u32);
	__type(value, struct xdpoff_mask);
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

/* xdpoff_fields is 28 bytes: masked as seven 32-bit words. */
#define XDPOFF_FIELD_WORDS	(sizeof(struct xdpoff_fields) / sizeof(__u32))
_Static_assert(sizeof(struct xdpoff_fields) % sizeof(__u32) == 0,
	       "xdpoff_fields must be a whole number of words");

static __always_inline int parse_l4(void *l4, void *data_end, __u8 proto,
				    struct xdpoff_fields *f)
{
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end)
			return -1;
		f->sport = th->source;
		f->dport = th->dest;
	} else if (proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end)
			return -1;
		f->sport = uh->source;
		f->dport = uh->dest;
	} else {
		return 0;
	}
	f->flags |= XDPOFF_F_L4;
	return 0;
}

/* Fill @f from the frame; fields the frame does not carry stay zero. */
static __always_inline int parse(struct xdp_md *ctx, struct xdpoff_fields *f)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct iphdr *iph;
	__u32 ihl;

	if ((void *)(eth + 1) > data_end)
		return -1;
	__builtin_memcpy(f->dmac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(f->smac, eth->h_source, ETH_ALEN);
	f->n_proto = eth->h_proto;

	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return 0;

	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return -1;
	ihl = iph->ihl * 4;
	if (iph->version != 4 || ihl < sizeof(*iph))
		return 0;
	f->flags |= XDPOFF_F_IPV4;
	f->ip_proto = iph->protocol;
	f->saddr = iph->saddr;
	f->daddr = iph->daddr;

	/* Non-first fragments carry no transport header. */
	if (iph->frag_off & bpf_htons(0x1fff))
		return 0;
	return parse_l4((void *)iph + ihl, data_end, iph->protocol, f);
}

static __always_inline void mask_fields(struct xdpoff_rule_key *key,
					const struct xdpoff_fields *f,
					const struct xdpoff_mask *m)
{
	const __u32 *src = (const __u32 *)f;
	const __u32 *msk = (const __u32 *)&m->mask;
	__u32 *dst = (__u32 *)&key->fields;
	int i;

#pragma unroll
	for (i = 0; i < XDPOFF_FIELD_WORDS; i++)
		dst[i] = src[i] & msk[i];
	key->mask_id = m->id;
}

SEC("xdp")
int xdpoff_xdp(struct xdp_md *ctx)
{
	struct xdpoff_rule_val *best = NULL;
	struct xdpoff_fields f = {};
	struct xdpoff_rule_key key;
	struct xdpoff_stats *st;
	struct xdpoff_meta *meta;
	__u32 zero = 0, i, nr;

	if (parse(ctx, &f) < 0)
		return XDP_PASS;

	meta = bpf_map_lookup_elem(&xdpoff_meta, &zero);
	if (!meta)
		return XDP_PASS;
	nr = meta->nr_masks;

	for (i = 0; i < XDPOFF_MAX_MASKS && i < nr; i++) {
		struct xdpoff_rule_val *val;
		struct xdpoff_mask *m;
		__u32 slot = i;	/* on the stack for the helper; i stays a register */

		m = bpf_map_lookup_elem(&xdpoff_masks, &slot);
		if (!m || !m->active)
			continue;
		mask_fields(&key, &f, m);
		val = bpf_map_lookup_elem(&xdpoff_rules, &key);
		if (val && (!best || val->order < best->order))
			best = val;
	}
	if (!best)
		return XDP_PASS;

	st = bpf_map_lookup_elem(&xdpoff_stats, &best->stats_slot);
	if (st) {
		st->packets++;
		st->bytes += ctx->data_end - ctx->data;
	}

	switch (best->action) {
	case XDPOFF_ACT_DROP:
		return XDP_DROP;
	default:
		return XDP_PASS;
	}
}
