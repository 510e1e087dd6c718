/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * xdpoff: the classifier's tables and its address index, the rules the
 * module, the XDP program's tests and the benchmarks file rules by.
 * Part of the contract: included by xdpoff/xdpoff.h, after struct
 * xdpoff_fields, never on its own.
 */
#ifndef __XDPOFF_XDPOFF_TABLES_H
#define __XDPOFF_XDPOFF_TABLES_H

/* @d = @a & @b, word by word. */
static inline void xdpoff_fields_and(struct xdpoff_fields *d,
				     const struct xdpoff_fields *a,
				     const struct xdpoff_fields *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
	__u64 *z = (__u64 *)d;
	__u32 i;

	for (i = 0; i < XDPOFF_FIELD_WORDS; i++)
		z[i] = x[i] & y[i];
}

/*
 * Tables.  A rule of mask @r may go into a table of mask @t when @t is
 * within @r: the same outside ip saddr and daddr, and there a subset of
 * @r's bits.  A frame that matches the rule has the rule's fields & @t
 * under @t, so it finds the rule under the table's key, and the XDP
 * program compares it under the rule's own mask.  The module files a rule
 * into the table of the longest mask within its own that has its key
 * free (a table holds one rule per key: the first entry of a key that
 * matches is the only one) and room (xdpoff_table_room()); where none
 * does, it opens a table of xdpoff_table_mask() of the rule's mask.
 */
#define XDPOFF_ADDR_START	__builtin_offsetof(struct xdpoff_fields, saddr)
#define XDPOFF_ADDR_END		(__builtin_offsetof(struct xdpoff_fields, daddr) + 16)

static inline int xdpoff_mask_within(const struct xdpoff_fields *t,
				     const struct xdpoff_fields *r)
{
	const __u8 *a = (const __u8 *)t, *b = (const __u8 *)r;
	unsigned int i;

	for (i = 0; i < sizeof(*t); i++) {
		if (i >= XDPOFF_ADDR_START && i < XDPOFF_ADDR_END) {
			if (a[i] & ~b[i])
				return 0;
		} else if (a[i] != b[i]) {
			return 0;
		}
	}
	return 1;
}

/* The length of the prefix the 16 bytes at @f are, or -1 if not one. */
static inline int xdpoff_prefix_len(const __u8 *f)
{
	int i, len = -1;

	for (i = 0; i < 128; i++) {
		int bit = (f[i / 8] >> (7 - i % 8)) & 1;

		if (len < 0 && !bit)
			len = i;
		else if (len >= 0 && bit)
			return -1;
	}
	return len < 0 ? 128 : len;
}

static inline void xdpoff_set_prefix(__u8 *f, int len)
{
	int i;

	for (i = 0; i < 16; i++, len -= 8)
		f[i] = len >= 8 ? 0xff : len > 0 ? (__u8)(0xff00 >> len) : 0;
}

/*
 * The mask of a table opened for a rule of mask @r: @r with its address
 * prefixes cut to a multiple of 8 bits, so that prefixes of the lengths
 * up to the next multiple share it.  A mask whose addresses are not
 * prefixes (tc flower takes any) stays as it is there.
 */
static inline void xdpoff_table_mask(const struct xdpoff_fields *r,
				     struct xdpoff_fields *t)
{
	__u8 *a = (__u8 *)t;
	unsigned int f;
	int len;

	*t = *r;
	for (f = XDPOFF_ADDR_START; f < XDPOFF_ADDR_END; f += 16) {
		len = xdpoff_prefix_len(a + f);
		if (len > 0)
			xdpoff_set_prefix(a + f, len & ~7);
	}
}

/*
 * How many rules of a longer mask than its own a table of mask @t takes.
 * A frame whose key under @t is one of theirs passes the filter and costs
 * a lookup of the rules map, matched or not: at most one key in four of
 * the table's addresses and ports are theirs (a /8 table takes 64 rules of
 * /9 to /15).  Rules of the table's own mask cost a lookup only to frames
 * they match.
 */
/* The bits set in @b (no popcount: the kernel's build may lack it). */
static inline unsigned int xdpoff_bits8(__u8 b)
{
	unsigned int n = 0;

	for (; b; b &= b - 1)
		n++;
	return n;
}

static inline __u32 xdpoff_table_room(const struct xdpoff_fields *t)
{
	const __u8 *a = (const __u8 *)t;
	unsigned int i, bits = 0;

	for (i = XDPOFF_ADDR_START; i < XDPOFF_ADDR_END; i++)
		bits += xdpoff_bits8(a[i]);
	a = (const __u8 *)&t->sport;	/* and dport */
	for (i = 0; i < 4; i++)
		bits += xdpoff_bits8(a[i]);
	if (bits >= 26)
		return 1U << 24;
	return bits < 2 ? 0 : 1U << (bits - 2);
}

/* The bits set in mask @m. */
static inline unsigned int xdpoff_mask_bits(const struct xdpoff_fields *m)
{
	const __u8 *b = (const __u8 *)m;
	unsigned int i, n = 0;

	for (i = 0; i < sizeof(*m); i++)
		n += xdpoff_bits8(b[i]);
	return n;
}

/*
 * Filing a rule of mask @rule among the tables: the policy above, in the
 * one place the module (xdpoff_rule_table()) and the benchmarks take it
 * from.  xdpoff_place_init(); for each table that may take the rule
 * (whatever else the caller requires of it, such as its stage),
 * xdpoff_place_within() and, if that holds and the table has the rule's
 * key free, xdpoff_place_offer(); then p.best is the table, or -1 for a
 * new one of mask p.new_mask.
 */
