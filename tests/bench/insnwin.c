// SPDX-License-Identifier: GPL-2.0
/*
 * insnwin: one measurement window of make bench's section insn, run
 * inside the guest (tests/bench/guest.sh, insn_window).
 *
 * Under QEMU's -icount shift=0 the guest clock advances 1 ns per
 * instruction the vCPU executes; the kernel's NO_HZ idle accounting
 * (/proc/timer_list: idle_sleeptime and iowait_sleeptime, in ns) says how
 * much of that clock the CPU slept.  The rest, over the frames DEV
 * received, is the instructions per frame.  Started before the window
 * (fork and exec are outside it), the window holds two reads of
 * /proc/timer_list and of DEV's rx_packets and one nanosleep: a few
 * hundred thousand instructions, against the 10^9 of a 1 s window (a
 * shell's `read` loop takes a byte per system call: tens of millions).
 *
 * Output: "ns=W frames=N busy_ns=B": the window's guest time, DEV's
 * frames, the non-idle time (all CPUs together: the guest of section insn
 * has one).
 *
 * Usage: insnwin SECONDS DEV
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

static int slurp(const char *path, char *out, size_t max)
{
	size_t n = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while (n < max - 1 && (r = read(fd, out + n, max - 1 - n)) > 0)
		n += r;
	close(fd);
	out[n] = '\0';
	return r < 0 ? -1 : (int)n;
}

struct snap {
	unsigned long long now, idle, rx;
};

static int take(struct snap *s, const char *rx_path)
{
	char *p;

	if (slurp("/proc/timer_list", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "now at ");
	if (!p)
		return -1;
	s->now = strtoull(p + 7, NULL, 10);
	s->idle = 0;
	for (p = buf; (p = strstr(p, "_sleeptime")); p++) {
		/* "  .idle_sleeptime : N nsecs", "  .iowait_sleeptime: N nsecs" */
		if (strncmp(p - 5, ".idle", 5) && strncmp(p - 7, ".iowait", 7))
			continue;
		s->idle += strtoull(strchr(p, ':') + 1, NULL, 10);
	}
	if (slurp(rx_path, buf, 64) < 0)
		return -1;
	s->rx = strtoull(buf, NULL, 10);
	return 0;
}

int main(int argc, char **argv)
{
	struct snap a, b;
	struct timespec ts;
	char rx_path[256];
	double secs;

	if (argc != 3 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: insnwin SECONDS DEV\n");
		return 2;
	}
	snprintf(rx_path, sizeof(rx_path),
		 "/sys/class/net/%s/statistics/rx_packets", argv[2]);
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - ts.tv_sec) * 1e9);
	if (take(&a, rx_path)) {
		perror("insnwin: /proc/timer_list or rx_packets");
		return 1;
	}
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	if (take(&b, rx_path)) {
		perror("insnwin: /proc/timer_list or rx_packets");
		return 1;
	}
	printf("ns=%llu frames=%llu busy_ns=%llu\n", b.now - a.now,
	       b.rx - a.rx, (b.now - a.now) - (b.idle - a.idle));
	return 0;
}
