// SPDX-License-Identifier: GPL-2.0
/*
 * tests/bench/blast: the sending half of tests/bench/feed.py, on the host.
 *
 * Usage: blast PORT < FRAMES
 *
 * Sends the frames read from stdin (60 bytes each, in turn) as UDP
 * datagrams to 127.0.0.1:PORT, the local end of the guest NIC's QEMU
 * socket backend, 64 at a time with sendmmsg(), as fast as it goes, until
 * SIGTERM or SIGINT; then prints the number of frames sent and exits 0.
 * Python's sendto() of one frame at a time could not keep the guest's
 * vCPU busy in the cheapest modes (a bare XDP_DROP at init_on_alloc=0).
 * Frames the guest cannot take are dropped in front of QEMU by the host's
 * socket buffer.  Refuses any address but the loopback one: it has none
 * to be given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define FRAME_LEN	60
#define MAX_FRAMES	4096
#define BATCH		64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static unsigned char frames[MAX_FRAMES][FRAME_LEN];
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned long long sent = 0;
	size_t n = 0, next = 0;
	long port;
	int fd, i, r;

	if (argc != 2) {
		fprintf(stderr, "usage: blast PORT < FRAMES\n");
		return 2;
	}
	port = strtol(argv[1], NULL, 10);
	if (port <= 0 || port > 65535) {
		fprintf(stderr, "blast: bad port %s\n", argv[1]);
		return 2;
	}
	while (n < MAX_FRAMES && fread(frames[n], FRAME_LEN, 1, stdin) == 1)
		n++;
	if (!n) {
		fprintf(stderr, "blast: no %d-byte frame on stdin\n", FRAME_LEN);
		return 1;
	}

	to.sin_port = htons(port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		fprintf(stderr, "blast: socket: %s\n", strerror(errno));
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	memset(msgs, 0, sizeof(msgs));
	while (!stop) {
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = frames[next];
			iov[i].iov_len = FRAME_LEN;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			next = next + 1 == n ? 0 : next + 1;
		}
		r = sendmmsg(fd, msgs, BATCH, 0);
		if (r > 0) {
			sent += r;
			/* Those not sent go first in the next batch. */
			next = (next + n - (BATCH - r) % n) % n;
		} else {
			struct timespec ts = { 0, 1000000 };

			next = (next + n - BATCH % n) % n;
			/* ECONNREFUSED after an ICMP error, ENOBUFS: go on. */
			if (r < 0 && errno != EINTR)
				nanosleep(&ts, NULL);
		}
	}
	printf("%llu\n", sent);
	return 0;
}
