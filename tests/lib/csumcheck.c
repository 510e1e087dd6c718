// SPDX-License-Identifier: GPL-2.0
/*
 * csumcheck: the checksums XDP writes into a flow's frames are those the
 * software flowtable writes.  The software path updates them step by step
 * (nf_flow_table_ip.c of 6.1 and 6.12: nf_flow_nat_ip() / _ipv6(), SNAT
 * port and address, then DNAT's, then ip_decrease_ttl()), with the
 * arithmetic of include/net/checksum.h and net/core/utils.c, written out
 * again here; xdpoff updates each checksum once, with the per-flow sums
 * xdpoff_flow_csum_diffs() computes (xdpoff/xdpoff.h).  Random flows
 * (IPv4 and IPv6, TCP and UDP, no NAT, SNAT, DNAT, both) and random
 * checksums, a quarter of them near the edges (0, 1, 0xfffe, 0xffff, and
 * those whose result is 0), plus every checksum value for one flow of each
 * kind.  The same flow edited by both must give the same two checksums.
 *
 *   csumcheck [CASES]     seed from XDPOFF_CSUM_SEED, else random; printed
 *
 * Exit 0 when all agree; 1 and the first disagreement otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/types.h>

#include "xdpoff/xdpoff.h"

/* -- the kernel's steps (checksums as 16-bit loads read them) -- */

static uint32_t k_csum_add(uint32_t a, uint32_t b)
{
	uint32_t r = a + b;

	return r + (r < b);
}

