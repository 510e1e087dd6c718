/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xdpoff CLI: logging, exit codes, the generic netlink helpers (nl.c), the
 * pins (pins.c) and the commands (attach.c, show.c, check.c).
 */
#ifndef __XDPOFF_CLI_H
#define __XDPOFF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <linux/types.h>
#include <libmnl/libmnl.h>

#include "xdpoff/xdpoff.h"

enum {
	EXIT_OK		= 0,
	EXIT_FAIL	= 1,
	EXIT_USAGE	= 2,
};

extern bool verbose;

#define pr_warn(fmt, ...)	fprintf(stderr, "xdpoff: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)	fprintf(stderr, fmt, ##__VA_ARGS__)
#define pr_debug(fmt, ...)						\
	do {								\
		if (verbose)						\
			fprintf(stderr, fmt, ##__VA_ARGS__);		\
	} while (0)

/*
 * Hold libbpf's warnings back (not with -v) until libbpf_release(), which
 * prints them or drops them: for an attempt that may fail as expected.
 */
void libbpf_hold(void);
void libbpf_release(bool print);

/* A generic netlink socket bound to the xdpoff family. */
struct xnl {
	struct mnl_socket	*sock;
	unsigned int		portid;
	unsigned int		seq;
	uint16_t		family;
	char			extack[256];	/* kernel message of the last request */
	char			buf[8192] __attribute__((aligned(4)));	/* request */
};

/*
 * Open the socket and resolve XDPOFF_GENL_NAME.  Returns 0, -ENOENT when the
 * family is not registered (module not loaded) or another -errno.
 */
int xnl_open(struct xnl *nl);
void xnl_close(struct xnl *nl);

/* Start a request for @cmd in nl->buf; add attributes with mnl_attr_put_*. */
struct nlmsghdr *xnl_request(struct xnl *nl, uint8_t cmd, uint16_t flags);

/* Send a doit request and wait for its ack: 0 or -errno, nl->extack set. */
int xnl_doit(struct xnl *nl, struct nlmsghdr *nlh);

/* Send a dump request, calling @cb for every reply: 0 or -errno. */
int xnl_dump(struct xnl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

/* replay.c: re-create @dev's offloaded nft chains after an attach. */
void nft_restore_chains(const char *dev);

/* pins.c */

/* What `attach` pins under XDPOFF_PIN_ROOT/DEV; the maps come first. */
enum { PIN_PROG = XDPOFF_NR_MAPS, NR_PINS };

extern const char *const pin_names[NR_PINS];

bool valid_ifname(const char *dev);
void pin_path(char *buf, size_t size, const char *dev, int pin);
bool pin_dir_exists(const char *dev);
int open_pin(const char *dev, int pin);
__u32 prog_id(int prog_fd);
struct xdp_multiprog;
struct xdp_multiprog *xdp_hook(int ifindex);

struct xdp_where;		/* show.h */
__u32 xdp_attached(int ifindex, __u32 ours, struct xdp_where *w);
__u32 map_max_entries(int map_fd);

/* The commands (attach.c, show.c), called by main() with the parsed line. */
struct args {
	const char	*dev;
	__u32		max_rules;
	__u32		max_flows;
	bool		generic;	/* attach --mode skb */
	bool		no_libxdp;	/* attach --no-libxdp */
	int		run_prio;	/* attach --priority; -1: the program's */
	bool		json;
	bool		all;		/* check --all */
	bool		fallback;	/* check --fallback */
	bool		watch;		/* show --watch */
	double		interval;	/* show --watch: seconds */
};

int cmd_attach(const struct args *a);
int cmd_detach(const struct args *a);
int cmd_show(const struct args *a);
int cmd_check(const struct args *a);

#endif /* __XDPOFF_CLI_H */
