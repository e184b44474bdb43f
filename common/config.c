/*
 * config.c - load and check the cluster YAML (DESIGN.md's schema) with the
 * libyaml document API. A file with any error is refused whole, with
 * "file:line:column: what is wrong" pointing at the offending node.
 */
#include "status.h"
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define CFG_FILE_MAX (16 * 1024 * 1024) /* largest file cfg_load_file reads */
#define CFG_QUOTE_MAX 48                /* bytes of a value shown in a message */

typedef struct {
    yaml_document_t *doc;
    const char *name; /* the file, for messages */
    char *err;
    size_t errlen;
} cfg_ctx;

typedef struct {
    const char *name;  /* a worker's or group's name, for finding duplicates */
    size_t index;      /* its position in the file */
    yaml_node_t *node; /* its name's node, for messages */
} cfg_name_ref;

static const char *const cfg_top_keys[] = {"coordinator", "security", "workers", "groups", NULL};
static const char *const cfg_coord_keys[] = {"url", "journal", NULL};
static const char *const cfg_security_keys[] = {"token_file", "tls", NULL};
static const char *const cfg_tls_keys[] = {"cert", "key", "ca", NULL};
static const char *const cfg_worker_keys[] = {"name",  "url",           "data_url", "socket",
                                              "ranks", "keep_awake_us", NULL};
static const char *const cfg_group_keys[] = {"name", "ranks", NULL};

static a2a_status
cfg_nomem(cfg_ctx *x)
{
    msg_fail(x->err, x->errlen, "%s: out of memory", x->name);
    return A2A_ERR_RESOURCE_EXHAUSTED;
}

/* cfg_fail writes "file:line:column: message" for a 0-based mark. */
static a2a_status __attribute__((format(printf, 3, 4)))
cfg_fail(cfg_ctx *x, yaml_mark_t mark, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (x->err == NULL || x->errlen == 0)
        return A2A_ERR_INVALID_ARGUMENT;
    n = snprintf(x->err, x->errlen, "%s:%zu:%zu: ", x->name, mark.line + 1, mark.column + 1);
    if (n < 0 || (size_t)n >= x->errlen)
        return A2A_ERR_INVALID_ARGUMENT;
    va_start(ap, fmt);
    vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return A2A_ERR_INVALID_ARGUMENT;
}

