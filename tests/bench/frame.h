/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/bench: the benchmark frame, as pktgen sends it in tests/bench/
 * guest.sh: 60 bytes (64 on the wire with the FCS), IPv4 UDP
 * 198.18.0.1:9 -> 198.18.0.2:9 (RFC 2544 benchmarking range).
 */
#ifndef __XDPOFF_BENCH_FRAME_H
#define __XDPOFF_BENCH_FRAME_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>

#define BENCH_SADDR	0xc6120001	/* 198.18.0.1 */
#define BENCH_DADDR	0xc6120002	/* 198.18.0.2 */
#define BENCH_PORT	9
#define BENCH_FRAME_LEN	60

static const unsigned char bench_smac[ETH_ALEN] = { 0x52, 0x54, 0, 0, 0, 0x00 };

static inline void bench_frame(unsigned char *buf, const unsigned char *dmac)
{
	struct ethhdr *eth = (void *)buf;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *uh = (void *)(iph + 1);
	unsigned int sum = 0, i;

	memset(buf, 0, BENCH_FRAME_LEN);
	memcpy(eth->h_dest, dmac, ETH_ALEN);
	memcpy(eth->h_source, bench_smac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->ttl = 64;
	iph->protocol = IPPROTO_UDP;
	iph->tot_len = htons(BENCH_FRAME_LEN - sizeof(*eth));
	iph->saddr = htonl(BENCH_SADDR);
	iph->daddr = htonl(BENCH_DADDR);
	for (i = 0; i < sizeof(*iph) / 2; i++)
		sum += ((unsigned short *)iph)[i];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	iph->check = ~sum;
	uh->source = htons(BENCH_PORT);
	uh->dest = htons(BENCH_PORT);
	uh->len = htons(BENCH_FRAME_LEN - sizeof(*eth) - sizeof(*iph));
}

/* Refuse to load BPF programs anywhere but in the test guest. */
static inline int bench_in_guest(void)
{
	const char *vm = getenv("XDPOFF_VM");

	return vm && !strcmp(vm, "1") && !access("/run/xdpoff-vm", F_OK);
}

#endif
