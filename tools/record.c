// SPDX-License-Identifier: MIT
/* deferstack record: the top-level flow (open, synthesize, poll and
 * drain, finish the file or windows) and the command it runs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"


/* the signal (SIGINT, SIGTERM, SIGHUP) that asked the recording to stop,
 * and with --switch-output a SIGHUP or SIGUSR2 that asked for a new window;
 * the handler only sets them, the loop in do_record() acts on them */
static volatile sig_atomic_t stop_req, switch_req, windows;

static void on_signal(int sig)
{
	if (windows && (sig == SIGHUP || sig == SIGUSR2))
		switch_req = 1;
	else
		stop_req = sig;
}

static int start_child(struct rec *r)
{
	/* both CLOEXEC: the command inherits neither; a successful exec
	 * closes exec_pipe, a failed one writes its errno there */
	if (pipe2(r->go_pipe, O_CLOEXEC))
		return -errno;
	if (pipe2(r->exec_pipe, O_CLOEXEC)) {
		int err = -errno;

		close(r->go_pipe[0]);
		close(r->go_pipe[1]);
		return err;
	}
	r->child = fork();
	if (r->child < 0)
		return -errno;
	if (r->child == 0) {
		char c;
		int e;

		close(r->go_pipe[1]);
		close(r->exec_pipe[0]);
		/* -o -: the recording owns standard output; the command's
		 * output goes to standard error (as perf does) */
		if (!strcmp(r->o.out, "-") && dup2(2, 1) < 0)
			_exit(126);
		if (read(r->go_pipe[0], &c, 1) != 1)
			_exit(126);	/* the recorder gave up */
		/* SIGPIPE and SIGXFSZ as deferstack found them, not ignored */
		restore_write_signals();
		execvp(r->o.cmd[0], r->o.cmd);
		e = errno;
		/* the parent reads it; if that fails, it sees exit 127 */
		if (write(r->exec_pipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(r->go_pipe[0]);
	close(r->exec_pipe[1]);
	return 0;
}

/* Let the command exec; 0 once it runs, else its exec errno in exec_errno. */
static int release_child(struct rec *r)
{
	ssize_t n;
	int e = 0;

	if (write(r->go_pipe[1], "x", 1) != 1)
		return -errno;
	close(r->go_pipe[1]);
	do
		n = read(r->exec_pipe[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(r->exec_pipe[0]);
	if (n == sizeof(e)) {
		r->exec_errno = e ? e : ENOEXEC;
		waitpid(r->child, &r->status, 0);
		r->reaped = true;
	}
	return 0;
}

/* Stop the command record started: SIGTERM (as perf does), then SIGKILL
 * if it is still there after 2 s; reaped either way, no orphan. */
static void stop_child(struct rec *r)
{
	for (int i = 0; i < 200; i++) {
		pid_t p;

		if (i == 0)
			kill(r->child, SIGTERM);
		p = waitpid(r->child, &r->status, WNOHANG);
		if (p == r->child || (p < 0 && errno != EINTR)) {
			r->reaped = p == r->child;
			return;
		}
		usleep(10000);
	}
	kill(r->child, SIGKILL);
	while (waitpid(r->child, &r->status, 0) < 0 && errno == EINTR)
		;
	r->reaped = true;
}

static void cleanup(struct rec *r)
{
	close_events(r);
	tab_free_strs(&r->objs);
	tab_free(&r->kips);
	maps_free(r);
	kallsyms_cache_free(r);
	free(r->side.pids);
}

static int do_record(struct rec *r, const char *path, int argc, char **argv)
{
	int *cpus = NULL, ncpu, err = 0;
	double t0, last_progress, last_follow;
	/* -a follows CPU hotplug, but in pipe mode, whose attrs went out first */
	bool follow = r->o.all && strcmp(path, "-");
	bool task = !r->o.all, child_done = false;
	struct pollfd *pfd = NULL;

	/*
	 * Caught before the slow start (events, synthesis of every process):
	 * a service manager's SIGHUP or a SIGUSR2 that comes early must not
	 * kill the recorder; the loop acts on them once it runs.
	 */
	windows = r->o.switch_mode != SW_NONE;
	if (windows) {
		const char *e = getenv("DEFERSTACK_TEST_SWITCH_DELAY");

		r->test_delay = e ? atof(e) : 0;
		r->test_nodrain = getenv("DEFERSTACK_TEST_SWITCH_NODRAIN") != NULL;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	if (windows)
		signal(SIGUSR2, on_signal);
	/* -a: a buffer for every present CPU, the offline ones opened later */
	ncpu = follow ? present_cpus(&cpus) : online_cpus(&cpus);
	if (ncpu < 0)
		return ncpu;
	r->bufs = calloc((size_t)ncpu, sizeof(*r->bufs));
	r->ids = calloc(r->o.nr_ev + 1, sizeof(*r->ids));
	pfd = calloc((size_t)ncpu, sizeof(*pfd));
	if (!r->bufs || !r->ids || !pfd) {
		err = -ENOMEM;
		goto out;
	}
	r->nr_bufs = (size_t)ncpu;
	for (int i = 0; i < ncpu; i++) {
		r->bufs[i].cpu = cpus[i];
		r->bufs[i].fd = -1;
	}
	if (follow && (err = mark_offline(r)))
		goto out;
	if (r->o.cmd) {
		err = start_child(r);
		if (err) {
			die_msg("cannot start '%s': %s", r->o.cmd[0], strerror(-err));
			goto out;
		}
	}
	err = open_events(r);
	if (err)
		goto out;
	r->ncpu = ncpu;
	r->argc = argc;
	r->argv = argv;
	if (r->o.switch_mode) {
		err = window_open(r);
	} else {
		err = open_output(r, path, task);
		if (!err)
			err = synth_start(r, false);
	}
	if (err && !r->w)
		goto out;
	if (err)
		goto out_w;
	if (r->o.cmd) {
		/* events enable themselves at exec (enable_on_exec) */
		err = release_child(r);
		if (err) {
			die_msg("cannot start '%s': %s", r->o.cmd[0], strerror(-err));
			goto out_w;
		}
		child_done = r->reaped;
	} else {
		for (size_t i = 0; i < r->nr_fds; i++)
			ioctl(r->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	t0 = last_progress = last_follow = now_s();
	while (!r->exec_errno) {
		double tn;

		for (int i = 0; i < ncpu; i++) {
			pfd[i].fd = r->bufs[i].fd;	/* -1 (ignored): an offline CPU */
			pfd[i].events = POLLIN;
		}
		poll(pfd, (nfds_t)ncpu, 100);
		err = read_all(r);
		if (err && windows)
			err = window_full(r, err);	/* a full disk: room or a pause */
		if (err)
			break;
		if (r->o.cmd && waitpid(r->child, &r->status, WNOHANG) == r->child) {
			child_done = r->reaped = true;
			break;
		}
		if (r->o.pid > 0 && kill(r->o.pid, 0) < 0 && errno == ESRCH)
			break;
		tn = now_s();
		if (stop_req || (r->o.duration > 0 && tn - t0 >= r->o.duration))
			break;
		/* once a second: the rings were just read, an offline CPU's too */
		if (follow && tn - last_follow >= 1.0) {
			last_follow = tn;
			err = follow_cpus(r);
			if (err)
				break;
		}
		if (windows && r->paused) {
			switch_req = 0;	/* no window to switch */
			err = window_resume(r, tn);
			if (err)
				break;
		} else if (windows && window_due(r, tn, switch_req)) {
			/* the rings were just drained into the old window */
			switch_req = 0;
			err = window_full(r, window_switch(r));
			if (err)
				break;
		}
		if (windows && r->prev.w) {
			err = window_full(r, window_tick(r, tn));
			if (err)
				break;
		}
		if (tn - last_progress >= (isatty(2) ? 2.0 : 10.0)) {
			fprintf(stderr, PROG ": recording %.0f s: %" PRIu64 " sample%s, %" PRIu64
				" deferred record%s, %.1f MB\n", tn - t0, r->nr_samples,
				ds_s(r->nr_samples), r->nr_deferred, ds_s(r->nr_deferred),
				r->bytes / 1048576.0);
			last_progress = tn;
		}
	}
	for (size_t i = 0; i < r->nr_fds; i++)
		ioctl(r->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (!err)
		err = read_all(r);
	if (err && windows)
		err = window_full(r, err);
	if (stop_req == SIGHUP && !err)
		die_msg("hangup (SIGHUP): recording stopped%s",
			r->o.cmd && !child_done ? ", stopping the command" : "");
	if (r->o.cmd && !child_done) {
		char then[300];

		snprintf(then, sizeof(then), ", stopping '%s' (pid %d)", r->o.cmd[0],
			 (int)r->child);
		say_werr(r, then);
		stop_child(r);
		child_done = true;
	}
	if (!err && !r->o.switch_mode)
		err = save_kallsyms(r, r->o.out);
	if (!err && !r->o.switch_mode)
		side_save(&r->side, r->o.out);
out_w:
	if (r->o.switch_mode) {
		err = window_finish(r, err);
	} else {
		int e2 = close_output(r, ncpu, argc, argv);

		if (!err && e2)
			err = write_err(r, e2);
	}
	if (r->o.pid > 0)
		say_werr(r, ", the attached process left running");
	else
		say_werr(r, NULL);
out:
	if (r->o.cmd && r->child > 0 && err && !child_done) {
		kill(r->child, SIGKILL);
		waitpid(r->child, NULL, 0);
	}
	free(cpus);
	free(pfd);
	return err;
}

/* The record command on r; its caller frees what the options hold. */
static int record(struct rec *r, int argc, char **argv)
{
	struct ds_pipeline_summary st;
	char tmp[4096];
	const char *path;
	bool summary;
	int ret;

	ret = parse_record_opts(argc, argv, &r->o);
	if (ret)
		return ret > 0 ? 0 : 2;
	/* the user's options first (user space only if the kernel is not
	 * allowed), then the defer bit on its own */
	if (check_attrs(&r->o))
		return 1;
	if (r->o.mode != MODE_CLASSIC) {
		ret = probe_defer(r->o.user_only);
		if (ret < 0) {
			open_error(ret, NULL, NULL, 0, -1);
			return 1;
		}
		if (ret == 0 && r->o.mode == MODE_DEFER) {
			die_msg("--mode defer: this kernel does not support deferred user "
				"callchains (perf_event_open with defer_callchain: EINVAL); use "
				"--mode auto or --mode classic");
			return 1;
		}
		if (ret == 0)
			fprintf(stderr, PROG ": kernel lacks deferred user callchains; falling "
				"back to classic callchains\n");
		r->defer = ret == 1;
	}
	if (!strcmp(r->o.out, "-") && isatty(1)) {
		die_msg("record -o -: standard output is a terminal; pipe it to a reader "
			"(| deferstack report -i -) or redirect it to a file");
		return 1;
	}
	if (r->o.pprof_dir && pprof_dir_check(r->o.pprof_dir))
		return 1;
	path = r->o.out;
	if (r->o.stitched && is_special(r->o.out)) {
		/* the raw records go to a temp file, converted to stdout (or
		 * to a device: no /dev/null.raw.tmp) */
		const char *td = getenv("TMPDIR");
		int fd;

		snprintf(tmp, sizeof(tmp), "%s/deferstack-raw-XXXXXX", td && *td ? td : "/tmp");
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0) {
			die_msg("cannot create a temporary file %s: %s", tmp, strerror(errno));
			return 1;
		}
		close(fd);
		path = tmp;
	} else if (r->o.stitched) {
		snprintf(tmp, sizeof(tmp), "%s.raw.tmp", r->o.out);
		path = tmp;
	}
	ret = do_record(r, path, argc, argv);
	cleanup(r);
	if (ret) {
		if (r->o.stitched)
			unlink(path);
		return 1;
	}
	if (r->exec_errno) {
		/* like env(1): 127 not found, 126 found but not runnable */
		die_msg("cannot run '%s': %s", r->o.cmd[0], strerror(r->exec_errno));
		if (r->o.stitched)
			unlink(path);
		return r->exec_errno == ENOENT ? 127 : 126;
	}
	if (r->o.switch_mode) {
		/* each window was said when it was closed */
		window_summary(r);
		goto status;
	}
	/* a stream or a device (-o /dev/null) cannot be read back: no summary */
	summary = !is_special(r->o.out);
	if (r->o.stitched) {
		ret = convert_file(path, r->o.out, &st);
		unlink(path);
	} else if (summary) {
		struct ds_pipeline_opts po = { .sz = sizeof(po) };
		struct ds_pipeline *p = NULL;

		ret = pipeline_run(&p, path, &po);
		st = pipeline_stats(p);
		ds_pipeline_free(p);
	}
	if (ret)
		return 1;
	fprintf(stderr, PROG ": wrote %s (%s mode%s, %" PRIu64 " record%s, %.1f KiB)\n",
		strcmp(r->o.out, "-") ? r->o.out : "standard output (pipe mode)",
		r->defer ? "defer" : "classic", r->o.stitched ? ", stitched" : "",
		r->nr_records, ds_s(r->nr_records), r->bytes / 1024.0);
	if (summary) {
		fprintf(stderr, PROG ": ");
		print_summary(stderr, &st);
	}
	/* the command's status, as perf and shells pass it on */
status:
	if (r->o.cmd && r->reaped && WIFEXITED(r->status))
		return WEXITSTATUS(r->status);
	if (r->o.cmd && r->reaped && WIFSIGNALED(r->status))
		return 128 + WTERMSIG(r->status);
	return 0;
}


/* r lives here so that the parsed events are freed on every way out. */
int cmd_record(int argc, char **argv)
{
	struct rec r;
	int ret;

	memset(&r, 0, sizeof(r));
	/* a closed -o - pipe (or a file size limit) is a write error: the
	 * recording stops, the command is stopped and the reason printed */
	ignore_write_signals(true);
	ret = record(&r, argc, argv);
	free(r.o.ev);
	return ret;
}
