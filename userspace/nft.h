/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff CLI: running nft and reading its text (nft.c), for replay.c and
 * check.c.
 */
#ifndef __XDPOFF_NFT_H
#define __XDPOFF_NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <net/if.h>
#include <linux/types.h>

#define NFT_NAME_MAX	256	/* NFT_NAME_MAXLEN, with its NUL */

struct nft_chain_ref {
	char	family[16];
	char	table[NFT_NAME_MAX];
	char	chain[NFT_NAME_MAX];
};

struct nft_scan_result {
	char			*software;	/* the text without `flags offload` */
	struct nft_chain_ref	*offload;	/* the chains that had it */
	size_t			nr_offload;
	bool			include;	/* it includes other files */
};

/*
 * nft.c: 0 or -errno; nft_scan_free() the result.  res->software has the
 * flags offload of every chain and flowtable blanked, or with @only, those
 * of @only's chains alone.
 */
int nft_scan(const char *text, const struct nft_scan_result *only,
	     struct nft_scan_result *res);
void nft_scan_free(struct nft_scan_result *res);
bool nft_scan_has(const struct nft_scan_result *res, const char *family,
		  const char *table, const char *chain);

struct nft_rule_text {
	char		family[16];
	char		table[NFT_NAME_MAX];
	char		chain[NFT_NAME_MAX];
	__u64		handle;
	char		text[2048];
};

/* nft.c: the rules of `nft -a list ruleset`'s @listing; free(*out). */
int nft_rule_texts(const char *listing, struct nft_rule_text **out,
		   size_t *n);

/*
 * nft.c: the devices of a base chain's hook line ("device eth1" or
 * "devices = { eth1, eth2 }") in `nft list ruleset`'s @listing (nft
 * 1.0.6's JSON leaves them out): how many, at most @max, into @devs.
 */
int nft_chain_devices(const char *listing, const char *family,
		      const char *table, const char *chain,
		      char (*devs)[IF_NAMESIZE], size_t max);

/*
 * nft.c: the next name at *@s of a list such as a hook line's devices
 * ("eth1" or eth1, after spaces and commas), into @name; its length (0:
 * none), *@s after it.
 */
size_t nft_next_name(const char **s, char *name, size_t size);

/* A growing string. */
struct buf {
	char	*p;
	size_t	len, cap;
};

int buf_add(struct buf *b, const char *s, size_t n);
int buf_str(struct buf *b, const char *s);
void buf_free(struct buf *b);

/*
 * Run nft with @argv (argv[0] "nft"), @in on its stdin; its stdout into
 * @out and its stderr into @err (both into @out if @err is NULL).
 * Returns its exit status, or -errno (-ENOENT: no nft).
 */
int run_nft(char *const argv[], const char *in, struct buf *out,
	    struct buf *err);

#endif /* __XDPOFF_NFT_H */
