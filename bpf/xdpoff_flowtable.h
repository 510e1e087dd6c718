/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff XDP program, part 3 of 3: the flowtable's fast path.  A frame of
 * an offloaded flow (the flows map's entry of its tuple) is NATed, its
 * TTL / hop limit decremented, its MAC addresses set and redirected, as
 * nf_flow_offload_ip_hook() and nf_flow_offload_ipv6_hook() do in
 * software.  Included once, by xdpoff.bpf.c, after the maps and the
 * parser.
 */
#ifndef __XDPOFF_FLOWTABLE_H
#define __XDPOFF_FLOWTABLE_H

_Static_assert(__builtin_offsetof(struct xdpoff_flow_val, dmac) == 0 &&
	       __builtin_offsetof(struct xdpoff_flow_val, smac) == ETH_ALEN,
	       "ft_edit_frame() copies dmac and smac as a u64 and a u32");
_Static_assert(sizeof(struct xdpoff_flow_key) == 40 &&
	       __builtin_offsetof(struct xdpoff_flow_key, daddr) == 16,
	       "ft_tuple() writes the tuple as five 64-bit words");
_Static_assert(__builtin_offsetof(struct xdpoff_flow_key, sport) % 8 == 0 &&
	       __builtin_offsetof(struct xdpoff_flow_key, dport) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 2 &&
	       __builtin_offsetof(struct xdpoff_flow_key, family) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 4 &&
	       __builtin_offsetof(struct xdpoff_flow_key, proto) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 5 &&
	       __builtin_offsetof(struct xdpoff_flow_key, pad) ==
	       __builtin_offsetof(struct xdpoff_flow_key, sport) + 6,
	       "ft_tuple() writes ports, family and protocol as one word");
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ft_tuple() writes words as a little-endian machine"
#endif

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
 * The tuple as 64-bit words: the addresses (IPv4's in the first bytes of
 * each half, the rest zero), then the ports as a 32-bit load of the
 * transport header reads them, family, protocol, pad 0.
 */
static __always_inline void ft_tuple(__u64 *k, const struct iphdr *iph,
				     const struct ipv6hdr *ip6h, void *l4,
				     __u8 proto, __u8 family)
{
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
}

/*
 * Whether the transport header at @l4 makes a flow candidate: FT_HIT for
 * a whole TCP or UDP header, what ft_classify() answers otherwise.
 */
static __always_inline int ft_l4(void *l4, void *data_end, __u8 proto)
{
	__u32 hdrsize;

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
	return FT_HIT;
}

/*
 * ft_classify()'s end: the flow @fv found for the frame's tuple, unless
 * the fast path cannot take the frame (software then does), and the
 * frame's headers for the edit.
 */
static __always_inline int ft_hit(void *data, void *data_end,
				  struct iphdr *iph, struct ipv6hdr *ip6h,
				  void *l4, __u8 proto,
				  struct xdpoff_flow_val *fv,
				  struct xdpoff_flow_val **valp,
				  struct ft_frame *fr)
{
	__u16 *csum;
	__u64 len;

	/* Over the route's MTU; a FIN or RST (software tears down). */
	len = data_end - data - ETH_HLEN;
	if (len > fv->mtu)
		return FT_UNSURE;
	/*
	 * The bounds again, each header's own: the compiler may keep
	 * ft_l4()'s hdrsize and proto apart, and the verifier would then see
	 * a TCP read bounded by a UDP header.
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
 * A frame the flowtable could forward (the kernel's nf_flow_tuple_ip()
 * and _ipv6(); the transport header: ft_l4()), its header whole.  The
 * flow is the flows map's entry of the frame's tuple, a key built in @fk
 * (the caller's scratch space).  FT_HIT: the flow in *@valp, and if @fr
 * the headers, bounds checked for ft_edit_frame(), and the length in *@fr
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
	__u8 proto, family;
	__be16 h_proto;
	void *l4;
	int ret;

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

	ret = ft_l4(l4, data_end, proto);
	if (ret != FT_HIT)
		return ret;
	ft_tuple((__u64 *)fk, iph, ip6h, l4, proto, family);
	fv = bpf_map_lookup_elem(&xdpoff_flows, fk);
	if (!fv)
		return FT_UNSURE;
	return ft_hit(data, data_end, iph, ip6h, l4, proto, fv, valp, fr);
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

#endif /* __XDPOFF_FLOWTABLE_H */
