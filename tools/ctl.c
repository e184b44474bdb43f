/* ctl.c - a2a-ctl: the operator's command line for the coordinator (and a worker's jobs). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_version.h"
#include "common/config.h"
#include "common/log.h"
#include "common/wire.h"
#include "server/rpc.h"
#include "server/secure.h"

typedef struct {
    rpc_client *cli;
    int json;
    int64_t timeout_ms;
    const char *cmd;
} ctl;

static void
usage(FILE *f)
{
    fprintf(
        f, "usage: a2a-ctl [OPTIONS] COMMAND [ARGS] [OPTIONS]\n"
           "\n"
           "Asks the coordinator about groups, or a worker about its jobs. Options may\n"
           "come before or after the command; \"--\" ends them.\n"
           "\n"
           "Commands:\n"
           "  health              is the coordinator up? (exit 0 when it answers)\n"
           "  groups              list every group: name, size, epoch, origin\n"
           "  resolve GROUP       the members of GROUP: group rank, world rank, worker\n"
           "  create GROUP R...   create GROUP from world ranks R... (idempotent)\n"
           "  destroy GROUP       destroy a group created with create\n"
           "  jobs WORKER_URL     the jobs attached to the worker at WORKER_URL (its \"url\"):\n"
           "                      session, world rank, mode (shared, staging: a job on the\n"
           "                      worker's socket with or without shared buffers; remote:\n"
           "                      its slices over TCP), pid and uid (the kernel's), the\n"
           "                      memory it handed over and its calls running now\n"
           "\n"
           "Options:\n"
           "  --coordinator URL   default $A2A_COORDINATOR_URL; tcp://HOST:PORT,\n"
           "                      tls+tcp://HOST:PORT or ipc:///PATH\n"
           "  --json              print JSON for scripts instead of text; a failure is\n"
           "                      {\"error\":MESSAGE,\"status\":STATUS,\"command\":CMD} on stdout\n"
           "  --timeout MS        deadline of the call, connecting included (default 5000);\n"
           "                      a port that refuses connections (or a host name that\n"
           "                      does not resolve) for 1 s ends it early\n"
           "  --token-file FILE   the cluster's shared secret (default $A2A_TOKEN_FILE)\n"
           "  --tls-cert FILE     TLS: this client's certificate (default $A2A_TLS_CERT)\n"
           "  --tls-key FILE      TLS: its private key (default $A2A_TLS_KEY)\n"
           "  --tls-ca FILE       TLS: the CA that signed the servers (default $A2A_TLS_CA);\n"
           "                      give all three or none\n"
           "  --help              this text\n"
           "  --version           print \"a2a-ctl VERSION\" and exit\n"
           "\n"
           "Exit status: 0 on success; 1 with one line \"a2a-ctl: CMD: STATUS: reason\"\n"
           "(JSON with --json) when the call fails; 2 for bad usage.\n");
}

/* json_str prints s as a JSON string. */
static void
json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* fail_rc reports a failed command: one line on stderr, or with --json one JSON object on
 * stdout; returns rc. */
static int
fail_rc(const ctl *c, a2a_status st, const char *msg, int rc)
{
    if (c->json) {
        printf("{\"error\":");
        json_str(msg);
        printf(",\"status\":\"%s\",\"command\":", a2a_status_name(st));
        json_str(c->cmd != NULL ? c->cmd : "");
        printf("}\n");
    } else {
        fprintf(stderr, "a2a-ctl: %s: %s: %s\n", c->cmd != NULL ? c->cmd : "a2a-ctl",
                a2a_status_name(st), msg);
    }
    return rc;
}

static int
fail(const ctl *c, a2a_status st, const char *msg)
{
    return fail_rc(c, st, msg, 1);
}

static a2a_status
call(ctl *c, const char *method, msgpack_sbuffer *req, uint8_t **rep, size_t *replen, char *err,
     size_t errlen)
{
    return rpc_call(c->cli, method, req->data, req->size, c->timeout_ms, rep, replen, err, errlen);
}

