/* secure.c - tokens and TLS configurations for servers, clients and links. */
#include "secure.h"

#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* slurp reads a whole (small) file into a NUL-terminated string; NULL on failure. */
static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    if (f == NULL)
        return NULL;
    buf = malloc(1 << 20);
    if (buf != NULL) {
        n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf;
}

/* tls_make builds one side's configuration: its own certificate, and peers checked against ca. */
static a2a_status
tls_make(nng_tls_config **out, nng_tls_mode mode, const char *cert, const char *key, const char *ca,
         char *err, size_t errlen)
{
    nng_tls_config *t = NULL;
    char *cpem = slurp(cert), *kpem = slurp(key);
    a2a_status st = A2A_OK;
    int rv;

    *out = NULL;
    if (cpem == NULL || kpem == NULL)
        st = status_fail(err, errlen, A2A_ERR_NOT_FOUND, "cannot read TLS certificate %s or key %s",
                         cert, key);
    else if ((rv = nng_tls_config_alloc(&t, mode)) != 0)
        st = status_fail(err, errlen, A2A_ERR_INTERNAL, "TLS: %s", nng_strerror(rv));
    else if ((rv = nng_tls_config_ca_file(t, ca)) != 0)
        st = status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "TLS CA file %s: %s", ca,
                         nng_strerror(rv));
    else if ((rv = nng_tls_config_own_cert(t, cpem, kpem, NULL)) != 0)
        st = status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                         "TLS certificate %s with key %s: %s", cert, key, nng_strerror(rv));
    else if ((rv = nng_tls_config_auth_mode(t, NNG_TLS_AUTH_MODE_REQUIRED)) != 0)
        st = status_fail(err, errlen, A2A_ERR_INTERNAL, "TLS: %s", nng_strerror(rv));
    free(cpem);
    free(kpem);
    if (st != A2A_OK && t != NULL)
        nng_tls_config_free(t);
    else
        *out = t;
    return st;
}

static a2a_status
secure_tls(secure *s, const char *cert, const char *key, const char *ca, char *err, size_t errlen)
{
    a2a_status st;
    if ((st = tls_make(&s->tls_server, NNG_TLS_MODE_SERVER, cert, key, ca, err, errlen)) !=
            A2A_OK ||
        (st = tls_make(&s->tls_client, NNG_TLS_MODE_CLIENT, cert, key, ca, err, errlen)) != A2A_OK)
        return st;
    s->server.tls = s->tls_server;
    s->client.tls = s->tls_client;
    return A2A_OK;
}

static void
secure_link(secure *s)
{
    s->server.key = s->has_key ? &s->key : NULL;
    s->client.key = s->has_key ? &s->key : NULL;
}

a2a_status
secure_from_cfg(secure *s, const cfg_cluster *cfg, char *err, size_t errlen)
{
    a2a_status st = A2A_OK;

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->key_mtx, NULL); /* secure_fini may come before secure_link */
    if (cfg->token_file[0] != '\0') {
        if ((st = auth_key_load(&s->key, cfg->token_file, err, errlen)) != A2A_OK)
            return st;
        s->has_key = 1;
    }
    if (cfg->tls_cert[0] != '\0')
        st = secure_tls(s, cfg->tls_cert, cfg->tls_key, cfg->tls_ca, err, errlen);
    secure_link(s);
    if (st != A2A_OK)
        secure_fini(s);
    return st;
}

a2a_status
secure_from_env(secure *s, const char *token_file, char *err, size_t errlen)
{
    const char *cert = getenv("A2A_TLS_CERT"), *key = getenv("A2A_TLS_KEY");
    const char *ca = getenv("A2A_TLS_CA");
    a2a_status st = A2A_OK;

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->key_mtx, NULL);
    if (token_file == NULL)
        token_file = getenv("A2A_TOKEN_FILE");
    if (token_file != NULL && *token_file != '\0') {
        if ((st = auth_key_load(&s->key, token_file, err, errlen)) != A2A_OK)
            return st;
        s->has_key = 1;
    }
    if (cert != NULL && key != NULL && ca != NULL)
        st = secure_tls(s, cert, key, ca, err, errlen);
    else if (cert != NULL || key != NULL || ca != NULL)
        st = status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                         "set all of A2A_TLS_CERT, A2A_TLS_KEY and A2A_TLS_CA, or none");
    secure_link(s);
    if (st != A2A_OK)
        secure_fini(s);
    return st;
}