/* cfg_quote writes s (len bytes) double-quoted, escaped and shortened into buf. */
static const char *
cfg_quote(char *buf, size_t cap, const char *s, size_t len)
{
    size_t o = 0, i;

    buf[o++] = '"';
    for (i = 0; i < len && i < CFG_QUOTE_MAX && o + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (ch == '"' || ch == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    if (i < len)
        o += (size_t)snprintf(buf + o, cap - o, "...");
    snprintf(buf + o, cap - o, "\"");
    return buf;
}

static int
cfg_is_null(const yaml_node_t *n)
{
    const char *v;

    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* cfg_describe names what a node is, for "got ..." in messages. */
static const char *
cfg_describe(char *buf, size_t cap, const yaml_node_t *n)
{
    if (n->type == YAML_SEQUENCE_NODE)
        return "a sequence";
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (cfg_is_null(n))
        return "an empty value";
    return cfg_quote(buf, cap, (const char *)n->data.scalar.value, n->data.scalar.length);
}

static yaml_node_t *
cfg_node(cfg_ctx *x, int id)
{
    return yaml_document_get_node(x->doc, id);
}

static int
cfg_key_is(const yaml_node_t *k, const char *key)
{
    size_t len = strlen(key);

    return k->type == YAML_SCALAR_NODE && k->data.scalar.length == len &&
           memcmp(k->data.scalar.value, key, len) == 0;
}

static a2a_status
cfg_want(cfg_ctx *x, yaml_node_t *n, yaml_node_type_t type, const char *what)
{
    char buf[256];

    if (n->type == type)
        return A2A_OK;
    return cfg_fail(x, n->start_mark, "%s must be a %s, got %s", what,
                    type == YAML_MAPPING_NODE ? "mapping" : "sequence",
                    cfg_describe(buf, sizeof(buf), n));
}

/* cfg_map_check checks that n is a mapping whose keys are distinct scalars from keys. */
static a2a_status
cfg_map_check(cfg_ctx *x, yaml_node_t *n, const char *what, const char *const *keys)
{
    yaml_node_pair_t *p, *q;
    char buf[256], list[128] = "";
    a2a_status r;
    size_t i;

    if ((r = cfg_want(x, n, YAML_MAPPING_NODE, what)) != A2A_OK)
        return r;
    for (i = 0; keys[i] != NULL; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", keys[i]);
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = cfg_node(x, p->key);

        if (k->type != YAML_SCALAR_NODE)
            return cfg_fail(x, k->start_mark, "keys in %s must be strings, got %s", what,
                            cfg_describe(buf, sizeof(buf), k));
        for (i = 0; keys[i] != NULL && !cfg_key_is(k, keys[i]); i++)
            ;
        if (keys[i] == NULL)
            return cfg_fail(x, k->start_mark, "unknown key %s in %s (expected %s)",
                            cfg_quote(buf, sizeof(buf), (const char *)k->data.scalar.value,
                                      k->data.scalar.length),
                            what, list);
        for (q = n->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *e = cfg_node(x, q->key);

            if (cfg_key_is(e, keys[i]))
                return cfg_fail(x, k->start_mark, "duplicate key \"%s\" in %s (first at line %zu)",
                                keys[i], what, e->start_mark.line + 1);
        }
    }
    return A2A_OK;
}

/* cfg_get returns the value of key in a checked mapping, or NULL. */
static yaml_node_t *
cfg_get(cfg_ctx *x, yaml_node_t *map, const char *key)
{
    yaml_node_pair_t *p;

    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        if (cfg_key_is(cfg_node(x, p->key), key))
            return cfg_node(x, p->value);
    return NULL;
}

/* cfg_need is cfg_get for a required key; a missing one is an error at the mapping. */
static a2a_status
cfg_need(cfg_ctx *x, yaml_node_t *map, const char *what, const char *key, yaml_node_t **out)
{
    if ((*out = cfg_get(x, map, key)) != NULL)
        return A2A_OK;
    return cfg_fail(x, map->start_mark, "%s is missing \"%s\"", what, key);
}

/* cfg_string checks that n is a scalar without NUL bytes. */
static a2a_status
cfg_string(cfg_ctx *x, yaml_node_t *n, const char *key)
{
    char buf[256];

    if (n->type != YAML_SCALAR_NODE)
        return cfg_fail(x, n->start_mark, "\"%s\" must be a string, got %s", key,
                        cfg_describe(buf, sizeof(buf), n));
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL)
        return cfg_fail(
            x, n->start_mark, "\"%s\" contains a NUL byte: %s", key,
            cfg_quote(buf, sizeof(buf), (const char *)n->data.scalar.value, n->data.scalar.length));
    return A2A_OK;
}

/* cfg_path copies a non-empty string of at most cap - 1 bytes into dst. */
static a2a_status
cfg_path(cfg_ctx *x, yaml_node_t *n, const char *key, char *dst, size_t cap)
{
    a2a_status r;

    if ((r = cfg_string(x, n, key)) != A2A_OK)
        return r;
    if (n->data.scalar.length == 0)
        return cfg_fail(x, n->start_mark, "\"%s\" must not be empty", key);
    if (n->data.scalar.length >= cap)
        return cfg_fail(x, n->start_mark, "\"%s\" is %zu bytes long; the limit is %zu", key,
                        n->data.scalar.length, cap - 1);
    memcpy(dst, n->data.scalar.value, n->data.scalar.length + 1);
    return A2A_OK;
}

static a2a_status
cfg_url(cfg_ctx *x, yaml_node_t *n, const char *key, char *dst)
{
    char why[512];
    a2a_status r;

    if ((r = cfg_string(x, n, key)) != A2A_OK)
        return r;
    if (cfg_check_url((const char *)n->data.scalar.value, why, sizeof(why)) != 0)
        return cfg_fail(x, n->start_mark, "bad \"%s\": %s", key, why);
    memcpy(dst, n->data.scalar.value, n->data.scalar.length + 1);
    return A2A_OK;
}

/* cfg_int reads a plain decimal integer, -?(0|[1-9][0-9]*), that fits in 64 bits. */
static a2a_status
cfg_int(cfg_ctx *x, yaml_node_t *n, const char *key, int64_t *v)
{
    const char *s, *d;
    char buf[256], *end;
    long long ll;

    if (n->type != YAML_SCALAR_NODE)
        return cfg_fail(x, n->start_mark, "\"%s\" must be an integer, got %s", key,
                        cfg_describe(buf, sizeof(buf), n));
    s = (const char *)n->data.scalar.value;
    cfg_quote(buf, sizeof(buf), s, n->data.scalar.length);
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return cfg_fail(x, n->start_mark, "\"%s\" must be an integer, got the quoted string %s",
                        key, buf);
    d = s[0] == '-' ? s + 1 : s; /* strtoll alone would also take spaces, '+' and "007" */
    if (*d >= '0' && *d <= '9' && !(d[0] == '0' && d[1] != '\0')) {
        errno = 0;
        ll = strtoll(s, &end, 10);
        if (end == s + n->data.scalar.length && errno == ERANGE)
            return cfg_fail(x, n->start_mark, "\"%s\" is out of range: %s does not fit in 64 bits",
                            key, buf);
        if (end == s + n->data.scalar.length) {
            *v = (int64_t)ll;
            return A2A_OK;
        }
    }
    return cfg_fail(x, n->start_mark, "\"%s\" must be an integer, got %s", key, buf);
}

static int
cfg_name_cmp(const void *a, const void *b)
{
    const cfg_name_ref *l = a, *r = b;
    int c = strcmp(l->name, r->name);

    if (c != 0)
        return c;
    return l->index < r->index ? -1 : l->index > r->index;
}

/*
 * cfg_first_dup sorts refs by name and returns the slot of the name that, first
 * in file order, repeats an earlier one (refs[slot - 1] is that earlier one); n if none.
 */
static size_t
cfg_first_dup(cfg_name_ref *refs, size_t n)
{
    size_t i, dup = n;

    qsort(refs, n, sizeof(*refs), cfg_name_cmp);
    for (i = 1; i < n; i++)
        if (strcmp(refs[i - 1].name, refs[i].name) == 0 &&
            (dup == n || refs[i].index < refs[dup].index))
            dup = i;
    return dup;
}

static a2a_status
cfg_load_security(cfg_ctx *x, yaml_node_t *n, cfg_cluster *c)
{
    char *const dst[] = {c->tls_cert, c->tls_key, c->tls_ca};
    yaml_node_t *v, *tls;
    a2a_status r;
    size_t i;

    if ((r = cfg_map_check(x, n, "security", cfg_security_keys)) != A2A_OK)
        return r;
    v = cfg_get(x, n, "token_file");
    if (v != NULL && (r = cfg_path(x, v, "token_file", c->token_file, CFG_PATH_MAX + 1)) != A2A_OK)
        return r;
    if ((tls = cfg_get(x, n, "tls")) == NULL || cfg_is_null(tls))
        return A2A_OK;
    if ((r = cfg_map_check(x, tls, "tls", cfg_tls_keys)) != A2A_OK)
        return r;
    for (i = 0; i < 3; i++) {
        if ((v = cfg_get(x, tls, cfg_tls_keys[i])) == NULL)
            return cfg_fail(x, tls->start_mark,
                            "tls is missing \"%s\": cert, key and ca go together", cfg_tls_keys[i]);
        if ((r = cfg_path(x, v, cfg_tls_keys[i], dst[i], CFG_PATH_MAX + 1)) != A2A_OK)
            return r;
    }
    return A2A_OK;
}

static a2a_status
cfg_load_worker(cfg_ctx *x, yaml_node_t *n, cfg_worker *w, cfg_name_ref *ref)
{
    yaml_node_t *v;
    char buf[256];
    a2a_status r;

    if ((r = cfg_map_check(x, n, "worker", cfg_worker_keys)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, n, "worker", "name", &v)) != A2A_OK ||
        (r = cfg_string(x, v, "name")) != A2A_OK)
        return r;
    if (v->data.scalar.length > CFG_WORKER_NAME_MAX ||
        cfg_check_worker_name((const char *)v->data.scalar.value) != 0)
        return cfg_fail(
            x, v->start_mark, "bad worker name %s: use 1 to %d of A-Z a-z 0-9 . _ -",
            cfg_quote(buf, sizeof(buf), (const char *)v->data.scalar.value, v->data.scalar.length),
            CFG_WORKER_NAME_MAX);
    memcpy(w->name, v->data.scalar.value, v->data.scalar.length + 1);
    ref->name = w->name;
    ref->node = v;
    if ((r = cfg_need(x, n, "worker", "url", &v)) != A2A_OK ||
        (r = cfg_url(x, v, "url", w->url)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, n, "worker", "data_url", &v)) != A2A_OK ||
        (r = cfg_url(x, v, "data_url", w->data_url)) != A2A_OK)
        return r;
    if ((v = cfg_get(x, n, "socket")) != NULL && !cfg_is_null(v)) {
        if ((r = cfg_path(x, v, "socket", w->socket, CFG_SOCKET_MAX + 1)) != A2A_OK)
            return r;
        if (w->socket[0] != '/')
            return cfg_fail(x, v->start_mark, "\"socket\" must be an absolute path, got %s",
                            cfg_quote(buf, sizeof(buf), w->socket, strlen(w->socket)));
    }
    if ((r = cfg_need(x, n, "worker", "ranks", &v)) != A2A_OK ||
        (r = cfg_int(x, v, "ranks", &w->ranks)) != A2A_OK)
        return r;
    if (w->ranks < 1)
        return cfg_fail(x, v->start_mark, "\"ranks\" must be at least 1, got %lld",
                        (long long)w->ranks);
    if (w->ranks > CFG_MAX_RANKS)
        return cfg_fail(x, v->start_mark, "\"ranks\" is %lld; the world holds at most %d ranks",
                        (long long)w->ranks, CFG_MAX_RANKS);
    if ((v = cfg_get(x, n, "keep_awake_us")) != NULL && !cfg_is_null(v)) {
        if ((r = cfg_int(x, v, "keep_awake_us", &w->keep_awake_us)) != A2A_OK)
            return r;
        if (w->keep_awake_us < 0 || w->keep_awake_us > CFG_KEEP_AWAKE_MAX_US)
            return cfg_fail(x, v->start_mark,
                            "\"keep_awake_us\" must be 0 (off) to %d microseconds, got %lld",
                            CFG_KEEP_AWAKE_MAX_US, (long long)w->keep_awake_us);
    }
    return A2A_OK;
}