static int
print_group(const ctl *c, const uint8_t *rep, size_t len)
{
    wire_group g;
    char err[256];

    if (wire_group_decode(&g, rep, len, err, sizeof(err)) != 0)
        return fail(c, A2A_ERR_INTERNAL, err);
    if (c->json) {
        printf("{\"name\":");
        json_str(g.name);
        printf(",\"epoch\":%llu,\"size\":%zu,\"members\":[", (unsigned long long)g.epoch, g.n);
        for (size_t i = 0; i < g.n; i++) {
            printf("%s{\"group_rank\":%zu,\"world_rank\":%lld,\"worker\":", i ? "," : "", i,
                   (long long)g.members[i].world_rank);
            json_str(g.members[i].worker);
            printf(",\"url\":");
            json_str(g.members[i].url);
            printf(",\"data_url\":");
            json_str(g.members[i].data_url);
            printf("}");
        }
        printf("]}\n");
    } else {
        printf("group %s: %zu ranks, epoch %llu\n", g.name, g.n, (unsigned long long)g.epoch);
        printf("%-10s %-10s %-20s %s\n", "GROUP_RANK", "WORLD_RANK", "WORKER", "URL");
        for (size_t i = 0; i < g.n; i++)
            printf("%-10zu %-10lld %-20s %s\n", i, (long long)g.members[i].world_rank,
                   g.members[i].worker, g.members[i].url);
    }
    wire_group_fini(&g);
    return 0;
}

static int
print_groups(const ctl *c, const uint8_t *rep, size_t len)
{
    wire_group_list l;
    char err[256];

    if (wire_group_list_decode(&l, rep, len, err, sizeof(err)) != 0)
        return fail(c, A2A_ERR_INTERNAL, err);
    if (c->json) {
        printf("[");
        for (size_t i = 0; i < l.n; i++) {
            printf("%s{\"name\":", i ? "," : "");
            json_str(l.groups[i].name);
            printf(",\"size\":%llu,\"epoch\":%llu,\"origin\":\"%s\"}",
                   (unsigned long long)l.groups[i].size, (unsigned long long)l.groups[i].epoch,
                   l.groups[i].origin);
        }
        printf("]\n");
    } else {
        printf("%-6s %-8s %-16s %s\n", "SIZE", "ORIGIN", "EPOCH", "NAME");
        for (size_t i = 0; i < l.n; i++)
            printf("%-6llu %-8s %-16llu %s\n", (unsigned long long)l.groups[i].size,
                   l.groups[i].origin, (unsigned long long)l.groups[i].epoch, l.groups[i].name);
    }
    wire_group_list_fini(&l);
    return 0;
}

static int
print_health(const ctl *c, const uint8_t *rep, size_t len)
{
    wire_health h;
    char err[256];

    if (wire_health_decode(&h, rep, len, err, sizeof(err)) != 0)
        return fail(c, A2A_ERR_INTERNAL, err);
    if (c->json) {
        printf("{\"status\":\"SERVING\",\"service\":");
        json_str(h.service);
        printf(",\"world_size\":%llu,\"groups\":%llu,\"uptime_ms\":%llu,\"config\":",
               (unsigned long long)h.world_size, (unsigned long long)h.groups,
               (unsigned long long)h.uptime_ms);
        json_str(h.config);
        printf("}\n");
    } else {
        printf("SERVING: %s%s%s, %llu ranks, %llu groups, up %.1f s, config %s\n", h.service,
               h.name[0] ? " " : "", h.name, (unsigned long long)h.world_size,
               (unsigned long long)h.groups, (double)h.uptime_ms / 1000.0, h.config);
    }
    return 0;
}

