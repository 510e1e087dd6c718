// SPDX-License-Identifier: GPL-2.0
/*
 * xdpoff CLI: what `attach` pins under XDPOFF_PIN_ROOT/DEV (the maps and the
 * program), their paths, and the ids and sizes read back from them; shared
 * by attach.c and show.c.
 */
#include <limits.h>
#include <string.h>
#include <net/if.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"

const char *const pin_names[NR_PINS] = {
	[PIN_RULES]	= XDPOFF_MAP_RULES,
	[PIN_MASKS]	= XDPOFF_MAP_MASKS,
	[PIN_META]	= XDPOFF_MAP_META,
	[PIN_STATS]	= XDPOFF_MAP_STATS,
	[PIN_FLOWS]	= XDPOFF_MAP_FLOWS,
	[PIN_FILTER]	= XDPOFF_MAP_FILTER,
	[PIN_PROG]	= "prog",
};

/* The name is used as a path component, so reject anything odd. */
bool valid_ifname(const char *dev)
{
	return dev[0] && strlen(dev) < IFNAMSIZ && !strchr(dev, '/') &&
	       strcmp(dev, ".") && strcmp(dev, "..");
}

/* XDPOFF_PIN_ROOT/DEV, or XDPOFF_PIN_ROOT/DEV/<pin_names[pin]> if pin >= 0. */
void pin_path(char *buf, size_t size, const char *dev, int pin)
{
	if (pin < 0)
		snprintf(buf, size, "%s/%s", XDPOFF_PIN_ROOT, dev);
	else
		snprintf(buf, size, "%s/%s/%s", XDPOFF_PIN_ROOT, dev,
			 pin_names[pin]);
}

bool pin_dir_exists(const char *dev)
{
	char path[PATH_MAX];
	struct stat st;

	pin_path(path, sizeof(path), dev, -1);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Returns an fd or -errno. */
int open_pin(const char *dev, int pin)
{
	char path[PATH_MAX];

	pin_path(path, sizeof(path), dev, pin);
	return bpf_obj_get(path);
}

__u32 prog_id(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (prog_fd < 0 || bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	return info.id;
}

/*
 * The XDP program on @ifindex in the mode program @ours runs in, if it
 * runs there, else in native mode, else in generic mode (0: none).
 * *@generic: the mode of the program returned.
 */
__u32 xdp_attached(int ifindex, __u32 ours, bool *generic)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	*generic = false;
	if (bpf_xdp_query(ifindex, 0, &q))
		return 0;
	if (ours && q.skb_prog_id == ours) {
		*generic = true;
		return ours;
	}
	if (q.drv_prog_id)
		return q.drv_prog_id;
	*generic = q.skb_prog_id != 0;
	return q.skb_prog_id;
}

__u32 map_max_entries(int map_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return 0;
	return info.max_entries;
}
