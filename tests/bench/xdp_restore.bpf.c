// SPDX-License-Identifier: GPL-2.0
/*
 * tests/bench/classify's harness for programs that edit the frame (the
 * xdpoff program forwarding a flowtable flow NATs it and decrements its
 * TTL): BPF_PROG_TEST_RUN runs a program R times on the same buffer, so
 * each run first writes the frame back from the template, then tail-calls
 * the program under test.  classify counts the harness alone (a tail
 * call to xdp_restore_drop, which returns at once) and subtracts it.
 * Loaded inside the test guest only.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* BENCH_FRAME_LEN of frame.h (userspace only): classify checks the size */
#define BENCH_FRAME_LEN	60

char LICENSE[] SEC("license") = "GPL";

struct frame {
	unsigned char	b[BENCH_FRAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct frame);
} restore_frame SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} restore_next SEC(".maps");

SEC("xdp")
int xdp_restore(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct frame *t;
	__u32 zero = 0;

	if (data + BENCH_FRAME_LEN > data_end)
		return XDP_ABORTED;
	t = bpf_map_lookup_elem(&restore_frame, &zero);
	if (!t)
		return XDP_ABORTED;
	__builtin_memcpy(data, t->b, BENCH_FRAME_LEN);
	bpf_tail_call(ctx, &restore_next, 0);
	return XDP_ABORTED;
}

SEC("xdp")
int xdp_restore_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}