static int
print_jobs(const ctl *c, const uint8_t *rep, size_t len)
{
    wire_job_list l;
    char err[256];

    if (wire_job_list_decode(&l, rep, len, err, sizeof(err)) != 0)
        return fail(c, A2A_ERR_INTERNAL, err);
    if (c->json) {
        printf("[");
        for (size_t i = 0; i < l.n; i++) {
            const wire_job_info *j = &l.jobs[i];
            printf("%s{\"session\":%llu,\"world_rank\":%lld,\"mode\":", i ? "," : "",
                   (unsigned long long)j->session, (long long)j->world_rank);
            json_str(j->mode);
            if (j->pid >= 0)
                printf(",\"pid\":%lld,\"uid\":%lld", (long long)j->pid, (long long)j->uid);
            else
                printf(",\"pid\":null,\"uid\":null");
            printf(",\"shared_buffers\":%llu,\"staging\":%llu,\"calls\":%llu}",
                   (unsigned long long)j->shared, (unsigned long long)j->staging,
                   (unsigned long long)j->calls);
        }
        printf("]\n");
    } else {
        printf("%-8s %-10s %-8s %-8s %-6s %-7s %-7s %s\n", "SESSION", "WORLD_RANK", "MODE", "PID",
               "UID", "SHARED", "STAGING", "CALLS");
        for (size_t i = 0; i < l.n; i++) {
            const wire_job_info *j = &l.jobs[i];
            char pid[24] = "-", uid[24] = "-";
            if (j->pid >= 0) {
                snprintf(pid, sizeof(pid), "%lld", (long long)j->pid);
                snprintf(uid, sizeof(uid), "%lld", (long long)j->uid);
            }
            printf("%-8llu %-10lld %-8s %-8s %-6s %-7llu %-7llu %llu\n",
                   (unsigned long long)j->session, (long long)j->world_rank, j->mode, pid, uid,
                   (unsigned long long)j->shared, (unsigned long long)j->staging,
                   (unsigned long long)j->calls);
        }
    }
    wire_job_list_fini(&l);
    return 0;
}

static int
print_destroyed(const ctl *c, const char *name)
{
    if (c->json) {
        printf("{\"destroyed\":");
        json_str(name);
        printf("}\n");
    } else {
        printf("destroyed %s\n", name);
    }
    return 0;
}

/* parse_ranks reads world ranks from argv; -1 with a message on a bad one. */
static int
parse_ranks(const ctl *c, int64_t *ranks, int n, char **argv)
{
    for (int i = 0; i < n; i++) {
        char *end, msg[300];
        errno = 0;
        long long v = strtoll(argv[i], &end, 10);
        if (errno != 0 || end == argv[i] || *end != '\0' || v < 0) {
            snprintf(msg, sizeof(msg), "\"%.200s\" is not a world rank", argv[i]);
            fail(c, A2A_ERR_INVALID_ARGUMENT, msg);
            return -1;
        }
        ranks[i] = v;
    }
    return 0;
}

/* build_request encodes the command's request body; returns its method or NULL. */
static const char *
build_request(ctl *c, msgpack_sbuffer *sb, int argc, char **argv, int *rc)
{
    const char *cmd = c->cmd;
    int nargs = argc - 1;

    *rc = 2;
    if ((strcmp(cmd, "health") == 0 || strcmp(cmd, "groups") == 0) && nargs == 0) {
        wire_empty_encode(sb);
        return cmd[0] == 'h' ? "Health" : "ListGroups";
    }
    if (strcmp(cmd, "jobs") == 0 && nargs == 1) { /* the client dials the worker (ctl_main) */
        wire_empty_encode(sb);
        return "ListJobs";
    }
    if ((strcmp(cmd, "resolve") == 0 || strcmp(cmd, "destroy") == 0) && nargs == 1) {
        wire_group_name_encode(sb, argv[1]);
        return cmd[0] == 'r' ? "ResolveGroup" : "DestroyGroup";
    }
    if (strcmp(cmd, "create") == 0 && nargs >= 2) {
        int64_t *ranks = calloc((size_t)nargs - 1, sizeof(*ranks));
        if (ranks == NULL || parse_ranks(c, ranks, nargs - 1, argv + 2) != 0) {
            free(ranks);
            *rc = 1;
            return NULL;
        }
        wire_create_encode(sb, argv[1], (size_t)nargs - 1, ranks);
        free(ranks);
        return "CreateGroup";
    }
    {
        static const char *const known[] = {"health",  "groups", "resolve",
                                            "destroy", "create", "jobs"};
        static const char *const want[] = {
            "no arguments", "no arguments", "GROUP", "GROUP", "GROUP and at least one world rank",
            "WORKER_URL"};
        char msg[300];
        snprintf(msg, sizeof(msg), "unknown command \"%.100s\" (see a2a-ctl --help)", cmd);
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            if (strcmp(cmd, known[i]) == 0)
                snprintf(msg, sizeof(msg), "%s takes %s, got %d argument%s", cmd, want[i], nargs,
                         nargs == 1 ? "" : "s");
        fail_rc(c, A2A_ERR_INVALID_ARGUMENT, msg, 2);
    }
    return NULL;
}

