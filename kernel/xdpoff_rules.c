// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: a device's rule table, the driver's shadow of its rules map:
 * one struct xdpoff_rule per rule installed on the device, found by
 * cookie and by key hash, with its map key, stats slot, mask slot and
 * counters.  A fwd rule holds a reference on its target device.
 */

#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/bpf.h>
#include <linux/slab.h>

#include "xdpoff.h"

static u32 xdpoff_by_key_hash(const struct xdpoff_rule_key *key)
{
	return key->hash;
}

struct xdpoff_rule *xdpoff_rule_find(struct xdpoff_dev *xdev,
				     unsigned long cookie)
{
	struct xdpoff_rule *r;

	hash_for_each_possible(xdev->by_cookie, r, cookie_node, cookie)
		if (r->cookie == cookie)
			return r;
	return NULL;
}

/* In the same table with the same mask and fields: one entry for both. */
static bool xdpoff_same_match(const struct xdpoff_rule *a,
			      const struct xdpoff_rule *b)
{
	return a->val.mask_id == b->val.mask_id &&
	       !memcmp(&a->val.mask, &b->val.mask, sizeof(a->val.mask)) &&
	       !memcmp(&a->val.fields, &b->val.fields, sizeof(a->val.fields));
}

/* The hash of the key of fields @key in the table in @slot. */
static u64 xdpoff_table_hash(struct xdpoff_dev *xdev, u32 slot,
			     const struct xdpoff_fields *key)
{
	const struct xdpoff_mask_slot *ms = &xdev->mask_slots[slot];
	struct xdpoff_fields tk;

	xdpoff_fields_and(&tk, key, &ms->mask);
	return xdpoff_key_hash(xdev->seed, ms->id, xdpoff_mask_words(&ms->mask),
			       &tk);
}

/*
 * The rule that has the key of fields @key in the table in @slot (a
 * table holds one rule per key, and the rules that share its entry), or
 * NULL.
 */
static struct xdpoff_rule *xdpoff_table_holder(struct xdpoff_dev *xdev,
					       u32 slot,
					       const struct xdpoff_fields *key)
{
	const struct xdpoff_fields *tm = &xdev->mask_slots[slot].mask;
	u32 hash = (u32)xdpoff_table_hash(xdev, slot, key);
	struct xdpoff_fields a, b;
	struct xdpoff_rule *o;

	xdpoff_fields_and(&a, key, tm);
	hash_for_each_possible(xdev->by_key, o, key_node, hash) {
		if (o->mask_slot != slot || o->key.hash != hash)
			continue;
		xdpoff_fields_and(&b, &o->val.fields, tm);
		if (!memcmp(&a, &b, sizeof(a)))
			return o;
	}
	return NULL;
}

/*
 * The table for a rule of match @m in @stage (xdpoff/xdpoff_tables.h,
 * Tables): the one that holds the same mask and fields already, so the
 * rules share the entry; else the one xdpoff_place_offer() finds best
 * among the tables of the stage that have the rule's key free; else a new
 * one of xdpoff_place's new_mask.  Returns the table's slot, referenced,
 * or a negative errno.
 */
static int xdpoff_rule_table(struct xdpoff_dev *xdev, u32 stage,
			     const struct xdpoff_match *m, u64 order,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_place p;
	struct xdpoff_rule *o;
	int i, err;
	u32 slot;

	xdpoff_place_init(&p, &m->mask);
	for (i = 0; i < XDPOFF_MAX_MASKS; i++) {
		struct xdpoff_mask_slot *ms = &xdev->mask_slots[i];

		if (!ms->refcnt || ms->stage != stage || ms->needs != m->needs ||
		    memcmp(&ms->range, &m->range, sizeof(ms->range)) ||
		    !xdpoff_place_within(&p, &ms->mask))
			continue;
		o = xdpoff_table_holder(xdev, i, &m->key);
		if (!o) {
			xdpoff_place_offer(&p, i, &ms->mask, ms->longer);
			continue;
		}
		if (!memcmp(&o->val.mask, &m->mask, sizeof(m->mask)) &&
		    !memcmp(&o->val.fields, &m->key, sizeof(m->key)))
			goto ref;
	}
	if (p.best >= 0) {
		i = p.best;
		goto ref;
	}
	err = xdpoff_mask_new(xdev, stage, &p.new_mask, &m->range, m->needs,
			      order, &slot, extack);
	return err ? err : slot;
ref:
	err = xdpoff_mask_ref(xdev, i, order, extack);
	return err ? err : i;
}

