/*
 * launch.c - a2a-launch: like mpirun on one machine. Starts a coordinator
 * and W workers on free loopback ports from a generated YAML, runs W*R
 * copies of PROGRAM with A2A_WORKER_URL, A2A_RANK, A2A_WORLD_SIZE and
 * A2A_COORDINATOR_URL set, prefixes their output with the rank, exits with
 * the first non-zero status, and leaves nothing running.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 1100
#define LINE_MAX_LEN 4096

typedef struct {
    pid_t pid;
    int fd;         /* its stdout+stderr, or -1 when closed */
    char label[48]; /* output prefix */
    int quiet;      /* service: print only when the launch fails or A2A_LAUNCH_VERBOSE */
    char buf[LINE_MAX_LEN];
    size_t len;
    int status; /* exit status once reaped */
    int reaped;
    char url[300]; /* services: what they print on "listening on" */
} proc;

static proc procs[MAX_PROCS];
static int nprocs;
static volatile sig_atomic_t interrupted;
static char tmpdir[PATH_MAX];
static int verbose;

static void
on_signal(int sig)
{
    interrupted = sig;
}

static int
free_ports(int n, int *ports)
{
    int fds[64];
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof(a)) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a, &len) != 0)
            return -1;
        ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}

/* sibling finds tool next to this executable, else leaves it to PATH. */
static void
sibling(char *out, size_t len, const char *tool)
{
    char self[PATH_MAX / 2];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(out, len, "%s/../%s/%s", self,
                     strcmp(tool, "a2a-worker") == 0 ? "worker" : "coordinator", tool);
            if (access(out, X_OK) == 0)
                return;
            snprintf(out, len, "%s/%s", self, tool);
            if (access(out, X_OK) == 0)
                return;
        }
    }
    snprintf(out, len, "%s", tool);
}