static a2a_status
cfg_load_workers(cfg_ctx *x, yaml_node_t *n, cfg_cluster *c)
{
    cfg_name_ref *refs = NULL;
    size_t i, cnt, dup;
    a2a_status r = A2A_OK;

    if (cfg_is_null(n) || (n->type == YAML_SEQUENCE_NODE &&
                           n->data.sequence.items.top == n->data.sequence.items.start))
        return cfg_fail(x, n->start_mark, "\"workers\" is empty: the cluster needs a worker");
    if ((r = cfg_want(x, n, YAML_SEQUENCE_NODE, "\"workers\"")) != A2A_OK)
        return r;
    cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (cnt > CFG_MAX_RANKS)
        return cfg_fail(x, n->start_mark, "%zu workers; the world holds at most %d ranks", cnt,
                        CFG_MAX_RANKS);
    if ((c->workers = calloc(cnt, sizeof(*c->workers))) == NULL ||
        (refs = calloc(cnt, sizeof(*refs))) == NULL) {
        r = cfg_nomem(x);
        goto out;
    }
    for (i = 0; i < cnt; i++) {
        yaml_node_t *w = cfg_node(x, n->data.sequence.items.start[i]);

        refs[i].index = i;
        if ((r = cfg_load_worker(x, w, &c->workers[i], &refs[i])) != A2A_OK)
            goto out;
        c->nworkers++;
        c->workers[i].first_rank = c->world_size;
        if (c->workers[i].ranks > CFG_MAX_RANKS - c->world_size) {
            r = cfg_fail(x, w->start_mark,
                         "worker \"%s\" brings the world to %lld ranks; the limit is %d",
                         c->workers[i].name, (long long)(c->world_size + c->workers[i].ranks),
                         CFG_MAX_RANKS);
            goto out;
        }
        c->world_size += c->workers[i].ranks;
    }
    if ((dup = cfg_first_dup(refs, cnt)) < cnt)
        r = cfg_fail(x, refs[dup].node->start_mark,
                     "duplicate worker name \"%s\" (first at line %zu)", refs[dup].name,
                     refs[dup - 1].node->start_mark.line + 1);
out:
    free(refs);
    return r;
}

