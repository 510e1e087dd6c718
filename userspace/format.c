// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: show's text output.  A rule's match as nft-like text, a
 * redirect's rewrites as tc names them, the hook/priority/handle packed in
 * xdpoff_rule_val.order, and print_dev_text(); the helpers json.c shares
 * are declared in show.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/types.h>
#include <linux/if_ether.h>

#include "xdpoff/xdpoff.h"
#include "show.h"

const char *action_name(__u32 action)
{
	switch (action) {
	case XDPOFF_ACT_PASS:	return "pass";
	case XDPOFF_ACT_DROP:	return "drop";
	case XDPOFF_ACT_REDIRECT: return "fwd";
	case XDPOFF_ACT_SOFTWARE: return "software";
	default:		return "unknown";
	}
}

bool all_ones(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++ != 0xff)
			return false;
	return true;
}

bool is_zero(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

char *fmt_mac(char *buf, const __u8 *mac)
{
	snprintf(buf, ADDR_LEN, "%02x:%02x:%02x:%02x:%02x:%02x",
		 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
	return buf;
}

/* An address of the rule's family: IPv4 in the first word. */
char *fmt_ip(char *buf, int family, const __be32 *addr)
{
	inet_ntop(family, addr, buf, ADDR_LEN);
	return buf;
}

int addr_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* Prefix length of a network-order netmask, -1 if it is not a prefix. */
static int prefix_len(int family, const __be32 *mask)
{
	const __u8 *b = (const __u8 *)mask;
	int i, len = 0;

	for (i = 0; i < addr_bytes(family) && b[i] == 0xff; i++)
		len += 8;
	if (i == addr_bytes(family))
		return len;
	len += __builtin_popcount(b[i]);
	if ((__u8)(b[i] << __builtin_popcount(b[i])))
		return -1;
	for (i++; i < addr_bytes(family); i++)
		if (b[i])
			return -1;
	return len;
}

/* The address family of a rule's address fields. */
int rule_family(const struct xdpoff_fields *v)
{
	return v->flags & XDPOFF_F_IPV6 ? AF_INET6 : AF_INET;
}

static const char *proto_name(__u8 proto)
{
	switch (proto) {
	case IPPROTO_ICMP:	return "icmp";
	case IPPROTO_TCP:	return "tcp";
	case IPPROTO_UDP:	return "udp";
	default:		return NULL;
	}
}

/* Bounded string builder; every add is one space-separated token group. */
struct sbuf {
	char	*s;
	size_t	len;
	size_t	size;
};

__attribute__((format(printf, 2, 3)))
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len && b->len + 1 < b->size)
		b->s[b->len++] = ' ';
	if (b->len + 1 >= b->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + n < b->size ? b->len + n : b->size - 1;
}

static void sb_mac(struct sbuf *b, const char *what, const __u8 *v,
		   const __u8 *m)
{
	char vs[ADDR_LEN], ms[ADDR_LEN];

	if (is_zero(m, 6))
		return;
	if (all_ones(m, 6))
		sb_add(b, "%s %s", what, fmt_mac(vs, v));
	else
		sb_add(b, "%s %s/%s", what, fmt_mac(vs, v), fmt_mac(ms, m));
}

static void sb_ip(struct sbuf *b, const char *what, int family,
		  const __be32 *v, const __be32 *m)
{
	const char *pfx = family == AF_INET ? "ip" : "ip6";
	char vs[ADDR_LEN], ms[ADDR_LEN];
	int plen = prefix_len(family, m);

	if (is_zero(m, addr_bytes(family)))
		return;
	if (plen == addr_bytes(family) * 8)
		sb_add(b, "%s %s %s", pfx, what, fmt_ip(vs, family, v));
	else if (plen > 0)
		sb_add(b, "%s %s %s/%d", pfx, what, fmt_ip(vs, family, v), plen);
	else
		sb_add(b, "%s %s %s/%s", pfx, what, fmt_ip(vs, family, v),
		       fmt_ip(ms, family, m));
}

/* A 16-bit field in network order: decimal or hex value, hex mask. */
static void sb_u16(struct sbuf *b, const char *proto, const char *field,
		   __be16 v, __be16 m, bool hex)
{
	char vs[16];

	if (!m)
		return;
	if (hex)
		snprintf(vs, sizeof(vs), "0x%04x", ntohs(v));
	else
		snprintf(vs, sizeof(vs), "%u", ntohs(v));
	if (m == 0xffff)
		sb_add(b, "%s %s %s", proto, field, vs);
	else
		sb_add(b, "%s %s %s/0x%04x", proto, field, vs, ntohs(m));
}

/*
 * nft-like text: "ether saddr .. ip saddr 10.0.0.0/8 tcp dport 22".  The
 * EtherType is left out when IPv4 fields imply it, the protocol when
 * "tcp"/"udp" port matches imply it.
 */
void format_match(const struct rule *r, char *out, size_t size)
{
	const struct xdpoff_fields *v = &r->val.fields, *m = &r->val.mask;
	bool ports = m->sport || m->dport;
	bool addrs = !is_zero(m->saddr, sizeof(m->saddr)) ||
		     !is_zero(m->daddr, sizeof(m->daddr));
	int family = rule_family(v);
	bool l4_named = m->ip_proto == 0xff && (v->ip_proto == IPPROTO_TCP ||
						v->ip_proto == IPPROTO_UDP);
	const char *l4 = l4_named ? proto_name(v->ip_proto) : "th";
	const char *pname = proto_name(v->ip_proto);
	struct sbuf b = { .s = out, .size = size };

	out[0] = '\0';
	sb_mac(&b, "ether saddr", v->smac, m->smac);
	sb_mac(&b, "ether daddr", v->dmac, m->dmac);
	if (m->n_proto == 0xffff && v->n_proto == htons(ETH_P_IP)) {
		if (!addrs)
			sb_add(&b, "meta protocol ip");
	} else if (m->n_proto == 0xffff && v->n_proto == htons(ETH_P_IPV6)) {
		if (!addrs)
			sb_add(&b, "meta protocol ip6");
	} else {
		sb_u16(&b, "ether", "type", v->n_proto, m->n_proto, true);
	}
	sb_u16(&b, "vlan", "tci", v->vlan_tci, m->vlan_tci, true);
	sb_u16(&b, "vlan", "type", v->vlan_etype, m->vlan_etype, true);
	sb_u16(&b, "cvlan", "tci", v->cvlan_tci, m->cvlan_tci, true);
	sb_u16(&b, "cvlan", "type", v->cvlan_etype, m->cvlan_etype, true);
	sb_ip(&b, "saddr", family, v->saddr, m->saddr);
	sb_ip(&b, "daddr", family, v->daddr, m->daddr);
	if (m->ip_proto && !(l4_named && ports)) {
		if (m->ip_proto != 0xff)
			sb_add(&b, "meta l4proto %u/0x%02x", v->ip_proto,
			       m->ip_proto);
		else if (pname)
			sb_add(&b, "meta l4proto %s", pname);
		else
			sb_add(&b, "meta l4proto %u", v->ip_proto);
	}
	sb_u16(&b, l4, "sport", v->sport, m->sport, false);
	sb_u16(&b, l4, "dport", v->dport, m->dport, false);
	if (r->slot->ranges & XDPOFF_RANGE_SPORT)
		sb_add(&b, "%s sport %u-%u", l4, r->slot->sport_min,
		       r->slot->sport_max);
	if (r->slot->ranges & XDPOFF_RANGE_DPORT)
		sb_add(&b, "%s dport %u-%u", l4, r->slot->dport_min,
		       r->slot->dport_max);
	if (m->tos)
		sb_add(&b, "ip tos 0x%02x/0x%02x", v->tos, m->tos);
	if (m->ttl)
		sb_add(&b, "ip ttl %u/0x%02x", v->ttl, m->ttl);
	if (m->tcp_flags)
		sb_add(&b, "tcp flags 0x%03x/0x%03x", ntohs(v->tcp_flags),
		       ntohs(m->tcp_flags));
	if (m->icmp_type)
		sb_add(&b, "icmp type %u", v->icmp_type);
	if (m->icmp_code)
		sb_add(&b, "icmp code %u", v->icmp_code);
	if (!b.len)
		sb_add(&b, "any");
}

/* The edits a redirecting tc filter makes, as tc names them. */
void format_rewrite(const struct xdpoff_rule_val *val, char *out,
		    size_t size)
{
	struct sbuf b = { .s = out, .size = size };
	char mac[ADDR_LEN];
	int i;

	out[0] = '\0';
	if (val->rewrite & XDPOFF_RW_VLAN_POP)
		sb_add(&b, "vlan pop");
	if (val->rewrite & XDPOFF_RW_VLAN_PUSH)
		sb_add(&b, "vlan push proto 0x%04x tci 0x%04x",
		       ntohs(val->vlan_proto), ntohs(val->vlan_tci));
	if (val->rewrite & XDPOFF_RW_VLAN_MODIFY)
		sb_add(&b, "vlan modify proto 0x%04x tci 0x%04x/0x%04x",
		       ntohs(val->vlan_proto), ntohs(val->vlan_tci),
		       ntohs(val->vlan_tci_mask));
	if (val->rewrite & XDPOFF_RW_ETH) {
		for (i = 0; i < 2; i++) {
			const __u8 *k = val->eth_keep + 6 * i;
			const __u8 *v = val->eth_val + 6 * i;

			if (all_ones(k, 6) && is_zero(v, 6))
				continue;
			if (is_zero(k, 6))
				sb_add(&b, "eth %s set %s", i ? "src" : "dst",
				       fmt_mac(mac, v));
			else
				sb_add(&b, "eth %s edit", i ? "src" : "dst");
		}
	}
}

/* The hook of xdpoff_rule_val.order, as show prints it. */
const char *order_hook(__u64 order)
{
	return xdpoff_order_is_nft(order) ? "nft" : "tc";
}

const char *ifname_of(__u32 ifindex)
{
	static char name[IF_NAMESIZE];

	if (!if_indextoname(ifindex, name))
		snprintf(name, sizeof(name), "if%u", ifindex);
	return name;
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

const char *l4_name(__u8 proto)
{
	return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : "l4?";
}

static int addr_port(char *out, size_t size, int family, const __be32 *addr,
		     __be16 port)
{
	char a[ADDR_LEN];

	fmt_ip(a, family, addr);
	return snprintf(out, size, family == AF_INET6 ? "[%s]:%u" : "%s:%u",
			a, ntohs(port));
}

/* "tcp 10.1.0.2:40000 > 10.2.0.2:5201 snat 10.2.0.1:40000 to eth2 dst ... src ... mtu 1500" */
void format_flow(const struct flow *fl, char *out, size_t size)
{
	int family = fl->key.family == XDPOFF_F_IPV6 ? AF_INET6 : AF_INET;
	const struct xdpoff_flow_val *v = &fl->val;
	char src[64], dst[64], snat[72] = "", dnat[72] = "", m1[ADDR_LEN], m2[ADDR_LEN];

	addr_port(src, sizeof(src), family, fl->key.saddr, fl->key.sport);
	addr_port(dst, sizeof(dst), family, fl->key.daddr, fl->key.dport);
	if (v->nat & XDPOFF_NAT_SRC) {
		strcpy(snat, " snat ");
		addr_port(snat + 6, sizeof(snat) - 6, family, v->nat_saddr,
			  v->nat_sport);
	}
	if (v->nat & XDPOFF_NAT_DST) {
		strcpy(dnat, " dnat ");
		addr_port(dnat + 6, sizeof(dnat) - 6, family, v->nat_daddr,
			  v->nat_dport);
	}
	snprintf(out, size, "%s %s > %s%s%s to %s dst %s src %s mtu %u",
		 l4_name(fl->key.proto), src, dst, snat, dnat,
		 ifname_of(v->ifindex), fmt_mac(m1, v->dmac),
		 fmt_mac(m2, v->smac), v->mtu);
}

/* "  prio P handle H" of an nft rule, "  tc prio P" of a tc filter. */
void print_rule_hook(const struct rule *r)
{
	if (xdpoff_order_is_nft(r->val.order))
		printf("  prio %u handle %u", xdpoff_order_prio(r->val.order),
		       xdpoff_order_handle(r->val.order));
	else
		printf("  tc prio %u", xdpoff_order_prio(r->val.order));
}

void print_dev_text(const struct dev_info *d)
{
	const struct flow *fl;
	char flow[512];
	const struct rule *r;
	char match[512], edits[256];

	printf("%s: xdp prog id %u", d->name, d->prog_id);
	if (d->attached_id == d->prog_id && d->xdp.libxdp)
		printf(" (%slibxdp priority %u)",
		       d->xdp.generic ? "generic mode, " : "", d->xdp.run_prio);
	else if (d->attached_id == d->prog_id && d->xdp.generic)
		printf(" (generic mode)");
	printf(", %zu rule%s, %u table%s", d->nr_rules,
	       plural(d->nr_rules), d->nr_masks, plural(d->nr_masks));
	if (d->kinfo)
		printf(", %u block%s", d->kinfo->nr_blocks,
		       plural(d->kinfo->nr_blocks));
	printf("\n");
	if (d->attached_id != d->prog_id)
		printf("  xdp program %u not attached to %s (%s): rules run in software only\n",
		       d->prog_id, d->name, d->attached_id ?
		       "another program is" : "none is");
	if (d->kinfo && d->kinfo->last_error[0])
		printf("  last error: %s (%u refused)\n", d->kinfo->last_error,
		       d->kinfo->refusals);
	for (r = d->rules; r < d->rules + d->nr_rules; r++) {
		format_match(r, match, sizeof(match));
		format_rewrite(&r->val, edits, sizeof(edits));
		print_rule_hook(r);
		printf("  %s%s%s%s%s  %s  packets %llu bytes %llu\n",
		       edits, edits[0] ? ", " : "",
		       action_name(r->val.action),
		       r->val.action == XDPOFF_ACT_REDIRECT ? " to " : "",
		       r->val.action == XDPOFF_ACT_REDIRECT ?
		       ifname_of(r->val.ifindex) : "",
		       match,
		       (unsigned long long)r->packets,
		       (unsigned long long)r->bytes);
	}
	if (d->nr_rules > 1)
		printf("  total  packets %llu bytes %llu\n",
		       (unsigned long long)d->packets,
		       (unsigned long long)d->bytes);
	if (d->nr_flows || (d->kinfo && d->kinfo->nr_flows))
		printf("  flowtable: %zu flow%s (of %u)\n", d->nr_flows,
		       plural(d->nr_flows), d->max_flows);
	for (fl = d->flows; fl < d->flows + d->nr_flows; fl++) {
		format_flow(fl, flow, sizeof(flow));
		printf("  flow %s  packets %llu bytes %llu", flow,
		       (unsigned long long)fl->val.packets,
		       (unsigned long long)fl->val.bytes);
		if (fl->idle >= 0)
			printf(" used %.1fs ago\n", fl->idle);
		else
			printf(" unused\n");
	}
}
