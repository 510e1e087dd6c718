// SPDX-License-Identifier: GPL-2.0
/*
 * keycollide: pairs of rules of one mask whose rules map keys have the
 * same hash (xdpoff_rule_key.hash, the low 32 bits of xdpoff_key_hash(),
 * xdpoff/xdpoff.h), found by a birthday search: variations of one rule
 * in its IPv4 source address and destination port, within the mask, are
 * hashed from the device's seed until N pairs of them share a hash (the
 * ports stay the rule's: see variation()).  The
 * pairs are disjoint, their hashes differ from each other's and from the
 * rule's own, and no variation is the rule itself.
 *
 *   keycollide SEED MASK_ID MASK FIELDS N
 *
 * SEED is xdpoff_meta.seed, MASK_ID the rule's mask id, MASK and FIELDS
 * its mask and its (masked) fields, struct xdpoff_fields in hex (144
 * digits, the bytes as the maps hold them).  Prints N lines "saddrA
 * dportA saddrB dportB" (dotted quad, decimal) and exits 0, or exits 1.
 * tests/lib/keyindex.py collide reads the arguments from the maps.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/types.h>

#include "xdpoff/xdpoff.h"

/*
 * Hash table of the variations seen: 2^TABLE_BITS, half full at most.
 * 2^19 variations hold 32 pairs on average: N up to 16 is found.
 */
#define TABLE_BITS	20
#define TABLE_SIZE	(1U << TABLE_BITS)
#define MAX_TRIES	(TABLE_SIZE / 2)
#define EMPTY		0		/* variation 0 is the rule itself */
#define TAKEN		UINT32_MAX	/* the hash of a pair found */

struct slot {
	uint32_t	hash;
	uint32_t	var;
};

static struct xdpoff_fields mask, rule;
static uint32_t saddr0, dport0;	/* the rule's, host order */

/*
 * Variation @i of the rule: its source address plus i (distinct for i
 * below 2^32), its port, masked; 0 if it is the rule or has port 0.
 * Only the address varies: variations that differ in word 0's ports
 * alone never share a key (xdpoff/xdpoff.h), and keys of variations that
 * differ in a port's low byte differ in the key's top byte: a birthday
 * search over ports finds almost nothing.  The address is word 1, hashed
 * before word 0: every bit of the key depends on it.
 */
static int variation(uint32_t i, struct xdpoff_fields *f)
{
	uint32_t s = saddr0 + i;
	uint16_t d = dport0;

	*f = rule;
	f->saddr[0] = (rule.saddr[0] & ~mask.saddr[0]) |
		      (htonl(s) & mask.saddr[0]);
	f->dport = (rule.dport & ~mask.dport) | (htons(d) & mask.dport);
	return memcmp(f, &rule, sizeof(*f)) && (f->dport || !mask.dport);
}

static int parse_fields(const char *hex, struct xdpoff_fields *f)
{
	unsigned char *p = (unsigned char *)f;
	unsigned int b;
	size_t i;

	if (strlen(hex) != 2 * sizeof(*f))
		return -1;
	for (i = 0; i < sizeof(*f); i++) {
		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return -1;
		p[i] = b;
	}
	return 0;
}

static void print_var(const struct xdpoff_fields *f)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &f->saddr[0], a, sizeof(a));
	printf("%s %u", a, ntohs(f->dport));
}

int main(int argc, char **argv)
{
	struct xdpoff_fields f, g;
	unsigned long n, found = 0;
	uint32_t i, h, own, words, mask_id;
	struct slot *t;
	uint64_t seed;
	size_t j;

	if (argc != 6 || parse_fields(argv[3], &mask) ||
	    parse_fields(argv[4], &rule)) {
		fprintf(stderr, "usage: keycollide SEED MASK_ID MASK FIELDS N\n");
		return 1;
	}
	seed = strtoull(argv[1], NULL, 0);
	mask_id = strtoul(argv[2], NULL, 0);
	n = strtoul(argv[5], NULL, 0);
	words = xdpoff_mask_words(&mask);
	saddr0 = ntohl(rule.saddr[0]);
	dport0 = ntohs(rule.dport);
	own = (uint32_t)xdpoff_key_hash(seed, mask_id, words, &rule);
	t = calloc(TABLE_SIZE, sizeof(*t));
	if (!t)
		return 1;

	for (i = 1; i < MAX_TRIES && found < n; i++) {
		if (!variation(i, &f))
			continue;
		h = (uint32_t)xdpoff_key_hash(seed, mask_id, words, &f);
		if (h == own)
			continue;
		for (j = h & (TABLE_SIZE - 1); t[j].var != EMPTY;
		     j = (j + 1) & (TABLE_SIZE - 1))
			if (t[j].hash == h)
				break;
		if (t[j].var == EMPTY) {
			t[j].hash = h;
			t[j].var = i;
			continue;
		}
		if (t[j].var == TAKEN)
			continue;
		variation(t[j].var, &g);
		if (!memcmp(&f, &g, sizeof(f)))
			continue;	/* the mask made them one */
		print_var(&g);
		putchar(' ');
		print_var(&f);
		putchar('\n');
		t[j].var = TAKEN;
		found++;
	}
	free(t);
	if (found < n) {
		fprintf(stderr, "keycollide: %lu pairs of %lu in %u variations\n",
			found, n, i);
		return 1;
	}
	return 0;
}
