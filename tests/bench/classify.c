// SPDX-License-Identifier: GPL-2.0
/*
 * tests/bench/classify: cost of the xdpoff classifier per frame, measured
 * with BPF_PROG_TEST_RUN.  Runs INSIDE THE TEST GUEST ONLY (tests/bench/
 * guest.sh calls it): it loads the XDP program into the running kernel,
 * without attaching it to any device.
 *
 * Usage: classify [--repeat R] [--runs K] [--libxdp DEV]
 *                 RULES:MASKS[d][n]|flows:N|prog:ID:NAME...
 *
 * 0:0 runs no classifier but a program that returns XDP_DROP at once:
 * BPF_PROG_TEST_RUN's own count per run, which every other figure holds.
 *
 * For each RULES:MASKS it loads a fresh copy of the program (rules and
 * stats maps sized max(RULES, XDPOFF_DEFAULT_MAX_RULES), as `xdpoff attach
 * --max-rules` would), fills the maps the way the module does, and times
 * K runs of R repetitions on one 64-byte UDP frame.  One line per run:
 *
 *   classify rules=N masks=M [sets=distinct] [match=none] tables=T repeat=R ns=X retval=1
 *
 * The maps, as kernel/xdpoff_maps.c and kernel/xdpoff_rules.c write them:
 *  - M rule masks (mask_of_class()): all match EtherType IPv4, the flags
 *    the parser sets and ip daddr /32; they differ in the length of an ip
 *    saddr prefix (/0 to /M-1), or with d in their field sets, which no
 *    table can share.
 *  - rule j (0..N-2) of mask j % M, ip daddr 10.0.0.0 + j: never matches
 *    the frame; rule N-1, the last in order, of mask M-1: matches it
 *    (with n: it does not either, ip daddr 10.0.0.0 + N-1).
 *  - the rules filed into tables (mask slots) as the module files them
 *    (file_rule()): the prefix masks share one table, their keys under
 *    its mask (/0) differing still in ip daddr; distinct field sets take
 *    one table each, T in all.
 *  - each rule an entry of the rules hash map, keyed by its key hash and
 *    the lowest dup free (xdpoff_rule_key), its stats slot j, its bit set
 *    in its table's filter; each table's dups 1 + its highest dup;
 *    xdpoff_meta.nr_masks = T.
 * The program looks every active table up (it keeps the earliest match,
 * so it cannot stop at the first), hence every one of the T tables costs
 * a hash and a filter test, those whose filter has the frame's bit a
 * lookup of the rules map, and the verdict comes from the last rule:
 * XDP_DROP (retval 1), or with n XDP_PASS (2), checked.
 *
 * With --libxdp DEV the program is loaded the way `xdpoff attach` loads
 * it by default, as one of the programs of libxdp's dispatcher on DEV
 * (generic mode: DEV may be any device of the guest), and the test run
 * runs the dispatcher, which calls it: the difference to a run without
 * is the dispatcher's cost.  The line then ends in libxdp=1.
 *
 * flows:N runs the flowtable's path instead: no rule, N offloaded flows
 * of UDP from the frame's source, ports 10000 + j but the last, which is
 * the frame's (port 9), each with the edits of a masquerade (its source
 * address becomes 198.19.0.1), to ifindex 1.  The program NATs the frame
 * and decrements its TTL, so each run is that of the harness
 * tests/bench/xdp_restore.bpf.c, which writes the frame back and
 * tail-calls the program: XDP_REDIRECT (retval 4), checked, and so is the
 * flow's packet count afterwards.  flows:0 is the harness alone, its
 * tail call into its own program that returns XDP_DROP: subtract it.
 *
 *   classify flows=N repeat=R ns=X retval=4
 *
 * prog:ID:NAME runs the program of id ID, which another tool loaded with
 * its rules (a peer, such as xdp-filter), on the same frame: it must drop
 * it (retval 1).
 *
 *   classify peer=NAME repeat=R ns=X retval=1
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <xdp/libxdp.h>

#include "xdpoff/xdpoff.h"
#include "xdpoff.skel.h"
#include "xdp_restore.skel.h"
#include "frame.h"

#define SADDR	BENCH_SADDR
#define DADDR	BENCH_DADDR
#define PORT	BENCH_PORT

static const __u8 dmac[ETH_ALEN] = { 0x52, 0x54, 0, 0, 0, 0x01 };	/* eth1 */

