// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: `show --watch [INTERVAL] [DEV]`.  Reads the devices every
 * INTERVAL seconds (devs_read(), as show does) and prints what changed
 * per second: per device the frames its driver received, the share of
 * them XDP decided (dropped or redirected: consumed), packets and bytes
 * of its rules; per rule packets, bytes and consumed packets; per
 * offloaded flow packets and bytes.  On a terminal each interval redraws
 * the screen, top-like; otherwise each interval is a block of plain lines
 * after a "--- time" line; with --json one object per interval, a line
 * each.  Runs until interrupted.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"
#include "show.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double ts_sub(const struct timespec *a, const struct timespec *b)
{
	return (a->tv_sec - b->tv_sec) + (a->tv_nsec - b->tv_nsec) / 1e9;
}

/* A counter's rate; a counter that went down (a slot reused) counts 0. */
static double rate(__u64 now, __u64 before, double secs)
{
	return now >= before && secs > 0 ? (now - before) / secs : 0;
}

/* The same rule in the snapshot before: slot, order, table, mask and fields alike. */
static const struct rule *rule_before(const struct dev_info *d,
				      const struct rule *r)
{
	const struct rule *p;

	for (p = d->rules; p < d->rules + d->nr_rules; p++)
		if (p->val.stats_slot == r->val.stats_slot &&
		    p->val.order == r->val.order &&
		    p->val.mask_id == r->val.mask_id &&
		    !memcmp(&p->val.mask, &r->val.mask, sizeof(r->val.mask)) &&
		    !memcmp(&p->val.fields, &r->val.fields,
			    sizeof(r->val.fields)))
			return p;
	return NULL;
}

static const struct flow *flow_before(const struct dev_info *d,
				      const struct flow *f)
{
	const struct flow *p;

	for (p = d->flows; p < d->flows + d->nr_flows; p++)
		if (!memcmp(&p->key, &f->key, sizeof(f->key)))
			return p;
	return NULL;
}

static const struct dev_info *dev_before(const struct devs *ds,
					 const struct dev_info *d)
{
	size_t i;

	for (i = 0; i < ds->n; i++)
		if (!strcmp(ds->v[i].name, d->name) &&
		    ds->v[i].prog_id == d->prog_id)
			return &ds->v[i];
	return NULL;
}

/* The rates of one device over an interval. */
struct dev_rates {
	double	rx;		/* frames/s its driver received */
	double	pps, bps;	/* of its rules */
	double	consumed;	/* frames/s XDP dropped or redirected */
	double	flow_pps;	/* frames/s XDP forwarded for flows */
	double	share;		/* (consumed + flow_pps) / rx; <0: no rx */
};

static void dev_rates(const struct dev_info *d, const struct dev_info *p,
		      double secs, struct dev_rates *dr)
{
	const struct rule *r, *pr;
	const struct flow *f, *pf;

	memset(dr, 0, sizeof(*dr));
	dr->share = -1;
	if (!p)
		return;	/* new since the last interval: no rates yet */
	dr->rx = rate(d->rx_packets, p->rx_packets, secs);
	dr->pps = rate(d->packets, p->packets, secs);
	dr->bps = rate(d->bytes, p->bytes, secs);
	for (r = d->rules; r < d->rules + d->nr_rules; r++) {
		pr = rule_before(p, r);
		if (pr)
			dr->consumed += rate(r->consumed_packets,
					     pr->consumed_packets, secs);
	}
	for (f = d->flows; f < d->flows + d->nr_flows; f++) {
		pf = flow_before(p, f);
		if (pf)
			dr->flow_pps += rate(f->val.packets, pf->val.packets,
					     secs);
	}
	dr->share = dr->rx > 0 ? (dr->consumed + dr->flow_pps) / dr->rx : -1;
}

static void print_text(const struct devs *now, const struct devs *before,
		       double secs, double interval, bool tty)
{
	char match[512], flow[512], stamp[32];
	const struct dev_info *d, *p;
	const struct rule *r, *pr;
	const struct flow *f, *pf;
	struct dev_rates dr;
	time_t t = time(NULL);
	size_t i;

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&t));
	if (tty)
		printf("\033[H\033[J");	/* home, clear to the end */
	printf("--- %s  xdpoff show --watch %g: rates over the last %.2f s\n",
	       stamp, interval, secs);
	if (!now->n)
		printf("no device attached\n");
	for (i = 0; i < now->n; i++) {
		d = &now->v[i];
		p = dev_before(before, d);
		dev_rates(d, p, secs, &dr);
		printf("%s: rx %.0f/s, XDP decided %.0f/s", d->name, dr.rx,
		       dr.consumed + dr.flow_pps);
		if (dr.share >= 0)
			printf(" (%.1f %%)", 100 * dr.share);
		printf(", rules %.0f pkt/s %.0f B/s\n", dr.pps, dr.bps);
		for (r = d->rules; r < d->rules + d->nr_rules; r++) {
			pr = p ? rule_before(p, r) : NULL;
			format_match(r, match, sizeof(match));
			print_rule_hook(r);
			printf("  %s  %s  %.0f pkt/s %.0f B/s consumed %.0f/s\n",
			       action_name(r->val.action), match,
			       pr ? rate(r->packets, pr->packets, secs) : 0,
			       pr ? rate(r->bytes, pr->bytes, secs) : 0,
			       pr ? rate(r->consumed_packets,
					 pr->consumed_packets, secs) : 0);
		}
		for (f = d->flows; f < d->flows + d->nr_flows; f++) {
			pf = p ? flow_before(p, f) : NULL;
			format_flow(f, flow, sizeof(flow));
			printf("  flow %s  %.0f pkt/s %.0f B/s\n", flow,
			       pf ? rate(f->val.packets, pf->val.packets, secs) : 0,
			       pf ? rate(f->val.bytes, pf->val.bytes, secs) : 0);
		}
	}
	fflush(stdout);
}

