/*
 * launch.c - a2a-launch: like mpirun on one machine. Starts a coordinator
 * and W workers on free loopback ports from a generated YAML, runs W*R
 * copies of PROGRAM with A2A_WORKER_URL, A2A_RANK, A2A_WORLD_SIZE,
 * A2A_LOCAL_RANK, A2A_LOCAL_SIZE and A2A_COORDINATOR_URL set, prefixes each
 * line a rank prints with its rank (stdout to stdout, stderr to stderr),
 * exits with the first non-zero status, naming the rank, and leaves nothing
 * running.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "a2a_version.h"

#define MAX_PROCS 1100
#define LINE_MAX_LEN 4096

/* one pipe from a child: its stdout or its stderr */
typedef struct {
    int fd; /* -1 when closed */
    char buf[LINE_MAX_LEN];
    size_t len;
} stream;

typedef struct {
    pid_t pid;
    stream out, err; /* printed on our stdout and stderr, each line prefixed with [label] */
    char label[48];  /* output prefix */
    int quiet;       /* service: print only when the launch fails or A2A_LAUNCH_VERBOSE=1 */
    int status;      /* exit status once reaped: the code, or 128 + the signal */
    int signo;       /* the signal that killed it, or 0 */
    int reaped;
    char url[300]; /* services: what they print on "listening on" */
} proc;

static proc procs[MAX_PROCS];
static int nprocs;
static volatile sig_atomic_t interrupted;
static char tmpdir[PATH_MAX];
static int verbose;
static int loglevel_given; /* $A2A_LOG_LEVEL names a level: the services get it */

/* the self-pipe: a signal (a child's end, SIGINT...) writes a byte, which wakes pump's poll */
static int wake_fd[2] = {-1, -1};