/*
 * The device's seed (xdpoff_meta.seed), fixed so that runs compare: it
 * decides, among others, whether the frame's hash passes the filter of a
 * mask it does not match (--seed S: another).
 */
static __u64 bench_seed = 0x5eed0f0ff10adULL;

static __be32 prefix(int len)
{
	return len ? htonl(~0U << (32 - len)) : 0;
}

/*
 * The mask of rule class @k: EtherType IPv4, the flags the parser sets
 * (IPv4, protocol, ports; no VLAN tag), ip daddr /32, and either (@distinct
 * clear) protocol UDP, udp dport and ip saddr/k, masks that differ in a
 * prefix length only, or (@distinct set) a field set of its own, which no
 * table can share: a subset of ttl, sport, dport, protocol and tos, by
 * the bits of k.
 */
static void mask_of_class(struct xdpoff_fields *m, int k, int distinct)
{
	memset(m, 0, sizeof(*m));
	m->n_proto = htons(0xffff);
	m->flags = XDPOFF_F_IPV4 | XDPOFF_F_PROTO | XDPOFF_F_L4 |
		   XDPOFF_F_VLAN;
	m->daddr[0] = prefix(32);
	if (!distinct) {
		m->ip_proto = 0xff;
		m->saddr[0] = prefix(k);
		m->dport = htons(0xffff);
		return;
	}
	m->ttl = k & 1 ? 0xff : 0;
	m->sport = k & 2 ? htons(0xffff) : 0;
	m->dport = k & 4 ? htons(0xffff) : 0;
	m->ip_proto = k & 8 ? 0xff : 0;
	m->tos = k & 16 ? 0xff : 0;
}

/* Mask slot @i, id i + 1, as kernel/xdpoff_maps.c writes it. */
static int write_mask(int fd, unsigned int i, const struct xdpoff_fields *mask,
		      __u64 seed, __u32 dups, int active)
{
	struct xdpoff_mask m = { .mask = *mask, .id = i + 1, .active = active,
				 .words = xdpoff_mask_words(mask),
				 .hash_start = xdpoff_hash_start(seed, i + 1),
				 .dups = dups };

	return bpf_map_update_elem(fd, &i, &m, BPF_ANY);
}

/* A table of fill(), as the module's struct xdpoff_mask_slot. */
struct table {
	struct xdpoff_fields	mask;
	__u32			longer;
	__u32			dups;
};

/*
 * The table of a rule of mask @rmask, by the module's policy (struct
 * xdpoff_place), for rules whose keys are all distinct (a key is never
 * taken, so every table within the rule's mask is offered): a new table
 * is written inactive.  -1: none left.
 */
static int file_rule(int masks_fd, struct table *t, unsigned int *nt,
		     const struct xdpoff_fields *rmask, __u64 seed)
{
	struct xdpoff_place p;
	unsigned int i;

	xdpoff_place_init(&p, rmask);
	for (i = 0; i < *nt; i++)
		if (xdpoff_place_within(&p, &t[i].mask))
			xdpoff_place_offer(&p, i, &t[i].mask, t[i].longer);
	if (p.best < 0) {
		if (*nt == XDPOFF_MAX_MASKS)
			return -1;
		p.best = (*nt)++;
		t[p.best].mask = p.new_mask;
		t[p.best].longer = 0;
		t[p.best].dups = 1;
		if (write_mask(masks_fd, p.best, &p.new_mask, seed, 1, 0))
			return -1;
	}
	if (memcmp(&t[p.best].mask, rmask, sizeof(*rmask)))
		t[p.best].longer++;
	return p.best;
}

/*
 * The address index's bits of the entry @val of table @slot, as the
 * module's xdpoff_index_update() sets them; @any: index_any.
 */
static int index_add(int fd, __u32 any[2], int slot,
		     const struct xdpoff_rule_val *val)
{
	__u32 k16, free, s, i, bits;
	int a;

	for (a = 0; a < 2; a++) {
		if (!xdpoff_index_span(&val->mask, &val->fields, a, &k16, &free)) {
			any[a] |= 1U << slot;
			continue;
		}
		xdpoff_index_for_each(i, s, a, k16, free) {
			if (bpf_map_lookup_elem(fd, &i, &bits))
				return -1;
			bits |= 1U << slot;
			if (bpf_map_update_elem(fd, &i, &bits, BPF_ANY))
				return -1;
		}
	}
	return 0;
}

