/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff XDP program, part 2 of 3: the classifier, a tuple-space search
 * over tables (xdpoff/xdpoff.h).  Per active table: the hash of the
 * frame's fields under its mask, the table's filter bit, the rules map's
 * entry of the hash, whose table id must be this one and whose fields
 * the frame's under the rule's own mask; per stage the earliest such rule
 * is the best.
 * Included once, by xdpoff.bpf.c, after the maps.
 */
#ifndef __XDPOFF_CLASSIFY_H
#define __XDPOFF_CLASSIFY_H

_Static_assert(XDPOFF_FIELD_WORDS == 9, "lookup_rule() walks 9 words");

/*
 * Word n of the hash, and of the compare: cases of a switch on the mask's
 * last word + 1 that fall through down to word 0, so a mask of the first
 * words (an nft rule on IPv4 addresses and ports) does not test the others.
 * The hash skips the words the table's mask does not use (a zero word of
 * the mask: xdpoff_mask_words() sets the bits of the others, which the
 * module's hash tests); the compare, under the rule's own mask, need not
 * test for them: a rule's fields are zero outside its mask (the module
 * installs no rule whose key has bits there), and so is the masked frame.
 */
#define HASH_WORD(n)							\
	case (n) + 1:							\
		mw = msk[n];						\
		if (mw)							\
			h = xdpoff_hash_word(h, src[n] & mw);		\
		/* fallthrough */
#define SAME_WORD(n)							\
	case (n) + 1:							\
		if ((src[n] & rmsk[n]) != v[n])				\
			return 0;					\
		/* fallthrough */

/*
 * Whether the rule @val is of table @m and its fields are those of frame
 * @f under the rule's own mask.  The frame's words are read as volatile:
 * the compiler would keep them all in registers across the map lookup
 * (and the table loop), and spill them past the stack's 512 bytes.  The
 * rule's mask and last word come from the map value, read here: a scalar
 * kept from the hash's switch, the verifier would walk everything in
 * between once for each of its values, past its 1,000,000-instruction
 * limit.
 */
static __always_inline int same_rule(const struct xdpoff_rule_val *val,
				     const struct xdpoff_fields *f,
				     const struct xdpoff_mask *m)
{
	const volatile __u64 *src = (const volatile __u64 *)f;
	const __u64 *rmsk = (const __u64 *)&val->mask;
	const __u64 *v = (const __u64 *)&val->fields;

	if (val->mask_id != m->id)
		return 0;
	switch (XDPOFF_WORDS_LAST(val->words)) {
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
 * The tables a frame @f may match a rule of (xdpoff/xdpoff.h, the address
 * index), of the @nr in use: all of them while they are few, or while the
 * parser could not determine the frame's fields (@unknown), which the
 * index reads; else those the index gives for its addresses.
 */
static __always_inline __u64 tables_of(const struct xdpoff_meta *meta,
				       __u64 nr, const struct xdpoff_fields *f,
				       long unknown)
{
	__u64 s, d;	/* 64-bit: loads of u32 that need no zero extension */
	__u32 k, *v;

	if (nr < XDPOFF_INDEX_MIN_TABLES || unknown)
		return meta->tables;
	k = bpf_ntohl(f->saddr[0]) >> (32 - XDPOFF_INDEX_BITS);
	v = bpf_map_lookup_elem(&xdpoff_index, &k);
	s = v ? *v : ~0ULL;
	k = XDPOFF_INDEX_DADDR + (bpf_ntohl(f->daddr[0]) >> (32 - XDPOFF_INDEX_BITS));
	v = bpf_map_lookup_elem(&xdpoff_index, &k);
	d = v ? *v : ~0ULL;
	s |= meta->index_any[0];
	d |= meta->index_any[1];
	return s & d & meta->tables;
}

/*
 * Table @mi of the tuple-space search: its best rule for @f into @best,
 * or, when the table needs one of the XDPOFF_U_* bits of @unknown, the
 * earliest order it may hold.
 */
static __always_inline void classify_table(__u32 mi,
					   const struct xdpoff_fields *f,
					   long unknown,
					   struct stage_best *best)
{
	struct xdpoff_rule_key key;
	struct xdpoff_rule_val *val;
	struct xdpoff_mask *m;
	__u32 slot = mi;	/* on the stack for the helper */
	__u32 st;

	m = bpf_map_lookup_elem(&xdpoff_masks, &slot);
	if (!m)
		return;
	st = m->stage & (XDPOFF_MAX_STAGES - 1);
	/* No rule of the mask can beat its stage's best so far. */
	if (m->min_order >= best->order[st])
		return;
	if (m->needs & unknown) {
		if (m->min_order < best->unknown[st])
			best->unknown[st] = m->min_order;
		return;
	}
	if (m->ranges && out_of_range(m, f))
		return;
	val = lookup_rule(f, m, slot, &key);
	if (!val)
		return;
	st = val->stage & (XDPOFF_MAX_STAGES - 1);
	if (val->order < best->order[st]) {
		best->order[st] = val->order;
		best->slot[st] = val->stats_slot;
		best->info[st] = INFO(val->action & 0xff,
				      val->rewrite & 0xff, slot);
		best->ifindex[st] = val->ifindex;
	}
}

/*
 * classify_table() as a function of its own, verified once (global):
 * inlined in the loop over the tables, the verifier walked its body once
 * per table and per state of the loop, 532,621 instructions (5.9 s of
 * each attach under TCG).  Its key for the lookups is on its own stack:
 * a global function's pointer arguments are memory, which the map
 * helpers do not take as a key.
 */
__noinline int classify_one(__u32 mi, const struct xdpoff_fields *f,
			    long unknown, struct stage_best *best)
{
	if (f && best)
		classify_table(mi, f, unknown, best);
	return 0;
}

/*
 * The tuple-space search over the tables whose bits @tables has
 * (tables_of()): per stage, the earliest rule that matches @f in @best
 * (whose orders and unknowns come set to NO_MATCH), and the earliest
 * order a table @f cannot be looked up in may hold.  Table 0 alone (one
 * nft chain or tc block of rules alike, the common case) inline, without
 * the call; the others through classify_one().
 */
static __always_inline void classify(__u64 tables,
				     const struct xdpoff_fields *f,
				     long unknown, struct stage_best *best)
{
	__u64 mi;	/* 64-bit: no zero extension at every turn */

	if (tables == 1) {
		classify_table(0, f, unknown, best);
		return;
	}
	for (mi = 0; mi < XDPOFF_MAX_MASKS && tables; mi++, tables >>= 1)
		if (tables & 1)
			classify_one(mi, f, unknown, best);
}

#endif /* __XDPOFF_CLASSIFY_H */
