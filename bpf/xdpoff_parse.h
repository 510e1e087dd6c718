/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff XDP program, part 1 of 3: the parser.  A frame's Ethernet,
 * VLAN, IPv4/IPv6 and TCP/UDP/ICMP headers into struct xdpoff_fields, as
 * nf_tables and tc flower's dissector see them, and what XDP cannot see
 * as they do (XDPOFF_U_*).  Included once, by xdpoff.bpf.c.
 */
#ifndef __XDPOFF_PARSE_H
#define __XDPOFF_PARSE_H

_Static_assert(__builtin_offsetof(struct xdpoff_fields, dmac) % 8 == 0 &&
	       __builtin_offsetof(struct xdpoff_fields, smac) ==
	       __builtin_offsetof(struct xdpoff_fields, dmac) + ETH_ALEN,
	       "xdpoff_parse() copies dmac and smac as one 12-byte block");

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

#endif /* __XDPOFF_PARSE_H */
