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
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XDPOFF_INDEX_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} xdpoff_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XDPOFF_DEFAULT_MAX_FLOWS);
	__type(key, struct xdpoff_flow_key_btf);
	__type(value, struct xdpoff_flow_val_btf);
} xdpoff_flows SEC(".maps");

XDPOFF_MAPS(XDPOFF_MAP_CHECK)

_Static_assert(sizeof(struct xdpoff_fields) % sizeof(__u64) == 0,
	       "xdpoff_fields must be a whole number of 64-bit words");
_Static_assert(XDPOFF_FIELD_WORDS <= XDPOFF_WORDS_LAST_SHIFT,
	       "xdpoff_mask.words is too narrow");
_Static_assert(sizeof(struct xdpoff_rule_key) == 8,
	       "the rules map's key: the kernel hashes it whole, jhash() of 8 bytes");
_Static_assert((XDPOFF_MAX_STAGES & (XDPOFF_MAX_STAGES - 1)) == 0,
	       "XDPOFF_MAX_STAGES must be a power of two");

#include "xdpoff_parse.h"
#include "xdpoff_classify.h"
#include "xdpoff_flowtable.h"

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

/* Not one of enum xdpoff_action: the flowtable forwards. */
#define ACT_FLOW	0x100

/*
 * Stages run in order: the earliest stage whose best rule is final (drop,
 * fwd, software) decides; accept ends only its own stage.  A stage where
 * a rule XDP could not evaluate may come first is undecided, and so is
 * the frame if that stage runs before the deciding one (the orders of two
 * stages never interleave).  Returns the deciding rule's order, its stage
 * in *@v, or NO_MATCH; the earliest undecided order in *@undecided.
 */
static __always_inline __u64 stages_decide(const struct stage_best *best,
					   const __u32 nr_stages,
					   __u64 *undecided, __u32 *v)
{
	__u64 verdict_order = NO_MATCH;
	__u32 i;

	for (i = 0; i < XDPOFF_MAX_STAGES && i < nr_stages; i++) {
		if (best->unknown[i] < best->order[i]) {
			if (best->unknown[i] < *undecided)
				*undecided = best->unknown[i];
			continue;
		}
		if (best->order[i] != NO_MATCH &&
		    INFO_ACTION(best->info[i]) != XDPOFF_ACT_PASS &&
		    best->order[i] < verdict_order) {
			verdict_order = best->order[i];
			*v = i;
		}
	}
	return verdict_order;
}

/*
 * A redirect that edits the frame (tc's VLAN and pedit actions): the rule
 * looked up again for its edits.  XDPOFF_ACT_SOFTWARE when the rule went
 * away meanwhile, or the frame has no room for them.
 */
static __always_inline __u32 redirect_edit(struct xdp_md *ctx,
					   const struct xdpoff_fields *f,
					   __u32 info, __u64 verdict_order,
					   struct xdpoff_rule_key *key)
{
	struct xdpoff_rule_val *val = NULL;
	struct xdpoff_mask *m;
	__u32 slot = INFO_MASK(info);

	m = bpf_map_lookup_elem(&xdpoff_masks, &slot);
	if (m)
		val = lookup_rule(f, m, slot, key);
	if (!val || val->order != verdict_order || rewrite(ctx, val))
		return XDPOFF_ACT_SOFTWARE;
	return XDPOFF_ACT_REDIRECT;
}

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
	__u64 verdict_order, undecided = NO_MATCH, len;
	struct xdpoff_flow_val *flow = NULL;
	__u32 i, v = 0, act;

	verdict_order = stages_decide(best, nr_stages, &undecided, &v);
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
	if (act == XDPOFF_ACT_REDIRECT && INFO_REWRITE(best->info[v]))
		act = redirect_edit(ctx, f, best->info[v], verdict_order,
				    &key->rule);

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
		if (!flow || ft_edit(ctx, flow))
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
	__u64 nr;	/* the tables in use: meta's nr_masks */
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

	classify(tables_of(meta, nr, &f, unknown), &f, unknown, &best);

	/* One stage: decide() built for it, without the loops over stages. */
	if (nr_stages <= 1)
		return decide(ctx, meta, &f, &best, key, 1);
	return decide(ctx, meta, &f, &best, key, XDPOFF_MAX_STAGES);
}
