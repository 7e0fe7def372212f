// SPDX-License-Identifier: GPL-2.0
/*
 * as_service CMD [ARG...]: run CMD with the credentials
 * deferstack-profiler.service gives the recorder: a user that is not root
 * (65534, nobody), CAP_PERFMON as its only capability (ambient, and the
 * only one in the bounding set), no new privileges. systemd does not run in
 * the guest; this is the part of the unit that decides what the recorder
 * can see.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

static int die(const char *what)
{
	fprintf(stderr, "as_service: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	const unsigned int bit = 1u << (CAP_PERFMON - 32);

	if (argc < 2) {
		fprintf(stderr, "usage: as_service CMD [ARG...]\n");
		return 2;
	}
	/* CapabilityBoundingSet=CAP_PERFMON */
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_PERFMON && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return die("PR_CAPBSET_DROP");
	/* User=, Group=: keep the permitted set across the uid change */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(0, NULL) || setgid(65534) ||
	    setuid(65534))
		return die("user 65534");
	/* AmbientCapabilities=CAP_PERFMON: permitted, effective, inheritable, ambient */
	data[1].permitted = data[1].effective = data[1].inheritable = bit;
	if (syscall(SYS_capset, &hdr, data))
		return die("capset");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_PERFMON, 0, 0))
		return die("PR_CAP_AMBIENT_RAISE");
	/* NoNewPrivileges=yes */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return die("PR_SET_NO_NEW_PRIVS");
	execvp(argv[1], argv + 1);
	return die(argv[1]);
}