static void json_rate(bool *first, const char *key, double v)
{
	printf("%s\"%s\":%.1f", *first ? "" : ",", key, v);
	*first = false;
}

static void print_json(const struct devs *now, const struct devs *before,
		       double secs)
{
	const struct dev_info *d, *p;
	const struct rule *r, *pr;
	const struct flow *f, *pf;
	char match[512], flow[512];
	struct dev_rates dr;
	bool first;
	size_t i;

	printf("{\"time\":%lld,\"interval\":%.3f,\"devices\":[",
	       (long long)time(NULL), secs);
	for (i = 0; i < now->n; i++) {
		d = &now->v[i];
		p = dev_before(before, d);
		dev_rates(d, p, secs, &dr);
		printf("%s{\"ifname\":", i ? "," : "");
		json_str(d->name);
		first = false;
		json_rate(&first, "rx_pps", dr.rx);
		json_rate(&first, "xdp_pps", dr.consumed + dr.flow_pps);
		if (dr.share >= 0)
			json_rate(&first, "xdp_share", dr.share);
		json_rate(&first, "pps", dr.pps);
		json_rate(&first, "bps", dr.bps);
		json_rate(&first, "consumed_pps", dr.consumed);
		json_rate(&first, "flow_pps", dr.flow_pps);
		printf(",\"rules\":[");
		for (r = d->rules; r < d->rules + d->nr_rules; r++) {
			pr = p ? rule_before(p, r) : NULL;
			format_match(r, match, sizeof(match));
			printf("%s{\"hook\":\"%s\",\"prio\":%u",
			       r == d->rules ? "" : ",",
			       order_hook(r->val.order), xdpoff_order_prio(r->val.order));
			if (xdpoff_order_is_nft(r->val.order))
				printf(",\"handle\":%u", xdpoff_order_handle(r->val.order));
			printf(",\"action\":\"%s\",\"match\":",
			       action_name(r->val.action));
			json_str(match);
			first = false;
			json_rate(&first, "pps",
				  pr ? rate(r->packets, pr->packets, secs) : 0);
			json_rate(&first, "bps",
				  pr ? rate(r->bytes, pr->bytes, secs) : 0);
			json_rate(&first, "consumed_pps",
				  pr ? rate(r->consumed_packets,
					    pr->consumed_packets, secs) : 0);
			putchar('}');
		}
		printf("],\"flows\":[");
		for (f = d->flows; f < d->flows + d->nr_flows; f++) {
			pf = p ? flow_before(p, f) : NULL;
			format_flow(f, flow, sizeof(flow));
			printf("%s{\"flow\":", f == d->flows ? "" : ",");
			json_str(flow);
			first = false;
			json_rate(&first, "pps",
				  pf ? rate(f->val.packets, pf->val.packets, secs) : 0);
			json_rate(&first, "bps",
				  pf ? rate(f->val.bytes, pf->val.bytes, secs) : 0);
			putchar('}');
		}
		printf("]}");
	}
	printf("]}\n");
	fflush(stdout);
}

/* Sleep until @deadline (CLOCK_MONOTONIC); false once told to stop. */
static bool sleep_until(const struct timespec *deadline)
{
	int err;

	do {
		err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, deadline,
				      NULL);
	} while (err == EINTR && !stop);
	return !stop;
}

int show_watch(const struct args *a, int ncpus)
{
	struct devs before, now;
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec next;
	bool tty = !a->json && isatty(STDOUT_FILENO);
	double secs;
	int ret;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = devs_read(a->dev, ncpus, &before);
	if (ret && a->dev) {
		devs_free(&before);
		return EXIT_FAIL;
	}
	next = before.when;
	for (;;) {
		next.tv_sec += (time_t)a->interval;
		next.tv_nsec += (long)((a->interval - floor(a->interval)) * 1e9);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		if (!sleep_until(&next))
			break;
		devs_read(a->dev, ncpus, &now);
		secs = ts_sub(&now.when, &before.when);
		if (a->json)
			print_json(&now, &before, secs);
		else
			print_text(&now, &before, secs, a->interval, tty);
		devs_free(&before);
		before = now;
	}
	devs_free(&before);
	return EXIT_OK;
}
