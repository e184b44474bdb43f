/* main.c - a2a-coordinator: serves group resolution from a YAML file. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2a_version.h"
#include "common/config.h"
#include "common/log.h"
#include "coord.h"
#include "server/rpc.h"
#include "server/secure.h"

/* usage_error: after a bad command line, the usage line and where the rest is */
static void
usage_error(void)
{
    fprintf(stderr, "usage: a2a-coordinator --config FILE [--listen URL] [--journal "
                    "PATH]\n(a2a-coordinator --help says more)\n");
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: a2a-coordinator --config FILE [--listen URL] [--journal PATH]\n"
               "\n"
               "Serves the groups of FILE (the cluster YAML) to workers, jobs and a2a-ctl.\n"
               "  --config FILE   the cluster YAML (see configs/cluster.yaml)\n"
               "  --listen URL    where to listen (default: coordinator.url of FILE);\n"
               "                  a port of 0 takes a free port\n"
               "  --journal PATH  keep runtime groups and epochs in PATH across restarts\n"
               "                  (default: coordinator.journal of FILE; without either,\n"
               "                  a restart forgets runtime groups and changes every epoch)\n"
               "  --version       print \"a2a-coordinator VERSION\" and exit\n"
               "  --help          this text\n"
               "\n"
               "Prints \"listening on URL\" on stdout once it serves. SIGHUP reloads FILE\n"
               "(a bad file keeps the last good one), security.token_file and the\n"
               "security.tls files (a bad one keeps the one in use; connections made\n"
               "before stay); SIGTERM or SIGINT stops it.\n"
               "Logging: A2A_LOG_LEVEL=error|warn|info|debug (default info).\n");
}

/* the TLS files of the last good YAML */
typedef struct {
    char cert[CFG_PATH_MAX + 1], key[CFG_PATH_MAX + 1], ca[CFG_PATH_MAX + 1];
} tls_paths;

static void
tls_paths_of(tls_paths *t, const cfg_cluster *cfg)
{
    snprintf(t->cert, sizeof(t->cert), "%s", cfg->tls_cert);
    snprintf(t->key, sizeof(t->key), "%s", cfg->tls_key);
    snprintf(t->ca, sizeof(t->ca), "%s", cfg->tls_ca);
}

/* reload_token reads token_file again: new connections prove the new token, established ones
 * keep the one they proved until they reconnect; a bad file keeps the old token. */
static void
reload_token(secure *sec, rpc_server *srv, const char *token_file, const tls_paths *tls)
{
    char err[1024];
    auth_key k;
    int rv;

    if (tls->cert[0] != '\0' || sec->tls_server != NULL) {
        rv = secure_reload_tls(sec, tls->cert, tls->key, tls->ca, err, sizeof(err));
        if (rv == 1)
            log_warn("SIGHUP: TLS unchanged: %s", err);
        else if (rv < 0)
            log_error("SIGHUP: keeping the TLS certificate, key and CA in use: %s", err);
        else if (rv == 0 && rpc_server_set_tls(srv, sec->tls_server) < 0)
            log_error("SIGHUP: TLS files read again, but the listener refused them: new "
                      "connections still use the old ones");
        else if (rv == 0)
            log_info("SIGHUP: TLS certificate %s, key %s and CA %s read again: new connections "
                     "use them, established ones keep theirs until they reconnect",
                     tls->cert, tls->key, tls->ca);
    }
    if (!sec->has_key && token_file[0] == '\0')
        return;
    rv = secure_reload_token(sec, token_file, &k, err, sizeof(err));
    if (rv < 0)
        log_error("SIGHUP: keeping the token in use: %s", err);
    else if (rv == 1)
        log_info("SIGHUP: the token in %s is unchanged", token_file);
    else if (rpc_server_set_key(srv, &k) == 0)
        log_info("SIGHUP: new token from %s: new connections prove it, established ones keep "
                 "working until they reconnect",
                 token_file);
    auth_key_wipe(&k);
}

