// SPDX-License-Identifier: GPL-2.0
/* xdpoff: access to the BPF maps the XDP program classifies with. */

#include <linux/bitmap.h>
#include <linux/bpf.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "xdpoff.h"

struct xdpoff_map_spec {
	enum bpf_map_type type;
	u32		key_size;
	u32		value_size;
	const char	*bad;		/* extack message when it does not fit */
};

/*
 * The rules and flows are entries of hash maps (what `bpftool map dump`
 * shows is what is offloaded), the rest arrays: the "hardware"'s
 * registers and counters.
 */
#define XDPOFF_MAP_SPEC(id, name, attr, type_, key_, val_)		\
	[XDPOFF_MAPI_##id] = {						\
		type_, sizeof(key_), sizeof(val_),			\
		KBUILD_MODNAME ": " #name " map has the wrong type, key or value size" \
	},
static const struct xdpoff_map_spec xdpoff_map_specs[XDPOFF_NR_MAPS] = {
	XDPOFF_MAPS(XDPOFF_MAP_SPEC)
};
#undef XDPOFF_MAP_SPEC

int xdpoff_maps_validate(struct bpf_map *maps[XDPOFF_NR_MAPS],
			 struct netlink_ext_ack *extack)
{
	int i;

	for (i = 0; i < XDPOFF_NR_MAPS; i++) {
		const struct xdpoff_map_spec *s = &xdpoff_map_specs[i];

		if (maps[i]->map_type != s->type ||
		    maps[i]->key_size != s->key_size ||
		    maps[i]->value_size != s->value_size) {
			xdpoff_set_err_msg(extack, s->bad);
			return -EINVAL;
		}
	}
	if (maps[XDPOFF_MAPI_MASKS]->max_entries != XDPOFF_MAX_MASKS) {
		NL_SET_ERR_MSG_MOD(extack, "masks map has the wrong size");
		return -EINVAL;
	}
	if (maps[XDPOFF_MAPI_FILTER]->max_entries != XDPOFF_FILTER_ENTRIES) {
		NL_SET_ERR_MSG_MOD(extack, "filter map has the wrong size");
		return -EINVAL;
	}
	if (maps[XDPOFF_MAPI_INDEX]->max_entries != XDPOFF_INDEX_ENTRIES) {
		NL_SET_ERR_MSG_MOD(extack, "index map has the wrong size");
		return -EINVAL;
	}
	if (maps[XDPOFF_MAPI_STATS]->max_entries <
	    maps[XDPOFF_MAPI_RULES]->max_entries) {
		NL_SET_ERR_MSG_MOD(extack, "stats map is smaller than rules map");
		return -EINVAL;
	}
	if (maps[XDPOFF_MAPI_RULES]->max_entries > XDPOFF_MAX_RULES_LIMIT) {
		NL_SET_ERR_MSG_MOD(extack, "rules map is too large (16777215 entries at most)");
		return -EINVAL;
	}
	if (maps[XDPOFF_MAPI_FLOWS]->max_entries > XDPOFF_MAX_RULES_LIMIT) {
		NL_SET_ERR_MSG_MOD(extack, "flows map is too large (16777215 entries at most)");
		return -EINVAL;
	}
	/*
	 * Entries allocated at update time could fail for memory with
	 * room left; preallocated ones fail only past max_entries, which
	 * the driver's own counts keep it below.
	 */
	if ((maps[XDPOFF_MAPI_RULES]->map_flags |
	     maps[XDPOFF_MAPI_FLOWS]->map_flags) & BPF_F_NO_PREALLOC) {
		NL_SET_ERR_MSG_MOD(extack, "rules and flows maps must be preallocated");
		return -EINVAL;
	}
	return 0;
}

/*
 * The map ops expect to run like a BPF program: under RCU and on one CPU
 * (xdpoff_map_write()).
 *
 * Fault injection, only while a rule is being installed: the fail_nth-th
 * map write from now fails with -EIO, once (debugfs fail_nth); each map
 * write fails with a probability of fail_permille / 1000 (debugfs
 * fail_permille, until it is set back to 0).
 */
u32 xdpoff_fail_nth;
u32 xdpoff_fail_permille;
bool xdpoff_fault_armed;

static bool xdpoff_should_fail(void)
{
	if (!xdpoff_fault_armed)
		return false;
	if (xdpoff_fail_nth && !--xdpoff_fail_nth)
		return true;
	return xdpoff_fail_permille &&
	       get_random_u32_below(1000) < xdpoff_fail_permille;
}