static void
on_signal(int sig)
{
    int saved = errno;
    if (sig != SIGCHLD)
        interrupted = sig;
    if (wake_fd[1] >= 0)
        (void)!write(wake_fd[1], "", 1);
    errno = saved;
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
    int po[2], pe[2];
    proc *pr;
    if (nprocs >= MAX_PROCS || pipe2(po, O_CLOEXEC) != 0)
        return NULL;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]), close(po[1]);
        return NULL;
    }
    pr = &procs[nprocs++];
    memset(pr, 0, sizeof(*pr));
    snprintf(pr->label, sizeof(pr->label), "%s", label);
    pr->quiet = quiet;
    pr->pid = fork();
    if (pr->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives the launcher */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        for (int i = 0; env != NULL && env[i] != NULL; i++)
            putenv(env[i]);
        execvp(argv[0], argv);
        fprintf(stderr, "a2a-launch: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    pr->out.fd = po[0];
    pr->err.fd = pe[0];
    if (pr->pid < 0) {
        close(po[0]), close(pe[0]);
        nprocs--;
        return NULL;
    }
    return pr;
}

static void
emit(proc *p, const stream *st, const char *line, int failing)
{
    if (st == &p->out && strncmp(line, "listening on ", 13) == 0 && p->url[0] == '\0') {
        sscanf(line + 13, "%299s", p->url);
        if (p->quiet)
            return;
    }
    if (p->quiet && !verbose && !failing)
        return;
    /* a service's output is a log: it goes to stderr, as the services' own stderr does */
    fprintf(st == &p->err || p->quiet ? stderr : stdout, "[%s] %s\n", p->label, line);
}

/* drain reads what is ready on one stream and emits its whole lines. */
static void
drain(proc *p, stream *st, int failing)
{
    ssize_t got = read(st->fd, st->buf + st->len, sizeof(st->buf) - 1 - st->len);
    if (got <= 0) {
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            return;
        if (st->len > 0) {
            st->buf[st->len] = '\0';
            emit(p, st, st->buf, failing);
            st->len = 0;
        }
        close(st->fd);
        st->fd = -1;
        return;
    }
    st->len += (size_t)got;
    char *start = st->buf, *nl;
    while ((nl = memchr(start, '\n', st->len - (size_t)(start - st->buf))) != NULL) {
        *nl = '\0';
        emit(p, st, start, failing);
        start = nl + 1;
    }
    st->len -= (size_t)(start - st->buf);
    memmove(st->buf, start, st->len);
    if (st->len == sizeof(st->buf) - 1) { /* a line too long: cut it */
        st->buf[st->len] = '\0';
        emit(p, st, st->buf, failing);
        st->len = 0;
    }
}

/* pump reads what is ready on the processes' pipes for up to ms milliseconds. */
static void
pump(int ms, int failing)
{
    static struct pollfd fds[2 * MAX_PROCS + 1];
    static stream *map[2 * MAX_PROCS + 1];
    static proc *owner[2 * MAX_PROCS + 1];
    int n = 0;
    if (wake_fd[0] >= 0) {
        fds[n] = (struct pollfd){.fd = wake_fd[0], .events = POLLIN};
        map[n] = NULL;
        owner[n++] = NULL;
    }
    for (int i = 0; i < nprocs; i++) {
        stream *both[2] = {&procs[i].out, &procs[i].err};
        for (int k = 0; k < 2; k++)
            if (both[k]->fd >= 0) {
                fds[n] = (struct pollfd){.fd = both[k]->fd, .events = POLLIN};
                map[n] = both[k];
                owner[n++] = &procs[i];
            }
    }
    if (n == 0) {
        if (ms > 0)
            usleep((useconds_t)ms * 1000);
        return;
    }
    if (poll(fds, (nfds_t)n, ms) <= 0)
        return;
    for (int k = 0; k < n; k++)
        if (fds[k].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (map[k] == NULL) { /* the self-pipe: empty it */
                char buf[64];
                while (read(wake_fd[0], buf, sizeof(buf)) > 0)
                    ;
            } else
                drain(owner[k], map[k], failing);
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
                procs[i].signo = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
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
    /* quiet services unless asked: a valid A2A_LOG_LEVEL, or info with A2A_LAUNCH_VERBOSE=1 */
    char *loglevel = loglevel_given ? NULL : verbose ? "A2A_LOG_LEVEL=info" : "A2A_LOG_LEVEL=warn";
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

/* say_failed names the first rank that failed, and how. */
static void
say_failed(const proc *p, int stopping)
{
    if (p->signo != 0)
        fprintf(stderr, "a2a-launch: rank %s was killed by signal %d (%s), status %d%s\n", p->label,
                p->signo, strsignal(p->signo), p->status, stopping ? ": stopping the others" : "");
    else
        fprintf(stderr, "a2a-launch: rank %s exited with status %d%s\n", p->label, p->status,
                stopping ? ": stopping the others" : "");
}

/* rank_env fills the environment of rank r (the strings live in e, NENV of them). */
#define NENV 7
static void
rank_env(char e[NENV][PATH_MAX + 32], char **env, int r, int rpw, int world)
{
    snprintf(e[0], sizeof(e[0]), "A2A_WORKER_URL=%s", procs[1 + r / rpw].url);
    snprintf(e[1], sizeof(e[1]), "A2A_RANK=%d", r);
    snprintf(e[2], sizeof(e[2]), "A2A_WORLD_SIZE=%d", world);
    snprintf(e[3], sizeof(e[3]), "A2A_LOCAL_RANK=%d", r % rpw);
    snprintf(e[4], sizeof(e[4]), "A2A_LOCAL_SIZE=%d", rpw);
    snprintf(e[5], sizeof(e[5]), "A2A_COORDINATOR_URL=%s", procs[0].url);
    snprintf(e[6], sizeof(e[6]), "A2A_TOKEN_FILE=%s", token_file ? token_file : "");
    for (int i = 0; i < NENV; i++)
        env[i] = e[i];
    env[NENV - 1] = token_file ? e[NENV - 1] : NULL;
    env[NENV] = NULL;
}

static int
run_ranks(int workers, int rpw, char **prog, int grace_ms)
{
    int first = nprocs, world = workers * rpw, status = 0, said = 0;
    int64_t fail_at = 0;
    proc *failed = NULL;
    static char e[NENV][PATH_MAX + 32];
    char *env[NENV + 1], label[16];

    for (int r = 0; r < world; r++) {
        rank_env(e, env, r, rpw, world);
        snprintf(label, sizeof(label), "%d", r);
        if (spawn(prog, env, label, 0) == NULL) {
            fprintf(stderr, "a2a-launch: cannot start rank %d: %s\n", r, strerror(errno));
            return 1;
        }
    }
    for (;;) {
        int left = 0;
        reap();
        for (int i = first; i < nprocs; i++) {
            left += !procs[i].reaped;
            if (procs[i].reaped && procs[i].status != 0 && failed == NULL) {
                failed = &procs[i];
                status = procs[i].status;
                fail_at = now_ms();
            }
        }
        if (failed != NULL && !said) {
            say_failed(failed, left > 0);
            said = 1;
        }
        if (left == 0)
            break;
        if (interrupted || (status != 0 && now_ms() - fail_at > grace_ms)) {
            stop_range(first, nprocs, 2000);
            break;
        }
        /* a child's end (SIGCHLD) or a signal wakes the wait at once: idle, a2a-launch wakes
         * once a second (it was every 50 ms, 0.8 ms of CPU a second); within the grace after
         * a failure, every 50 ms */
        pump(status != 0 ? 50 : 1000, status != 0);
    }
    for (int64_t end = now_ms() + 2000; now_ms() < end;) { /* drain what they printed */
        int open = 0;
        for (int i = first; i < nprocs; i++)
            open += procs[i].out.fd >= 0 || procs[i].err.fd >= 0;
        if (open == 0)
            break;
        pump(20, status != 0);
    }
    return interrupted ? 128 + interrupted : status;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: a2a-launch [-n N] [--workers W] [--ranks-per-worker R] [--keep DIR]\n"
               "                  [--token-file FILE] [--] PROGRAM ARGS...\n"
               "\n"
               "Like mpirun on one machine: runs N copies of PROGRAM as the ranks of a local\n"
               "cluster, a coordinator and W workers on free loopback ports, R ranks on each\n"
               "(N = W * R; worker w owns ranks w*R .. w*R+R-1).\n"
               "  -n, -np, --np N        number of ranks; with neither --workers nor\n"
               "                         --ranks-per-worker, one worker owns all N (one host)\n"
               "  --workers W            number of workers, 1..64 (default 1, or N / R)\n"
               "  --ranks-per-worker R   ranks on each worker (default N / W, or 1);\n"
               "                         W * R is at most 1024\n"
               "  --keep DIR             keep the generated cluster YAML in DIR/cluster.yaml\n"
               "                         (DIR is created if missing)\n"
               "  --token-file FILE      protect the cluster with this shared secret\n"
               "                         (security.token_file); ranks get A2A_TOKEN_FILE\n"
               "  --help                 this text\n"
               "  --version              print \"a2a-launch VERSION\" and exit\n"
               "PROGRAM's own options follow it (or \"--\", for a PROGRAM starting with '-').\n"
               "\n"
               "Each rank gets A2A_WORKER_URL, A2A_RANK, A2A_WORLD_SIZE, A2A_LOCAL_RANK (its\n"
               "index on its worker), A2A_LOCAL_SIZE (R) and A2A_COORDINATOR_URL. Each line a\n"
               "rank prints is prefixed with [RANK]: its stdout on stdout, its stderr on stderr.\n"
               "\n"
               "Exits with the first non-zero status of a rank (128+N for a signal), naming\n"
               "the rank on stderr, after giving the others A2A_LAUNCH_GRACE_MS (default\n"
               "3000) to finish; stops everything it started, also on Ctrl-C; 2 for bad usage.\n"
               "The services log at warn and are shown only when something fails;\n"
               "A2A_LAUNCH_VERBOSE=1 shows their logs at info (A2A_LOG_LEVEL overrides),\n"
               "A2A_LAUNCH_VERBOSE=0 (the default) hides them.\n");
}

/* bad_usage prints "a2a-launch: REASON" and a pointer to --help; returns 2. */
static int __attribute__((format(printf, 1, 2))) bad_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "a2a-launch: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see a2a-launch --help)\n");
    return 2;
}

