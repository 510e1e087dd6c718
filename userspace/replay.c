// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: bring a device's existing offloaded nft chains into XDP.
 *
 * A chain with `flags offload` that was created while the device was
 * attached stays, in software only, when the module goes away (rmmod, a
 * DKMS upgrade): nf_tables unbinds it and never binds or replays it again.
 * After `attach`, each such chain C of the device is re-created, rules and
 * counter values included, in two nft transactions:
 *
 *  1. table netdev T { chain xdpoff_new_C { ...C as `nft list` prints it... } }
 *  2. delete chain netdev T C; rename chain netdev T xdpoff_new_C C
 *
 * If a rule of 1 cannot be offloaded, the transaction fails as a whole
 * and nf_tables' abort only unbinds the new chains: the old ones are left
 * as they were, in software.  (One transaction that deletes C and adds it
 * again would, when it fails, make nf_tables' abort bind the old chain and
 * offload its rules again, newest first, which fails the same way and
 * warns: nft_flow_rule_offload_abort() expects no error but ENOMEM.)
 * Transaction 2 offloads nothing and cannot fail on offload.  Between the
 * two, both chains run; the new one first (a hook joins ahead of those of
 * its priority), so each frame gets the same verdict, and the new rules
 * count it.  nf_tables offloads the new rules in their order (offloaded
 * chains only append), so XDP never holds a later rule without the
 * earlier ones.  Rule handles change; counters keep the values listed
 * just before.  (The tc blocks are replayed by the module itself,
 * kernel/xdpoff_replay.c.)
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cli.h"
#include "nft.h"

/* Skip spaces; then is the next word @w (followed by a separator)? */
static bool word(const char **s, const char *w)
{
	size_t n = strlen(w);

	while (**s == ' ' || **s == '\t')
		(*s)++;
	if (strncmp(*s, w, n) || ((*s)[n] && !strchr(" \t;{},", (*s)[n])))
		return false;
	*s += n;
	return true;
}

/*
 * Does the chain header line (`type filter hook ingress device "eth1"
 * priority 10; ...` or `... devices = { eth1, eth2 } ...`) name @dev?
 */
static bool hook_has_dev(const char *line, const char *dev)
{
	char name[64];
	const char *s;

	for (s = line; *s; s++) {
		const char *p = s;

		if (s != line && s[-1] != ' ' && s[-1] != '\t')
			continue;
		if (word(&p, "device")) {
			if (nft_next_name(&p, name, sizeof(name)) &&
			    !strcmp(name, dev))
				return true;
		} else if (word(&p, "devices")) {
			while (*p == ' ' || *p == '=' || *p == '{')
				p++;
			while (*p && *p != '}') {
				if (!nft_next_name(&p, name, sizeof(name)))
					break;
				if (!strcmp(name, dev))
					return true;
			}
		}
	}
	return false;
}

#define NEW_PREFIX "xdpoff_new_"

/*
 * From `nft list ruleset netdev`, the transactions that re-create every
 * offloaded ingress chain of @dev (@add, then @swap; @undo if @swap
 * fails); *n: how many.
 */