static int xdpoff_map_write(struct bpf_map *map, const void *key,
			    const void *value, u64 flags)
{
	int err;

	lockdep_assert_held(&xdpoff_lock);
	migrate_disable();
	rcu_read_lock();
	err = map->ops->map_update_elem(map, (void *)key, (void *)value,
					flags);
	rcu_read_unlock();
	migrate_enable();
	return err;
}

/*
 * Delete an entry of a hash map.  It cannot fail for an entry the driver
 * installed: no fault injection.  A frame in flight may still read the
 * element, as with any BPF hash map, until the map reuses it.
 */
void xdpoff_map_delete(struct bpf_map *map, const void *key)
{
	int err;

	lockdep_assert_held(&xdpoff_lock);
	migrate_disable();
	rcu_read_lock();
	err = map->ops->map_delete_elem(map, (void *)key);
	rcu_read_unlock();
	migrate_enable();
	WARN_ON_ONCE(err);
}

/* A write that installs: where injected faults strike. */
int xdpoff_map_update(struct bpf_map *map, const void *key,
		      const void *value, u64 flags)
{
	if (xdpoff_should_fail())
		return -EIO;
	return xdpoff_map_write(map, key, value, flags);
}

/* meta.software_from: the earliest tc filter left in software only. */
static u64 xdpoff_dev_software_from(struct xdpoff_dev *xdev)
{
	u64 from = XDPOFF_ORDER_NONE;
	struct xdpoff_sw_only *so;
	struct xdpoff_port *port;

	list_for_each_entry(port, &xdev->ports, list)
		list_for_each_entry(so, &port->blk->sw_only, list)
			from = min(from, so->order);
	return from;
}

/*
 * Writes that take something back (a failed install undone, a mask
 * released) go around fault injection: they overwrite an element of an
 * array map, which cannot fail, and an injected failure there would leave
 * the maps other than the driver's own state.
 */
static int xdpoff_meta_restore(struct xdpoff_dev *xdev)
{
	struct xdpoff_meta meta = {
		.nr_masks = xdev->hold ? 0 : xdev->nr_masks,
		.nr_stages = fls_long(xdev->stages_used),
		.software_from = xdpoff_dev_software_from(xdev),
		.ft_order = xdev->hold ? XDPOFF_ORDER_NONE : xdev->ft_order,
		.seed = xdev->seed,
		.tables = xdev->hold ? 0 : xdev->tables,
		.index_any = { xdev->index_any[0], xdev->index_any[1] },
	};
	u32 zero = 0;

	return xdpoff_map_write(xdpoff_map(xdev, META), &zero, &meta, BPF_ANY);
}

/*
 * While held, the XDP program looks at no mask and no flow and passes every
 * frame up:
 * software decides alone while a replay fills the maps in an order that is
 * not the rules' (xdpoff_replay()).  Caller holds xdpoff_lock.
 */
void xdpoff_meta_hold(struct xdpoff_dev *xdev, bool hold)
{
	xdev->hold = hold;
	xdpoff_meta_restore(xdev);
}

/* The device's meta after a change of its software-only filters. */
void xdpoff_meta_sync(struct xdpoff_dev *xdev)
{
	xdpoff_meta_restore(xdev);
}

static int xdpoff_meta_write(struct xdpoff_dev *xdev)
{
	if (xdpoff_should_fail())
		return -EIO;
	return xdpoff_meta_restore(xdev);
}

/* The masks map's element of @slot, from the module's copy. */
static void xdpoff_mask_value(struct xdpoff_dev *xdev, u32 slot, bool active,
			      struct xdpoff_mask *mv)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	struct xdpoff_mask m;

	memset(&m, 0, sizeof(m));
	m.mask = ms->mask;
	m.words = xdpoff_mask_words(&ms->mask);
	m.id = ms->id;
	m.active = active;
	m.needs = ms->needs;
	m.stage = ms->stage;
	m.ranges = ms->range.ranges;
	m.sport_min = ms->range.sport_min;
	m.sport_max = ms->range.sport_max;
	m.dport_min = ms->range.dport_min;
	m.dport_max = ms->range.dport_max;
	m.min_order = ms->min_order;
	m.hash_start = xdpoff_hash_start(xdev->seed, ms->id);
	m.dups = ms->dups;
	*mv = m;
}