/* cfg_load_ranks reads a group's ranks; seen[r] (all 0 on entry) is the node id listing rank r. */
static a2a_status
cfg_load_ranks(cfg_ctx *x, yaml_node_t *n, const cfg_cluster *c, cfg_group *g, int *seen)
{
    size_t i, cnt;
    a2a_status r;

    if ((r = cfg_want(x, n, YAML_SEQUENCE_NODE, "\"ranks\"")) != A2A_OK)
        return r;
    cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (cnt == 0)
        return cfg_fail(x, n->start_mark, "group \"%s\" is empty: list at least one rank", g->name);
    if ((g->ranks = calloc(cnt, sizeof(*g->ranks))) == NULL)
        return cfg_nomem(x);
    for (i = 0; i < cnt; i++) {
        int id = n->data.sequence.items.start[i];
        yaml_node_t *v = cfg_node(x, id);
        int64_t rk;

        if ((r = cfg_int(x, v, "rank", &rk)) != A2A_OK)
            return r;
        if (rk < 0 || rk >= c->world_size)
            return cfg_fail(x, v->start_mark,
                            "rank %lld is out of range: the world has %lld ranks (0..%lld)",
                            (long long)rk, (long long)c->world_size, (long long)c->world_size - 1);
        if (seen[rk] != 0)
            return cfg_fail(x, v->start_mark,
                            "duplicate rank %lld in group \"%s\" (first at line %zu, column %zu)",
                            (long long)rk, g->name, cfg_node(x, seen[rk])->start_mark.line + 1,
                            cfg_node(x, seen[rk])->start_mark.column + 1);
        seen[rk] = id;
        g->ranks[g->n++] = rk;
    }
    for (i = 0; i < g->n; i++) /* clear for the next group */
        seen[g->ranks[i]] = 0;
    return A2A_OK;
}