static int
run(ctl *c, int argc, char **argv)
{
    msgpack_sbuffer sb;
    uint8_t *rep = NULL;
    size_t replen = 0;
    char err[1024];
    const char *method;
    a2a_status st;
    int rc;

    msgpack_sbuffer_init(&sb);
    if ((method = build_request(c, &sb, argc, argv, &rc)) == NULL) {
        msgpack_sbuffer_destroy(&sb);
        return rc;
    }
    st = call(c, method, &sb, &rep, &replen, err, sizeof(err));
    msgpack_sbuffer_destroy(&sb);
    if (st == A2A_ERR_PERMISSION_DENIED && strstr(err, "authentication required") == err) {
        size_t n = strlen(err);
        snprintf(err + n, sizeof(err) - n,
                 ": give a2a-ctl the same token with --token-file FILE "
                 "(or A2A_TOKEN_FILE)");
    }
    if (st != A2A_OK)
        rc = fail(c, st, err);
    else if (strcmp(method, "Health") == 0)
        rc = print_health(c, rep, replen);
    else if (strcmp(method, "ListGroups") == 0)
        rc = print_groups(c, rep, replen);
    else if (strcmp(method, "DestroyGroup") == 0)
        rc = print_destroyed(c, argv[1]);
    else if (strcmp(method, "ListJobs") == 0)
        rc = print_jobs(c, rep, replen);
    else
        rc = print_group(c, rep, replen);
    free(rep);
    return rc;
}

/* url_check: NULL when url has a scheme NNG dials here, else why not. */
static const char *
url_check(const char *url)
{
    static const char *const schemes[] = {"tcp://",      "tcp4://",     "tcp6://", "tls+tcp://",
                                          "tls+tcp4://", "tls+tcp6://", "ipc://"};
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
            return NULL;
    return "URL must start with tcp://, tls+tcp:// or ipc://";
}

/* options_first returns a copy of argv (freed by the caller; NULL when out of memory) with the
 * options and their values first, then "--", then the command and its arguments, so that
 * options may follow the command while a negative number stays an argument ("create g -1"
 * must say -1 is not a world rank, not that -1 is no option). */
static char **
options_first(int argc, char **argv, int *nargc)
{
    char **out = calloc((size_t)argc + 2, sizeof(*out)),
         **args = calloc((size_t)argc, sizeof(*args));
    int no = 0, na = 0, i;
    if (out == NULL || args == NULL) {
        free(out), free(args);
        return NULL;
    }
    out[no++] = argv[0];
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0' || (a[1] >= '0' && a[1] <= '9')) {
            args[na++] = argv[i];
            continue;
        }
        out[no++] = argv[i];
        int takes = (a[1] != '-' && a[2] == '\0' && strchr("ctk", a[1]) != NULL) ||
                    (a[1] == '-' && strchr(a, '=') == NULL &&
                     (strcmp(a, "--coordinator") == 0 || strcmp(a, "--timeout") == 0 ||
                      strcmp(a, "--token-file") == 0 || strncmp(a, "--tls-", 6) == 0));
        if (takes && i + 1 < argc)
            out[no++] = argv[++i];
    }
    out[no++] = "--";
    for (int k = 0; k < na; k++)
        out[no++] = args[k];
    for (i++; i < argc; i++) /* what followed the user's own "--" */
        out[no++] = argv[i];
    free(args);
    *nargc = no;
    return out;
}

/* parse_args reads the options, before or after the command; returns -1 to go on, else the
 * exit status. */
