// SPDX-License-Identifier: GPL-2.0
/*
 * The forwarding "limit" of tests/bench: the least an XDP router can do
 * per frame, rewrite both MAC addresses and redirect to one device, with
 * no lookup of the frame's addresses and no TTL or checksum edit.  The
 * addresses and the output ifindex are one entry of fwd_cfg, which
 * guest.sh writes with bpftool.  xdp_pass goes on the output device:
 * virtio-net transmits redirected frames only where an XDP program is
 * attached.  Loaded inside the test guest only.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

struct fwd_cfg {
	unsigned char h_dest[ETH_ALEN];
	unsigned char h_source[ETH_ALEN];
	__u32 ifindex;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fwd_cfg);
} fwd_cfg SEC(".maps");

SEC("xdp")
int xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct fwd_cfg *cfg;
	__u32 key = 0;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&fwd_cfg, &key);
	if (!cfg || !cfg->ifindex)
		return XDP_PASS;
	__builtin_memcpy(eth->h_dest, cfg->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_source, cfg->h_source, ETH_ALEN);
	return bpf_redirect(cfg->ifindex, 0);
}

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