/*
 * Fill the maps with @rules rules of @classes masks, the last of which
 * matches the frame unless @none; the tables in @nt.
 */
static int fill(struct xdpoff_bpf *skel, unsigned int rules,
		unsigned int classes, int distinct, int none, unsigned int *nt)
{
	int rules_fd = bpf_map__fd(skel->maps.xdpoff_rules);
	int masks_fd = bpf_map__fd(skel->maps.xdpoff_masks);
	int meta_fd = bpf_map__fd(skel->maps.xdpoff_meta);
	int filter_fd = bpf_map__fd(skel->maps.xdpoff_filter);
	int index_fd = bpf_map__fd(skel->maps.xdpoff_index);
	__u32 any[2] = { 0, 0 };
	struct xdpoff_meta meta = { .software_from = XDPOFF_ORDER_NONE,
				     .ft_order = XDPOFF_ORDER_NONE,
				     .seed = bench_seed,
				     .nr_stages = 1 };
	struct xdpoff_fields frame = {}, mask[XDPOFF_MAX_MASKS];
	struct table t[XDPOFF_MAX_MASKS];
	unsigned int i, j, idx, zero = 0;
	__u64 bits, h;
	int slot;

	/* What the XDP parser extracts from make_frame()'s frame. */
	memcpy(frame.dmac, dmac, ETH_ALEN);
	memcpy(frame.smac, bench_smac, ETH_ALEN);
	frame.n_proto = htons(ETH_P_IP);
	frame.ip_proto = IPPROTO_UDP;
	frame.flags = XDPOFF_F_IPV4 | XDPOFF_F_PROTO | XDPOFF_F_L4;
	frame.saddr[0] = htonl(SADDR);
	frame.daddr[0] = htonl(DADDR);
	frame.sport = htons(PORT);
	frame.dport = htons(PORT);
	frame.ttl = 64;		/* tos 0 */

	for (i = 0; i < classes; i++)
		mask_of_class(&mask[i], i, distinct);

	/* Tables first, inactive, then the rules, then activate: the
	 * module's order (no frame runs here anyway).
	 */
	*nt = 0;
	for (j = 0; j < rules; j++) {
		unsigned int k = j == rules - 1 ? classes - 1 : j % classes;
		struct xdpoff_rule_key key = {};
		struct xdpoff_rule_val val = {
			/* nft, prio 10, bind order 0x7fff (the term 0), handle j+1 */
			.order = xdpoff_order_nft(10, 0x7fff, j + 1),
			.stats_slot = j,
			.action = XDPOFF_ACT_DROP,
			.mask = mask[k],
			.words = xdpoff_mask_words(&mask[k]),
		};
		struct xdpoff_fields f = frame, tk;

		slot = file_rule(masks_fd, t, nt, &mask[k], meta.seed);
		if (slot < 0)
			return -ENOSPC;
		val.mask_id = slot + 1;
		if (j != rules - 1 || none)
			f.daddr[0] = htonl(0x0a000000 + j);
		xdpoff_fields_and(&val.fields, &f, &mask[k]);
		xdpoff_fields_and(&tk, &f, &t[slot].mask);
		h = xdpoff_key_hash(meta.seed, val.mask_id,
				    xdpoff_mask_words(&t[slot].mask), &tk);
		key.hash = (__u32)h;
		idx = xdpoff_filter_index(slot, h);
		if (bpf_map_lookup_elem(filter_fd, &idx, &bits))
			return -errno;
		bits |= xdpoff_filter_bit(h);
		if (bpf_map_update_elem(filter_fd, &idx, &bits, BPF_ANY))
			return -errno;
		/* A hash another rule has: the next dup. */
		while (bpf_map_update_elem(rules_fd, &key, &val, BPF_NOEXIST)) {
			if (errno != EEXIST) {
				fprintf(stderr, "classify: rule %u: %s\n", j,
					strerror(errno));
				return -errno;
			}
			key.dup++;
		}
		if (key.dup >= t[slot].dups)
			t[slot].dups = key.dup + 1;
		if (index_add(index_fd, any, slot, &val))
			return -errno;
	}

	meta.nr_masks = *nt;
	meta.tables = (__u32)((1ULL << *nt) - 1);
	meta.index_any[0] = any[0];
	meta.index_any[1] = any[1];
	if (bpf_map_update_elem(meta_fd, &zero, &meta, BPF_ANY))
		return -errno;
	for (i = 0; i < *nt; i++)
		if (write_mask(masks_fd, i, &t[i].mask, meta.seed, t[i].dups, 1))
			return -errno;
	return 0;
}