/* parse_count reads a positive integer option value; -1 when it is not one. */
static int
parse_count(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno != 0 || end == s || *end != '\0' || v < 1 || v > 1 << 20 ? -1 : (int)v;
}

/* env_ms reads a non-negative number of ms from $name, or warns once and gives dflt. */
static int
env_ms(const char *name, int dflt)
{
    const char *v = getenv(name);
    char *end;
    if (v == NULL || *v == '\0')
        return dflt;
    errno = 0;
    long ms = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || ms < 0 || ms > 86400000) {
        fprintf(stderr, "a2a-launch: warning: %s=\"%s\" is not a number of ms: using %d\n", name, v,
                dflt);
        return dflt;
    }
    return (int)ms;
}

/* env_flag reads $name as 0 or 1 (unset or empty: 0), or warns once and gives 0. */
static int
env_flag(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0' || strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "1") == 0)
        return 1;
    fprintf(stderr, "a2a-launch: warning: %s=\"%s\" is not 0 or 1: using 0\n", name, v);
    return 0;
}

/* env_loglevel: 1 when $A2A_LOG_LEVEL names a level (the services then use it), else 0, with
 * one warning for a value that does not parse: the services' own warning would be hidden with
 * their logs, and they would log at info instead of launch's warn */
static int
env_loglevel(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *v = getenv("A2A_LOG_LEVEL");
    if (v == NULL || *v == '\0')
        return 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(v, names[i]) == 0)
            return 1;
    fprintf(stderr,
            "a2a-launch: warning: A2A_LOG_LEVEL=\"%s\" is not error, warn, info or debug: the "
            "services log at %s\n",
            v, verbose ? "info" : "warn");
    return 0;
}