static a2a_status
cfg_load_group(cfg_ctx *x, yaml_node_t *n, const cfg_cluster *c, cfg_group *g, int *seen,
               cfg_name_ref *ref)
{
    char why[256], buf[256];
    yaml_node_t *v;
    a2a_status r;

    if ((r = cfg_map_check(x, n, "group", cfg_group_keys)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, n, "group", "name", &v)) != A2A_OK ||
        (r = cfg_string(x, v, "name")) != A2A_OK)
        return r;
    if (cfg_check_group_name((const char *)v->data.scalar.value, v->data.scalar.length, why,
                             sizeof(why)) != 0)
        return cfg_fail(
            x, v->start_mark, "bad group name %s: %s",
            cfg_quote(buf, sizeof(buf), (const char *)v->data.scalar.value, v->data.scalar.length),
            why);
    if (strcmp((const char *)v->data.scalar.value, A2A_WORLD_GROUP) == 0)
        return cfg_fail(x, v->start_mark,
                        "group name \"%s\" is reserved: that group always exists and holds "
                        "every rank",
                        A2A_WORLD_GROUP);
    memcpy(g->name, v->data.scalar.value, v->data.scalar.length + 1);
    ref->name = g->name;
    ref->node = v;
    if ((r = cfg_need(x, n, "group", "ranks", &v)) != A2A_OK)
        return r;
    return cfg_load_ranks(x, v, c, g, seen);
}