static int xdpoff_mask_write(struct xdpoff_dev *xdev, u32 slot, bool active)
{
	struct xdpoff_mask m;

	xdpoff_mask_value(xdev, slot, active, &m);
	return xdpoff_map_update(xdpoff_map(xdev, MASKS), &slot, &m, BPF_ANY);
}

/* A write that takes something back, around fault injection (as meta's). */
static void xdpoff_mask_restore(struct xdpoff_dev *xdev, u32 slot)
{
	struct xdpoff_mask m;

	xdpoff_mask_value(xdev, slot, true, &m);
	xdpoff_map_write(xdpoff_map(xdev, MASKS), &slot, &m, BPF_ANY);
}

/* A free slot is all zeroes, as the map was before the slot was used. */
static void xdpoff_mask_clear(struct xdpoff_dev *xdev, u32 slot)
{
	struct xdpoff_mask m = {};

	xdpoff_map_write(xdpoff_map(xdev, MASKS), &slot, &m, BPF_ANY);
}

/*
 * A rule of order @order joins the table in @slot.  min_order only goes
 * down while the table lives: a stale, earlier bound only makes XDP leave
 * more frames to software.
 */
int xdpoff_mask_ref(struct xdpoff_dev *xdev, u32 slot, u64 order,
		    struct netlink_ext_ack *extack)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u64 old = ms->min_order;
	int err;

	if (order < ms->min_order) {
		ms->min_order = order;
		err = xdpoff_mask_write(xdev, slot, true);
		if (err) {
			ms->min_order = old;
			NL_SET_ERR_MSG_MOD(extack, "failed to write the masks map");
			return err;
		}
	}
	ms->refcnt++;
	return 0;
}

/*
 * Open a table of @mask in a free slot, for a rule of order @order.  The
 * slot is written whole first, then its bit set in meta's tables, so no
 * frame uses a half-written table.  A slot freed earlier may still be read
 * by frames in flight: reuse waits a grace period.
 */
int xdpoff_mask_new(struct xdpoff_dev *xdev, u32 stage,
		    const struct xdpoff_fields *mask,
		    const struct xdpoff_range *range, u32 needs, u64 order,
		    u32 *slot, struct netlink_ext_ack *extack)
{
	struct xdpoff_mask_slot *ms;
	int free = -1, err;
	u32 i, nr_masks;

	for (i = 0; i < XDPOFF_MAX_MASKS && free < 0; i++)
		if (!xdev->mask_slots[i].refcnt)
			free = i;
	if (free < 0) {
		NL_SET_ERR_MSG_MOD(extack,
				   "too many distinct match masks: no table of the 32 takes this rule's");
		return -ENOSPC;
	}

	ms = &xdev->mask_slots[free];
	if (!ms->filter) {
		ms->filter = kvcalloc(XDPOFF_FILTER_WORDS, sizeof(u64),
				      GFP_KERNEL);
		ms->filter_refs = kvcalloc(1U << XDPOFF_FILTER_BITS,
					   sizeof(u16), GFP_KERNEL);
		ms->index_refs = kvcalloc(XDPOFF_INDEX_ENTRIES, sizeof(u16),
					  GFP_KERNEL);
		if (!ms->filter || !ms->filter_refs || !ms->index_refs) {
			kvfree(ms->filter);
			kvfree(ms->filter_refs);
			kvfree(ms->index_refs);
			ms->filter = NULL;
			ms->filter_refs = NULL;
			ms->index_refs = NULL;
			NL_SET_ERR_MSG_MOD(extack, "out of memory for a mask's filter");
			return -ENOMEM;
		}
	}
	if (ms->used_before)
		synchronize_rcu();
	ms->mask = *mask;
	ms->range = *range;
	ms->stage = stage;
	ms->needs = needs;
	ms->min_order = order;
	ms->dups = 1;
	ms->nr_dups = 0;
	ms->longer = 0;
	/* Deterministic, so a failed batch leaves the maps as they were. */
	ms->id = free + 1;
	err = xdpoff_mask_write(xdev, free, true);
	if (err)
		goto err_msg;
	ms->used_before = true;
	/* The element is whole: frames look the table up from here on. */
	nr_masks = xdev->nr_masks;
	xdev->nr_masks = max(nr_masks, (u32)free + 1);
	xdev->tables |= BIT(free);
	err = xdpoff_meta_write(xdev);
	if (err)
		goto err_clear;
	ms->refcnt = 1;
	*slot = free;
	return 0;

err_clear:
	/* Leave the maps as they were: the slot zeroed, meta back. */
	xdev->tables &= ~BIT(free);
	xdev->nr_masks = nr_masks;
	xdpoff_meta_restore(xdev);
	xdpoff_mask_clear(xdev, free);
err_msg:
	NL_SET_ERR_MSG_MOD(extack, "failed to write the masks map");
	return err;
}