/* mkdir_p makes dir and its missing parents; 0 or -1 with errno. */
static int
mkdir_p(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p != '\0'; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

typedef struct {
    int np, workers, rpw;
    const char *keep;
    char **prog;
} launch_args;

/* shape_args settles W and R from -n, --workers and --ranks-per-worker; 0 or 2 (bad usage). */
static int
shape_args(launch_args *a)
{
    if (a->np > 0) {
        if (a->workers == 0 && a->rpw == 0)
            a->workers = 1, a->rpw = a->np;
        else if (a->rpw == 0)
            a->rpw = a->np / a->workers;
        else if (a->workers == 0)
            a->workers = a->np / a->rpw;
        if (a->workers < 1 || a->rpw < 1 || a->workers * a->rpw != a->np)
            return bad_usage("-n %d does not split into %d worker%s x %d rank%s per worker", a->np,
                             a->workers, a->workers == 1 ? "" : "s", a->rpw,
                             a->rpw == 1 ? "" : "s");
    }
    if (a->workers == 0)
        a->workers = 1;
    if (a->rpw == 0)
        a->rpw = 1;
    if (a->workers > 64)
        return bad_usage("--workers %d: at most 64 workers", a->workers);
    if (a->workers * a->rpw > 1024)
        return bad_usage("%d workers x %d ranks = %d ranks: at most 1024", a->workers, a->rpw,
                         a->workers * a->rpw);
    return 0;
}

/* parse_args reads the command line; -1 to go on, else the exit status. */
static int
parse_args(int argc, char **argv, launch_args *a)
{
    static const struct option opts[] = {{"np", required_argument, NULL, 'n'},
                                         {"workers", required_argument, NULL, 'w'},
                                         {"ranks-per-worker", required_argument, NULL, 'r'},
                                         {"keep", required_argument, NULL, 'k'},
                                         {"token-file", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    int ch, v;

    /* mpirun's spelling -np becomes -n among a2a-launch's options only: the scan stops at
     * PROGRAM (the first argument that is neither an option nor an option's value), so
     * that PROGRAM's own -np reaches it unchanged */
    for (int i = 1; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i++) {
        static const char *const valued[] = {
            "-n",     "-w",          "-r", "-k", "-t", "--np", "--workers", "--ranks-per-worker",
            "--keep", "--token-file"};
        if (strcmp(argv[i], "-np") == 0)
            argv[i] = "-n";
        for (size_t j = 0; j < sizeof(valued) / sizeof(valued[0]); j++)
            if (strcmp(argv[i], valued[j]) == 0) {
                i++; /* its value, whatever it looks like */
                break;
            }
    }
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+:n:w:r:k:t:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'n':
        case 'w':
        case 'r':
            if ((v = parse_count(optarg)) < 0)
                return bad_usage("%s %s: must be a positive integer",
                                 ch == 'n'   ? "-n"
                                 : ch == 'w' ? "--workers"
                                             : "--ranks-per-worker",
                                 optarg);
            *(ch == 'n' ? &a->np : ch == 'w' ? &a->workers : &a->rpw) = v;
            break;
        case 'k': a->keep = optarg; break;
        case 't':
            if ((token_file = realpath(optarg, NULL)) == NULL)
                return bad_usage("--token-file %s: %s", optarg, strerror(errno));
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("a2a-launch %s\n", A2A_VERSION); return 0;
        case ':': return bad_usage("%s needs a value", argv[optind - 1]);
        default:
            if (optopt != 0)
                return bad_usage("unknown option -%c", optopt);
            return bad_usage("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return bad_usage("no PROGRAM: give it after the options, e.g. a2a-launch -n 4 -- ./job");
    a->prog = argv + optind;
    return shape_args(a) != 0 ? 2 : -1;
}

int
main(int argc, char **argv)
{
    launch_args a = {0};
    int status = 1, ports[1 + 2 * 64], grace, rc;
    char cfg[PATH_MAX + 32];
    struct sigaction sa = {.sa_handler = on_signal}, sa_chld = {.sa_handler = on_signal};

    if ((rc = parse_args(argc, argv, &a)) >= 0)
        return rc;
    verbose = env_flag("A2A_LAUNCH_VERBOSE");
    loglevel_given = env_loglevel();
    grace = env_ms("A2A_LAUNCH_GRACE_MS", 3000);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe2(wake_fd, O_CLOEXEC | O_NONBLOCK) != 0)
        wake_fd[0] = wake_fd[1] = -1; /* then the waits end by their timeouts only */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa_chld.sa_flags = SA_RESTART | SA_NOCLDSTOP; /* stdio and waits go on; poll ends */
    sigaction(SIGCHLD, &sa_chld, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (a.keep != NULL) {
        if (mkdir_p(a.keep) != 0) {
            fprintf(stderr, "a2a-launch: --keep %s: cannot create it: %s\n", a.keep,
                    strerror(errno));
            return 1;
        }
        snprintf(tmpdir, sizeof(tmpdir), "%s", a.keep);
    } else if (snprintf(tmpdir, sizeof(tmpdir), "%s/a2a-launch.XXXXXX",
                        getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") <= 0 ||
               mkdtemp(tmpdir) == NULL) {
        fprintf(stderr, "a2a-launch: cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    snprintf(cfg, sizeof(cfg), "%s/cluster.yaml", tmpdir);
    /* A free port can be taken by someone else before a service binds it: try again. */
    for (int attempt = 0; attempt < 5 && !interrupted; attempt++) {
        if (free_ports(1 + 2 * a.workers, ports) != 0 ||
            write_config(cfg, a.workers, a.rpw, ports) != 0) {
            fprintf(stderr, "a2a-launch: cannot write %s: %s\n", cfg, strerror(errno));
            break;
        }
        if (start_services(a.workers, cfg, attempt < 4) == 0) {
            status = run_ranks(a.workers, a.rpw, a.prog, grace);
            break;
        }
        stop_range(0, nprocs, 5000);
        nprocs = 0;
    }
    if (interrupted && status == 1)
        status = 128 + interrupted;
    stop_range(0, nprocs, 5000);
    for (int w = 0; w < a.workers; w++) { /* a worker that was killed left its socket file */
        char sock[PATH_MAX], state[PATH_MAX + 8];
        socket_path(sock, sizeof(sock), w);
        unlink(sock);
        snprintf(state, sizeof(state), "%s.ranks", sock); /* its state file (ARCHITECTURE.md) */
        if (a.keep == NULL)
            unlink(state);
    }
    if (a.keep == NULL) {
        unlink(cfg);
        rmdir(tmpdir);
    }
    return status;
}
