/* journal.c - the coordinator's state on disk (see journal.h). */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOURNAL_HEADER "a2a-coordinator journal 1"

void
journal_state_fini(journal_state *s)
{
    for (size_t i = 0; i < s->ngroups; i++)
        free(s->groups[i].ranks);
    free(s->groups);
    free(s->epochs);
    free(s->workers);
    memset(s, 0, sizeof(*s));
}

static uint64_t
fnv1a64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
    return h;
}

static void __attribute__((format(printf, 3, 4)))
say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- encoding ---- */

typedef struct {
    char *p;
    size_t len, cap;
    int full; /* past JOURNAL_MAX_BYTES or out of memory */
} jbuf;

static void __attribute__((format(printf, 2, 3))) jb_printf(jbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->full)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->full = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            if (b->len > JOURNAL_MAX_BYTES)
                b->full = 1;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n + 64;
        char *p = b->len + (size_t)n + 1 > JOURNAL_MAX_BYTES + 1 ? NULL : realloc(b->p, cap);
        if (p == NULL) {
            b->full = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

int
journal_encode(const journal_state *s, char **out, size_t *len, char *err, size_t errlen)
{
    jbuf b = {.p = malloc(4096), .cap = 4096};

    *out = NULL;
    *len = 0;
    if (b.p == NULL) {
        say(err, errlen, "out of memory");
        return -1;
    }
    jb_printf(&b, "%s\nnext_epoch %" PRIu64 "\n", JOURNAL_HEADER, s->next_epoch);
    for (size_t i = 0; i < s->nworkers; i++)
        jb_printf(&b, "worker %016" PRIx64 " %s\n", s->workers[i].incarnation, s->workers[i].name);
    for (size_t i = 0; i < s->nepochs; i++)
        jb_printf(&b, "epoch %" PRIu64 " %016" PRIx64 " %s\n", s->epochs[i].epoch,
                  s->epochs[i].fingerprint, s->epochs[i].name);
    for (size_t i = 0; i < s->ngroups && !b.full; i++) {
        const journal_group *g = &s->groups[i];
        jb_printf(&b, "group %zu", g->n);
        for (size_t k = 0; k < g->n; k++)
            jb_printf(&b, " %" PRId64, g->ranks[k]);
        jb_printf(&b, " %s\n", g->name);
    }
    jb_printf(&b, "end %016" PRIx64 "\n", fnv1a64(b.p, b.len));
    if (b.full) {
        free(b.p);
        say(err, errlen, "the journal would be larger than %zu MiB (too many or too large groups)",
            JOURNAL_MAX_BYTES >> 20);
        return -1;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

/* ---- decoding ---- */

typedef struct {
    const char *p, *end; /* the rest of the current line (end: its '\n') */
    size_t line;
    char *err;
    size_t errlen;
} jcur;

static int __attribute__((format(printf, 2, 3))) jfail(jcur *c, const char *fmt, ...)
{
    char why[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    say(c->err, c->errlen, "line %zu: %s", c->line, why);
    return -1;
}

/* word: the next space-delimited word must be w. */
static int
j_word(jcur *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n + 1 || memcmp(c->p, w, n) != 0 || c->p[n] != ' ')
        return -1;
    c->p += n + 1;
    return 0;
}

/* j_num reads an unsigned number (base 10 or 16) followed by a space (or the line's end if last).
 */
static int
j_num(jcur *c, int base, uint64_t *v, const char *what, int last)
{
    const char *q = c->p;
    uint64_t x = 0;

    if (q == c->end || *q == ' ')
        return jfail(c, "%s is missing", what);
    for (; q < c->end && *q != ' '; q++) {
        int d;
        if (*q >= '0' && *q <= '9')
            d = *q - '0';
        else if (base == 16 && *q >= 'a' && *q <= 'f')
            d = *q - 'a' + 10;
        else
            return jfail(c, "%s is not a number", what);
        if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return jfail(c, "%s is too large", what);
        x = x * (uint64_t)base + (uint64_t)d;
    }
    if (last ? q != c->end : (q == c->end))
        return jfail(c, last ? "%s is followed by something" : "nothing follows %s", what);
    c->p = last ? q : q + 1;
    *v = x;
    return 0;
}

/* j_name copies the rest of the line (a name) into dst of cap bytes. */
static int
j_name(jcur *c, char *dst, size_t cap, int worker)
{
    size_t n = (size_t)(c->end - c->p);
    char why[256];

    if (n == 0 || n >= cap)
        return jfail(c, "a name of %zu bytes", n);
    memcpy(dst, c->p, n);
    dst[n] = '\0';
    if (worker ? cfg_check_worker_name(dst) != 0
               : cfg_check_group_name(dst, n, why, sizeof(why)) != 0)
        return jfail(c, "bad name \"%s\"", dst);
    return 0;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* no_dups: the n names at base + i * stride are distinct; else the duplicate in err. */
static int
no_dups(const char *base, size_t n, size_t stride, const char *what, char *err, size_t errlen)
{
    const char **v;
    int rv = 0;

    if (n < 2)
        return 0;
    if ((v = malloc(n * sizeof(*v))) == NULL) {
        say(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = base + i * stride;
    qsort(v, n, sizeof(*v), cmp_str);
    for (size_t i = 1; i < n && rv == 0; i++)
        if (strcmp(v[i - 1], v[i]) == 0) {
            say(err, errlen, "%s \"%s\" appears twice", what, v[i]);
            rv = -1;
        }
    free(v);
    return rv;
}

static int
j_group(jcur *c, journal_state *s, uint8_t *seen)
{
    journal_group *g;
    uint64_t n, r;

    if (s->ngroups >= JOURNAL_MAX_GROUPS)
        return jfail(c, "more than %d groups", JOURNAL_MAX_GROUPS);
    if (j_num(c, 10, &n, "the group's size", 0) != 0)
        return -1;
    if (n == 0 || n > CFG_MAX_RANKS)
        return jfail(c, "a group of %" PRIu64 " ranks (1..%d)", n, CFG_MAX_RANKS);
    g = &s->groups[s->ngroups];
    memset(g, 0, sizeof(*g));
    if ((g->ranks = malloc((size_t)n * sizeof(int64_t))) == NULL)
        return jfail(c, "out of memory");
    s->ngroups++; /* freed with s from here on */
    memset(seen, 0, CFG_MAX_RANKS / 8);
    for (uint64_t k = 0; k < n; k++) {
        if (j_num(c, 10, &r, "a rank", 0) != 0)
            return -1;
        if (r >= CFG_MAX_RANKS)
            return jfail(c, "rank %" PRIu64 " is out of range", r);
        if (seen[r / 8] & (1u << (r % 8)))
            return jfail(c, "rank %" PRIu64 " appears twice", r);
        seen[r / 8] |= (uint8_t)(1u << (r % 8));
        g->ranks[k] = (int64_t)r;
    }
    g->n = (size_t)n;
    return j_name(c, g->name, sizeof(g->name), 0);
}

static int
j_line(jcur *c, journal_state *s, uint8_t *seen)
{
    uint64_t a, b;

    if (j_word(c, "worker") == 0) {
        journal_worker *w = &s->workers[s->nworkers];
        if (j_num(c, 16, &a, "the incarnation", 0) != 0 ||
            j_name(c, w->name, sizeof(w->name), 1) != 0)
            return -1;
        w->incarnation = a;
        s->nworkers++;
        return 0;
    }
    if (j_word(c, "epoch") == 0) {
        journal_epoch *e = &s->epochs[s->nepochs];
        if (s->nepochs >= JOURNAL_MAX_EPOCHS)
            return jfail(c, "more than %d epochs", JOURNAL_MAX_EPOCHS);
        if (j_num(c, 10, &a, "the epoch", 0) != 0 || j_num(c, 16, &b, "the fingerprint", 0) != 0 ||
            j_name(c, e->name, sizeof(e->name), 0) != 0)
            return -1;
        if (a > s->next_epoch)
            return jfail(c, "epoch %" PRIu64 " is past next_epoch %" PRIu64, a, s->next_epoch);
        e->epoch = a;
        e->fingerprint = b;
        s->nepochs++;
        return 0;
    }
    if (j_word(c, "group") == 0)
        return j_group(c, s, seen);
    return jfail(c, "unknown record \"%.*s\"", (int)(c->end - c->p > 20 ? 20 : c->end - c->p),
                 c->p);
}

int
journal_decode(journal_state *s, const char *text, size_t len, char *err, size_t errlen)
{
    jcur c = {.err = err, .errlen = errlen, .line = 1};
    size_t lines = 0, last = 0, body_end;
    uint64_t sum = 0;
    uint8_t *seen = NULL;
    const char *q, *end = text + len;
    int rv = -1;

    memset(s, 0, sizeof(*s));
    if (len > JOURNAL_MAX_BYTES) {
        say(err, errlen, "%zu bytes, larger than %zu MiB", len, JOURNAL_MAX_BYTES >> 20);
        return -1;
    }
    if (len == 0 || text[len - 1] != '\n') {
        say(err, errlen, "the file %s: it was truncated", len == 0 ? "is empty" : "ends mid-line");
        return -1;
    }
    for (q = text; q < end; q++)
        if (*q == '\n') {
            lines++;
            if (q + 1 < end)
                last = (size_t)(q + 1 - text);
        } else if ((uint8_t)*q < 0x20 || *q == 0x7f) {
            say(err, errlen, "line %zu: a control character (0x%02x): the file is damaged",
                lines + 1, (unsigned)(uint8_t)*q);
            return -1;
        }
    body_end = last;
    c.line = lines;
    c.p = text + last;
    c.end = end - 1;
    if (lines < 3 || j_word(&c, "end") != 0) {
        say(err, errlen, "line %zu: no \"end\" line: the file was truncated", lines);
        return -1;
    }
    if (j_num(&c, 16, &sum, "the checksum", 1) != 0)
        return -1;
    if (sum != fnv1a64(text, body_end)) {
        say(err, errlen, "line %zu: the checksum does not match: the file was changed or damaged",
            lines);
        return -1;
    }
    /* every line but the header, next_epoch and end may be a record: bound the arrays by it */
    s->workers = calloc(lines, sizeof(*s->workers));
    s->epochs = calloc(lines < JOURNAL_MAX_EPOCHS ? lines : JOURNAL_MAX_EPOCHS, sizeof(*s->epochs));
    s->groups = calloc(lines < JOURNAL_MAX_GROUPS ? lines : JOURNAL_MAX_GROUPS, sizeof(*s->groups));
    seen = malloc(CFG_MAX_RANKS / 8);
    if (s->workers == NULL || s->epochs == NULL || s->groups == NULL || seen == NULL) {
        say(err, errlen, "out of memory");
        goto out;
    }
    c.p = text;
    c.line = 1;
    for (size_t ln = 1; c.p < text + body_end; ln++) {
        c.line = ln;
        c.end = memchr(c.p, '\n', (size_t)(text + body_end - c.p));
        if (ln == 1) {
            if ((size_t)(c.end - c.p) != strlen(JOURNAL_HEADER) ||
                memcmp(c.p, JOURNAL_HEADER, strlen(JOURNAL_HEADER)) != 0) {
                jfail(&c, "not an a2a-coordinator journal (version 1)");
                goto out;
            }
        } else if (ln == 2) {
            if (j_word(&c, "next_epoch") != 0) {
                jfail(&c, "expected \"next_epoch\"");
                goto out;
            }
            if (j_num(&c, 10, &s->next_epoch, "next_epoch", 1) != 0)
                goto out;
        } else if (j_line(&c, s, seen) != 0) {
            goto out;
        }
        c.p = c.end + 1;
    }
    if (lines < 3) {
        say(err, errlen, "the file is too short");
        goto out;
    }
    if (no_dups(s->workers[0].name, s->nworkers, sizeof(*s->workers), "worker", err, errlen) != 0 ||
        no_dups(s->epochs[0].name, s->nepochs, sizeof(*s->epochs), "epoch of group", err, errlen) !=
            0 ||
        no_dups(s->groups[0].name, s->ngroups, sizeof(*s->groups), "group", err, errlen) != 0)
        goto out;
    rv = 0;
out:
    free(seen);
    if (rv != 0)
        journal_state_fini(s);
    return rv;
}

/* ---- files ---- */

a2a_status
journal_read(const char *path, journal_state *s, char *err, size_t errlen)
{
    char why[512];
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int fd;

    memset(s, 0, sizeof(*s));
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        say(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? A2A_ERR_NOT_FOUND : A2A_ERR_UNAVAILABLE;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        say(err, errlen, "%s: not a regular file", path);
        close(fd);
        return A2A_ERR_UNAVAILABLE;
    }
    if ((size_t)st.st_size > JOURNAL_MAX_BYTES) {
        say(err, errlen, "%s: %lld bytes, larger than %zu MiB: the file is damaged", path,
            (long long)st.st_size, JOURNAL_MAX_BYTES >> 20);
        close(fd);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
        say(err, errlen, "%s: out of memory", path);
        close(fd);
        return A2A_ERR_UNAVAILABLE;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            say(err, errlen, "%s: %s", path, n < 0 ? strerror(errno) : "shorter than its size");
            free(buf);
            close(fd);
            return A2A_ERR_UNAVAILABLE;
        }
        got += (size_t)n;
    }
    close(fd);
    if (journal_decode(s, buf, got, why, sizeof(why)) != 0) {
        say(err, errlen, "%s: %s", path, why);
        free(buf);
        return A2A_ERR_INVALID_ARGUMENT;
    }
    free(buf);
    return A2A_OK;
}

int
journal_write(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    char tmp[CFG_PATH_MAX + 8], folder[CFG_PATH_MAX + 1];
    const char *slash;
    size_t off = 0;
    int fd, dfd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        say(err, errlen, "%s: the path is too long", path);
        return -1;
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
        say(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            say(err, errlen, "%s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0) {
        say(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        say(err, errlen, "%s: rename: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(folder, sizeof(folder), ".");
    else if (slash == path)
        snprintf(folder, sizeof(folder), "/");
    else
        snprintf(folder, sizeof(folder), "%.*s", (int)(slash - path), path);
    if ((dfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        int rv = fsync(dfd);
        int e = errno;
        close(dfd);
        if (rv != 0) {
            say(err, errlen, "%s: fsync: %s", folder, strerror(e));
            return -1;
        }
    }
    return 0;
}