/*
 * The filter bit of @hash in @slot: set with the first rules map entry of
 * the slot whose hash has it, before the entry is written; cleared after
 * the last such entry is deleted.  Writes of one u64 array element, which
 * cannot fail (no fault injection); a frame reading it while it is
 * written sees the bit before or after, and the other bits unchanged.
 */
void xdpoff_filter_get(struct xdpoff_dev *xdev, u32 slot, u64 hash)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u32 bit = xdpoff_filter_bitno(hash), idx;

	if (ms->filter_refs[bit] == U16_MAX || ms->filter_refs[bit]++)
		return;
	ms->filter[bit / 64] |= xdpoff_filter_bit(hash);
	idx = xdpoff_filter_index(slot, hash);
	xdpoff_map_write(xdpoff_map(xdev, FILTER), &idx, &ms->filter[bit / 64],
			 BPF_ANY);
}

void xdpoff_filter_put(struct xdpoff_dev *xdev, u32 slot, u64 hash)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u32 bit = xdpoff_filter_bitno(hash), idx;

	if (WARN_ON_ONCE(!ms->filter_refs[bit]) ||
	    ms->filter_refs[bit] == U16_MAX || --ms->filter_refs[bit])
		return;
	ms->filter[bit / 64] &= ~xdpoff_filter_bit(hash);
	idx = xdpoff_filter_index(slot, hash);
	xdpoff_map_write(xdpoff_map(xdev, FILTER), &idx, &ms->filter[bit / 64],
			 BPF_ANY);
}

void xdpoff_filter_free(struct xdpoff_dev *xdev)
{
	int i;

	for (i = 0; i < XDPOFF_MAX_MASKS; i++) {
		kvfree(xdev->mask_slots[i].filter);
		kvfree(xdev->mask_slots[i].filter_refs);
		kvfree(xdev->mask_slots[i].index_refs);
	}
}

/*
 * The address index (xdpoff/xdpoff.h).  Its elements are set and cleared
 * in place, one u32 store each, which a frame reads before or after: the
 * bit of table @slot in element @i.
 */
static void xdpoff_index_bit(struct xdpoff_dev *xdev, u32 i, u32 slot,
			     bool set)
{
	struct bpf_map *map = xdpoff_map(xdev, INDEX);
	u32 *v;

	rcu_read_lock();
	v = map->ops->map_lookup_elem(map, &i);
	if (!WARN_ON_ONCE(!v))
		WRITE_ONCE(*v, set ? *v | BIT(slot) : *v & ~BIT(slot));
	rcu_read_unlock();
}

/*
 * An entry @val of the table in @slot comes (@add) or goes: for each
 * address, the bit of every element of the index whose 16 bits it can
 * match, or of index_any (xdpoff_index_span()).  Set before the entry is
 * written, cleared after it is deleted, as the filter's.
 */
static void xdpoff_index_update(struct xdpoff_dev *xdev, u32 slot,
				const struct xdpoff_rule_val *val, bool add)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u32 k16, free, s, i;
	int a;

	for (a = 0; a < 2; a++) {
		if (!xdpoff_index_span(&val->mask, &val->fields, a, &k16,
				       &free)) {
			if (add ? ms->any_refs[a]++ :
			    WARN_ON_ONCE(!ms->any_refs[a]) || --ms->any_refs[a])
				continue;
			if (add)
				xdev->index_any[a] |= BIT(slot);
			else
				xdev->index_any[a] &= ~BIT(slot);
			xdpoff_meta_restore(xdev);
			continue;
		}
		xdpoff_index_for_each(i, s, a, k16, free) {
			u16 *refs = &ms->index_refs[i];

			if (*refs == U16_MAX)
				continue;
			if (add ? (*refs)++ : WARN_ON_ONCE(!*refs) || --*refs)
				continue;
			xdpoff_index_bit(xdev, i, slot, add);
		}
	}
}

void xdpoff_index_get(struct xdpoff_dev *xdev, u32 slot,
		      const struct xdpoff_rule_val *val)
{
	xdpoff_index_update(xdev, slot, val, true);
}

void xdpoff_index_put(struct xdpoff_dev *xdev, u32 slot,
		      const struct xdpoff_rule_val *val)
{
	xdpoff_index_update(xdev, slot, val, false);
}

