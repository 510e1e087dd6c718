// SPDX-License-Identifier: GPL-2.0
/*
 * The "limit" of tests/bench: the cheapest XDP program there is, dropping
 * every frame without reading it (as `xdp-bench drop -p no-touch`, without
 * its per-CPU counter).  Loaded inside the test guest only.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}
