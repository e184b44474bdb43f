/* main.c - a2a-worker: owns one host's ranks and streams their slices to the peers. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "a2a_version.h"
#include "common/config.h"
#include "common/log.h"
#include "engine.h"
#include "handshake.h"
#include "local.h"
#include "server/rpc.h"
#include "server/secure.h"

/* usage_error: after a bad command line, the usage line and where the rest is */
static void
usage_error(void)
{
    fprintf(stderr, "usage: a2a-worker --config FILE --name NAME\n(a2a-worker --help says more)\n");
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: a2a-worker --config FILE --name NAME\n"
               "\n"
               "Runs worker NAME of the cluster FILE: serves the worker API for jobs on its\n"
               "url and peer links to the other workers on its data_url.\n"
               "  --config FILE   the cluster YAML (see configs/cluster.yaml)\n"
               "  --name NAME     which worker of FILE this is\n"
               "  --version       print \"a2a-worker VERSION\" and exit\n"
               "  --help          this text\n"
               "\n"
               "Prints \"listening on URL data DATA_URL\" on stdout once it serves.\n"
               "SIGTERM or SIGINT stops it. SIGHUP reads security.token_file and the\n"
               "security.tls files again: new connections (jobs, links, the coordinator)\n"
               "prove the new token and use the new certificate and CA, established ones\n"
               "keep working until they reconnect; a bad file keeps the one in use. The\n"
               "rest of FILE is read only at start (the coordinator reloads it).\n"
               "Logging: A2A_LOG_LEVEL=error|warn|info|debug (default info).\n");
}

static int
serve(const cfg_cluster *cfg, const char *name)
{
    const cfg_worker *w = cfg_find_worker(cfg, name);
    const rpc_method *methods;
    rpc_server *srv = NULL;
    engine *e = NULL;
    chan_set *chans = NULL;
    local_srv *loc = NULL;
    api_env env;
    secure sec;
    size_t nmethods;
    char err[1024];
    sigset_t set;
    int sig = 0;

    if (w == NULL) {
        fprintf(stderr, "a2a-worker: no worker \"%s\" in %s\n", name, cfg->path);
        return 1;
    }
    if (secure_from_cfg(&sec, cfg, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-worker: %s\n", err);
        return 1;
    }
    if (engine_alloc(&e, cfg, name, &sec, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-worker: %s\n", err);
        secure_fini(&sec);
        return 1;
    }
    if (chan_set_alloc(&chans, e) != A2A_OK) {
        fprintf(stderr, "a2a-worker: out of memory\n");
        engine_free(e);
        secure_fini(&sec);
        return 1;
    }
    if (local_alloc(&loc, w->socket[0] != '\0' ? w->socket : NULL, e, chans,
                    sec.has_key ? &sec.key : NULL, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-worker: %s\n", err);
        chan_set_free(chans);
        engine_free(e);
        secure_fini(&sec);
        return 1;
    }
    env.e = e;
    env.chans = chans;
    env.socket = w->socket[0] != '\0' ? w->socket : NULL;
    env.local = loc;
    methods = api_methods(&nmethods);
    if (rpc_server_alloc(&srv, w->url, methods, nmethods, &env, API_THREADS, &sec.server, err,
                         sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-worker: %s\n", err);
        local_free(loc);
        chan_set_free(chans);
        engine_free(e);
        secure_fini(&sec);
        return 1;
    }
    local_watch(loc, srv); /* a remote job lets go of its rank when its connection closes */
    printf("listening on %s data %s\n", rpc_server_url(srv), engine_data_url(e));
    fflush(stdout);
    log_info("worker %s: ranks %lld..%lld, api %s, links %s, local socket %s", name,
             (long long)w->first_rank, (long long)(w->first_rank + w->ranks - 1),
             rpc_server_url(srv), engine_data_url(e), env.socket != NULL ? env.socket : "none");
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
        auth_key k;
        int rv;
        if (!sec.has_key && cfg->tls_cert[0] == '\0') {
            log_warn("SIGHUP: nothing to reload (no token, no TLS; a worker reads %s only when it "
                     "starts; restart it to apply a change): still serving",
                     cfg->path);
            continue;
        }
        if (cfg->tls_cert[0] != '\0') {
            rv =
                secure_reload_tls(&sec, cfg->tls_cert, cfg->tls_key, cfg->tls_ca, err, sizeof(err));
            if (rv < 0)
                log_error("SIGHUP: keeping the TLS certificate, key and CA in use: %s", err);
            else if (rv == 0 &&
                     (handshake_set_tls(e) != 0 || rpc_server_set_tls(srv, sec.tls_server) < 0))
                log_error("SIGHUP: TLS files read again, but a listener or dialer refused them: "
                          "some new connections may still use the old ones");
            else if (rv == 0)
                log_info("SIGHUP: TLS certificate %s, key %s and CA %s read again: new "
                         "connections (the API, peer links, the coordinator link) use them, "
                         "established ones keep theirs until they reconnect",
                         cfg->tls_cert, cfg->tls_key, cfg->tls_ca);
        }
        if (!sec.has_key)
            continue;
        rv = secure_reload_token(&sec, cfg->token_file, &k, err, sizeof(err));
        if (rv < 0) {
            log_error("SIGHUP: keeping the token in use: %s", err);
        } else if (rv == 1) {
            log_info("SIGHUP: the token in %s is unchanged", cfg->token_file);
        } else {
            (void)rpc_server_set_key(srv, &k);
            (void)local_set_key(loc, &k);
            handshake_set_key(e, &k);
            log_info("SIGHUP: new token from %s: new connections prove it, established ones "
                     "keep working until they reconnect",
                     cfg->token_file);
        }
        auth_key_wipe(&k);
    }
    log_info("stopping on signal %d", sig);
    engine_stop(e);       /* calls in progress fail with UNAVAILABLE */
    chan_set_stop(chans); /* channel threads close their channels and end */
    local_free(loc);      /* sessions let go of their ranks and memory */
    rpc_server_free(srv); /* waits for the handlers */
    chan_set_free(chans);
    engine_free(e);
    secure_fini(&sec);
    return 0;
}

int
main(int argc, char **argv)
{
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"name", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    const char *path = NULL, *name = NULL;
    cfg_cluster *cfg;
    char err[1024];
    sigset_t set;
    int ch, rc;

    log_init("a2a-worker");
    while ((ch = getopt_long(argc, argv, "c:n:hV", opts, NULL)) != -1) {
        switch (ch) {
        case 'c': path = optarg; break;
        case 'n': name = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("%s %s\n", "a2a-worker", A2A_VERSION); return 0;
        default: usage_error(); return 2;
        }
    }
    if (path == NULL || name == NULL || optind != argc) {
        if (path == NULL)
            fprintf(stderr, "a2a-worker: no --config FILE (the cluster YAML)\n");
        else if (name == NULL)
            fprintf(stderr, "a2a-worker: no --name NAME (which worker of %s this is)\n", path);
        else
            fprintf(stderr, "a2a-worker: unexpected argument \"%s\"\n", argv[optind]);
        usage_error();
        return 2;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (cfg_load_file(&cfg, path, err, sizeof(err)) != A2A_OK) {
        fprintf(stderr, "a2a-worker: %s\n", err);
        return 1;
    }
    log_init("a2a-worker");
    rc = serve(cfg, name);
    cfg_free(cfg);
    return rc;
}
