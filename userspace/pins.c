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
#include <xdp/libxdp.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"
#include "show.h"

#define PIN_MAP_NAME(id, name, attr, type_, key_, val_)		\
	[XDPOFF_MAPI_##id] = XDPOFF_MAP_NAME(name),
const char *const pin_names[NR_PINS] = {
	XDPOFF_MAPS(PIN_MAP_NAME)
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

/* libxdp's view of @ifindex's XDP hook; NULL when nothing is attached. */
struct xdp_multiprog *xdp_hook(int ifindex)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);

	return !mp || libxdp_get_error(mp) ? NULL : mp;
}

/*
 * Where program @ours runs on @ifindex: directly on the hook, or as one of
 * the programs of libxdp's dispatcher there.  Returns @ours if it runs, else
 * what holds the hook (native mode first), 0 if nothing does; @w says how.
 */
__u32 xdp_attached(int ifindex, __u32 ours, struct xdp_where *w)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct xdp_multiprog *mp;
	struct xdp_program *p = NULL;

	memset(w, 0, sizeof(*w));
	if (bpf_xdp_query(ifindex, 0, &q))
		return 0;
	if (ours && (q.drv_prog_id == ours || q.skb_prog_id == ours)) {
		w->generic = q.skb_prog_id == ours;
		return ours;
	}
	if (ours && (q.drv_prog_id || q.skb_prog_id)) {
		mp = xdp_hook(ifindex);
		if (mp && !xdp_multiprog__is_legacy(mp)) {
			while ((p = xdp_multiprog__next_prog(p, mp)))
				if (xdp_program__id(p) == ours)
					break;
			if (p) {
				w->libxdp = true;
				w->run_prio = xdp_program__run_prio(p);
				w->generic = xdp_multiprog__attach_mode(mp) ==
					     XDP_MODE_SKB;
			}
		}
		xdp_multiprog__close(mp);
		if (p)
			return ours;
	}
	w->generic = !q.drv_prog_id && q.skb_prog_id;
	return q.drv_prog_id ?: q.skb_prog_id;
}

__u32 map_max_entries(int map_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return 0;
	return info.max_entries;
}