static uint16_t k_csum_fold(uint32_t s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* csum_replace4(), and inet_proto_csum_replace4() without CHECKSUM_PARTIAL */
static void k_replace4(uint16_t *sum, uint32_t from, uint32_t to)
{
	*sum = k_csum_fold(k_csum_add(k_csum_add(~(uint32_t)*sum, ~from), to));
}

/* inet_proto_csum_replace16(): csum_partial() of {~from, to} */
static void k_replace16(uint16_t *sum, const uint32_t *from, const uint32_t *to)
{
	uint32_t acc = ~(uint32_t)*sum;
	int i;

	for (i = 0; i < 4; i++)
		acc = k_csum_add(acc, ~from[i]);
	for (i = 0; i < 4; i++)
		acc = k_csum_add(acc, to[i]);
	*sum = k_csum_fold(acc);
}

/* ip_decrease_ttl() */
static void k_decrease_ttl(uint16_t *check)
{
	uint32_t c = *check;

	c += htons(0x0100);
	*check = (uint16_t)(c + (c >= 0xffff));
}

struct frame {
	uint32_t saddr[4], daddr[4];
	uint16_t sport, dport;
	uint16_t ip_check, l4_check;
};

/* nf_flow_nat_port_tcp/udp(): inet_proto_csum_replace2() */
static void k_nat_port(struct frame *f, int udp, uint16_t *port, uint16_t new)
{
	if (!udp || f->l4_check) {
		k_replace4(&f->l4_check, *port, new);
		if (udp && !f->l4_check)
			f->l4_check = 0xffff;		/* CSUM_MANGLED_0 */
	}
	*port = new;
}

/* nf_flow_snat/dnat_ip(v6)() and nf_flow_nat_ip(v6)_l4proto() */
static void k_nat_addr(struct frame *f, int v6, int udp, uint32_t *addr,
		       const uint32_t *new)
{
	if (!v6) {
		k_replace4(&f->ip_check, addr[0], new[0]);
		if (!udp || f->l4_check) {
			k_replace4(&f->l4_check, addr[0], new[0]);
			if (udp && !f->l4_check)
				f->l4_check = 0xffff;
		}
		addr[0] = new[0];
		return;
	}
	if (!udp || f->l4_check) {
		k_replace16(&f->l4_check, addr, new);
		if (udp && !f->l4_check)
			f->l4_check = 0xffff;
	}
	memcpy(addr, new, 16);
}

static void kernel_edit(struct frame *f, const struct xdpoff_flow_key *k,
			const struct xdpoff_flow_val *v)
{
	int v6 = k->family == XDPOFF_F_IPV6, udp = k->proto == IPPROTO_UDP;

	if (v->nat & XDPOFF_NAT_SRC) {
		k_nat_port(f, udp, &f->sport, v->nat_sport);
		k_nat_addr(f, v6, udp, f->saddr, v->nat_saddr);
	}
	if (v->nat & XDPOFF_NAT_DST) {
		k_nat_port(f, udp, &f->dport, v->nat_dport);
		k_nat_addr(f, v6, udp, f->daddr, v->nat_daddr);
	}
	if (!v6)
		k_decrease_ttl(&f->ip_check);
}

/* -- xdpoff's: bpf/xdpoff.bpf.c's ft_edit_frame() -- */

static void xdpoff_edit(struct frame *f, const struct xdpoff_flow_key *k,
			const struct xdpoff_flow_val *v)
{
	if (k->family == XDPOFF_F_IPV4)
		f->ip_check = xdpoff_csum_update(f->ip_check, v->ip_csum);
	if (v->nat)
		f->l4_check = xdpoff_l4_csum_update(f->l4_check, v->l4_csum,
						    k->proto == IPPROTO_UDP);
}

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* An address: mostly random, sometimes all zeros or all ones words. */
static uint32_t rnd_word(void)
{
	switch (rnd() % 8) {
	case 0:
		return 0;
	case 1:
		return 0xffffffff;
	default:
		return rnd();
	}
}

static uint16_t rnd_check(void)
{
	static const uint16_t edge[] = { 0, 1, 0xfffe, 0xffff };

	return rnd() % 4 ? (uint16_t)rnd() : edge[rnd() % 4];
}

static void rnd_flow(struct xdpoff_flow_key *k, struct xdpoff_flow_val *v)
{
	int i, n;

	memset(k, 0, sizeof(*k));
	memset(v, 0, sizeof(*v));
	k->family = rnd() % 2 ? XDPOFF_F_IPV4 : XDPOFF_F_IPV6;
	k->proto = rnd() % 2 ? IPPROTO_TCP : IPPROTO_UDP;
	n = k->family == XDPOFF_F_IPV4 ? 1 : 4;
	for (i = 0; i < n; i++) {
		k->saddr[i] = rnd_word();
		k->daddr[i] = rnd_word();
		v->nat_saddr[i] = rnd_word();
		v->nat_daddr[i] = rnd_word();
	}
	k->sport = rnd();
	k->dport = rnd();
	v->nat_sport = rnd();
	v->nat_dport = rnd();
	/* NAT that keeps an address or port: changes that sum to 0 */
	if (rnd() % 4 == 0)
		memcpy(v->nat_saddr, k->saddr, sizeof(k->saddr));
	if (rnd() % 4 == 0)
		memcpy(v->nat_daddr, k->daddr, sizeof(k->daddr));
	if (rnd() % 4 == 0)
		v->nat_sport = k->sport;
	if (rnd() % 4 == 0)
		v->nat_dport = k->dport;
	v->nat = rnd() % 4;	/* none, SRC, DST, both */
	xdpoff_flow_csum_diffs(k, v);
}

static const char *kind(const struct xdpoff_flow_key *k,
			const struct xdpoff_flow_val *v)
{
	static char buf[64];
	static const char *nat[] = { "no NAT", "SNAT", "DNAT", "SNAT+DNAT" };

	snprintf(buf, sizeof(buf), "%s %s %s",
		 k->family == XDPOFF_F_IPV4 ? "IPv4" : "IPv6",
		 k->proto == IPPROTO_TCP ? "TCP" : "UDP", nat[v->nat & 3]);
	return buf;
}

/* Both edits of one frame; 0 if they agree. */
static int one(const struct xdpoff_flow_key *k, const struct xdpoff_flow_val *v,
	       uint16_t ip_check, uint16_t l4_check, unsigned long *zeros)
{
	struct frame a = { .sport = k->sport, .dport = k->dport,
			   .ip_check = ip_check, .l4_check = l4_check }, b;

	memcpy(a.saddr, k->saddr, sizeof(a.saddr));
	memcpy(a.daddr, k->daddr, sizeof(a.daddr));
	b = a;
	if (!v->ip_csum || !v->l4_csum) {
		printf("%s: a change of 0 (ip %#06x, l4 %#06x): xdpoff_csum_update() needs [1, 0xffff]\n",
		       kind(k, v), v->ip_csum, v->l4_csum);
		return 1;
	}
	kernel_edit(&a, k, v);
	xdpoff_edit(&b, k, v);
	if (a.ip_check == b.ip_check && a.l4_check == b.l4_check) {
		*zeros += !a.l4_check || a.l4_check == 0xffff;
		return 0;
	}
	printf("%s, ip check %#06x, l4 check %#06x: kernel %#06x %#06x, xdpoff %#06x %#06x\n",
	       kind(k, v), ip_check, l4_check, a.ip_check, a.l4_check,
	       b.ip_check, b.l4_check);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned long cases = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000000;
	const char *env = getenv("XDPOFF_CSUM_SEED");
	unsigned long i, n = 0, zeros = 0;
	struct xdpoff_flow_key k;
	struct xdpoff_flow_val v;
	uint32_t c;
	unsigned int kinds;

	rng = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
	rng = rng ? rng : 1;
	printf("seed %llu (XDPOFF_CSUM_SEED repeats it)\n", (unsigned long long)rng);

	for (i = 0; i < cases; i++, n++) {
		uint16_t ipc = rnd_check(), l4c = rnd_check();

		rnd_flow(&k, &v);
		/*
		 * A quarter: the checksums whose results are 0 (UDP: 0xffff):
		 * a check congruent to the change (modulo 0xffff).
		 */
		if (rnd() % 4 == 0) {
			ipc = v.ip_csum;
			l4c = v.l4_csum;
		}
		if (one(&k, &v, ipc, l4c, &zeros))
			return 1;
	}
	/* Every checksum value, for a flow of each kind. */
	for (kinds = 0; kinds < 16; kinds++) {
		do
			rnd_flow(&k, &v);
		while (((k.family == XDPOFF_F_IPV6) | (k.proto == IPPROTO_UDP) << 1 |
			(v.nat & 3) << 2) != kinds);
		for (c = 0; c <= 0xffff; c++, n++)
			if (one(&k, &v, c, c, &zeros))
				return 1;
	}
	printf("%lu frames, %lu of them with a transport checksum of 0 or 0xffff after: kernel and xdpoff agree\n",
	       n, zeros);
	return 0;
}
