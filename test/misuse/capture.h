/*
 * What the misuse tier's api_ tests of reports share: a grace-period
 * provider of their own (uslub_gp_ops: a queue run by rcu_barrier, so a
 * test decides when kfree_rcu's callbacks run), and stderr captured into
 * a temporary file between start() and stop(), checked by expect().
 */
#ifndef USLUB_TEST_MISUSE_CAPTURE_H
#define USLUB_TEST_MISUSE_CAPTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct uslub_rcu_head *queue;

static void gp_call(struct uslub_rcu_head *head, void (*func)(struct uslub_rcu_head *head))
{
	head->func = func;
	head->next = queue;
	queue = head;
}

static void gp_synchronize(void)
{
}

static void gp_barrier(void)
{
	while (queue) {
		struct uslub_rcu_head *h = queue;
		queue = h->next;
		h->func(h);
	}
}

static const struct uslub_gp_ops ops = {
	.name = "misuse test", .call = gp_call, .synchronize = gp_synchronize,
	.rcu_barrier = gp_barrier,
};

static int failed, saved_err = -1;   /* failed: an expect() did not hold */
static char errbuf[16384];
static FILE *capf;

/* stderr into a temporary file until stop(), then its text in errbuf */
static void start(void)
{
	fflush(stderr);
	capf = tmpfile();
	if (!capf) {
		perror("tmpfile");
		exit(1);
	}
	saved_err = dup(2);
	dup2(fileno(capf), 2);
}

static const char *stop(void)
{
	dup2(saved_err, 2);
	close(saved_err);
	rewind(capf);
	size_t n = fread(errbuf, 1, sizeof(errbuf) - 1, capf);
	errbuf[n] = '\0';
	fclose(capf);
	return errbuf;
}

static void expect(const char *what, const char *text, const char *want, bool present)
{
	if (!!strstr(text, want) != present) {
		fprintf(stderr, "FAIL: %s: %s \"%s\"\n--- stderr:\n%s---\n", what,
			present ? "no" : "unwanted", want, text);
		failed = 1;
	}
}

#endif