/* Load @skel as the only program of a dispatcher on @ifindex: its fd. */
static int load_libxdp(struct xdpoff_bpf *skel, int ifindex,
		       struct xdp_program **xp)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, opts, .obj = skel->obj,
			    .prog_name = "xdpoff_xdp");
	struct xdp_multiprog *mp;
	int err, fd;

	*xp = xdp_program__create(&opts);
	err = libxdp_get_error(*xp);
	if (err) {
		*xp = NULL;
		return err;
	}
	err = xdp_program__attach(*xp, ifindex, XDP_MODE_SKB, 0);
	if (err)
		return err;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (!mp || libxdp_get_error(mp) || xdp_multiprog__is_legacy(mp))
		return -ENOENT;
	fd = dup(xdp_program__fd(xdp_multiprog__main_prog(mp)));
	xdp_multiprog__close(mp);
	return fd < 0 ? -errno : fd;
}

/*
 * RULES:MASKS 0:0, the harness alone: a program of two instructions that
 * returns XDP_DROP, run as the classifier is.  What it counts per run is
 * BPF_PROG_TEST_RUN's own loop, in every other line's count too.
 */
static int load_empty(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "xdpoff_empty", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

/* One BPF_PROG_TEST_RUN of @repeat runs on @frame: its ns per run, verdict. */
static int test_run(int prog_fd, __u8 *frame, unsigned int repeat,
		    __u32 *ns, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		    .data_in = frame,
		    .data_size_in = BENCH_FRAME_LEN,
		    .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &opts)) {
		fprintf(stderr, "classify: test run: %s\n", strerror(errno));
		return -1;
	}
	*ns = opts.duration;
	*retval = opts.retval;
	return 0;
}

static int bench(unsigned int rules, unsigned int masks, int distinct,
		 int none, unsigned int repeat, int runs, int libxdp_ifindex)
{
	const char *kind = distinct ? " sets=distinct" : "";
	__u32 expect = none ? XDP_PASS : XDP_DROP;
	unsigned int tables = 0;
	unsigned int cap = rules > XDPOFF_DEFAULT_MAX_RULES ?
			   rules : XDPOFF_DEFAULT_MAX_RULES;
	struct xdp_program *xp = NULL;
	struct xdpoff_bpf *skel;
	int prog_fd = -1;
	__u8 frame[BENCH_FRAME_LEN];
	__u32 ns, retval;
	int err, i;

	bench_frame(frame, dmac);
	skel = xdpoff_bpf__open();
	if (!skel) {
		fprintf(stderr, "classify: open: %s\n", strerror(errno));
		return -1;
	}
	err = bpf_map__set_max_entries(skel->maps.xdpoff_rules, cap);
	if (!err)
		err = bpf_map__set_max_entries(skel->maps.xdpoff_stats, cap);
	if (!err && !rules) {
		prog_fd = load_empty();
		err = prog_fd < 0 ? -errno : 0;
	} else if (!err && libxdp_ifindex) {
		prog_fd = load_libxdp(skel, libxdp_ifindex, &xp);
		err = prog_fd < 0 ? prog_fd : 0;
	} else if (!err) {
		err = xdpoff_bpf__load(skel);
		prog_fd = bpf_program__fd(skel->progs.xdpoff_xdp);
	}
	if (err) {
		fprintf(stderr, "classify: load: %s\n", strerror(-err));
		goto out;
	}
	err = rules ? fill(skel, rules, masks, distinct, none, &tables) : 0;
	if (err) {
		fprintf(stderr, "classify: filling the maps: %s\n",
			strerror(-err));
		goto out;
	}

	for (i = 0; i < runs; i++) {
		err = test_run(prog_fd, frame, repeat, &ns, &retval);
		if (err)
			goto out;
		printf("classify rules=%u masks=%u%s%s tables=%u repeat=%u ns=%u retval=%u%s\n",
		       rules, masks, kind, none ? " match=none" : "", tables,
		       repeat, ns, retval, libxdp_ifindex ? " libxdp=1" : "");
		fflush(stdout);
		if (retval != expect) {
			fprintf(stderr, "classify: rules=%u masks=%u: verdict %u, expected %u\n",
				rules, masks, retval, expect);
			err = -1;
			goto out;
		}
	}
out:
	if (xp) {
		xdp_program__detach(xp, libxdp_ifindex, XDP_MODE_SKB, 0);
		xdp_program__close(xp);
	}
	if ((libxdp_ifindex || !rules) && prog_fd >= 0)
		close(prog_fd);
	xdpoff_bpf__destroy(skel);
	return err ? -1 : 0;
}