static a2a_status
cfg_load_groups(cfg_ctx *x, yaml_node_t *n, cfg_cluster *c)
{
    cfg_name_ref *refs = NULL;
    size_t i, cnt, dup;
    int *seen = NULL;
    a2a_status r = A2A_OK;

    if ((r = cfg_want(x, n, YAML_SEQUENCE_NODE, "\"groups\"")) != A2A_OK)
        return r;
    cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (cnt == 0)
        return A2A_OK;
    if ((c->groups = calloc(cnt, sizeof(*c->groups))) == NULL ||
        (refs = calloc(cnt, sizeof(*refs))) == NULL ||
        (seen = calloc((size_t)c->world_size, sizeof(*seen))) == NULL) {
        r = cfg_nomem(x);
        goto out;
    }
    for (i = 0; i < cnt; i++) {
        c->ngroups++;
        refs[i].index = i;
        r = cfg_load_group(x, cfg_node(x, n->data.sequence.items.start[i]), c, &c->groups[i], seen,
                           &refs[i]);
        if (r != A2A_OK)
            goto out;
    }
    if ((dup = cfg_first_dup(refs, cnt)) < cnt)
        r = cfg_fail(x, refs[dup].node->start_mark,
                     "duplicate group name \"%s\" (first at line %zu)", refs[dup].name,
                     refs[dup - 1].node->start_mark.line + 1);
out:
    free(refs);
    free(seen);
    return r;
}

static a2a_status
cfg_load_root(cfg_ctx *x, yaml_node_t *root, cfg_cluster *c)
{
    yaml_node_t *v, *u;
    a2a_status r;

    if ((r = cfg_map_check(x, root, "the top level", cfg_top_keys)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, root, "the top level", "coordinator", &v)) != A2A_OK ||
        (r = cfg_map_check(x, v, "coordinator", cfg_coord_keys)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, v, "coordinator", "url", &u)) != A2A_OK ||
        (r = cfg_url(x, u, "url", c->coordinator_url)) != A2A_OK)
        return r;
    if ((u = cfg_get(x, v, "journal")) != NULL && !cfg_is_null(u) &&
        (r = cfg_path(x, u, "journal", c->journal, CFG_PATH_MAX + 1)) != A2A_OK)
        return r;
    if ((v = cfg_get(x, root, "security")) != NULL && !cfg_is_null(v) &&
        (r = cfg_load_security(x, v, c)) != A2A_OK)
        return r;
    if ((r = cfg_need(x, root, "the top level", "workers", &v)) != A2A_OK ||
        (r = cfg_load_workers(x, v, c)) != A2A_OK)
        return r;
    if ((v = cfg_get(x, root, "groups")) != NULL && !cfg_is_null(v))
        return cfg_load_groups(x, v, c);
    return A2A_OK;
}

/* cfg_syntax_error reports the parser's error; a reader error has only a byte offset. */
static a2a_status
cfg_syntax_error(cfg_ctx *x, const yaml_parser_t *p, const char *text, size_t len)
{
    yaml_mark_t mark = p->problem_mark;
    size_t i;

    if (p->error == YAML_MEMORY_ERROR)
        return cfg_nomem(x);
    if (p->error == YAML_READER_ERROR) {
        memset(&mark, 0, sizeof(mark));
        for (i = 0; i < p->problem_offset && i < len; i++) {
            mark.column = text[i] == '\n' ? 0 : mark.column + 1;
            mark.line += text[i] == '\n';
        }
        return cfg_fail(x, mark, "YAML syntax error: %s (byte 0x%02x)",
                        p->problem ? p->problem : "unreadable input",
                        (unsigned)p->problem_value & 0xffu);
    }
    if (p->context != NULL)
        return cfg_fail(x, mark, "YAML syntax error: %s (%s at line %zu, column %zu)",
                        p->problem ? p->problem : "bad input", p->context, p->context_mark.line + 1,
                        p->context_mark.column + 1);
    return cfg_fail(x, mark, "YAML syntax error: %s", p->problem ? p->problem : "bad input");
}

/* cfg_parse loads exactly one YAML document from text into doc. */
static a2a_status
cfg_parse(cfg_ctx *x, const char *text, size_t len, yaml_document_t *doc)
{
    yaml_document_t extra;
    yaml_parser_t p;
    yaml_mark_t mark = {0, 0, 0};
    a2a_status r = A2A_OK;

    if (!yaml_parser_initialize(&p))
        return cfg_nomem(x);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, doc)) {
        r = cfg_syntax_error(x, &p, text, len);
        goto out;
    }
    if (yaml_document_get_root_node(doc) == NULL) {
        yaml_document_delete(doc);
        r = cfg_fail(x, mark, "the file is empty: it needs coordinator and workers");
        goto out;
    }
    if (!yaml_parser_load(&p, &extra)) {
        yaml_document_delete(doc);
        r = cfg_syntax_error(x, &p, text, len);
        goto out;
    }
    if (yaml_document_get_root_node(&extra) != NULL) {
        yaml_document_delete(doc);
        r = cfg_fail(x, extra.start_mark, "a second YAML document: the file must hold only one");
    }
    yaml_document_delete(&extra);