struct xdpoff_place {
	const struct xdpoff_fields	*rule;
	struct xdpoff_fields		new_mask;
	int				best;
	unsigned int			best_bits;
};

static inline void xdpoff_place_init(struct xdpoff_place *p,
				     const struct xdpoff_fields *rule)
{
	p->rule = rule;
	xdpoff_table_mask(rule, &p->new_mask);
	/* A cut mask that takes no longer rule cannot take this one either. */
	if (!xdpoff_table_room(&p->new_mask))
		p->new_mask = *rule;
	p->best = -1;
	p->best_bits = 0;
}

/* Whether the table of mask @t may take the rule: @t within its mask. */
static inline int xdpoff_place_within(struct xdpoff_place *p,
				      const struct xdpoff_fields *t)
{
	if (!xdpoff_mask_within(t, p->rule))
		return 0;
	/* A table of the cut mask exists: a new one takes the rule's own. */
	if (!__builtin_memcmp(t, &p->new_mask, sizeof(*t)))
		p->new_mask = *p->rule;
	return 1;
}

/*
 * The table @i of mask @t, within the rule's mask, with the rule's key
 * free and @longer rules of a longer mask than its own: the best so far
 * if it has room for the rule and the longest mask.
 */
static inline void xdpoff_place_offer(struct xdpoff_place *p, int i,
				      const struct xdpoff_fields *t,
				      __u32 longer)
{
	unsigned int bits;

	if (__builtin_memcmp(t, p->rule, sizeof(*t)) &&
	    longer >= xdpoff_table_room(t))
		return;
	bits = xdpoff_mask_bits(t);
	if (p->best < 0 || bits > p->best_bits) {
		p->best = i;
		p->best_bits = bits;
	}
}

/*
 * The address index: which tables may hold a rule that a frame matches,
 * by the top 16 bits of its ip saddr and daddr (an IPv4 address's first
 * two bytes, an IPv6 address's first two).  Element [p] of xdpoff_index
 * (p = the saddr's 16 bits) has bit t set while table t holds an entry
 * whose own mask and fields let a frame with those bits match it; element
 * [XDPOFF_INDEX_DADDR + p] likewise for the daddr.  An entry that fixes
 * fewer than XDPOFF_INDEX_MIN_BITS of an address's 16 bits (it would set
 * more than 256 elements), none of them included, sets its table's bit in
 * xdpoff_meta.index_any[0] (saddr) or [1] (daddr) instead.  A frame whose
 * fields the parser determined looks up only the tables of
 *
 *   (index[saddr] | index_any[0]) & (index[daddr] | index_any[1])
 *
 * which for a prefix blocklist are the tables with a prefix near the
 * frame's address, not all: a table it skips costs it nothing.  With fewer
 * than XDPOFF_INDEX_MIN_TABLES tables, every table is looked up anyway.
 */
#define XDPOFF_INDEX_BITS	16
#define XDPOFF_INDEX_DADDR	(1U << XDPOFF_INDEX_BITS)
#define XDPOFF_INDEX_ENTRIES	(2U << XDPOFF_INDEX_BITS)
#define XDPOFF_INDEX_MIN_BITS	8
#define XDPOFF_INDEX_MIN_TABLES	3

/*
 * What an entry of mask @mask and fields @fields sets in the index for
 * address @a (0: saddr, 1: daddr): 0 if it fixes fewer than
 * XDPOFF_INDEX_MIN_BITS of the address's top 16 bits (its table's bit in
 * index_any[a]); else 1, with the values of the bits it fixes in *@k16
 * and the bits it leaves free in *@free: the bit of elements
 * a * XDPOFF_INDEX_DADDR + (k16 | s) for every s within free.
 */
static inline int xdpoff_index_span(const struct xdpoff_fields *mask,
				    const struct xdpoff_fields *fields, int a,
				    __u32 *k16, __u32 *free)
{
	const __u8 *m = (const __u8 *)(a ? mask->daddr : mask->saddr);
	const __u8 *k = (const __u8 *)(a ? fields->daddr : fields->saddr);
	__u32 m16 = (__u32)m[0] << 8 | m[1];

	if (xdpoff_bits8(m[0]) + xdpoff_bits8(m[1]) < XDPOFF_INDEX_MIN_BITS)
		return 0;
	*k16 = ((__u32)k[0] << 8 | k[1]) & m16;
	*free = ~m16 & 0xffff;
	return 1;
}

/* After subset @s of @free, the next one, or XDPOFF_INDEX_DONE. */
#define XDPOFF_INDEX_DONE	(1U << XDPOFF_INDEX_BITS)

static inline __u32 xdpoff_index_next(__u32 s, __u32 free)
{
	s = (s - free) & free;
	return s ? s : XDPOFF_INDEX_DONE;
}

/*
 * For each element @i of the index that a span of xdpoff_index_span()
 * (address @a, bits @k16, @free) sets: @s walks every subset of @free.
 */
#define xdpoff_index_for_each(i, s, a, k16, free)			\
	for ((s) = 0; (s) != XDPOFF_INDEX_DONE &&			\
	     ((i) = (a) * XDPOFF_INDEX_DADDR + ((k16) | (s)), 1);	\
	     (s) = xdpoff_index_next(s, free))

#endif /* __XDPOFF_XDPOFF_TABLES_H */