/* reload reads path again; token_file and tls (the last good file's) follow it. */
static void
reload(coord *c, const char *path, char *token_file, size_t cap, tls_paths *tls)
{
    char err[1024];
    cfg_cluster *cfg;

    if (cfg_load_file(&cfg, path, err, sizeof(err)) != A2A_OK) {
        log_error("reload refused, still serving the last good file: %s", err);
        return;
    }
    int64_t ranks = cfg->world_size;
    size_t ngroups = cfg->ngroups, nworkers = cfg->nworkers;
    char tf[CFG_PATH_MAX + 1];
    tls_paths t;
    snprintf(tf, sizeof(tf), "%s", cfg->token_file);
    tls_paths_of(&t, cfg);
    if (coord_reload(c, cfg, err, sizeof(err)) != 0) { /* cfg is freed */
        log_error("reload refused, still serving the last good file: %s: %s", path, err);
        return;
    }
    snprintf(token_file, cap, "%s", tf);
    *tls = t;
    /* health's count adds hccl_world_group and the runtime groups: say which these are */
    log_info("reloaded %s: %zu workers, %lld ranks, %zu groups from the file (besides "
             "hccl_world_group and the runtime groups)",
             path, nworkers, (long long)ranks, ngroups);
}

static int
serve(cfg_cluster *cfg, const char *path, const char *listen, const char *journal)
{
    coord *c = NULL;
    rpc_server *srv = NULL;
    secure sec;
    const rpc_method *methods;
    size_t nmethods;
    char err[1600], token_file[CFG_PATH_MAX + 1];
    sigset_t set;
    int sig = 0;
    tls_paths tls;

    if (secure_from_cfg(&sec, cfg, err, sizeof(err)) != A2A_OK) {
        log_error("%s", err);
        cfg_free(cfg);
        return 1;
    }
    snprintf(token_file, sizeof(token_file), "%s", cfg->token_file);
    tls_paths_of(&tls, cfg);
    if (coord_alloc(&c, cfg) != A2A_OK) {
        cfg_free(cfg);
        secure_fini(&sec);
        return 1;
    }
    if (journal != NULL && coord_journal_open(c, journal, err, sizeof(err)) != A2A_OK) {
        log_error("%s", err);
        coord_free(c);
        secure_fini(&sec);
        return 1;
    }
    if (journal == NULL)
        log_info("no journal (coordinator.journal, --journal): a restart forgets runtime groups");
    methods = coord_methods(&nmethods);
    if (rpc_server_alloc(&srv, listen, methods, nmethods, c, 4, &sec.server, err, sizeof(err)) !=
        A2A_OK) {
        log_error("%s", err);
        coord_free(c);
        secure_fini(&sec);
        return 1;
    }
    printf("listening on %s\n", rpc_server_url(srv));
    fflush(stdout);
    log_info("serving %s on %s", path, rpc_server_url(srv));
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
        reload(c, path, token_file, sizeof(token_file), &tls);
        reload_token(&sec, srv, token_file, &tls);
    }
    log_info("stopping on signal %d", sig);
    rpc_server_free(srv);
    coord_free(c);
    secure_fini(&sec);
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"listen", required_argument, NULL, 'l'},
        {"journal", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},       {NULL, 0, NULL, 0}};
    const char *path = NULL, *listen = NULL, *journal = NULL;
    char err[1024];
    cfg_cluster *cfg;
    sigset_t set;
    int ch;

    log_init("a2a-coordinator");
    while ((ch = getopt_long(argc, argv, "c:l:j:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': path = optarg; break;
        case 'l': listen = optarg; break;
        case 'j': journal = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("%s %s\n", "a2a-coordinator", A2A_VERSION); return 0;
        default: usage_error(); return 2;
        }
    }
    if (path == NULL || optind != argc) {
        if (path == NULL)
            fprintf(stderr, "a2a-coordinator: no --config FILE (the cluster YAML to serve)\n");
        else
            fprintf(stderr, "a2a-coordinator: unexpected argument \"%s\"\n", argv[optind]);
        usage_error();
        return 2;
    }
    /* Block the signals before NNG starts its threads, so that only sigwait sees them. */
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (cfg_load_file(&cfg, path, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-coordinator: %s\n", err);
        return 1;
    }
    if (journal == NULL && cfg->journal[0] != '\0')
        journal = cfg->journal;
    return serve(cfg, path, listen != NULL ? listen : cfg->coordinator_url, journal);
}