out:
    yaml_parser_delete(&p);
    return r;
}

a2a_status
cfg_load_string(cfg_cluster **out, const char *name, const char *text, size_t len, char *err,
                size_t errlen)
{
    cfg_ctx x = {NULL, name != NULL ? name : "<string>", err, errlen};
    cfg_cluster *c = NULL;
    yaml_document_t doc;
    int have_doc = 0;
    a2a_status r;

    if (out == NULL || (text == NULL && len > 0)) {
        msg_fail(err, errlen, "%s: no output or no text", x.name);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if ((c = calloc(1, sizeof(*c))) == NULL) {
        msg_fail(err, errlen, "%s: out of memory", x.name);
        return A2A_ERR_RESOURCE_EXHAUSTED;
    }
    snprintf(c->path, sizeof(c->path), "%s", x.name);
    if ((r = cfg_parse(&x, text != NULL ? text : "", len, &doc)) != A2A_OK)
        goto out;
    have_doc = 1;
    x.doc = &doc;
    if ((r = cfg_load_root(&x, yaml_document_get_root_node(&doc), c)) != A2A_OK)
        goto out;
    *out = c;
    c = NULL;
out:
    if (have_doc)
        yaml_document_delete(&doc);
    cfg_free(c);
    return r;
}

a2a_status
cfg_load_file(cfg_cluster **out, const char *path, char *err, size_t errlen)
{
    char *buf = NULL, *nb;
    size_t len = 0, cap = 0;
    FILE *f = NULL;
    a2a_status r;

    if (out == NULL || path == NULL) {
        msg_fail(err, errlen, "cfg_load_file: no output or no path");
        return A2A_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    if ((f = fopen(path, "rb")) == NULL) {
        msg_fail(err, errlen, "%s: %s", path, strerror(errno));
        return A2A_ERR_NOT_FOUND;
    }
    while (!feof(f) && !ferror(f) && cap < CFG_FILE_MAX) {
        cap = cap ? cap * 2 : 4096;
        if ((nb = realloc(buf, cap)) == NULL) {
            msg_fail(err, errlen, "%s: out of memory", path);
            r = A2A_ERR_RESOURCE_EXHAUSTED;
            goto out;
        }
        buf = nb;
        len += fread(buf + len, 1, cap - len, f);
    }
    if (!feof(f) && !ferror(f) && fgetc(f) != EOF) {
        msg_fail(err, errlen, "%s: larger than %d bytes", path, CFG_FILE_MAX);
        r = A2A_ERR_INVALID_ARGUMENT;
        goto out;
    }
    if (ferror(f)) {
        msg_fail(err, errlen, "%s: %s", path, strerror(errno));
        r = A2A_ERR_NOT_FOUND;
        goto out;
    }
    r = cfg_load_string(out, path, buf, len, err, errlen);
out:
    if (f != NULL)
        fclose(f);
    free(buf);
    return r;
}

void
cfg_free(cfg_cluster *c)
{
    size_t i;

    if (c == NULL)
        return;
    for (i = 0; i < c->ngroups; i++)
        free(c->groups[i].ranks);
    free(c->groups);
    free(c->workers);
    free(c);
}

const cfg_worker *
cfg_find_worker(const cfg_cluster *c, const char *name)
{
    size_t i;

    if (c == NULL || name == NULL)
        return NULL;
    for (i = 0; i < c->nworkers; i++)
        if (strcmp(c->workers[i].name, name) == 0)
            return &c->workers[i];
    return NULL;
}

const cfg_worker *
cfg_worker_of_rank(const cfg_cluster *c, int64_t r)
{
    size_t lo = 0, hi;

    if (c == NULL || r < 0 || r >= c->world_size)
        return NULL;
    hi = c->nworkers;
    while (lo + 1 < hi) { /* the last worker whose first_rank <= r */
        size_t mid = lo + (hi - lo) / 2;

        if (c->workers[mid].first_rank <= r)
            lo = mid;
        else
            hi = mid;
    }
    return &c->workers[lo];
}

const cfg_group *
cfg_find_group(const cfg_cluster *c, const char *name)
{
    size_t i;

    if (c == NULL || name == NULL)
        return NULL;
    for (i = 0; i < c->ngroups; i++)
        if (strcmp(c->groups[i].name, name) == 0)
            return &c->groups[i];
    return NULL;
}

int
cfg_check_group_name(const char *name, size_t len, char *err, size_t errlen)
{
    size_t i;

    if (name == NULL || len == 0)
        return msg_fail(err, errlen, "a group name must not be empty");
    if (len > A2A_GROUP_NAME_MAX)
        return msg_fail(err, errlen, "a group name of %zu bytes is too long; the limit is %d", len,
                        A2A_GROUP_NAME_MAX);
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        /* C0 controls, DEL, and C1 controls (U+0080..U+009F as UTF-8) */
        int c1 = ch == 0xc2 && i + 1 < len && (unsigned char)name[i + 1] >= 0x80 &&
                 (unsigned char)name[i + 1] <= 0x9f;

        if (ch < 0x20 || ch == 0x7f || c1)
            return msg_fail(err, errlen,
                            "a group name must not hold control characters (byte 0x%02x at "
                            "offset %zu)",
                            c1 ? (unsigned char)name[i + 1] : ch, i);
    }
    return 0;
}

int
cfg_check_worker_name(const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;

    if (len == 0 || len > CFG_WORKER_NAME_MAX ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != len)
        return -1;
    return 0;
}

/* cfg_check_hostport checks "host:port" (host may be [IPv6]) after tcp://; q quotes the URL. */
static int
cfg_check_hostport(const char *q, const char *hp, char *err, size_t errlen)
{
    const char *colon, *port;
    size_t hlen;

    if (hp[0] == '[') {
        const char *rb = strchr(hp, ']');

        if (rb == NULL || rb == hp + 1 || rb[1] != ':' ||
            strspn(hp + 1, "0123456789abcdefABCDEF:.%") != (size_t)(rb - hp - 1))
            return msg_fail(err, errlen, "URL %s has a bad IPv6 host (expected [address]:port)", q);
        colon = rb + 1;
    } else {
        if ((colon = strrchr(hp, ':')) == NULL)
            return msg_fail(err, errlen, "URL %s needs host:port", q);
        hlen = (size_t)(colon - hp);
        if (hlen == 0 || strspn(hp, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789.-_") != hlen)
            return msg_fail(err, errlen, "URL %s has %s host (expected a name or an address)", q,
                            hlen == 0 ? "an empty" : "a bad");
    }
    port = colon + 1;
    if (port[0] == '\0' || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port) ||
        atol(port) > 65535)
        return msg_fail(err, errlen, "URL %s has a bad port (expected a number 0..65535)", q);
    return 0;
}

int
cfg_check_url(const char *url, char *err, size_t errlen)
{
    static const char *const schemes[] = {"tcp://", "tls+tcp://", "ipc://", "inproc://"};
    size_t len, i, sl = 0;
    char q[256];

    if (url == NULL || url[0] == '\0')
        return msg_fail(err, errlen, "the URL is empty");
    len = strlen(url);
    cfg_quote(q, sizeof(q), url, len);
    if (len > CFG_URL_MAX)
        return msg_fail(err, errlen, "URL %s is %zu bytes long; the limit is %d", q, len,
                        CFG_URL_MAX);
    for (i = 0; i < len; i++)
        if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f)
            return msg_fail(err, errlen, "URL %s holds a space or control character", q);
    for (i = 0; i < 4; i++)
        if (strncmp(url, schemes[i], sl = strlen(schemes[i])) == 0)
            break;
    if (i == 4)
        return msg_fail(err, errlen,
                        "URL %s must start with tcp://, tls+tcp://, ipc:// or inproc://", q);
    if (i < 2)
        return cfg_check_hostport(q, url + sl, err, errlen);
    if (url[sl] == '\0')
        return msg_fail(err, errlen, "URL %s has nothing after %s", q, schemes[i]);
    return 0;
}
