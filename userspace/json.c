// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: show's JSON output (show --json), with a small hand-written
 * JSON writer: print_dev_json() prints one device's object.
 */
#include <stdbool.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <linux/types.h>

#include "xdpoff/xdpoff.h"
#include "show.h"

void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Print `"key":` preceded by a comma unless it opens the object. */
static void json_key(bool *first, const char *key, const char *suffix)
{
	char k[64];

	snprintf(k, sizeof(k), "%s%s", key, suffix);
	if (!*first)
		putchar(',');
	*first = false;
	json_str(k);
	putchar(':');
}

static void json_u64(bool *first, const char *key, __u64 v)
{
	json_key(first, key, "");
	printf("%llu", (unsigned long long)v);
}

/*
 * Match fields in JSON: only the fields the mask selects appear, each as
 * "<name>": value, plus "<name>_mask": mask when the mask is not exact.
 * Names: smac dmac n_proto saddr daddr ip_proto sport dport.  MACs and IPv4
 * addresses (and their masks) are strings, the others host-order numbers.
 */
static void json_mac(bool *first, const char *key, const __u8 *v,
		     const __u8 *m)
{
	char buf[ADDR_LEN];

	if (is_zero(m, 6))
		return;
	json_key(first, key, "");
	json_str(fmt_mac(buf, v));
	if (!all_ones(m, 6)) {
		json_key(first, key, "_mask");
		json_str(fmt_mac(buf, m));
	}
}

static void json_ip(bool *first, const char *key, int family,
		    const __be32 *v, const __be32 *m)
{
	char buf[ADDR_LEN];

	if (is_zero(m, addr_bytes(family)))
		return;
	json_key(first, key, "");
	json_str(fmt_ip(buf, family, v));
	if (!all_ones(m, addr_bytes(family))) {
		json_key(first, key, "_mask");
		json_str(fmt_ip(buf, family, m));
	}
}

static void json_num(bool *first, const char *key, unsigned int v,
		     unsigned int m, unsigned int exact)
{
	if (!m)
		return;
	json_u64(first, key, v);
	if (m != exact) {
		json_key(first, key, "_mask");
		printf("%u", m);
	}
}

static void print_match_json(const struct rule *r)
{
	const struct xdpoff_fields *v = &r->val.fields, *m = &r->val.mask;
	bool first = true;

	putchar('{');
	json_mac(&first, "smac", v->smac, m->smac);
	json_mac(&first, "dmac", v->dmac, m->dmac);
	json_num(&first, "n_proto", ntohs(v->n_proto), ntohs(m->n_proto), 0xffff);
	json_num(&first, "vlan_tci", ntohs(v->vlan_tci), ntohs(m->vlan_tci), 0xffff);
	json_num(&first, "vlan_etype", ntohs(v->vlan_etype), ntohs(m->vlan_etype), 0xffff);
	json_num(&first, "cvlan_tci", ntohs(v->cvlan_tci), ntohs(m->cvlan_tci), 0xffff);
	json_num(&first, "cvlan_etype", ntohs(v->cvlan_etype), ntohs(m->cvlan_etype), 0xffff);
	json_ip(&first, "saddr", rule_family(v), v->saddr, m->saddr);
	json_ip(&first, "daddr", rule_family(v), v->daddr, m->daddr);
	json_num(&first, "ip_proto", v->ip_proto, m->ip_proto, 0xff);
	json_num(&first, "sport", ntohs(v->sport), ntohs(m->sport), 0xffff);
	json_num(&first, "dport", ntohs(v->dport), ntohs(m->dport), 0xffff);
	if (r->slot->ranges & XDPOFF_RANGE_SPORT) {
		json_u64(&first, "sport_min", r->slot->sport_min);
		json_u64(&first, "sport_max", r->slot->sport_max);
	}
	if (r->slot->ranges & XDPOFF_RANGE_DPORT) {
		json_u64(&first, "dport_min", r->slot->dport_min);
		json_u64(&first, "dport_max", r->slot->dport_max);
	}
	json_num(&first, "tos", v->tos, m->tos, 0xff);
	json_num(&first, "ttl", v->ttl, m->ttl, 0xff);
	json_num(&first, "tcp_flags", ntohs(v->tcp_flags), ntohs(m->tcp_flags), 0x0fff);
	json_num(&first, "icmp_type", v->icmp_type, m->icmp_type, 0xff);
	json_num(&first, "icmp_code", v->icmp_code, m->icmp_code, 0xff);
	putchar('}');
}