/*
 * An entry of mask @slot with key dup @dup is about to be written: the
 * mask's dups must cover it first, or frames would not look it up.
 */
int xdpoff_mask_dup_get(struct xdpoff_dev *xdev, u32 slot, u32 dup)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u32 old = ms->dups;
	int err;

	if (!dup)
		return 0;
	if (dup >= ms->dups) {
		ms->dups = dup + 1;
		err = xdpoff_mask_write(xdev, slot, true);
		if (err) {
			ms->dups = old;
			return err;
		}
	}
	ms->nr_dups++;
	return 0;
}

/*
 * An entry of mask @slot with key dup @dup is gone (or was never
 * written): once none of the mask's entries has a dup above 0, frames
 * look up dup 0 only again.  An overwrite of an array element: it cannot
 * fail, no fault injection.
 */
void xdpoff_mask_dup_put(struct xdpoff_dev *xdev, u32 slot, u32 dup)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	u32 old = ms->dups;

	if (!dup || WARN_ON_ONCE(!ms->nr_dups) || --ms->nr_dups)
		return;
	ms->dups = 1;
	if (old != 1)
		xdpoff_mask_restore(xdev, slot);
}

/*
 * Drop a reference; the last one clears the slot.  The rules of the mask
 * are gone from the rules map by then, so a frame reading the slot while
 * it is being cleared finds no entry whatever it reads.
 */
void xdpoff_mask_put(struct xdpoff_dev *xdev, u32 slot)
{
	struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];

	if (WARN_ON_ONCE(!ms->refcnt) || --ms->refcnt)
		return;

	xdev->tables &= ~BIT(slot);
	xdpoff_meta_restore(xdev);
	xdpoff_mask_clear(xdev, slot);
	while (xdev->nr_masks && !xdev->mask_slots[xdev->nr_masks - 1].refcnt)
		xdev->nr_masks--;
	xdpoff_meta_restore(xdev);
}

static struct xdpoff_stats *xdpoff_stats_ptr(struct bpf_map *map, u32 slot,
					     int cpu)
{
	struct bpf_array *array = container_of(map, struct bpf_array, map);

	return per_cpu_ptr(array->pptrs[slot & array->index_mask], cpu);
}

static void xdpoff_stats_zero(struct xdpoff_dev *xdev, u32 slot)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(xdpoff_stats_ptr(xdpoff_map(xdev, STATS), slot, cpu), 0,
		       sizeof(struct xdpoff_stats));
}

/*
 * Lowest free stats slot, so a failed batch that deletes and restores
 * rules leaves the maps as they were.  A slot freed since the last grace
 * period may still be counted into by frames in flight, through the
 * rules map entry that named it: its reuse waits for one (all the slots
 * freed before it).
 */
int xdpoff_stats_slot_get(struct xdpoff_dev *xdev, u32 *slot)
{
	unsigned long bit;

	bit = find_first_zero_bit(xdev->stats_used, xdev->max_rules);
	if (bit >= xdev->max_rules)
		return -ENOSPC;

	if (test_bit(bit, xdev->slots_dirty)) {
		cond_synchronize_rcu(xdev->slots_gp);
		bitmap_zero(xdev->slots_dirty, xdev->max_rules);
	}
	set_bit(bit, xdev->stats_used);
	xdpoff_stats_zero(xdev, bit);
	*slot = bit;
	return 0;
}

/*
 * Zeroed on free too, so a map whose rules are all gone reads as it did
 * before they came (frames in flight may still add to it: zeroed again on
 * the next alloc).
 */
void xdpoff_stats_slot_put(struct xdpoff_dev *xdev, u32 slot)
{
	xdpoff_stats_zero(xdev, slot);
	clear_bit(slot, xdev->stats_used);
	set_bit(slot, xdev->slots_dirty);
	xdev->slots_gp = get_state_synchronize_rcu();
}

void xdpoff_stats_read(struct xdpoff_dev *xdev, u32 slot,
		       struct xdpoff_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		struct xdpoff_stats *s =
			xdpoff_stats_ptr(xdpoff_map(xdev, STATS), slot, cpu);

		sum->packets += READ_ONCE(s->packets);
		sum->bytes += READ_ONCE(s->bytes);
		sum->consumed_packets += READ_ONCE(s->consumed_packets);
		sum->consumed_bytes += READ_ONCE(s->consumed_bytes);
	}
}