static int build_restore(const char *ruleset, const char *dev,
			 struct buf *add, struct buf *swap, struct buf *undo,
			 int *n)
{
	char table[256] = "", chain[256] = "";
	const char *line = ruleset, *end, *start = NULL;
	bool ingress = false, offload = false, ours = false;
	int err = 0;

	*n = 0;
	for (; *line && !err; line = *end ? end + 1 : end) {
		size_t len;

		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		len = end - line;

		if (!strncmp(line, "table netdev ", 13)) {
			sscanf(line + 13, "%255s", table);
			continue;
		}
		if (!strncmp(line, "\tchain ", 7)) {
			sscanf(line + 7, "%200s", chain);
			start = line;
			ingress = offload = ours = false;
			continue;
		}
		if (!start)
			continue;
		if (len == 2 && !strncmp(line, "\t}", 2)) {
			if (ingress && offload && ours && *table) {
				const char *body = strchr(start, '{');
				char head[1200];

				snprintf(head, sizeof(head),
					 "table netdev %s {\n\tchain " NEW_PREFIX "%s ",
					 table, chain);
				err = buf_str(add, head) ?:
				      buf_add(add, body, end + 1 - body) ?:
				      buf_str(add, "}\n");
				snprintf(head, sizeof(head),
					 "delete chain netdev %s %s\n"
					 "rename chain netdev %s " NEW_PREFIX "%s %s\n",
					 table, chain, table, chain, chain);
				err = err ?: buf_str(swap, head);
				snprintf(head, sizeof(head),
					 "delete chain netdev %s " NEW_PREFIX "%s\n",
					 table, chain);
				err = err ?: buf_str(undo, head);
				(*n)++;
			}
			start = NULL;
			continue;
		}
		/* Header lines: "type ... hook ingress ...;", "flags offload;". */
		if (!strncmp(line, "\t\ttype ", 7)) {
			char hl[1024];

			snprintf(hl, sizeof(hl), "%.*s", (int)len, line);
			ingress = strstr(hl, " hook ingress ") != NULL;
			ours = hook_has_dev(hl, dev);
			if (strstr(hl, "flags offload;"))
				offload = true;
		} else if (len >= 16 && !strncmp(line, "\t\tflags ", 8) &&
			   line[len - 1] == ';') {
			char hl[256];

			snprintf(hl, sizeof(hl), "%.*s", (int)len, line);
			offload = strstr(hl, "offload") != NULL;
		}
	}
	return err;
}

/*
 * Called after a successful attach.  Failing to restore is not failing to
 * attach: the chains keep running in software, as before, and the user is
 * told why.
 */
void nft_restore_chains(const char *dev)
{
	char *list_argv[] = { "nft", "list", "ruleset", "netdev", NULL };
	char *load_argv[] = { "nft", "-f", "-", NULL };
	struct buf ruleset = {}, add = {}, swap = {}, undo = {}, out = {};
	int n = 0, err;

	err = run_nft(list_argv, NULL, &ruleset, NULL);
	if (err == -ENOENT) {
		pr_debug("nft not found: no chains to restore\n");
		goto out;
	}
	if (err) {
		pr_warn("%s: cannot list nft chains to restore (nft: %s)\n",
			dev, ruleset.p ? ruleset.p : strerror(-err));
		goto out;
	}
	if (!ruleset.p ||
	    build_restore(ruleset.p, dev, &add, &swap, &undo, &n)) {
		if (ruleset.p)
			pr_warn("%s: out of memory\n", dev);
		goto out;
	}
	if (!n)
		goto out;
	pr_debug("%s: re-creating %d offloaded chain%s:\n%s%s", dev, n,
		 n == 1 ? "" : "s", add.p, swap.p);
	err = run_nft(load_argv, add.p, &out, NULL);
	if (err) {
		pr_warn("%s: %d offloaded chain%s could not be brought into XDP and stay%s in software:\n%s",
			dev, n, n == 1 ? "" : "s", n == 1 ? "s" : "",
			out.p ? out.p : strerror(-err));
		goto out;
	}
	err = run_nft(load_argv, swap.p, &out, NULL);
	if (err) {
		pr_warn("%s: %d offloaded chain%s could not replace the old one%s, which stay%s in software:\n%s",
			dev, n, n == 1 ? "" : "s", n == 1 ? "" : "s",
			n == 1 ? "s" : "", out.p ? out.p : strerror(-err));
		run_nft(load_argv, undo.p, &out, NULL);
		goto out;
	}
	pr_info("%s: %d offloaded chain%s re-created and offloaded (new rule handles)\n",
		dev, n, n == 1 ? "" : "s");
out:
	free(ruleset.p);
	free(add.p);
	free(swap.p);
	free(undo.p);
	free(out.p);
}