/*
 * Flow j of n as kernel/xdpoff_flows.c installs a masquerading router's:
 * UDP from the frame's source, port 10000 + j but the last, which is the
 * frame's.
 */
static void flow_of(unsigned int j, unsigned int n, struct xdpoff_flow_key *k,
		    struct xdpoff_flow_val *v)
{
	__u16 port = j == n - 1 ? PORT : 10000 + j;
	const struct xdpoff_flow_key key = {
		.saddr = { htonl(SADDR) },
		.daddr = { htonl(DADDR) },
		.sport = htons(port), .dport = htons(PORT),
		.family = XDPOFF_F_IPV4, .proto = IPPROTO_UDP,
	};
	const struct xdpoff_flow_val val = {
		.dmac = { 0x52, 0x54, 0, 0, 0, 0x03 },
		.smac = { 0x52, 0x54, 0, 0, 0, 0x02 },
		.nat_saddr = { htonl(0xc6130001) }, /* 198.19.0.1 */
		.nat_sport = htons(port),
		.nat = XDPOFF_NAT_SRC,
		.ifindex = 1,
		.mtu = 1500,
	};

	*k = key;
	*v = val;
	xdpoff_flow_csum_diffs(k, v);
}

/* N flows, each an entry of the flows hash map keyed by its tuple. */
static int fill_flows(struct xdpoff_bpf *skel, unsigned int n)
{
	int meta_fd = bpf_map__fd(skel->maps.xdpoff_meta);
	int flows_fd = bpf_map__fd(skel->maps.xdpoff_flows);
	struct xdpoff_meta meta = { .software_from = XDPOFF_ORDER_NONE,
				     .ft_order = XDPOFF_ORDER_NFT,
				     .seed = bench_seed,
				     .nr_stages = 1 };
	struct xdpoff_flow_key key;
	struct xdpoff_flow_val val;
	unsigned int j, zero = 0;

	if (n > bpf_map__max_entries(skel->maps.xdpoff_flows))
		return -E2BIG;
	if (bpf_map_update_elem(meta_fd, &zero, &meta, BPF_ANY))
		return -errno;
	for (j = 0; j < n; j++) {
		flow_of(j, n, &key, &val);
		if (bpf_map_update_elem(flows_fd, &key, &val, BPF_NOEXIST))
			return -errno;
	}
	return 0;
}

/* The packets XDP forwarded for the frame's flow (the last of fill_flows). */
static long long flow_packets(struct xdpoff_bpf *skel, unsigned int n)
{
	struct xdpoff_flow_key key;
	struct xdpoff_flow_val val;

	flow_of(n - 1, n, &key, &val);
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.xdpoff_flows), &key,
				&val))
		return -1;
	return val.packets;
}