static proc *
spawn(char *const argv[], char *const env[], const char *label, int quiet)
{
    int p[2];
    proc *pr;
    if (nprocs >= MAX_PROCS || pipe2(p, O_CLOEXEC) != 0)
        return NULL;
    pr = &procs[nprocs++];
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->label, sizeof(pr->label), "%s", label);
    pr->quiet = quiet;
    pr->pid = fork();
    if (pr->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives the launcher */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        dup2(p[1], 1);
        dup2(p[1], 2);
        for (int i = 0; env != NULL && env[i] != NULL; i++)
            putenv(env[i]);
        execvp(argv[0], argv);
        fprintf(stderr, "a2a-launch: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    pr->fd = p[0];
    if (pr->pid < 0) {
        close(p[0]);
        nprocs--;
        return NULL;
    }
    return pr;
}

static void
emit(proc *p, const char *line, int failing)
{
    if (strncmp(line, "listening on ", 13) == 0 && p->url[0] == '\0') {
        sscanf(line + 13, "%299s", p->url);
        if (p->quiet)
            return;
    }
    if (!p->quiet || verbose || failing)
        printf("[%s] %s\n", p->label, line);
}

/* pump reads what is ready on the processes' pipes for up to ms milliseconds. */
static void
pump(int ms, int failing)
{
    struct pollfd fds[MAX_PROCS];
    int map[MAX_PROCS], n = 0;
    for (int i = 0; i < nprocs; i++)
        if (procs[i].fd >= 0) {
            fds[n] = (struct pollfd){.fd = procs[i].fd, .events = POLLIN};
            map[n++] = i;
        }
    if (n == 0) {
        if (ms > 0)
            usleep((useconds_t)ms * 1000);
        return;
    }
    if (poll(fds, (nfds_t)n, ms) <= 0)
        return;
    for (int k = 0; k < n; k++) {
        proc *p = &procs[map[k]];
        ssize_t got;
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        got = read(p->fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
        if (got <= 0) {
            if (p->len > 0) {
                p->buf[p->len] = '\0';
                emit(p, p->buf, failing);
                p->len = 0;
            }
            close(p->fd);
            p->fd = -1;
            continue;
        }
        p->len += (size_t)got;
        char *start = p->buf, *nl;
        while ((nl = memchr(start, '\n', p->len - (size_t)(start - p->buf))) != NULL) {
            *nl = '\0';
            emit(p, start, failing);
            start = nl + 1;
        }
        p->len -= (size_t)(start - p->buf);
        memmove(p->buf, start, p->len);
        if (p->len == sizeof(p->buf) - 1) { /* a line too long: cut it */
            p->buf[p->len] = '\0';
            emit(p, p->buf, failing);
            p->len = 0;
        }
    }
}

static void
reap(void)
{
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
        for (int i = 0; i < nprocs; i++)
            if (procs[i].pid == pid) {
                procs[i].reaped = 1;
                procs[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
}

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* stop_range sends SIGTERM to procs [from, to), then SIGKILL to those still there after ms. */
static void
stop_range(int from, int to, int ms)
{
    int64_t end = now_ms() + ms;
    for (int i = from; i < to; i++)
        if (!procs[i].reaped)
            kill(procs[i].pid, SIGTERM);
    for (;;) {
        int left = 0;
        reap();
        for (int i = from; i < to; i++)
            left += !procs[i].reaped;
        if (left == 0)
            break;
        if (now_ms() >= end) {
            for (int i = from; i < to; i++)
                if (!procs[i].reaped)
                    kill(procs[i].pid, SIGKILL);
            end = now_ms() + 5000;
        }
        pump(20, 0);
    }
    pump(0, 0);
}

/* wait_url waits until service p printed its URL; 0, or -1 when it died or took too long. */
static int
wait_url(proc *p, int ms, int show)
{
    int64_t end = now_ms() + ms;
    while (p->url[0] == '\0' && !interrupted) {
        reap();
        if (p->reaped || now_ms() >= end)
            return -1;
        pump(20, show);
    }
    return p->url[0] ? 0 : -1;
}

static const char *token_file; /* --token-file: security.token_file of the cluster */

/* socket_path names worker w's local socket: in tmpdir, or in /tmp when tmpdir is too long. */
static void
socket_path(char *out, size_t len, int w)
{
    if (strlen(tmpdir) + 16 <= 107)
        snprintf(out, len, "%s/w%d.sock", tmpdir, w);
    else
        snprintf(out, len, "/tmp/a2a-launch-%d-w%d.sock", (int)getpid(), w);
}

static int
write_config(const char *path, int workers, int rpw, const int *ports)
{
    char sock[PATH_MAX];

    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "# generated by a2a-launch\ncoordinator:\n  url: tcp://127.0.0.1:%d\n", ports[0]);
    if (token_file != NULL)
        fprintf(f, "security:\n  token_file: \"%s\"\n", token_file);
    fprintf(f, "workers:\n");
    for (int w = 0; w < workers; w++) {
        socket_path(sock, sizeof(sock), w);
        fprintf(f,
                "  - name: w%d\n    url: tcp://127.0.0.1:%d\n    data_url: tcp://127.0.0.1:%d\n"
                "    socket: \"%s\"\n    ranks: %d\n",
                w, ports[1 + 2 * w], ports[2 + 2 * w], sock, rpw);
    }
    return fclose(f);
}

/* start_services starts the coordinator and the workers; quiet: no message on failure. */
static int
start_services(int workers, char *cfg, int quiet)
{
    char coord[PATH_MAX], worker[PATH_MAX], name[32], label[48];
    char *loglevel = getenv("A2A_LOG_LEVEL") ? NULL : "A2A_LOG_LEVEL=warn";
    char *env[] = {loglevel, NULL};
    proc *p;

    sibling(coord, sizeof(coord), "a2a-coordinator");
    sibling(worker, sizeof(worker), "a2a-worker");
    char *cargv[] = {coord, "--config", cfg, NULL};
    if ((p = spawn(cargv, env, "coordinator", 1)) == NULL || wait_url(p, 10000, !quiet) != 0) {
        if (!quiet)
            fprintf(stderr, "a2a-launch: the coordinator (%s) did not start\n", coord);
        return -1;
    }
    for (int w = 0; w < workers; w++) {
        snprintf(name, sizeof(name), "w%d", w);
        snprintf(label, sizeof(label), "worker %s", name);
        char *wargv[] = {worker, "--config", cfg, "--name", name, NULL};
        if ((p = spawn(wargv, env, label, 1)) == NULL) {
            fprintf(stderr, "a2a-launch: cannot start worker %s\n", name);
            return -1;
        }
    }
    for (int w = 0; w < workers; w++)
        if (wait_url(&procs[1 + w], 10000, !quiet) != 0) {
            if (!quiet)
                fprintf(stderr, "a2a-launch: worker w%d (%s) did not start\n", w, worker);
            return -1;
        }
    return 0;
}

static int
run_ranks(int workers, int rpw, char **prog, int grace_ms)
{
    int first = nprocs, world = workers * rpw, status = 0;
    int64_t fail_at = 0;
    char label[16];

    for (int r = 0; r < world; r++) {
        char e1[350], e2[40], e3[40], e4[350], e5[PATH_MAX + 32];
        snprintf(e1, sizeof(e1), "A2A_WORKER_URL=%s", procs[1 + r / rpw].url);
        snprintf(e2, sizeof(e2), "A2A_RANK=%d", r);
        snprintf(e3, sizeof(e3), "A2A_WORLD_SIZE=%d", world);
        snprintf(e4, sizeof(e4), "A2A_COORDINATOR_URL=%s", procs[0].url);
        snprintf(e5, sizeof(e5), "A2A_TOKEN_FILE=%s", token_file ? token_file : "");
        char *env[] = {e1, e2, e3, e4, token_file ? e5 : NULL, NULL};
        snprintf(label, sizeof(label), "%d", r);
        if (spawn(prog, env, label, 0) == NULL) {
            fprintf(stderr, "a2a-launch: cannot start rank %d\n", r);
            return 1;
        }
    }
    for (;;) {
        int left = 0;
        reap();
        for (int i = first; i < nprocs; i++) {
            left += !procs[i].reaped;
            if (procs[i].reaped && procs[i].status != 0 && status == 0) {
                status = procs[i].status;
                fail_at = now_ms();
            }
        }
        if (left == 0)
            break;
        if (interrupted || (status != 0 && now_ms() - fail_at > grace_ms)) {
            if (!interrupted)
                fprintf(stderr, "a2a-launch: a rank failed with status %d: stopping the others\n",
                        status);
            stop_range(first, nprocs, 2000);
            break;
        }
        pump(50, status != 0);
    }
    for (int64_t end = now_ms() + 2000; now_ms() < end;) { /* drain what they printed */
        int open = 0;
        for (int i = first; i < nprocs; i++)
            open += procs[i].fd >= 0;
        if (open == 0)
            break;
        pump(20, status != 0);
    }
    return interrupted ? 128 + interrupted : status;
}

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: a2a-launch --workers W --ranks-per-worker R [--keep DIR] -- PROGRAM ARGS...\n"
            "\n"
            "Runs W*R copies of PROGRAM as the ranks of a local cluster: a coordinator and\n"
            "W workers on free loopback ports. Each rank gets A2A_WORKER_URL, A2A_RANK,\n"
            "A2A_WORLD_SIZE and A2A_COORDINATOR_URL; its output is prefixed with [RANK].\n"
            "  --workers W            number of workers (1..64)\n"
            "  --ranks-per-worker R   ranks on each worker (1..1024/W)\n"
            "  --keep DIR             write the generated cluster YAML to DIR/cluster.yaml\n"
            "  --token-file FILE      protect the cluster with this shared secret\n"
            "                         (security.token_file); ranks get A2A_TOKEN_FILE\n"
            "\n"
            "Exits with the first non-zero status of a rank (128+N for a signal), after\n"
            "giving the others A2A_LAUNCH_GRACE_MS (default 3000) to finish; stops\n"
            "everything it started, also on Ctrl-C. A2A_LAUNCH_VERBOSE=1 shows the\n"
            "services' logs.\n");
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {{"workers", required_argument, NULL, 'w'},
                                         {"ranks-per-worker", required_argument, NULL, 'r'},
                                         {"keep", required_argument, NULL, 'k'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int workers = 0, rpw = 0, ch, status = 1, ports[1 + 2 * 64];
    const char *keep = NULL, *grace = getenv("A2A_LAUNCH_GRACE_MS");
    char cfg[PATH_MAX + 32];
    struct sigaction sa = {.sa_handler = on_signal};

    while ((ch = getopt_long(argc, argv, "+w:r:k:t:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'w': workers = atoi(optarg); break;
        case 'r': rpw = atoi(optarg); break;
        case 'k': keep = optarg; break;
        case 't': token_file = realpath(optarg, NULL); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (workers < 1 || workers > 64 || rpw < 1 || workers * rpw > 1024 || optind >= argc) {
        usage(stderr);
        return 2;
    }
    verbose = getenv("A2A_LAUNCH_VERBOSE") != NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (keep != NULL)
        snprintf(tmpdir, sizeof(tmpdir), "%s", keep);
    else if (snprintf(tmpdir, sizeof(tmpdir), "%s/a2a-launch.XXXXXX",
                      getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") <= 0 ||
             mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "a2a-launch: cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    snprintf(cfg, sizeof(cfg), "%s/cluster.yaml", tmpdir);
    /* A free port can be taken by someone else before a service binds it: try again. */
    for (int attempt = 0; attempt < 5 && !interrupted; attempt++) {
        if (free_ports(1 + 2 * workers, ports) != 0 ||
            write_config(cfg, workers, rpw, ports) != 0) {
            fprintf(stderr, "a2a-launch: cannot write %s: %s\n", cfg, strerror(errno));
            break;
        }
        if (start_services(workers, cfg, attempt < 4) == 0) {
            status = run_ranks(workers, rpw, argv + optind, grace ? atoi(grace) : 3000);
            break;
        }
        stop_range(0, nprocs, 5000);
        nprocs = 0;
    }
    if (interrupted && status == 1)
        status = 128 + interrupted;
    stop_range(0, nprocs, 5000);
    for (int w = 0; w < workers; w++) { /* a worker that was killed left its socket file */
        char sock[PATH_MAX];
        socket_path(sock, sizeof(sock), w);
        unlink(sock);
    }
    if (keep == NULL) {
        unlink(cfg);
        rmdir(tmpdir);
    }
    return status;
}