/*
 * Of the other rules with @r's mask and fields: the one that owns their
 * entry and the best one.  Returns the dup of their key; if there are
 * none, the lowest dup that no entry of @r's key hash has (rules whose
 * hashes are alike), which a new entry takes.
 */
static u32 xdpoff_key_rules(struct xdpoff_dev *xdev,
			    const struct xdpoff_rule *r,
			    struct xdpoff_rule **owner,
			    struct xdpoff_rule **best)
{
	u32 bkt = xdpoff_by_key_hash(&r->key), dup = 0;
	struct xdpoff_rule *o;
	bool taken;

	*owner = NULL;
	*best = NULL;
	hash_for_each_possible(xdev->by_key, o, key_node, bkt) {
		if (o == r || o->key.hash != r->key.hash ||
		    !xdpoff_same_match(o, r))
			continue;
		if (o->installed)
			*owner = o;
		if (!*best || o->val.order < (*best)->val.order)
			*best = o;
	}
	if (*best)
		return (*best)->key.dup;
	do {
		taken = false;
		hash_for_each_possible(xdev->by_key, o, key_node, bkt)
			if (o != r && o->installed &&
			    o->key.hash == r->key.hash && o->key.dup == dup) {
				taken = true;
				dup++;
				break;
			}
	} while (taken);
	return dup;
}

/* Bits of the rule's key outside its mask: software never matches it. */
static bool xdpoff_key_outside_mask(const struct xdpoff_match *m)
{
	const u64 *k = (const u64 *)&m->key, *mk = (const u64 *)&m->mask;
	u32 i;

	for (i = 0; i < XDPOFF_FIELD_WORDS; i++)
		if (k[i] & ~mk[i])
			return true;
	return false;
}

/*
 * Where the rule runs in software.  tc's ingress hook runs before
 * nf_tables' (bit 63 clear): filter priority, then flower's mask order,
 * then the filter's place among those of its mask (xdpoff_tc_order()).
 * For nf_tables: chain priority, then bind order among equal priorities
 * (nf_hook_entries_grow() puts a new hook before those of the same
 * priority: the chain bound last runs first), then the rule's position.
 * Offloaded chains only append (nf_tables refuses insert and replace), so
 * the rule handle is the position, and it survives a DESTROY/REPLACE
 * round trip of an aborted transaction.
 */
static u64 xdpoff_rule_order(const struct xdpoff_port *port,
			     const struct xdpoff_brule *br)
{
	if (port->blk->tc)
		return br->tc_order;
	return xdpoff_order_nft(br->prio, port->seq, br->handle);
}

/* meta iif/iiftype of another device: the rule never matches here. */
static bool xdpoff_never(const struct xdpoff_dev *xdev,
			 const struct xdpoff_match *m)
{
	return ((m->iif ^ xdev->ifindex) & m->iif_mask) ||
	       ((m->iiftype ^ xdev->netdev->type) & m->iiftype_mask);
}

/* fwd to DEV: DEV must take XDP frames, so it must run xdpoff too. */
static int xdpoff_rule_fwd(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			   struct xdpoff_dev *tdev,
			   struct netlink_ext_ack *extack)
{
	if (!tdev || !tdev->netdev ||
	    !net_eq(dev_net(tdev->netdev), dev_net(xdev->netdev))) {
		NL_SET_ERR_MSG_MOD(extack,
				   "fwd target must be attached with xdpoff (it takes XDP frames then)");
		return -EOPNOTSUPP;
	}
	if (!xdpoff_dev_can_redirect(xdev, tdev)) {
		NL_SET_ERR_MSG_MOD(extack,
				   "fwd target runs XDP in generic mode: native XDP cannot send to it");
		return -EOPNOTSUPP;
	}
	r->fwd_dev = tdev;
	r->val.ifindex = tdev->ifindex;
	tdev->fwd_refs++;
	xdpoff_dev_hold(tdev);
	return 0;
}