void
secure_key_copy(const secure *s, auth_key *out)
{
    pthread_mutex_t *m = (pthread_mutex_t *)&s->key_mtx; /* the lock, not the key, changes */
    pthread_mutex_lock(m);
    *out = s->key;
    pthread_mutex_unlock(m);
}

int
secure_reload_token(secure *s, const char *path, auth_key *key, char *err, size_t errlen)
{
    char why[512];
    int same;

    if (!s->has_key) {
        snprintf(err, errlen, "this process started without a token: adding one needs a restart");
        return -1;
    }
    if (path == NULL || path[0] == '\0') {
        snprintf(err, errlen, "no token_file any more: removing the token needs a restart");
        return -1;
    }
    if (auth_key_load(key, path, why, sizeof(why)) != A2A_OK) {
        snprintf(err, errlen, "%s", why);
        auth_key_wipe(key);
        return -1;
    }
    pthread_mutex_lock(&s->key_mtx);
    same = s->key.len == key->len && auth_equal(s->key.key, key->key, key->len);
    s->key = *key;
    pthread_mutex_unlock(&s->key_mtx);
    return same ? 1 : 0;
}

static nng_tls_config *
tls_take(const secure *s, nng_tls_config *const *which)
{
    pthread_mutex_t *m = (pthread_mutex_t *)&s->key_mtx; /* the lock, not s, changes */
    nng_tls_config *t;
    pthread_mutex_lock(m);
    if ((t = *which) != NULL)
        nng_tls_config_hold(t);
    pthread_mutex_unlock(m);
    return t;
}

nng_tls_config *
secure_tls_server(const secure *s)
{
    return tls_take(s, &s->tls_server);
}

nng_tls_config *
secure_tls_client(const secure *s)
{
    return tls_take(s, &s->tls_client);
}

int
secure_reload_tls(secure *s, const char *cert, const char *key, const char *ca, char *err,
                  size_t errlen)
{
    nng_tls_config *srv = NULL, *cli = NULL, *old_s, *old_c;

    if (s->tls_server == NULL) {
        snprintf(err, errlen, "this process started without TLS: adding it needs a restart");
        return 1;
    }
    if (cert == NULL || cert[0] == '\0') {
        snprintf(err, errlen, "no security.tls any more: removing TLS needs a restart");
        return 1;
    }
    if (tls_make(&srv, NNG_TLS_MODE_SERVER, cert, key, ca, err, errlen) != A2A_OK)
        return -1;
    if (tls_make(&cli, NNG_TLS_MODE_CLIENT, cert, key, ca, err, errlen) != A2A_OK) {
        nng_tls_config_free(srv);
        return -1;
    }
    pthread_mutex_lock(&s->key_mtx);
    old_s = s->old_server;
    old_c = s->old_client;
    s->old_server = s->tls_server;
    s->old_client = s->tls_client;
    s->tls_server = srv;
    s->tls_client = cli;
    s->server.tls = srv;
    s->client.tls = cli;
    pthread_mutex_unlock(&s->key_mtx);
    if (old_s != NULL)
        nng_tls_config_free(old_s);
    if (old_c != NULL)
        nng_tls_config_free(old_c);
    return 0;
}

void
secure_fini(secure *s)
{
    if (s->tls_server != NULL)
        nng_tls_config_free(s->tls_server);
    if (s->tls_client != NULL)
        nng_tls_config_free(s->tls_client);
    if (s->old_server != NULL)
        nng_tls_config_free(s->old_server);
    if (s->old_client != NULL)
        nng_tls_config_free(s->old_client);
    auth_key_wipe(&s->key);
    pthread_mutex_destroy(&s->key_mtx);
    memset(s, 0, sizeof(*s));
}
