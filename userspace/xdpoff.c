// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff: make a NIC an offload target for netfilter/tc rules.
 *
 * `attach` loads the xdpoff XDP program on a device (through libxdp), pins
 * its maps under XDPOFF_PIN_ROOT/DEV and hands the map fds to the xdpoff
 * kernel module, which from then on writes offloaded rules into them.
 * `detach` undoes that, `show` reads the rules and counters back.
 *
 * This file: the command line (global and command options, the command
 * table, help) and main().  The commands are in attach.c and show.c.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"

bool verbose;

/* ---- helpers ---------------------------------------------------------- */

/* Where libbpf's warnings go while held (libbpf_hold()), else NULL. */
static FILE *held;
static char *held_buf;
static size_t held_size;

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN && !verbose)
		return 0;
	return vfprintf(held ?: stderr, fmt, ap);
}

void libbpf_hold(void)
{
	if (!verbose && !held)
		held = open_memstream(&held_buf, &held_size);
}

void libbpf_release(bool print)
{
	if (!held)
		return;
	fclose(held);
	held = NULL;
	if (print && held_size)
		fwrite(held_buf, 1, held_size, stderr);
	free(held_buf);
	held_buf = NULL;
}

static int libxdp_print(enum libxdp_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBXDP_WARN && !verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ---- command line ----------------------------------------------------- */

struct cmd {
	const char	*name;
	int		(*func)(const struct args *a);
	const char	*usage;		/* arguments */
	const char	*help;
	const char	*opts;		/* accepted command options (short names) */
	int		min_args;	/* DEV arguments */
	int		max_args;
};

static int cmd_help(const struct args *a);

static const struct cmd cmds[] = {
	{ "attach", cmd_attach,
	  "DEV [--mode native|skb] [--max-rules N] [--max-flows N] [--priority N | --no-libxdp]",
	  "load the XDP program on DEV (native mode unless --mode skb) through\n"
	  "      libxdp's dispatcher, beside other XDP programs, pin it and its maps\n"
	  "      under " XDPOFF_PIN_ROOT "/DEV and hand DEV to the kernel module",
	  "mfMPL", 1, 1 },
	{ "detach", cmd_detach, "DEV",
	  "take DEV back from the kernel module, unload the XDP program and\n"
	  "      remove the pins", "", 1, 1 },
	{ "show", cmd_show, "[DEV] [--json] [--watch [INTERVAL]]",
	  "list the offloaded rules and flows and their counters; --watch:\n"
	  "      their rates, every INTERVAL seconds (default 1), until interrupted",
	  "jw", 0, 1 },
	{ "check", cmd_check, "[FILE] [--all] [--json | --fallback]",
	  "say which rules of FILE (or of the running ruleset) would offload,\n"
	  "      and why not, by trying them in a scratch network namespace;\n"
	  "      exit 1 if one would not, 2 if nft cannot read FILE",
	  "jaF", 0, 1 },
	{ "help", cmd_help, "", "show this help", "", 0, 0 },
};

static const struct option long_opts[] = {
	{ "max-rules",	required_argument,	NULL, 'm' },
	{ "max-flows",	required_argument,	NULL, 'f' },
	{ "mode",	required_argument,	NULL, 'M' },
	{ "priority",	required_argument,	NULL, 'P' },
	{ "no-libxdp",	no_argument,		NULL, 'L' },
	{ "json",	no_argument,		NULL, 'j' },
	{ "all",	no_argument,		NULL, 'a' },
	{ "fallback",	no_argument,		NULL, 'F' },
	{ "watch",	optional_argument,	NULL, 'w' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "Usage: xdpoff [-v] COMMAND [ARGS]\n\nCommands:\n");
	for (i = 0; i < MNL_ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %s%s%s\n      %s\n", cmds[i].name,
			cmds[i].usage[0] ? " " : "", cmds[i].usage, cmds[i].help);
	fprintf(f, "\nOptions:\n"
		"  -v, --verbose         debug output, including libbpf's\n"
		"  -h, --help            show this help\n"
		"  --max-rules N         attach: capacity of the rules map (default %u)\n"
		"  --max-flows N         attach: capacity of the flows map, offloaded\n"
		"                        flowtable flow directions coming in on DEV\n"
		"                        (default %u)\n"
		"  --mode native|skb     attach: the XDP mode; native (the driver's XDP,\n"
		"                        the default) or skb (generic XDP, for drivers\n"
		"                        without native XDP; runs after the skb is built)\n"
		"  --priority N          attach: the run priority in libxdp's dispatcher;\n"
		"                        lower runs first (default %u: after other\n"
		"                        programs, as tc and nft ingress run after XDP)\n"
		"  --no-libxdp           attach: without libxdp, the program alone on the\n"
		"                        hook (fails if another program holds it)\n"
		"  --json                show, check: JSON output (show --watch: a line\n"
		"                        per interval)\n"
		"  --all                 check: every netdev and inet ingress chain, with\n"
		"                        or without flags offload\n"
		"  --fallback            check: print FILE with flags offload taken out of\n"
		"                        the chains that cannot offload, for nft to load;\n"
		"                        why, on standard error (exit 0)\n"
		"  --watch [INTERVAL]    show: rates per second, refreshed every INTERVAL\n"
		"                        seconds (default 1, at least 0.1) until\n"
		"                        interrupted; redrawn in place on a terminal\n"
		"\nExit status: 0 success, 1 failure, 2 usage error.  Manual: xdpoff(8).\n",
		XDPOFF_DEFAULT_MAX_RULES, XDPOFF_DEFAULT_MAX_FLOWS,
		XDPOFF_RUN_PRIO);
}

static int cmd_help(const struct args *a)
{
	(void)a;
	usage(stdout);
	return EXIT_OK;
}

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < MNL_ARRAY_SIZE(cmds); i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static int parse_max(const char *opt, const char *s, __u32 limit,
		     __u32 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || !v || s[0] == '-') {
		pr_warn("invalid --%s: %s\n", opt, s);
		return -EINVAL;
	}
	if (v > limit) {
		pr_warn("invalid --%s: %s (at most %u)\n", opt, s, limit);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* libxdp's run priority: an unsigned int; ours must fit an int. */
static int parse_prio(const char *s, int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > INT_MAX) {
		pr_warn("invalid --priority: %s (0 to %d)\n", s, INT_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static const char *opt_name(int c)
{
	const struct option *o;

	for (o = long_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

/* A word that reads as a number: --watch's interval, not a device. */
static bool is_interval(const char *s)
{
	char *end;

	strtod(s, &end);
	return end != s && !*end;
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.1 && v <= 86400)) {
		pr_warn("invalid --watch interval: %s (0.1 to 86400 seconds)\n", s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/*
 * Parse argv (argv[0] is the command name) into @a.  Returns -1 to run the
 * command, otherwise the exit code.
 */
static int parse_args(const struct cmd *cmd, int argc, char **argv,
		      struct args *a)
{
	int c, nargs;

	optind = 0;
	while ((c = getopt_long(argc, argv, "hv", long_opts, NULL)) != -1) {
		if (c == 'v') {
			verbose = true;
		} else if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else if (c == '?') {
			return EXIT_USAGE;
		} else if (!strchr(cmd->opts, c)) {
			pr_warn("option --%s is not valid for %s\n",
				opt_name(c), cmd->name);
			return EXIT_USAGE;
		} else if (c == 'm') {
			if (parse_max("max-rules", optarg,
				      XDPOFF_MAX_RULES_LIMIT, &a->max_rules))
				return EXIT_USAGE;
		} else if (c == 'f') {
			if (parse_max("max-flows", optarg,
				      XDPOFF_MAX_RULES_LIMIT, &a->max_flows))
				return EXIT_USAGE;
		} else if (c == 'M') {
			if (!strcmp(optarg, "skb") || !strcmp(optarg, "generic")) {
				a->generic = true;
			} else if (!strcmp(optarg, "native") ||
				   !strcmp(optarg, "drv")) {
				a->generic = false;
			} else {
				pr_warn("invalid --mode: %s (native or skb)\n",
					optarg);
				return EXIT_USAGE;
			}
		} else if (c == 'P') {
			if (parse_prio(optarg, &a->run_prio))
				return EXIT_USAGE;
		} else if (c == 'L') {
			a->no_libxdp = true;
		} else if (c == 'j') {
			a->json = true;
		} else if (c == 'a') {
			a->all = true;
		} else if (c == 'F') {
			a->fallback = true;
		} else if (c == 'w') {
			a->watch = true;
			if (optarg && parse_interval(optarg, &a->interval))
				return EXIT_USAGE;
			/* --watch N: N is the interval, if it is a number. */
			if (!optarg && optind < argc &&
			    is_interval(argv[optind]) &&
			    parse_interval(argv[optind++], &a->interval))
				return EXIT_USAGE;
		}
	}
	if (a->json && a->fallback) {
		pr_warn("--json and --fallback: one output only\n");
		return EXIT_USAGE;
	}
	if (a->no_libxdp && a->run_prio >= 0) {
		pr_warn("--priority is libxdp's: not with --no-libxdp\n");
		return EXIT_USAGE;
	}
	nargs = argc - optind;
	if (nargs < cmd->min_args || nargs > cmd->max_args) {
		fprintf(stderr, "Usage: xdpoff %s %s\n", cmd->name, cmd->usage);
		return EXIT_USAGE;
	}
	a->dev = nargs ? argv[optind] : NULL;
	return -1;
}

int main(int argc, char **argv)
{
	struct args a = {
		.max_rules = XDPOFF_DEFAULT_MAX_RULES,
		.max_flows = XDPOFF_DEFAULT_MAX_FLOWS,
		.interval = 1,
		.run_prio = -1,
	};
	const struct cmd *cmd;
	int c, ret;

	libbpf_set_print(libbpf_print);
	libxdp_set_print(libxdp_print);

	/* Global options, up to the command name. */
	while ((c = getopt_long(argc, argv, "+hv", long_opts, NULL)) != -1) {
		if (c == 'v') {
			verbose = true;
		} else if (c == 'h') {
			usage(stdout);
			return EXIT_OK;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = find_cmd(argv[optind]);
	if (!cmd) {
		pr_warn("unknown command: %s\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	ret = parse_args(cmd, argc - optind, argv + optind, &a);
	if (ret >= 0)
		return ret;
	return cmd->func(&a);
}