static void xdpoff_rule_unfwd(struct xdpoff_rule *r)
{
	if (!r->fwd_dev)
		return;
	r->fwd_dev->fwd_refs--;
	xdpoff_dev_put(r->fwd_dev);
	r->fwd_dev = NULL;
}

/*
 * Write @r's entry in the rules map, unless an earlier rule with the same
 * mask and fields owns it; a later owner gives it up to @r (the entry's
 * value replaced at once).  A new entry raises its table's dups and sets
 * its filter and index bits first, so no frame misses it.
 */
static int xdpoff_rule_install(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
			       struct netlink_ext_ack *extack)
{
	struct xdpoff_rule *owner, *best;
	int err;

	r->key.dup = xdpoff_key_rules(xdev, r, &owner, &best);
	if (owner && owner->val.order < r->val.order)
		return 0;

	if (owner) {
		err = xdpoff_map_update(xdpoff_map(xdev, RULES), &r->key, &r->val,
					BPF_EXIST);
		if (err)
			goto err_msg;
		owner->installed = false;
		r->installed = true;
		return 0;
	}

	err = xdpoff_mask_dup_get(xdev, r->mask_slot, r->key.dup);
	if (err)
		goto err_msg;
	xdpoff_filter_get(xdev, r->mask_slot, r->hash);
	xdpoff_index_get(xdev, r->mask_slot, &r->val);
	err = xdpoff_map_update(xdpoff_map(xdev, RULES), &r->key, &r->val,
				BPF_NOEXIST);
	if (err) {
		xdpoff_index_put(xdev, r->mask_slot, &r->val);
		xdpoff_filter_put(xdev, r->mask_slot, r->hash);
		xdpoff_mask_dup_put(xdev, r->mask_slot, r->key.dup);
		goto err_msg;
	}
	r->installed = true;
	return 0;

err_msg:
	NL_SET_ERR_MSG_MOD(extack, "failed to write the rules map");
	return err;
}

/* Install the block rule @br on @port's device. */
static int __xdpoff_rule_add(struct xdpoff_port *port,
			     const struct xdpoff_brule *br,
			     struct netlink_ext_ack *extack)
{
	struct xdpoff_dev *xdev = port->xdev;
	const struct xdpoff_match *m = &br->m;
	struct xdpoff_rule *r;
	int err;

	if (xdev->nr_rules >= xdev->max_rules) {
		xdpoff_set_err_msg(extack, xdev->rules_full);
		return -ENOSPC;
	}

	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->cookie = br->cookie;
	r->port = port;
	r->never = xdpoff_never(xdev, m) || xdpoff_key_outside_mask(m);
	r->val = m->val;
	if ((xdev->prog_flags & XDPOFF_PROG_NO_ADJUST) &&
	    r->val.action == XDPOFF_ACT_REDIRECT &&
	    (r->val.rewrite & (XDPOFF_RW_VLAN_POP | XDPOFF_RW_VLAN_PUSH))) {
		/* The program cannot; tc's software path will. */
		memset(&r->val, 0, sizeof(r->val));
		r->val.action = XDPOFF_ACT_SOFTWARE;
	}
	r->val.stage = port->stage;
	r->val.order = xdpoff_rule_order(port, br);

	if (r->val.action == XDPOFF_ACT_REDIRECT) {
		err = xdpoff_rule_fwd(xdev, r, br->fwd, extack);
		if (err)
			goto err_free_rule;
	}

	/* A rule for another device is kept, but has nothing to install. */
	if (r->never)
		goto out_add;

	err = xdpoff_rule_table(xdev, port->stage, m, r->val.order, extack);
	if (err < 0)
		goto err_unfwd;
	r->mask_slot = err;
	r->val.fields = m->key;
	r->val.mask = m->mask;
	r->val.words = xdpoff_mask_words(&m->mask);
	r->val.mask_id = xdev->mask_slots[r->mask_slot].id;
	r->hash = xdpoff_table_hash(xdev, r->mask_slot, &m->key);
	r->key.hash = (u32)r->hash;
	r->longer = memcmp(&xdev->mask_slots[r->mask_slot].mask, &m->mask,
			   sizeof(m->mask)) != 0;
	xdev->mask_slots[r->mask_slot].longer += r->longer;

	/* One per rule, and nr_rules is below max_rules: cannot fail. */
	err = xdpoff_stats_slot_get(xdev, &r->val.stats_slot);
	if (WARN_ON_ONCE(err)) {
		xdpoff_set_err_msg(extack, xdev->rules_full);
		goto err_put_mask;
	}