static int bench_flows(unsigned int n, unsigned int repeat, int runs)
{
	unsigned int expect = n ? XDP_REDIRECT : XDP_DROP, zero = 0;
	struct xdpoff_bpf *skel = NULL;
	struct xdp_restore_bpf *h;
	__u8 frame[BENCH_FRAME_LEN];
	int err, i, next_fd = -1;
	__u32 ns, retval;
	long long pkts;

	bench_frame(frame, dmac);
	h = xdp_restore_bpf__open_and_load();
	if (!h) {
		fprintf(stderr, "classify: the harness: %s\n", strerror(errno));
		return -1;
	}
	err = bpf_map__value_size(h->maps.restore_frame) == sizeof(frame) ?
	      0 : -EINVAL;
	if (!err && n) {
		skel = xdpoff_bpf__open_and_load();
		err = skel ? fill_flows(skel, n) : -errno;
		if (!err)
			next_fd = bpf_program__fd(skel->progs.xdpoff_xdp);
	} else if (!err) {
		next_fd = bpf_program__fd(h->progs.xdp_restore_drop);
	}
	if (!err && (bpf_map_update_elem(bpf_map__fd(h->maps.restore_frame),
					 &zero, frame, BPF_ANY) ||
		     bpf_map_update_elem(bpf_map__fd(h->maps.restore_next),
					 &zero, &next_fd, BPF_ANY)))
		err = -errno;
	if (err) {
		fprintf(stderr, "classify: flows=%u: %s\n", n, strerror(-err));
		goto out;
	}

	for (i = 0; i < runs; i++) {
		err = test_run(bpf_program__fd(h->progs.xdp_restore), frame,
			       repeat, &ns, &retval);
		if (err)
			goto out;
		printf("classify flows=%u repeat=%u ns=%u retval=%u\n",
		       n, repeat, ns, retval);
		fflush(stdout);
		if (retval != expect) {
			fprintf(stderr, "classify: flows=%u: verdict %u, expected %u\n",
				n, retval, expect);
			err = -1;
			goto out;
		}
	}
	pkts = n ? flow_packets(skel, n) : 0;
	if (n && pkts != (long long)repeat * runs) {
		fprintf(stderr, "classify: flows=%u: the flow counted %lld packets, expected %llu\n",
			n, pkts, (unsigned long long)repeat * runs);
		err = -1;
	}
out:
	xdpoff_bpf__destroy(skel);
	xdp_restore_bpf__destroy(h);
	return err ? -1 : 0;
}

/*
 * prog:ID:NAME: the program of id ID, loaded by another tool (a peer such
 * as xdp-filter, with its rules), run on the same frame, which its rules
 * must drop; its line names it, "classify peer=NAME ...".
 */
static int bench_peer(unsigned int id, const char *name, unsigned int repeat,
		      int runs)
{
	__u8 frame[BENCH_FRAME_LEN];
	int fd, i, err = 0;
	__u32 ns, retval;

	bench_frame(frame, dmac);
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		fprintf(stderr, "classify: program %u (%s): %s\n", id, name,
			strerror(errno));
		return -1;
	}
	for (i = 0; i < runs && !err; i++) {
		err = test_run(fd, frame, repeat, &ns, &retval);
		if (err)
			break;
		printf("classify peer=%s repeat=%u ns=%u retval=%u\n", name,
		       repeat, ns, retval);
		fflush(stdout);
		if (retval != XDP_DROP) {
			fprintf(stderr, "classify: %s: verdict %u, expected XDP_DROP\n",
				name, retval);
			err = -1;
		}
	}
	close(fd);
	return err;
}

static void usage(void)
{
	fprintf(stderr, "usage: classify [--repeat R] [--runs K] [--seed S] [--libxdp DEV] RULES:MASKS[d]|flows:N|prog:ID:NAME...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned int repeat = 1000000, rules, masks;
	int runs = 3, i, fails = 0, libxdp_ifindex = 0;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			bench_seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--libxdp") && i + 1 < argc &&
			 (libxdp_ifindex = if_nametoindex(argv[++i])))
			;
		else
			usage();
	}
	if (i == argc || !repeat || runs < 1)
		usage();
	if (!bench_in_guest()) {
		fprintf(stderr, "classify: runs inside the test guest only (tests/vm/run)\n");
		return 1;
	}
	for (; i < argc; i++) {
		char name[64], opt[8];

		if (sscanf(argv[i], "prog:%u:%63s", &rules, name) == 2) {
			if (bench_peer(rules, name, repeat, runs))
				fails++;
			continue;
		}
		if (sscanf(argv[i], "flows:%u", &rules) == 1 && !libxdp_ifindex) {
			if (bench_flows(rules, repeat, runs))
				fails++;
			continue;
		}
		opt[0] = 0;
		if (sscanf(argv[i], "%u:%u%7s", &rules, &masks, opt) < 2 ||
		    strspn(opt, "dn") != strlen(opt) ||
		    masks > XDPOFF_MAX_MASKS || masks > rules ||
		    (rules && !masks) || (!rules && libxdp_ifindex))
			usage();
		if (bench(rules, masks, !!strchr(opt, 'd'), !!strchr(opt, 'n'),
			  repeat, runs, libxdp_ifindex))
			fails++;
	}
	return fails ? 1 : 0;
}