void print_dev_json(const struct dev_info *d)
{
	static const __u8 ones_b[16] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	const void *ones = ones_b;
	const struct rule *r;
	const struct flow *fl;
	bool first = true, rfirst;

	putchar('{');
	json_key(&first, "ifname", "");
	json_str(d->name);
	json_u64(&first, "ifindex", d->ifindex);
	json_u64(&first, "prog_id", d->prog_id);
	json_key(&first, "xdp_attached", "");
	printf(d->attached_id == d->prog_id ? "true" : "false");
	json_key(&first, "xdp_mode", "");
	json_str(d->xdp.generic ? "generic" : "native");
	json_key(&first, "libxdp", "");
	printf(d->xdp.libxdp ? "true" : "false");
	if (d->xdp.libxdp)
		json_u64(&first, "run_prio", d->xdp.run_prio);
	json_u64(&first, "max_rules", d->max_rules);
	json_u64(&first, "tables", d->nr_masks);
	if (d->kinfo) {
		json_u64(&first, "blocks", d->kinfo->nr_blocks);
		json_u64(&first, "refusals", d->kinfo->refusals);
	}
	if (d->kinfo && d->kinfo->last_error[0]) {
		json_key(&first, "last_error", "");
		json_str(d->kinfo->last_error);
	}
	json_u64(&first, "packets", d->packets);
	json_u64(&first, "bytes", d->bytes);
	json_key(&first, "rules", "");
	putchar('[');
	for (r = d->rules; r < d->rules + d->nr_rules; r++) {
		if (r != d->rules)
			putchar(',');
		rfirst = true;
		putchar('{');
		json_key(&rfirst, "hook", "");
		json_str(order_hook(r->val.order));
		json_u64(&rfirst, "prio", xdpoff_order_prio(r->val.order));
		if (xdpoff_order_is_nft(r->val.order))
			json_u64(&rfirst, "handle", xdpoff_order_handle(r->val.order));
		json_u64(&rfirst, "stage", r->val.stage);
		json_key(&rfirst, "action", "");
		json_str(action_name(r->val.action));
		json_key(&rfirst, "match", "");
		print_match_json(r);
		if (r->val.action == XDPOFF_ACT_REDIRECT) {
			char edits[256];

			json_key(&rfirst, "fwd", "");
			json_str(ifname_of(r->val.ifindex));
			format_rewrite(&r->val, edits, sizeof(edits));
			if (edits[0]) {
				json_key(&rfirst, "edits", "");
				json_str(edits);
			}
		}
		json_u64(&rfirst, "packets", r->packets);
		json_u64(&rfirst, "bytes", r->bytes);
		json_u64(&rfirst, "consumed_packets", r->consumed_packets);
		putchar('}');
	}
	putchar(']');
	json_u64(&first, "max_flows", d->max_flows);
	json_key(&first, "flows", "");
	putchar('[');
	for (fl = d->flows; fl < d->flows + d->nr_flows; fl++) {
		int family = fl->key.family == XDPOFF_F_IPV6 ? AF_INET6 : AF_INET;
		const struct xdpoff_flow_val *v = &fl->val;

		if (fl != d->flows)
			putchar(',');
		rfirst = true;
		putchar('{');
		json_key(&rfirst, "proto", "");
		json_str(l4_name(fl->key.proto));
		json_ip(&rfirst, "saddr", family, fl->key.saddr, ones);
		json_u64(&rfirst, "sport", ntohs(fl->key.sport));
		json_ip(&rfirst, "daddr", family, fl->key.daddr, ones);
		json_u64(&rfirst, "dport", ntohs(fl->key.dport));
		if (v->nat & XDPOFF_NAT_SRC) {
			json_ip(&rfirst, "snat_addr", family, v->nat_saddr, ones);
			json_u64(&rfirst, "snat_port", ntohs(v->nat_sport));
		}
		if (v->nat & XDPOFF_NAT_DST) {
			json_ip(&rfirst, "dnat_addr", family, v->nat_daddr, ones);
			json_u64(&rfirst, "dnat_port", ntohs(v->nat_dport));
		}
		json_key(&rfirst, "out", "");
		json_str(ifname_of(v->ifindex));
		json_mac(&rfirst, "dst_mac", v->dmac, ones);
		json_mac(&rfirst, "src_mac", v->smac, ones);
		json_u64(&rfirst, "mtu", v->mtu);
		json_u64(&rfirst, "packets", v->packets);
		json_u64(&rfirst, "bytes", v->bytes);
		if (fl->idle >= 0) {
			json_key(&rfirst, "idle_s", "");
			printf("%.3f", fl->idle);
		}
		putchar('}');
	}
	printf("]}");
}
