/*
 * secure.h - what a process needs to protect its RPCs and links, from the
 * cluster YAML (security.token_file, security.tls) or, for jobs and a2a-ctl,
 * from the environment (A2A_TOKEN_FILE; A2A_TLS_CERT, A2A_TLS_KEY, A2A_TLS_CA).
 */
#ifndef A2A_SERVER_SECURE_H
#define A2A_SERVER_SECURE_H

#include <pthread.h>

#include "common/config.h"
#include "rpc.h"

typedef struct {
    int has_key;
    auth_key key;               /* read it with secure_key_copy: SIGHUP may replace it */
    pthread_mutex_t key_mtx;    /* key, once the process runs threads */
    nng_tls_config *tls_server; /* NULL without TLS; SIGHUP may replace them (under key_mtx): */
    nng_tls_config *tls_client; /* take them with secure_tls_server/secure_tls_client */
    nng_tls_config *old_server; /* the ones replaced by the last reload, kept until the next: */
    nng_tls_config *old_client; /* NNG reads a listener's unlocked while it accepts */
    rpc_security server;        /* for rpc_server_alloc */
    rpc_security client;        /* for rpc_client_alloc */
} secure;

/* secure_from_cfg loads cfg's token and TLS files; free with secure_fini. */
a2a_status secure_from_cfg(secure *s, const cfg_cluster *cfg, char *err, size_t errlen);

/*
 * secure_from_env loads $A2A_TOKEN_FILE (or token_file when not NULL) and
 * $A2A_TLS_CERT/KEY/CA; free with secure_fini.
 */
a2a_status secure_from_env(secure *s, const char *token_file, char *err, size_t errlen);

/* secure_key_copy copies the current key into *out (under the key's lock). */
void secure_key_copy(const secure *s, auth_key *out);

/*
 * secure_reload_token reads path again (SIGHUP) and, when it holds a good
 * token, makes it the key for proofs from now on, also into *key (the copy
 * for the servers' gates and clients, which the caller hands on). A missing,
 * unreadable or wrong-sized file, or a process that started without a token
 * (adding one needs a restart), keeps the old key: -1 with why in err. 0 when
 * replaced, 1 when the file holds the same token.
 */
int secure_reload_token(secure *s, const char *path, auth_key *key, char *err, size_t errlen);

/*
 * secure_tls_server and secure_tls_client return the TLS configuration in use for new
 * connections, held (the caller releases it with nng_tls_config_free), or NULL without TLS.
 */
nng_tls_config *secure_tls_server(const secure *s);
nng_tls_config *secure_tls_client(const secure *s);

/*
 * secure_reload_tls reads the TLS certificate, key and CA files again (SIGHUP) and, when they
 * make good configurations, puts them in place of the ones in use: 0, and the caller hands
 * them to its listeners and dialers (new connections use them; established ones keep theirs).
 * A missing or bad file keeps the ones in use: -1 with why in err. 1 when the process has no
 * TLS (adding it, or removing it, needs a restart) or cert is empty.
 */
int secure_reload_tls(secure *s, const char *cert, const char *key, const char *ca, char *err,
                      size_t errlen);

/* secure_fini frees the TLS configurations and wipes the key. */
void secure_fini(secure *s);

#endif
