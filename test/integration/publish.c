/*
 * Live observability: a child process runs with USLUB_PUBLISH_MS=50 and a
 * cache of its own; `uslub slabinfo PID` (table and JSON) and `uslub top
 * PID` show it while it runs, `uslub top` is driven in tmux (when tmux is
 * installed) and its screen checked, and after the child exits its files
 * are gone and the tool says so. The files are private: mode 0600.
 * Usage: integration_publish [<path of the uslub tool>] (default: the
 * build tree's, next to the test directory)
 */
#include "check.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define CACHE_NAME "publish-test-cache"

static int child_main(void)
{
	uslub_cache_t *s = uslub_cache_create(CACHE_NAME, 200, 0, 0, NULL);
	CHECK(s);
	void *p[300];
	for (int i = 0; i < 300; i++)
		CHECK((p[i] = uslub_cache_alloc(s, 0)) != NULL);
	char c;
	CHECK(read(0, &c, 1) == 1);          /* the parent says when to go */
	for (int i = 0; i < 300; i++)
		uslub_cache_free(s, p[i]);
	return 0;                             /* exit() removes the files */
}


static int count(const char *hay, const char *needle)
{
	int k = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		k++;
	return k;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child_main();
	static char toolbuf[4096];
	const char *tool = uslub_tool_path(argc == 2 ? argv[1] : NULL, toolbuf, sizeof(toolbuf));
	if (!tool) {
		printf("publish: skipped: no uslub tool next to the test\n");
		return 77;
	}

	int pipefd[2];
	CHECK(pipe(pipefd) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(pipefd[0], 0);
		close(pipefd[1]);
		setenv("USLUB_PUBLISH_MS", "50", 1);
		execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
		_exit(99);
	}
	close(pipefd[0]);
	/* Where the child publishes: <root>/uslub-<euid>/<pid>.{txt,json}. */
	char txt[4200], json[4200], cmd[8192];
	const char *root = getenv("USLUB_PUBLISH_ROOT");
	if (!root || root[0] != '/')
		root = "/dev/shm";
	snprintf(txt, sizeof(txt), "%s/uslub-%u/%d.txt", root, (unsigned)geteuid(), (int)pid);
	snprintf(json, sizeof(json), "%s/uslub-%u/%d.json", root, (unsigned)geteuid(), (int)pid);
	struct stat st;
	int waited = 0;
	while ((stat(txt, &st) || stat(json, &st)) && waited < 10000) {
		usleep(10000);
		waited += 10;
	}
	CHECK_MSG(!stat(txt, &st) && !stat(json, &st), "no published files after 10 s");
	CHECK_MSG((st.st_mode & 0777) == 0600, "%s has mode %o", json, st.st_mode & 0777);
	/* a snapshot after the allocations: the publisher's next round (a
	 * loaded machine under TSan may take more than one interval) */
	int status;
	char *out = NULL;
	snprintf(cmd, sizeof(cmd), "%s slabinfo %d", tool, (int)pid);
	for (int tries = 0; tries < 100; tries++) {
		free(out);
		out = run_command(cmd, &status);
		if (status || strstr(out, CACHE_NAME))
			break;
		usleep(100000);
	}
	CHECK_EQ(status, 0);
	CHECK_MSG(strstr(out, CACHE_NAME), "slabinfo shows no " CACHE_NAME ":\n%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s slabinfo %d --json", tool, (int)pid);
	out = run_command(cmd, &status);
	CHECK_EQ(status, 0);
	CHECK_MSG(json_valid(out), "slabinfo --json does not parse:\n%s", out);
	CHECK(strstr(out, "\"" CACHE_NAME "\""));
	free(out);
	snprintf(cmd, sizeof(cmd), "%s top %d -n 3 -d 60", tool, (int)pid);
	out = run_command(cmd, &status);
	CHECK_EQ(status, 0);
	CHECK_EQ(count(out, CACHE_NAME), 3);
	CHECK_EQ(count(out, "uslub top"), 3);
	free(out);

	bool tmux = system("command -v tmux >/dev/null 2>&1") == 0;
	if (tmux) {
		char sess[64];
		snprintf(sess, sizeof(sess), "uslub-test-%d", (int)getpid());
		snprintf(cmd, sizeof(cmd),
			 "tmux new-session -d -s %s -x 160 -y 50 '%s top %d -d 100' 2>/dev/null",
			 sess, tool, (int)pid);
		CHECK_EQ(system(cmd), 0);
		char *screen = NULL;
		for (int tries = 0; tries < 50; tries++) {
			usleep(100000);
			snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s 2>/dev/null", sess);
			free(screen);
			screen = run_command(cmd, &status);
			if (strstr(screen, CACHE_NAME) && strstr(screen, "uslub top"))
				break;
		}
		snprintf(cmd, sizeof(cmd), "tmux kill-session -t %s 2>/dev/null", sess);
		CHECK(system(cmd) == 0);
		CHECK_MSG(strstr(screen, CACHE_NAME) && strstr(screen, "uslub top"),
			  "tmux screen of uslub top:\n%s", screen);
		CHECK_EQ(count(screen, "uslub top"), 1);   /* cleared, not scrolled */
		free(screen);
	}

	CHECK(write(pipefd[1], "x", 1) == 1);
	int wst;
	CHECK(waitpid(pid, &wst, 0) == pid);
	CHECK_MSG(WIFEXITED(wst) && WEXITSTATUS(wst) == 0, "child status %d", wst);
	CHECK_MSG(stat(txt, &st) && stat(json, &st), "files left after exit");
	snprintf(cmd, sizeof(cmd), "%s slabinfo %d 2>/dev/null", tool, (int)pid);
	out = run_command(cmd, &status);
	CHECK_EQ(status, 1);
	free(out);
	printf("publish: ok: slabinfo, --json, top%s, files removed at exit\n",
	       tmux ? ", top in tmux" : " (tmux not installed: its check skipped)");
	return 0;
}
