/* ctl.c - a2a-ctl: the operator's command line for the coordinator. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    fprintf(f, "usage: a2a-ctl [--coordinator URL] [--json] [--timeout MS] COMMAND\n"
               "\n"
               "Commands:\n"
               "  health              is the coordinator up? (exit 0 when it answers)\n"
               "  groups              list every group: name, size, epoch, origin\n"
               "  resolve GROUP       the members of GROUP: group rank, world rank, worker\n"
               "  create GROUP R...   create GROUP from world ranks R... (idempotent)\n"
               "  destroy GROUP       destroy a group created with create\n"
               "\n"
               "Options:\n"
               "  --coordinator URL   default $A2A_COORDINATOR_URL, e.g. tcp://127.0.0.1:7000\n"
               "  --json              print JSON for scripts instead of text\n"
               "  --timeout MS        deadline of the call (default 5000)\n"
               "  --token-file FILE   the cluster's shared secret (default $A2A_TOKEN_FILE);\n"
               "                      TLS: set A2A_TLS_CERT, A2A_TLS_KEY and A2A_TLS_CA\n"
               "\n"
               "Exit status: 0 on success; 1 with one line \"a2a-ctl: CMD: STATUS: reason\"\n"
               "when the call fails; 2 for bad usage.\n");
}

static int
fail(const ctl *c, a2a_status st, const char *msg)
{
    fprintf(stderr, "a2a-ctl: %s: %s: %s\n", c->cmd, a2a_status_name(st), msg);
    return 1;
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
parse_ranks(int64_t *ranks, int n, char **argv)
{
    for (int i = 0; i < n; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(argv[i], &end, 10);
        if (errno != 0 || end == argv[i] || *end != '\0' || v < 0) {
            fprintf(stderr, "a2a-ctl: create: INVALID_ARGUMENT: \"%s\" is not a world rank\n",
                    argv[i]);
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
    if ((strcmp(cmd, "resolve") == 0 || strcmp(cmd, "destroy") == 0) && nargs == 1) {
        wire_group_name_encode(sb, argv[1]);
        return cmd[0] == 'r' ? "ResolveGroup" : "DestroyGroup";
    }
    if (strcmp(cmd, "create") == 0 && nargs >= 2) {
        int64_t *ranks = calloc((size_t)nargs - 1, sizeof(*ranks));
        if (ranks == NULL || parse_ranks(ranks, nargs - 1, argv + 2) != 0) {
            free(ranks);
            *rc = 1;
            return NULL;
        }
        wire_create_encode(sb, argv[1], (size_t)nargs - 1, ranks);
        free(ranks);
        return "CreateGroup";
    }
    fprintf(stderr, "a2a-ctl: bad command line (see a2a-ctl --help)\n");
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
    if (st != A2A_OK)
        rc = fail(c, st, err);
    else if (strcmp(method, "Health") == 0)
        rc = print_health(c, rep, replen);
    else if (strcmp(method, "ListGroups") == 0)
        rc = print_groups(c, rep, replen);
    else if (strcmp(method, "DestroyGroup") == 0)
        rc = print_destroyed(c, argv[1]);
    else
        rc = print_group(c, rep, replen);
    free(rep);
    return rc;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {{"coordinator", required_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"token-file", required_argument, NULL, 'k'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *url = getenv("A2A_COORDINATOR_URL"), *token_file = NULL;
    secure sec;
    ctl c = {.timeout_ms = 5000};
    char err[512];
    int ch, rc;

    log_init("a2a-ctl");
    while ((ch = getopt_long(argc, argv, "+c:jt:k:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': url = optarg; break;
        case 'j': c.json = 1; break;
        case 't': {
            char *end;
            c.timeout_ms = strtoll(optarg, &end, 10);
            if (end == optarg || *end != '\0')
                c.timeout_ms = -1;
            break;
        }
        case 'k': token_file = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    c.cmd = argv[optind];
    if (url == NULL || *url == '\0') {
        fprintf(stderr,
                "a2a-ctl: %s: no coordinator: give --coordinator URL or set "
                "A2A_COORDINATOR_URL\n",
                c.cmd);
        return 2;
    }
    if (c.timeout_ms <= 0) {
        fprintf(stderr, "a2a-ctl: --timeout must be a positive number of milliseconds\n");
        return 2;
    }
    if (secure_from_env(&sec, token_file, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-ctl: %s: INVALID_ARGUMENT: %s\n", c.cmd, err);
        return 1;
    }
    if (rpc_client_alloc(&c.cli, url, &sec.client, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-ctl: %s: INVALID_ARGUMENT: %s\n", c.cmd, err);
        secure_fini(&sec);
        return 1;
    }
    rc = run(&c, argc - optind, argv + optind);
    rpc_client_free(c.cli);
    secure_fini(&sec);
    return rc;
}
