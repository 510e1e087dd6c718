// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: `check [FILE] [--all] [--json]`: which rules of a ruleset
 * would offload, and why not, found by trying them.
 *
 * nf_tables answers an offload it cannot do with EOPNOTSUPP for the whole
 * transaction, and drops the driver's extack.  check asks the running
 * kernel and module rule by rule, where nothing live can change:
 *
 *  1. It reads the ruleset (FILE, which `nft -c` checks first in the live
 *     namespace, or `nft list ruleset`), the devices of this namespace and
 *     which of them are attached to xdpoff, and how (XDPOFF_CMD_GET).
 *  2. It moves itself into a network and a mount namespace of its own,
 *     with a bpffs of its own (scratch_enter()): everything it creates
 *     there goes when it exits, however it exits.  There a veth stands
 *     for each device, of the same name, attached to xdpoff in generic
 *     mode where the live one is attached, with the same capacity.
 *  3. It loads the ruleset there without `flags offload` (nft.c blanks
 *     it, and notes which chains had it: nft's JSON does not say) and
 *     reads it back as JSON, then empties the namespace.
 *  4. Each table with a chain to check comes back with its sets, maps,
 *     objects and regular chains; then, in the ruleset's order, each such
 *     chain with `flags offload` and its rules one by one (or a batch at
 *     a time, one by one once a batch fails: nf_tables offloads a
 *     transaction's rules in order, so what came before counts towards
 *     the module's limits, as at load time).
 *  5. A rule that fails was refused by xdpoff if the module's count of
 *     refusals on the chain's devices went up (its reason is the module's
 *     last error), else by nf_tables: then the first prefix of the rule's
 *     expressions that fails names the expression nf_tables cannot
 *     offload.  A rule with an anonymous set gets the rules of its
 *     elements as a suggestion, if each of them offloads there.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/mount.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <jansson.h>

#include "cli.h"
#include "nft.h"
#include "show.h"

/* Rules added to an offloaded chain in one transaction, at most. */
#define CHECK_BATCH	64
/* Rules an anonymous set may expand into for a suggestion. */
#define CHECK_EXPAND_MAX 64
/* The regular chain of each table where expressions are printed. */
#define CHECK_TEXT_CHAIN "xdpoff_check_text"

struct live_dev {
	char	name[IF_NAMESIZE];
	bool	attached;
	__u32	max_rules;
};

struct result {
	const char	*family, *table, *chain;	/* in the JSON */
	int		index;		/* -1: the chain itself */
	char		*rule;
	bool		offload;
	const char	*by;		/* "nf_tables", "xdpoff" or NULL */
	char		*reason;
	char		*suggestion;
};

struct check {
	bool			all;
	struct live_dev		*devs;
	size_t			nr_devs;
	bool			module;		/* it answers XDPOFF_CMD_GET */
	struct nft_scan_result	scan;
	json_t			*ruleset;	/* the "nftables" array */
	char			*listing;	/* nft -s -a list ruleset */
	struct nft_rule_text	*texts;
	size_t			nr_texts;
	struct result		*res;
	size_t			nr_res;
};

/* ---- scratch namespace ------------------------------------------------ */

static int scratch_enter(void)
{
	if (unshare(CLONE_NEWNET | CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	/* sysfs of this namespace's devices, and a bpffs of its own. */
	if (mount("sysfs", "/sys", "sysfs", 0, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

static int rtnl_talk(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int portid = mnl_socket_get_portid(nl);
	ssize_t n;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = 1;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	if (mnl_cb_run(buf, n, 1, portid, NULL, NULL) < 0)
		return -errno;
	return 0;
}

/* A veth pair @name - @peer, both up. */
static int veth_add(struct mnl_socket *nl, const char *name,
		    const char *peer)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlattr *info, *data, *pa;
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifm;
	const char *names[2] = { name, peer };
	int i, err;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	pa = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
	mnl_attr_nest_end(nlh, pa);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	err = rtnl_talk(nl, nlh);
	for (i = 0; !err && i < 2; i++) {
		nlh = mnl_nlmsg_put_header(buf);
		nlh->nlmsg_type = RTM_NEWLINK;
		ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
		ifm->ifi_family = AF_UNSPEC;
		ifm->ifi_index = if_nametoindex(names[i]);
		ifm->ifi_flags = IFF_UP;
		ifm->ifi_change = IFF_UP;
		err = rtnl_talk(nl, nlh);
	}
	return err;
}

/*
 * The live devices' stand-ins, or (@attach) their attachment, as the live
 * ones are attached.
 */
static int scratch_devices(const struct check *c, bool attach)
{
	struct mnl_socket *nl;
	char peer[IF_NAMESIZE];
	size_t i;
	int err = 0;

	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto out;
	}
	for (i = 0; i < c->nr_devs && !err && !attach; i++) {
		snprintf(peer, sizeof(peer), "xdpoffc%u", (unsigned int)(i % 100000));
		err = veth_add(nl, c->devs[i].name, peer);
		if (err)
			pr_warn("check: cannot create a stand-in for %s: %s\n",
				c->devs[i].name, strerror(-err));
	}
	for (i = 0; i < c->nr_devs && !err && attach; i++) {
		struct args a = {
			.dev = c->devs[i].name,
			.max_rules = c->devs[i].max_rules,
			.max_flows = XDPOFF_DEFAULT_MAX_FLOWS,
			.generic = true,
			.no_libxdp = true,
			.run_prio = -1,
		};

		if (c->module && c->devs[i].attached &&
		    cmd_attach(&a) != EXIT_OK) {
			pr_warn("check: cannot attach the stand-in for %s\n",
				c->devs[i].name);
			err = -EIO;
		}
	}
out:
	if (nl)
		mnl_socket_close(nl);
	return err;
}

/* ---- live state ------------------------------------------------------- */

static int live_devices(struct check *c)
{
	struct if_nameindex *ni, *p;
	struct kinfos k = {};
	size_t n = 0, i;
	int err;

	err = kinfos_read(&k);
	c->module = !err;
	ni = if_nameindex();
	if (!ni) {
		free(k.v);
		return -errno;
	}
	for (p = ni; p->if_index; p++)
		n++;
	c->devs = calloc(n ? n : 1, sizeof(*c->devs));
	if (!c->devs) {
		if_freenameindex(ni);
		free(k.v);
		return -ENOMEM;
	}
	for (p = ni; p->if_index; p++) {
		struct live_dev *d = &c->devs[c->nr_devs];

		if (!strcmp(p->if_name, "lo"))
			continue;
		snprintf(d->name, sizeof(d->name), "%s", p->if_name);
		d->max_rules = XDPOFF_DEFAULT_MAX_RULES;
		for (i = 0; i < k.n; i++) {
			if (k.v[i].ifindex != p->if_index)
				continue;
			d->attached = true;
			if (k.v[i].max_rules)
				d->max_rules = k.v[i].max_rules;
		}
		c->nr_devs++;
	}
	if_freenameindex(ni);
	free(k.v);
	return 0;
}

static const struct live_dev *live_dev(const struct check *c,
				       const char *name)
{
	size_t i;

	for (i = 0; i < c->nr_devs; i++)
		if (!strcmp(c->devs[i].name, name))
			return &c->devs[i];
	return NULL;
}

/* ---- nft -------------------------------------------------------------- */

/* nft -f - with @in (JSON if @json): 0, or nft's status, *@msg its error. */
static int nft_load(const char *in, bool json, struct buf *out,
		    char **msg)
{
	char *argv[5] = { "nft" };
	struct buf o = {}, e = {};
	int n = 1, ret;

	if (json)
		argv[n++] = "-j";
	argv[n++] = "-f";
	argv[n++] = "-";
	ret = run_nft(argv, in, out ? out : &o, &e);
	if (msg) {
		*msg = NULL;
		if (ret && e.p)
			*msg = strdup(e.p);
	}
	buf_free(&o);
	buf_free(&e);
	return ret;
}

static int nft_list(bool json, struct buf *out)
{
	char *jargv[] = { "nft", "-j", "list", "ruleset", NULL };
	char *targv[] = { "nft", "-s", "-a", "list", "ruleset", NULL };

	return run_nft(json ? jargv : targv, NULL, out, NULL);
}

/* nft -j -f - of {"nftables": @cmds}, which it takes: as nft_load(). */
static int nft_load_cmds(json_t *cmds, char **msg)
{
	json_t *doc = json_pack("{s:o}", "nftables", cmds);
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	int err;

	json_decref(doc);
	if (!s) {
		if (msg)
			*msg = NULL;
		return -ENOMEM;
	}
	err = nft_load(s, true, NULL, msg);
	free(s);
	return err;
}

/* The first line of nft's error message, without "Error: ". */
static char *first_line(const char *msg)
{
	const char *s = msg ? msg : "nft failed";
	size_t n;

	if (!strncmp(s, "Error: ", 7))
		s += 7;
	n = strcspn(s, "\n");
	return strndup(s, n);
}

/* ---- the ruleset -------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static bool in_table(const json_t *o, const json_t *table)
{
	return !strcmp(jstr(o, "family") ?: "", jstr(table, "family") ?: "") &&
	       !strcmp(jstr(o, "table") ?: "", jstr(table, "name") ?: "");
}

static bool same_chain(const json_t *rule, const json_t *chain)
{
	return !strcmp(jstr(rule, "family") ?: "", jstr(chain, "family") ?: "") &&
	       !strcmp(jstr(rule, "table") ?: "", jstr(chain, "table") ?: "") &&
	       !strcmp(jstr(rule, "chain") ?: "", jstr(chain, "name") ?: "");
}

/* Is @chain one to check: a base chain with `flags offload` (or --all). */
static bool checked(const struct check *c, const json_t *chain)
{
	const char *fam = jstr(chain, "family"), *hook = jstr(chain, "hook");

	if (!hook)
		return false;
	if (nft_scan_has(&c->scan, fam, jstr(chain, "table"),
			 jstr(chain, "name")))
		return true;
	return c->all && !strcmp(hook, "ingress") &&
	       (!strcmp(fam, "netdev") || !strcmp(fam, "inet"));
}

static bool table_checked(const struct check *c, const json_t *table)
{
	json_t *it, *o;
	size_t i;

	json_array_foreach(c->ruleset, i, it) {
		o = json_object_get(it, "chain");
		if (o && in_table(o, table) && checked(c, o))
			return true;
	}
	return false;
}

#define CHECK_DEVS	64

/* The chain's devices, from the listing (nft's JSON leaves them out). */
static size_t chain_devs(const struct check *c, const json_t *chain,
			 char (*v)[IF_NAMESIZE])
{
	return nft_chain_devices(c->listing, jstr(chain, "family"),
				 jstr(chain, "table"), jstr(chain, "name"),
				 v, CHECK_DEVS);
}

/* A copy of @o without its handle, for an "add". */
static json_t *unhandled(json_t *o)
{
	json_t *c = json_deep_copy(o);

	json_object_del(c, "handle");
	return c;
}

/*
 * The table of @table again, with what its checked chains' rules may
 * refer to: sets, maps, objects, regular chains, and the chain where
 * expressions are printed.
 */
static int table_add(const struct check *c, json_t *table, char **msg)
{
	static const char *const objs[] = {
		"set", "map", "counter", "quota", "ct helper", "limit",
		"ct timeout", "ct expectation", "secmark", "synproxy",
	};
	json_t *cmds = json_array(), *it, *o;
	size_t i, k;

	json_array_append_new(cmds, json_pack("{s:{s:o}}", "add", "table",
					      unhandled(table)));
	json_array_foreach(c->ruleset, i, it) {
		for (k = 0; k < MNL_ARRAY_SIZE(objs); k++) {
			o = json_object_get(it, objs[k]);
			if (o && in_table(o, table))
				json_array_append_new(cmds,
					json_pack("{s:{s:o}}", "add", objs[k],
						  unhandled(o)));
		}
		o = json_object_get(it, "chain");
		if (o && in_table(o, table) && !json_object_get(o, "hook"))
			json_array_append_new(cmds,
				json_pack("{s:{s:o}}", "add", "chain",
					  unhandled(o)));
	}
	json_array_append_new(cmds,
		json_pack("{s:{s:{s:s,s:s,s:s}}}", "add", "chain",
			  "family", jstr(table, "family"),
			  "table", jstr(table, "name"),
			  "name", CHECK_TEXT_CHAIN));
	return nft_load_cmds(cmds, msg);
}

/*
 * add chain FAMILY TABLE NAME { ... priority @prio; flags offload; } as
 * nft text.
 */
static char *chain_text(const struct check *c, const json_t *chain,
			long long prio)
{
	char devs[CHECK_DEVS][IF_NAMESIZE];
	size_t n, i;
	struct buf b = {};
	char line[1024];

	snprintf(line, sizeof(line),
		 "add chain %s %s %s { type %s hook %s",
		 jstr(chain, "family"), jstr(chain, "table"),
		 jstr(chain, "name"), jstr(chain, "type") ?: "filter",
		 jstr(chain, "hook"));
	buf_str(&b, line);
	n = chain_devs(c, chain, devs);
	if (n == 1) {
		snprintf(line, sizeof(line), " device \"%s\"", devs[0]);
		buf_str(&b, line);
	} else if (n) {
		buf_str(&b, " devices = { ");
		for (i = 0; i < n; i++) {
			snprintf(line, sizeof(line), "%s%s", i ? ", " : "",
				 devs[i]);
			buf_str(&b, line);
		}
		buf_str(&b, " }");
	}
	snprintf(line, sizeof(line),
		 " priority %lld; flags offload; policy %s; }\n", prio,
		 jstr(chain, "policy") ?: "accept");
	buf_str(&b, line);
	return b.p;
}

/* The module's refusals on the chain's devices, and its last reason. */
static __u32 refusals(const struct check *c, const json_t *chain,
		      char *last, size_t size)
{
	char devs[CHECK_DEVS][IF_NAMESIZE];
	struct kinfos k = {};
	size_t n, i, j;
	__u32 sum = 0;

	n = chain_devs(c, chain, devs);
	if (kinfos_read(&k))
		return 0;
	for (i = 0; i < k.n; i++)
		for (j = 0; j < n; j++)
			if (k.v[i].ifindex == if_nametoindex(devs[j])) {
				sum += k.v[i].refusals;
				if (last && k.v[i].last_error[0])
					snprintf(last, size, "%s",
						 k.v[i].last_error);
			}
	free(k.v);
	return sum;
}

/* The rule's text in the listing of the scratch ruleset, by handle. */
static const char *rule_text(const struct check *c, const json_t *rule)
{
	json_int_t h = json_integer_value(json_object_get(rule, "handle"));
	size_t i;

	for (i = 0; i < c->nr_texts; i++)
		if (c->texts[i].handle == (__u64)h &&
		    !strcmp(c->texts[i].family, jstr(rule, "family")) &&
		    !strcmp(c->texts[i].table, jstr(rule, "table")) &&
		    !strcmp(c->texts[i].chain, jstr(rule, "chain")))
			return c->texts[i].text;
	return "?";
}

static bool is_verdict(const json_t *expr)
{
	static const char *const v[] = {
		"accept", "drop", "continue", "return", "jump", "goto",
		"reject", "queue",
	};
	size_t i;

	for (i = 0; i < MNL_ARRAY_SIZE(v); i++)
		if (json_object_get(expr, v[i]))
			return true;
	return false;
}

/* A rule of @chain with @expr, an "add" command's object. */
static json_t *rule_obj(const json_t *chain, const char *name, json_t *expr)
{
	return json_pack("{s:s,s:s,s:s,s:o}",
			 "family", jstr(chain, "family"),
			 "table", jstr(chain, "table"),
			 "chain", name, "expr", expr);
}

/*
 * The handles of the last @want rules of chain @name of @chain's table
 * (nft 1.0.6 cannot echo what JSON input added).
 */
static int last_handles(const json_t *chain, const char *name, size_t want,
			json_int_t *handles)
{
	char *argv[] = { "nft", "-j", "list", "chain",
			 (char *)jstr(chain, "family"),
			 (char *)jstr(chain, "table"), (char *)name, NULL };
	json_t *out, *list, *it, *r;
	struct buf o = {};
	size_t total = 0, n = 0, i;

	if (run_nft(argv, NULL, &o, NULL)) {
		buf_free(&o);
		return -EIO;
	}
	out = json_loads(o.p ?: "", 0, NULL);
	buf_free(&o);
	list = json_object_get(out, "nftables");
	json_array_foreach(list, i, it)
		total += json_object_get(it, "rule") != NULL;
	json_array_foreach(list, i, it) {
		r = json_object_get(it, "rule");
		if (r && total-- <= want)
			handles[n++] = json_integer_value(
				json_object_get(r, "handle"));
	}
	json_decref(out);
	return n == want ? 0 : -EIO;
}

/*
 * Add the rules of @exprs (an array of expression arrays) to chain @name
 * of @chain's table in one transaction.  0 and their handles in @handles
 * (if not NULL), or nft's status and *@msg.
 */
static int rules_add(const json_t *chain, const char *name, json_t *exprs,
		     json_int_t *handles, char **msg)
{
	json_t *cmds = json_array(), *e;
	size_t i;
	int err;

	json_array_foreach(exprs, i, e)
		json_array_append_new(cmds, json_pack("{s:{s:o}}", "add",
			"rule", rule_obj(chain, name, json_deep_copy(e))));
	err = nft_load_cmds(cmds, msg);
	if (err || !handles)
		return err;
	return last_handles(chain, name, json_array_size(exprs), handles);
}

static void rules_del(const json_t *chain, const char *name,
		      const json_int_t *handles, size_t n)
{
	char line[1024];
	struct buf b = {};
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line),
			 "delete rule %s %s %s handle %lld\n",
			 jstr(chain, "family"), jstr(chain, "table"), name,
			 (long long)handles[i]);
		buf_str(&b, line);
	}
	if (b.p)
		nft_load(b.p, false, NULL, NULL);
	buf_free(&b);
}

/*
 * The rules of @exprs as nft prints them, one a line, each without a
 * trailing " accept" if @strip_accept: through the table's regular chain
 * CHECK_TEXT_CHAIN, which is empty again after.
 */
static char *render(const json_t *chain, json_t *exprs, bool strip_accept)
{
	char line[1024], *msg;
	struct nft_rule_text *t = NULL;
	struct buf list = {}, b = {};
	size_t n = 0, i, len;
	char *argv[] = { "nft", "-s", "-a", "list", "ruleset", NULL };

	if (rules_add(chain, CHECK_TEXT_CHAIN, exprs, NULL, &msg)) {
		free(msg);
		return NULL;
	}
	if (!run_nft(argv, NULL, &list, NULL) &&
	    !nft_rule_texts(list.p ?: "", &t, &n)) {
		for (i = 0; i < n; i++) {
			if (strcmp(t[i].chain, CHECK_TEXT_CHAIN) ||
			    strcmp(t[i].table, jstr(chain, "table")) ||
			    strcmp(t[i].family, jstr(chain, "family")))
				continue;
			len = strlen(t[i].text);
			if (strip_accept && len > 7 &&
			    !strcmp(t[i].text + len - 7, " accept"))
				t[i].text[len - 7] = '\0';
			if (b.len)
				buf_str(&b, "\n");
			buf_str(&b, t[i].text);
		}
	}
	free(t);
	buf_free(&list);
	snprintf(line, sizeof(line), "flush chain %s %s %s\n",
		 jstr(chain, "family"), jstr(chain, "table"),
		 CHECK_TEXT_CHAIN);
	nft_load(line, false, NULL, NULL);
	return b.p;
}

/*
 * nf_tables refused @rule: the first prefix of its expressions that it
 * refuses (with an accept after it, where it has no verdict) names the
 * expression.  NULL if every prefix offloads but the rule does not.
 */
static char *culprit(const struct check *c, const json_t *chain,
		     const json_t *rule)
{
	const json_t *expr = json_object_get(rule, "expr");
	char *msg, *text = NULL, *reason;
	json_t *one, *pre;
	json_int_t h;
	size_t i, k;
	__u32 before;

	for (i = 0; i < json_array_size(expr); i++) {
		pre = json_array();
		for (k = 0; k <= i; k++)
			json_array_append(pre, json_array_get(expr, k));
		if (!is_verdict(json_array_get(expr, i)))
			json_array_append_new(pre, json_pack("{s:n}", "accept"));
		one = json_pack("[o]", pre);
		before = refusals(c, chain, NULL, 0);
		if (!rules_add(chain, jstr(chain, "name"), one, &h, &msg)) {
			rules_del(chain, jstr(chain, "name"), &h, 1);
			json_decref(one);
			continue;
		}
		free(msg);
		if (refusals(c, chain, NULL, 0) != before) {
			json_decref(one);
			continue;	/* xdpoff's: not the one looked for */
		}
		json_decref(one);
		one = json_pack("[[O]]", json_array_get(expr, i));
		if (!is_verdict(json_array_get(expr, i)))
			json_array_append_new(json_array_get(one, 0),
					      json_pack("{s:n}", "accept"));
		text = render(chain, one, true);
		json_decref(one);
		break;
	}
	if (i == json_array_size(expr))
		return NULL;
	if (asprintf(&reason, "no offload for `%s`", text ?: "?") < 0)
		reason = NULL;
	free(text);
	return reason;
}

/* ---- suggestions ------------------------------------------------------ */

/*
 * The rules an anonymous set's elements make of @expr: each == match with
 * a set on its right becomes one rule per element (a concatenation's
 * element, one match per field).  NULL if none has such a set, or they
 * would make more than CHECK_EXPAND_MAX rules.
 */
static json_t *expand_sets(const json_t *expr)
{
	json_t *rules = json_array(), *next, *r, *e, *m, *set, *el;
	size_t i, j, k, l;
	bool any = false;

	json_array_append_new(rules, json_array());
	json_array_foreach(expr, i, e) {
		m = json_object_get(e, "match");
		set = json_object_get(json_object_get(m, "right"), "set");
		if (!set || (strcmp(jstr(m, "op") ?: "", "==") &&
			     strcmp(jstr(m, "op") ?: "", "in"))) {
			json_array_foreach(rules, j, r)
				json_array_append(r, e);
			continue;
		}
		any = true;
		if (json_array_size(rules) * json_array_size(set) >
		    CHECK_EXPAND_MAX)
			goto none;
		next = json_array();
		json_array_foreach(rules, j, r) {
			json_array_foreach(set, k, el) {
				json_t *nr = json_deep_copy(r);
				json_t *left = json_object_get(m, "left");
				json_t *lc = json_object_get(left, "concat");
				json_t *rc = json_object_get(el, "concat");

				if (lc && rc &&
				    json_array_size(lc) == json_array_size(rc)) {
					for (l = 0; l < json_array_size(lc); l++)
						json_array_append_new(nr,
							json_pack("{s:{s:s,s:O,s:O}}",
								  "match", "op", "==",
								  "left", json_array_get(lc, l),
								  "right", json_array_get(rc, l)));
				} else {
					json_array_append_new(nr,
						json_pack("{s:{s:s,s:O,s:O}}",
							  "match", "op", "==",
							  "left", left, "right", el));
				}
				json_array_append_new(next, nr);
			}
		}
		json_decref(rules);
		rules = next;
	}
	if (any)
		return rules;
none:
	json_decref(rules);
	return NULL;
}

/*
 * A suggestion for @rule, refused: the rules of its anonymous sets'
 * elements, printed only if each of them offloads in its place.
 */
static char *suggest(const json_t *chain, const json_t *rule)
{
	json_t *rules = expand_sets(json_object_get(rule, "expr")), *r;
	json_int_t handles[CHECK_EXPAND_MAX];
	size_t i, n = 0;
	char *text = NULL, *msg;
	bool ok = true;

	if (!rules)
		return NULL;
	json_array_foreach(rules, i, r) {
		json_t *one = json_pack("[O]", r);

		if (rules_add(chain, jstr(chain, "name"), one, &handles[n],
			      &msg)) {
			if (verbose) {
				char *js = json_dumps(one, JSON_COMPACT);

				pr_debug("check: suggestion %s: %s", js, msg);
				free(js);
			}
			free(msg);
			ok = false;
		} else {
			n++;
		}
		json_decref(one);
		if (!ok)
			break;
	}
	rules_del(chain, jstr(chain, "name"), handles, n);
	if (ok)
		text = render(chain, rules, false);
	json_decref(rules);
	return text;
}

/* ---- the check -------------------------------------------------------- */

static struct result *add_result(struct check *c, const json_t *chain,
				 int index, const char *rule)
{
	struct result *r;

	r = realloc(c->res, (c->nr_res + 1) * sizeof(*r));
	if (!r)
		return NULL;
	c->res = r;
	r += c->nr_res++;
	memset(r, 0, sizeof(*r));
	r->family = jstr(chain, "family");
	r->table = jstr(chain, "table");
	r->chain = jstr(chain, "name");
	r->index = index;
	r->rule = rule ? strdup(rule) : NULL;
	return r;
}

/* Why the chain itself cannot offload: by whom in *@by. */
static char *chain_refused(const struct check *c, const json_t *chain,
			   const char *msg, __u32 before, const char **by)
{
	char devs[CHECK_DEVS][IF_NAMESIZE];
	char last[256] = "", *s;
	size_t n, i;

	*by = "xdpoff";
	if (!c->module)
		return strdup("the xdpoff kernel module is not loaded");
	n = chain_devs(c, chain, devs);
	for (i = 0; i < n; i++) {
		const struct live_dev *d = live_dev(c, devs[i]);

		if (d && !d->attached &&
		    asprintf(&s, "%s is not attached to xdpoff (xdpoff attach %s)",
			     devs[i], devs[i]) >= 0)
			return s;
	}
	if (refusals(c, chain, last, sizeof(last)) != before)
		return strdup(last);
	*by = "nf_tables";
	return first_line(msg);
}

/* Rule @rule of @chain refused: why, suggestion, into @r. */
static void rule_refused(const struct check *c, const json_t *chain,
			 const json_t *rule, const char *msg, __u32 before,
			 struct result *r)
{
	char last[256] = "";

	r->offload = false;
	if (refusals(c, chain, last, sizeof(last)) != before) {
		r->by = "xdpoff";
		r->reason = strdup(last);
	} else {
		r->by = "nf_tables";
		r->reason = culprit(c, chain, rule);
		if (!r->reason)
			r->reason = first_line(msg);
	}
	r->suggestion = suggest(chain, rule);
}

/*
 * nf_tables refused @chain itself.  It offloads only netdev ingress
 * chains of a priority from 1 to 65535 (nft_chain_offload_support()): if
 * the priority is out of that range, *@why says so, and the suggestion is
 * the nearest priority in it, if the chain and all its @rules offload
 * there (tried, then deleted).
 */
static char *chain_priority(const struct check *c, const json_t *chain,
			    json_t *rules, char **why)
{
	long long prio = json_integer_value(json_object_get(chain, "prio"));
	long long fix = prio <= 0 ? 1 : 65535;
	json_t *exprs, *o;
	char *text, *msg = NULL, *s = NULL, line[1024];
	size_t i;
	int err;

	if (prio > 0 && prio <= 65535)
		return NULL;
	free(*why);
	if (asprintf(why, "nf_tables offloads only chains of priority 1 to 65535, not %lld",
		     prio) < 0)
		*why = NULL;
	text = chain_text(c, chain, fix);
	err = text ? nft_load(text, false, NULL, &msg) : -ENOMEM;
	free(text);
	free(msg);
	if (err)
		return NULL;
	exprs = json_array();
	json_array_foreach(rules, i, o)
		json_array_append(exprs, json_object_get(o, "expr"));
	err = json_array_size(exprs) ?
	      rules_add(chain, jstr(chain, "name"), exprs, NULL, &msg) : 0;
	json_decref(exprs);
	if (err)
		free(msg);
	else if (asprintf(&s, "the chain at priority %lld (`priority %lld;`): it and its rules offload there",
			  fix, fix) < 0)
		s = NULL;
	snprintf(line, sizeof(line), "flush chain %s %s %s\ndelete chain %s %s %s\n",
		 jstr(chain, "family"), jstr(chain, "table"),
		 jstr(chain, "name"), jstr(chain, "family"),
		 jstr(chain, "table"), jstr(chain, "name"));
	nft_load(line, false, NULL, NULL);
	return s;
}

static int check_chain(struct check *c, const json_t *chain)
{
	long long prio = json_integer_value(json_object_get(chain, "prio"));
	json_t *rules = json_array(), *batch, *it, *o;
	const char *by = NULL;
	char *text, *msg = NULL, *why = NULL, *sugg = NULL;
	size_t i, first, k;
	__u32 before;
	int err, index = 0;
	struct result *r;

	json_array_foreach(c->ruleset, i, it) {
		o = json_object_get(it, "rule");
		if (o && same_chain(o, chain))
			json_array_append(rules, o);
	}

	before = refusals(c, chain, NULL, 0);
	text = chain_text(c, chain, prio);
	err = text ? nft_load(text, false, NULL, &msg) : -ENOMEM;
	free(text);
	if (err) {
		why = chain_refused(c, chain, msg, before, &by);
		free(msg);
		if (!strcmp(by, "nf_tables") &&
		    strcmp(jstr(chain, "family"), "netdev")) {
			/* nft_chain_offload_support(): netdev ingress only */
			free(why);
			if (asprintf(&why, "nf_tables offloads only netdev family chains, not %s ones",
				     jstr(chain, "family")) < 0)
				why = NULL;
		} else if (!strcmp(by, "nf_tables")) {
			sugg = chain_priority(c, chain, rules, &why);
		}
		if (!json_array_size(rules)) {
			r = add_result(c, chain, -1, NULL);
			if (r) {
				r->by = by;
				r->reason = why;
				r->suggestion = sugg;
				why = sugg = NULL;
			}
		}
		json_array_foreach(rules, i, o) {
			r = add_result(c, chain, i, rule_text(c, o));
			if (!r)
				break;
			r->by = by;
			r->reason = strdup(why ?: "");
			r->suggestion = sugg ? strdup(sugg) : NULL;
		}
		free(why);
		free(sugg);
		json_decref(rules);
		return 0;
	}

	/* A batch at a time; one by one from a batch that fails. */
	for (first = 0; first < json_array_size(rules);) {
		size_t n = json_array_size(rules) - first;

		if (n > CHECK_BATCH)
			n = CHECK_BATCH;
		batch = json_array();
		for (k = 0; k < n; k++)
			json_array_append(batch, json_object_get(
				json_array_get(rules, first + k), "expr"));
		if (n > 1 && !rules_add(chain, jstr(chain, "name"), batch,
					NULL, &msg)) {
			for (k = 0; k < n; k++) {
				r = add_result(c, chain, index++,
					rule_text(c, json_array_get(rules, first + k)));
				if (r)
					r->offload = true;
			}
			first += n;
			json_decref(batch);
			continue;
		}
		if (n > 1)
			free(msg);
		json_decref(batch);
		/* The first rule alone. */
		o = json_array_get(rules, first);
		batch = json_pack("[O]", json_object_get(o, "expr"));
		before = refusals(c, chain, NULL, 0);
		err = rules_add(chain, jstr(chain, "name"), batch, NULL, &msg);
		json_decref(batch);
		r = add_result(c, chain, index++, rule_text(c, o));
		if (r && !err)
			r->offload = true;
		else if (r)
			rule_refused(c, chain, o, msg, before, r);
		if (err)
			free(msg);
		first++;
	}
	json_decref(rules);
	return 0;
}

/* ---- output ------------------------------------------------------------- */

static void print_json(const struct check *c)
{
	json_t *arr = json_array(), *o;
	size_t i;

	for (i = 0; i < c->nr_res; i++) {
		const struct result *r = &c->res[i];

		o = json_pack("{s:s,s:s,s:s,s:o,s:o,s:b,s:o,s:o,s:o}",
			      "family", r->family, "table", r->table,
			      "chain", r->chain,
			      "index", r->index < 0 ? json_null() :
					json_integer(r->index),
			      "rule", r->rule ? json_string(r->rule) : json_null(),
			      "offload", r->offload,
			      "by", r->by ? json_string(r->by) : json_null(),
			      "reason", r->reason ? json_string(r->reason) :
					json_null(),
			      "suggestion", r->suggestion ?
					json_string(r->suggestion) : json_null());
		json_array_append_new(arr, o);
	}
	json_dumpf(arr, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(arr);
}

static void print_text(const struct check *c)
{
	const struct result *r, *prev = NULL;
	size_t i, ok;
	const char *s, *nl;

	for (i = 0; i < c->nr_res; i++) {
		r = &c->res[i];
		if (!prev || strcmp(prev->family, r->family) ||
		    strcmp(prev->table, r->table) ||
		    strcmp(prev->chain, r->chain)) {
			size_t j, n = 0;

			for (j = i, ok = 0; j < c->nr_res &&
			     !strcmp(c->res[j].family, r->family) &&
			     !strcmp(c->res[j].table, r->table) &&
			     !strcmp(c->res[j].chain, r->chain); j++, n++)
				ok += c->res[j].offload;
			printf("%schain %s %s %s: ", prev ? "\n" : "",
			       r->family, r->table, r->chain);
			if (r->index < 0)
				printf("cannot offload\n");
			else
				printf("%zu of %zu rule%s offload\n", ok, n,
				       n == 1 ? "" : "s");
		}
		prev = r;
		if (r->index >= 0)
			printf("  %3d  %-3s  %s\n", r->index,
			       r->offload ? "yes" : "no", r->rule ?: "");
		if (r->reason)
			printf("            %s: %s\n", r->by, r->reason);
		for (s = r->suggestion; s && *s; s = *nl ? nl + 1 : nl) {
			nl = strchrnul(s, '\n');
			printf("            %s%.*s\n",
			       s == r->suggestion ? "instead: " : "         ",
			       (int)(nl - s), s);
		}
	}
	if (!c->nr_res)
		printf("no chain to check (no chain with flags offload%s)\n",
		       c->all ? ", no netdev or inet ingress chain" : "");
}

/*
 * --fallback: @text with flags offload taken out of each chain that
 * cannot offload, which loads with every other chain offloaded; on
 * standard error, each such chain and the first reason.  0, or 1 if out
 * of memory.
 */
static int print_fallback(const struct check *c, const char *text)
{
	struct nft_scan_result soft = {}, out;
	const struct result *r;
	struct nft_chain_ref *v;
	size_t i;

	for (i = 0; i < c->nr_res; i++) {
		r = &c->res[i];
		if (r->offload ||
		    nft_scan_has(&soft, r->family, r->table, r->chain))
			continue;
		v = realloc(soft.offload, (soft.nr_offload + 1) * sizeof(*v));
		if (!v) {
			free(soft.offload);
			return EXIT_FAIL;
		}
		soft.offload = v;
		v += soft.nr_offload++;
		snprintf(v->family, sizeof(v->family), "%s", r->family);
		snprintf(v->table, sizeof(v->table), "%s", r->table);
		snprintf(v->chain, sizeof(v->chain), "%s", r->chain);
		if (r->index >= 0)
			pr_warn("chain %s %s %s runs in software: rule %d (%s): %s: %s\n",
				r->family, r->table, r->chain, r->index,
				r->rule, r->by, r->reason ?: "");
		else
			pr_warn("chain %s %s %s runs in software: %s: %s\n",
				r->family, r->table, r->chain, r->by,
				r->reason ?: "");
	}
	if (nft_scan(text, &soft, &out)) {
		free(soft.offload);
		return EXIT_FAIL;
	}
	fputs(out.software, stdout);
	free(soft.offload);
	nft_scan_free(&out);
	return EXIT_OK;
}

/* ---- the command ------------------------------------------------------ */

/*
 * nft's message about /dev/stdin, which was @file, @orig before nft.c
 * blanked its flags offload out of @text: the name and the lines as the
 * user wrote them.
 */
static void print_nft_error(const char *msg, const char *file,
			    const char *orig, const char *text)
{
	const char *s = msg ?: "", *nl, *t, *o, *tn, *on;
	size_t len;

	for (; *s; s = *nl ? nl + 1 : nl) {
		nl = strchrnul(s, '\n');
		len = nl - s;
		if (file && !strncmp(s, "/dev/stdin:", 11)) {
			fprintf(stderr, "%s:%.*s\n", file, (int)(len - 11),
				s + 11);
			continue;
		}
		/* A line of the blanked text: the original line. */
		for (t = text, o = orig; *t && *o;
		     t = *tn ? tn + 1 : tn, o = *on ? on + 1 : on) {
			tn = strchrnul(t, '\n');
			on = strchrnul(o, '\n');
			if ((size_t)(tn - t) == len && !strncmp(s, t, len))
				break;
		}
		if (*t && *o)
			fprintf(stderr, "%.*s\n", (int)(on - o), o);
		else
			fprintf(stderr, "%.*s\n", (int)len, s);
	}
}

static char *read_file(const char *path)
{
	struct buf b = {};
	char chunk[4096];
	size_t n;
	FILE *f;

	f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_add(&b, chunk, n))
			break;
	if (ferror(f)) {
		buf_free(&b);
		errno = EIO;
	} else if (!b.p) {
		b.p = strdup("");
	}
	if (f != stdin)
		fclose(f);
	return b.p;
}

static void check_free(struct check *c)
{
	size_t i;

	for (i = 0; i < c->nr_res; i++) {
		free(c->res[i].rule);
		free(c->res[i].reason);
		free(c->res[i].suggestion);
	}
	free(c->res);
	free(c->devs);
	free(c->texts);
	free(c->listing);
	nft_scan_free(&c->scan);
	json_decref(c->ruleset);
}

int cmd_check(const struct args *a)
{
	struct buf list = {}, out = {}, err_msg = {};
	struct check c = { .all = a->all };
	json_t *doc = NULL, *it, *o;
	int ret = EXIT_USAGE, err;
	char *text = NULL, *msg;
	size_t i;

	if (geteuid()) {
		pr_warn("check: must run as root (it makes a network namespace)\n");
		return EXIT_FAIL;
	}
	/* 1. The ruleset, the devices. */
	if (a->dev) {
		text = read_file(a->dev);
		if (!text) {
			pr_warn("check: cannot read %s: %s\n", a->dev,
				strerror(errno));
			return EXIT_USAGE;
		}
	} else {
		err = run_nft((char *[]){ "nft", "list", "ruleset", NULL },
			      NULL, &list, &err_msg);
		if (err) {
			fputs(err_msg.p ?: "", stderr);
			pr_warn("check: cannot list the ruleset%s\n",
				err == -ENOENT ? ": no nft" : "");
			goto out;
		}
		text = list.p;
		memset(&list, 0, sizeof(list));
	}
	ret = EXIT_FAIL;
	if (nft_scan(text, NULL, &c.scan) || live_devices(&c)) {
		pr_warn("check: out of memory\n");
		goto out;
	}
	if (c.scan.include)
		pr_warn("check: the files %s includes are checked as they are: their chains' flags offload are not seen\n",
			a->dev ?: "the ruleset");

	/* 2. The scratch namespace, its devices (attached after 3.). */
	err = scratch_enter();
	if (err) {
		pr_warn("check: cannot make a scratch namespace: %s\n",
			strerror(-err));
		goto out;
	}
	if (scratch_devices(&c, false))
		goto out;

	/*
	 * 3. The ruleset there, in software; back as JSON and text.  nft's
	 * errors in FILE (the blanks keep its lines and columns) are the
	 * user's: exit status 2.
	 */
	if (nft_load(c.scan.software, false, NULL, &msg)) {
		print_nft_error(msg, a->dev, text, c.scan.software);
		free(msg);
		pr_warn("check: nft cannot load %s\n", a->dev ?: "the ruleset");
		ret = EXIT_USAGE;
		goto out;
	}
	buf_free(&out);
	if (nft_list(true, &out) || nft_list(false, &list) ||
	    nft_rule_texts(list.p ?: "", &c.texts, &c.nr_texts)) {
		pr_warn("check: cannot list the ruleset back\n");
		goto out;
	}
	c.listing = list.p;
	memset(&list, 0, sizeof(list));
	doc = json_loads(out.p ?: "", 0, NULL);
	c.ruleset = json_incref(json_object_get(doc, "nftables"));
	if (!json_is_array(c.ruleset)) {
		pr_warn("check: nft's JSON has no \"nftables\" array\n");
		goto out;
	}
	if (nft_load("flush ruleset\n", false, NULL, NULL) ||
	    scratch_devices(&c, true))
		goto out;

	/* 4. Table by table, chain by chain. */
	json_array_foreach(c.ruleset, i, it) {
		o = json_object_get(it, "table");
		if (!o || !table_checked(&c, o))
			continue;
		if (table_add(&c, o, &msg)) {
			fputs(msg ?: "", stderr);
			free(msg);
			pr_warn("check: cannot re-create table %s %s\n",
				jstr(o, "family"), jstr(o, "name"));
			goto out;
		}
	}
	json_array_foreach(c.ruleset, i, it) {
		o = json_object_get(it, "chain");
		if (o && checked(&c, o))
			check_chain(&c, o);
	}

	ret = EXIT_OK;
	for (i = 0; i < c.nr_res; i++)
		if (!c.res[i].offload)
			ret = EXIT_FAIL;
	if (a->fallback)
		ret = print_fallback(&c, text);
	else if (a->json)
		print_json(&c);
	else
		print_text(&c);
out:
	free(text);
	buf_free(&list);
	buf_free(&out);
	buf_free(&err_msg);
	json_decref(doc);
	check_free(&c);
	return ret;
}
