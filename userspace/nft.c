// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: running nft (replay.c, check.c), and reading its text where
 * its JSON says too little (check.c).
 *
 * nft 1.0.6's JSON has no chain flags, so which chains ask for offload is
 * read from the text: nft_scan() walks a ruleset file (or `nft list
 * ruleset`'s output) as nft's grammar nests it (tables, chains, the blocks
 * in them; comments, strings, `define`d names) and returns the chains with
 * `flags offload`, and the text with those words blanked out of every
 * chain and flowtable, which loads in software.  `include` is not
 * followed: the included files load as they are.
 *
 * nft_rule_texts() reads `nft -a list ruleset`'s output: each rule's text
 * by its handle.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cli.h"
#include "nft.h"

int buf_add(struct buf *b, const char *s, size_t n)
{
	char *p;

	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;

		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_str(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Read what is ready of @fd into @b; false at its end. */
static bool drain(int fd, struct buf *b)
{
	char chunk[4096];
	ssize_t n;

	n = read(fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	return !buf_add(b, chunk, n);
}

int run_nft(char *const argv[], const char *in, struct buf *out,
	    struct buf *err)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	size_t off = 0, len = in ? strlen(in) : 0;
	struct pollfd pfd[2];
	int status, ret;
	ssize_t n;
	pid_t pid;

	if (pipe(pin) || pipe(pout) || (err && pipe(perr))) {
		ret = -errno;
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto fail;
	}
	if (!pid) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(err ? perr[1] : pout[1], 2);
		close(pin[0]);
		close(pin[1]);
		close(pout[0]);
		close(pout[1]);
		if (err) {
			close(perr[0]);
			close(perr[1]);
		}
		execvp(argv[0], argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(pin[0]);
	close(pout[1]);
	if (err)
		close(perr[1]);
	/* nft reads all its input before it writes much: no deadlock. */
	signal(SIGPIPE, SIG_IGN);
	while (off < len) {
		n = write(pin[1], in + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += n;
	}
	close(pin[1]);
	pfd[0].fd = pout[0];
	pfd[1].fd = err ? perr[0] : -1;
	pfd[0].events = pfd[1].events = POLLIN;
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[0].revents && !drain(pfd[0].fd, out))
			pfd[0].fd = -1;
		if (pfd[1].fd >= 0 && pfd[1].revents &&
		    !drain(pfd[1].fd, err))
			pfd[1].fd = -1;
	}
	close(pout[0]);
	if (err)
		close(perr[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status))
		return -EINTR;
	if (WEXITSTATUS(status) == 127)
		return -ENOENT;
	return WEXITSTATUS(status);
fail:
	close(pin[0]);
	close(pin[1]);
	close(pout[0]);
	close(pout[1]);
	close(perr[0]);
	close(perr[1]);
	return ret;
}

struct defn {
	char	*name, *value;
};

struct scan {
	char		*text;		/* the copy that is blanked */
	size_t		pos, len;
	struct defn	*defs;
	size_t		nr_defs;
	struct nft_chain_ref *chains;
	size_t		nr_chains;
	bool		include;
	/* NULL: blank every chain's and flowtable's flags; else only theirs */
	const struct nft_scan_result *only;
};

/* A token: a word, a string (quotes dropped), or one of "{};=," and "\n". */
struct tok {
	size_t	start, end;	/* in text, quotes included */
	char	s[NFT_NAME_MAX];
	bool	word;
};

static bool next_tok(struct scan *sc, struct tok *t)
{
	const char *p = sc->text;
	size_t i = sc->pos, n = 0;

	for (;;) {
		while (i < sc->len && (p[i] == ' ' || p[i] == '\t' ||
				       p[i] == '\r'))
			i++;
		if (i < sc->len && p[i] == '\\' && i + 1 < sc->len &&
		    p[i + 1] == '\n') {
			i += 2;		/* a continued line */
			continue;
		}
		if (i < sc->len && p[i] == '#') {
			while (i < sc->len && p[i] != '\n')
				i++;
			continue;
		}
		break;
	}
	if (i >= sc->len) {
		sc->pos = i;
		return false;
	}
	t->start = i;
	t->word = true;
	if (strchr("{};=,\n", p[i])) {
		t->word = false;
		t->s[n++] = p[i++];
	} else if (p[i] == '"') {
		for (i++; i < sc->len && p[i] != '"' && p[i] != '\n'; i++)
			if (n + 1 < sizeof(t->s))
				t->s[n++] = p[i];
		if (i < sc->len && p[i] == '"')
			i++;
	} else {
		for (; i < sc->len && !isspace((unsigned char)p[i]) &&
		       !strchr("{};=,#\"", p[i]); i++)
			if (n + 1 < sizeof(t->s))
				t->s[n++] = p[i];
	}
	t->s[n] = '\0';
	t->end = i;
	sc->pos = i;
	return true;
}

static const char *defined(const struct scan *sc, const char *s)
{
	size_t i;

	if (s[0] != '$')
		return s;
	for (i = sc->nr_defs; i-- > 0;)
		if (!strcmp(sc->defs[i].name, s + 1))
			return sc->defs[i].value;
	return s;
}

static bool is_family(const char *s)
{
	static const char *const fams[] = {
		"ip", "ip6", "inet", "arp", "bridge", "netdev",
	};
	size_t i;

	for (i = 0; i < MNL_ARRAY_SIZE(fams); i++)
		if (!strcmp(s, fams[i]))
			return true;
	return false;
}

static int add_define(struct scan *sc)
{
	struct tok name, t;
	struct defn *d;
	size_t start = 0, end = 0, n;

	if (!next_tok(sc, &name) || !name.word)
		return 0;
	if (!next_tok(sc, &t) || strcmp(t.s, "="))
		return 0;
	/* The value: the rest of the line (a name, for our needs). */
	while (next_tok(sc, &t) && strcmp(t.s, "\n") && strcmp(t.s, ";")) {
		if (!start)
			start = t.start;
		end = t.end;
	}
	if (!start)
		return 0;
	d = realloc(sc->defs, (sc->nr_defs + 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	sc->defs = d;
	d += sc->nr_defs;
	d->name = strdup(name.s);
	d->value = strndup(sc->text + start, end - start);
	if (!d->name || !d->value) {
		free(d->name);
		free(d->value);
		return -ENOMEM;
	}
	/* A quoted value: its name. */
	n = strlen(d->value);
	if (n >= 2 && d->value[0] == '"' && d->value[n - 1] == '"') {
		memmove(d->value, d->value + 1, n - 2);
		d->value[n - 2] = '\0';
	}
	sc->nr_defs++;
	return 0;
}

static int add_chain(struct scan *sc, const char *family, const char *table,
		     const char *chain)
{
	struct nft_chain_ref *c;

	c = realloc(sc->chains, (sc->nr_chains + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	sc->chains = c;
	c += sc->nr_chains++;
	snprintf(c->family, sizeof(c->family), "%s", family);
	snprintf(c->table, sizeof(c->table), "%s", defined(sc, table));
	snprintf(c->chain, sizeof(c->chain), "%s", defined(sc, chain));
	return 0;
}

enum block { B_TABLE, B_CHAIN, B_FLOWTABLE, B_OTHER };

#define SCAN_DEPTH	16

/*
 * Walk @sc's statements.  Within a chain or flowtable block, `flags
 * offload` is blanked; within a chain, it is recorded.
 */
static int scan_text(struct scan *sc)
{
	char family[NFT_NAME_MAX] = "", table[NFT_NAME_MAX] = "";
	char chain[NFT_NAME_MAX] = "";
	enum block stack[SCAN_DEPTH];
	char words[4][NFT_NAME_MAX];
	int depth = 0, nw = 0, err;
	struct tok t, f;
	size_t save;

	while (next_tok(sc, &t)) {
		if (!t.word) {
			if (!strcmp(t.s, "{")) {
				enum block b = B_OTHER;

				if (depth == SCAN_DEPTH)
					return -E2BIG;
				/* [add|create] table [FAMILY] NAME { */
				if (nw >= 2 && !strcmp(words[0], "table")) {
					snprintf(family, sizeof(family), "%s",
						 nw == 3 ? words[1] : "ip");
					snprintf(table, sizeof(table), "%s",
						 defined(sc, words[nw - 1]));
					b = depth == 0 ? B_TABLE : B_OTHER;
				} else if (nw >= 2 &&
					   !strcmp(words[0], "chain") &&
					   depth == 1 &&
					   stack[0] == B_TABLE) {
					snprintf(chain, sizeof(chain), "%s",
						 words[1]);
					b = B_CHAIN;
				} else if (nw >= 3 && depth == 0 &&
					   !strcmp(words[0], "chain")) {
					/* add chain [FAMILY] TABLE NAME { */
					bool fam = nw == 4 && is_family(words[1]);

					snprintf(family, sizeof(family), "%s",
						 fam ? words[1] : "ip");
					snprintf(table, sizeof(table), "%s",
						 defined(sc, words[nw - 2]));
					snprintf(chain, sizeof(chain), "%s",
						 words[nw - 1]);
					b = B_CHAIN;
				} else if (nw >= 2 &&
					   !strcmp(words[0], "flowtable")) {
					b = B_FLOWTABLE;
				}
				stack[depth++] = b;
				nw = 0;
			} else if (!strcmp(t.s, "}")) {
				if (depth)
					depth--;
				nw = 0;
			} else if (strcmp(t.s, "=") && strcmp(t.s, ",")) {
				nw = 0;		/* ; and newline end a statement */
			}
			continue;
		}
		/* add/create/define/include at the start of a statement */
		if (nw == 0 && (!strcmp(t.s, "add") || !strcmp(t.s, "create")))
			continue;
		if (nw == 0 && depth == 0 && !strcmp(t.s, "define")) {
			err = add_define(sc);
			if (err)
				return err;
			continue;
		}
		if (nw == 0 && depth == 0 && !strcmp(t.s, "include"))
			sc->include = true;
		if (nw == 0 && depth &&
		    (stack[depth - 1] == B_CHAIN ||
		     stack[depth - 1] == B_FLOWTABLE) &&
		    !strcmp(t.s, "flags")) {
			save = sc->pos;
			if (next_tok(sc, &f) && f.word &&
			    !strcmp(f.s, "offload")) {
				bool is_chain = stack[depth - 1] == B_CHAIN;

				if (is_chain) {
					err = add_chain(sc, family, table,
							chain);
					if (err)
						return err;
				}
				if (!sc->only ||
				    (is_chain &&
				     nft_scan_has(sc->only, family,
						  defined(sc, table),
						  defined(sc, chain))))
					memset(sc->text + t.start, ' ',
					       f.end - t.start);
				continue;
			}
			sc->pos = save;
		}
		if (nw < 4)
			snprintf(words[nw], sizeof(words[nw]), "%s", t.s);
		nw++;
	}
	return 0;
}

int nft_scan(const char *text, const struct nft_scan_result *only,
	     struct nft_scan_result *res)
{
	struct scan sc = { .len = strlen(text), .only = only };
	size_t i;
	int err;

	memset(res, 0, sizeof(*res));
	sc.text = strdup(text);
	if (!sc.text)
		return -ENOMEM;
	err = scan_text(&sc);
	for (i = 0; i < sc.nr_defs; i++) {
		free(sc.defs[i].name);
		free(sc.defs[i].value);
	}
	free(sc.defs);
	if (err) {
		free(sc.text);
		free(sc.chains);
		return err;
	}
	res->software = sc.text;
	res->offload = sc.chains;
	res->nr_offload = sc.nr_chains;
	res->include = sc.include;
	return 0;
}

void nft_scan_free(struct nft_scan_result *res)
{
	free(res->software);
	free(res->offload);
	memset(res, 0, sizeof(*res));
}

bool nft_scan_has(const struct nft_scan_result *res, const char *family,
		  const char *table, const char *chain)
{
	size_t i;

	for (i = 0; i < res->nr_offload; i++)
		if (!strcmp(res->offload[i].family, family) &&
		    !strcmp(res->offload[i].table, table) &&
		    !strcmp(res->offload[i].chain, chain))
			return true;
	return false;
}

/*
 * Walking `nft list ruleset`'s output: "table FAMILY NAME {" at the left,
 * "\tchain NAME {" (or a set, a flowtable, ...) one tab in, a chain's
 * hook line and rules two tabs in.
 */
struct listing {
	const char	*next;		/* the next line */
	const char	*s, *end;	/* the line, after its tabs */
	size_t		tabs;
	char		family[16], table[NFT_NAME_MAX], chain[NFT_NAME_MAX];
};

/*
 * The next line inside a chain, in @l (family, table and chain set);
 * false at the end.
 */
static bool listing_next(struct listing *l)
{
	const char *line;

	while (*l->next) {
		line = l->next;
		l->end = strchrnul(line, '\n');
		l->next = *l->end ? l->end + 1 : l->end;
		for (l->tabs = 0; line[l->tabs] == '\t'; l->tabs++)
			;
		l->s = line + l->tabs;
		if (l->s == l->end)
			continue;
		if (l->tabs == 0) {
			if (sscanf(l->s, "table %15s %255s", l->family,
				   l->table) != 2)
				l->family[0] = l->table[0] = '\0';
			l->chain[0] = '\0';
		} else if (l->tabs == 1) {
			/* a chain, a set, ... or the closing brace */
			if (sscanf(l->s, "chain %255s", l->chain) != 1)
				l->chain[0] = '\0';
		} else if (l->chain[0]) {
			return true;
		}
	}
	return false;
}

/* `nft -a list ruleset`'s rules ("RULE # handle N"), two tabs in. */
int nft_rule_texts(const char *listing, struct nft_rule_text **out,
		   size_t *n)
{
	struct listing l = { .next = listing };
	struct nft_rule_text *v = NULL, *nv;
	size_t cnt = 0;
	const char *h;

	while (listing_next(&l)) {
		h = memmem(l.s, l.end - l.s, " # handle ", 10);
		if (l.tabs != 2 || !h)
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof(v[cnt]));
		snprintf(v[cnt].family, sizeof(v[cnt].family), "%s", l.family);
		snprintf(v[cnt].table, sizeof(v[cnt].table), "%s", l.table);
		snprintf(v[cnt].chain, sizeof(v[cnt].chain), "%s", l.chain);
		v[cnt].handle = strtoull(h + 10, NULL, 10);
		snprintf(v[cnt].text, sizeof(v[cnt].text), "%.*s",
			 (int)(h - l.s), l.s);
		cnt++;
	}
	*out = v;
	*n = cnt;
	return 0;
}

size_t nft_next_name(const char **s, char *name, size_t size)
{
	size_t n = 0;

	while (**s == ' ' || **s == '\t' || **s == ',')
		(*s)++;
	if (**s == '"')
		(*s)++;
	while (**s && !strchr("\" \t,;}\n", **s)) {
		if (n + 1 < size)
			name[n++] = **s;
		(*s)++;
	}
	if (**s == '"')
		(*s)++;
	name[n] = '\0';
	return n;
}

int nft_chain_devices(const char *listing, const char *family,
		      const char *table, const char *chain,
		      char (*devs)[IF_NAMESIZE], size_t max)
{
	struct listing l = { .next = listing };
	const char *s;
	size_t n = 0;

	while (listing_next(&l)) {
		if (l.tabs != 2 || strncmp(l.s, "type ", 5) ||
		    strcmp(l.family, family) || strcmp(l.table, table) ||
		    strcmp(l.chain, chain))
			continue;
		s = memmem(l.s, l.end - l.s, " device", 7);
		if (!s)
			return 0;
		if (!strncmp(s, " device ", 8)) {
			s += 8;
			return max && nft_next_name(&s, devs[0], IF_NAMESIZE);
		}
		s = memchr(s, '{', l.end - s);
		if (!s)
			return 0;
		for (s++; n < max && nft_next_name(&s, devs[n], IF_NAMESIZE);)
			n++;
		return n;
	}
	return 0;
}