	err = xdpoff_rule_install(xdev, r, extack);
	if (err)
		goto err_free_stats;
	hash_add(xdev->by_key, &r->key_node, xdpoff_by_key_hash(&r->key));
out_add:
	spin_lock(&xdpoff_stats_lock);
	hash_add(xdev->by_cookie, &r->cookie_node, r->cookie);
	spin_unlock(&xdpoff_stats_lock);
	xdev->nr_rules++;
	return 0;

err_free_stats:
	xdpoff_stats_slot_put(xdev, r->val.stats_slot);
err_put_mask:
	xdev->mask_slots[r->mask_slot].longer -= r->longer;
	xdpoff_mask_put(xdev, r->mask_slot);
err_unfwd:
	xdpoff_rule_unfwd(r);
err_free_rule:
	kfree(r);
	return err;
}

int xdpoff_rule_add(struct xdpoff_port *port, const struct xdpoff_brule *br,
		    struct netlink_ext_ack *extack)
{
	int err;

	xdpoff_fault_armed = true;
	err = __xdpoff_rule_add(port, br, extack);
	xdpoff_fault_armed = false;
	return err;
}

/*
 * The installed @r leaves the rules map: its entry goes to the next rule
 * with the same mask and fields (@r is off the key hash already), or is
 * deleted before the mask can go.
 */
static void xdpoff_rule_unpublish(struct xdpoff_dev *xdev,
				  struct xdpoff_rule *r)
{
	struct xdpoff_rule *owner, *best;

	xdpoff_key_rules(xdev, r, &owner, &best);
	if (best && !xdpoff_map_update(xdpoff_map(xdev, RULES), &best->key,
				       &best->val, BPF_EXIST)) {
		best->installed = true;
		return;
	}
	xdpoff_map_delete(xdpoff_map(xdev, RULES), &r->key);
	xdpoff_index_put(xdev, r->mask_slot, &r->val);
	xdpoff_filter_put(xdev, r->mask_slot, r->hash);
	xdpoff_mask_dup_put(xdev, r->mask_slot, r->key.dup);
}

/* Remove @r from its device. */
void xdpoff_rule_del(struct xdpoff_dev *xdev, struct xdpoff_rule *r)
{
	spin_lock(&xdpoff_stats_lock);
	hash_del(&r->cookie_node);
	spin_unlock(&xdpoff_stats_lock);
	xdev->nr_rules--;
	if (r->never)
		goto out_free;

	hash_del(&r->key_node);
	if (r->installed)
		xdpoff_rule_unpublish(xdev, r);
	/* Its stats slot is free after a grace period. */
	xdpoff_stats_slot_put(xdev, r->val.stats_slot);
	xdev->mask_slots[r->mask_slot].longer -= r->longer;
	xdpoff_mask_put(xdev, r->mask_slot);
out_free:
	xdpoff_rule_unfwd(r);
	kfree(r);
}

/*
 * What XDP consumed since the last report (nf_tables and tc add it to the
 * rule's counters).  Frames XDP passed up meet the software rule, which
 * counts them itself.  XDP counts bytes as the stack does, from the
 * network header on (skb->len at ingress).
 */
void xdpoff_rule_stats(struct xdpoff_dev *xdev, struct xdpoff_rule *r,
		       u64 *pkts, u64 *bytes)
{
	struct xdpoff_stats st;

	if (r->never)
		return;

	xdpoff_stats_read(xdev, r->val.stats_slot, &st);
	*pkts += st.consumed_packets - r->reported_pkts;
	*bytes += st.consumed_bytes - r->reported_bytes;
	r->reported_pkts = st.consumed_packets;
	r->reported_bytes = st.consumed_bytes;
}

/* Remove every rule of @port, or of the whole device when @port is NULL. */
void xdpoff_rules_flush(struct xdpoff_dev *xdev, struct xdpoff_port *port)
{
	struct hlist_node *tmp;
	struct xdpoff_rule *r;
	int bkt;

	hash_for_each_safe(xdev->by_cookie, bkt, tmp, r, cookie_node)
		if (!port || r->port == port)
			xdpoff_rule_del(xdev, r);
}