static int
parse_args(ctl *c, int argc, char **argv, const char **url, const char **token_file)
{
    static const struct option opts[] = {
        {"coordinator", required_argument, NULL, 'c'}, {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'},     {"token-file", required_argument, NULL, 'k'},
        {"tls-cert", required_argument, NULL, 'C'},    {"tls-key", required_argument, NULL, 'K'},
        {"tls-ca", required_argument, NULL, 'A'},      {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},           {NULL, 0, NULL, 0}};
    int ch;
    char *end;

    while ((ch = getopt_long(argc, argv, "+c:jt:k:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': *url = optarg; break;
        case 'j': c->json = 1; break;
        case 't':
            errno = 0;
            c->timeout_ms = strtoll(optarg, &end, 10);
            if (errno != 0 || end == optarg || *end != '\0' || c->timeout_ms <= 0) {
                fprintf(stderr, "a2a-ctl: --timeout: \"%s\" is not a positive number of ms\n",
                        optarg);
                return 2;
            }
            break;
        case 'k': *token_file = optarg; break;
        case 'C': setenv("A2A_TLS_CERT", optarg, 1); break;
        case 'K': setenv("A2A_TLS_KEY", optarg, 1); break;
        case 'A': setenv("A2A_TLS_CA", optarg, 1); break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("a2a-ctl %s\n", A2A_VERSION); return 0;
        default: fprintf(stderr, "a2a-ctl: see a2a-ctl --help\n"); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "a2a-ctl: no command: give health, groups, resolve, create, destroy or "
                        "jobs (see a2a-ctl --help)\n");
        return 2;
    }
    return -1;
}

/* ctl_main is main on the reordered command line. */
/* tls_missing: the first TLS setting missing while another is given (flags set the variables),
 * NULL when all three or none are there. */
static const char *
tls_missing(void)
{
    static const char *const var[3] = {"A2A_TLS_CERT", "A2A_TLS_KEY", "A2A_TLS_CA"};
    static const char *const flag[3] = {"--tls-cert (A2A_TLS_CERT)", "--tls-key (A2A_TLS_KEY)",
                                        "--tls-ca (A2A_TLS_CA)"};
    int n = 0;
    for (int i = 0; i < 3; i++)
        n += getenv(var[i]) != NULL;
    for (int i = 0; n > 0 && n < 3 && i < 3; i++)
        if (getenv(var[i]) == NULL)
            return flag[i];
    return NULL;
}

static int
ctl_main(int argc, char **argv)
{
    const char *url = getenv("A2A_COORDINATOR_URL"), *token_file = NULL, *why;
    secure sec;
    ctl c = {.timeout_ms = 5000};
    char err[512];
    int rc;

    if ((rc = parse_args(&c, argc, argv, &url, &token_file)) >= 0)
        return rc;
    c.cmd = argv[optind];
    if (strcmp(c.cmd, "jobs") == 0) { /* a worker's API, not the coordinator */
        if (argc - optind != 2) {
            snprintf(err, sizeof(err), "jobs takes WORKER_URL, got %d arguments",
                     argc - optind - 1);
            return fail_rc(&c, A2A_ERR_INVALID_ARGUMENT, err, 2);
        }
        url = argv[optind + 1];
    }
    if (url == NULL || *url == '\0')
        return fail_rc(&c, A2A_ERR_INVALID_ARGUMENT,
                       "no coordinator: give --coordinator URL or set A2A_COORDINATOR_URL", 2);
    if ((why = url_check(url)) != NULL) {
        snprintf(err, sizeof(err), "%s, got \"%.300s\"", why, url);
        return fail(&c, A2A_ERR_INVALID_ARGUMENT, err);
    }
    if ((why = tls_missing()) != NULL) {
        snprintf(err, sizeof(err),
                 "TLS takes all of --tls-cert, --tls-key and --tls-ca (or A2A_TLS_CERT, "
                 "A2A_TLS_KEY and A2A_TLS_CA), or none: %s is missing",
                 why);
        return fail(&c, A2A_ERR_INVALID_ARGUMENT, err);
    }
    if (secure_from_env(&sec, token_file, err, sizeof(err)) != A2A_OK)
        return fail(&c, A2A_ERR_INVALID_ARGUMENT, err);
    if (rpc_client_alloc(&c.cli, url, &sec.client, err, sizeof(err)) != A2A_OK) {
        secure_fini(&sec);
        return fail(&c, A2A_ERR_INVALID_ARGUMENT, err);
    }
    rpc_client_connect_wait(c.cli, c.timeout_ms); /* --timeout bounds connecting too */
    rc = run(&c, argc - optind, argv + optind);
    rpc_client_free(c.cli);
    secure_fini(&sec);
    return rc;
}

int
main(int argc, char **argv)
{
    char **args;
    int nargs, rc;

    log_init("a2a-ctl");
    if ((args = options_first(argc, argv, &nargs)) == NULL) {
        fprintf(stderr, "a2a-ctl: out of memory\n");
        return 1;
    }
    rc = ctl_main(nargs, args);
    free(args);
    return rc;
}
