/*
 * shm.c - memory that jobs share with the worker: the memfds a job hands
 * over on its session (SCM_RIGHTS, worker/local.c), mapped here too, so that
 * slices in them go to and from the sockets with no copy in the worker. A
 * job's plain buffers reach us the same way, through the staging memfds
 * that liba2a copies them into (worker/lib/client.c).
 *
 * Each mapping belongs to one session (xfer_sess) and is found only through
 * it; its refs count the transfers using it, and an unmap waits for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/status.h"
#include "engine_int.h"
#include "shm.h"

uint8_t *
shm_find(xfer_sess *s, uint64_t addr, uint64_t len, eng_map **m)
{
    uint8_t *p = NULL;

    *m = NULL;
    pthread_mutex_lock(&s->mtx);
    for (eng_map *x = s->maps; x != NULL; x = x->next)
        if (!x->dead && addr >= x->addr && len <= x->len && addr - x->addr <= x->len - len) {
            x->refs++;
            *m = x;
            p = x->ptr + (addr - x->addr);
            break;
        }
    pthread_mutex_unlock(&s->mtx);
    return p;
}

void
shm_release(eng_map *m)
{
    if (m == NULL)
        return;
    pthread_mutex_lock(&m->sess->mtx);
    if (--m->refs == 0)
        pthread_cond_broadcast(&m->sess->cv);
    pthread_mutex_unlock(&m->sess->mtx);
}

uint8_t *
shm_get(engine *e, xfer_sess *sess, uint64_t addr, uint64_t len, eng_map **m)
{
    (void)e;
    *m = NULL;
    return sess != NULL ? shm_find(sess, addr, len, m) : NULL;
}

void
shm_put(engine *e, eng_map *m)
{
    (void)e;
    shm_release(m);
}

a2a_status
shm_check_memfd(int fd, uint64_t len, const char *what, char *err, size_t errlen)
{
    char path[64], target[256];
    struct stat st;
    ssize_t n;
    int seals;

    if (fd < 0)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "%s: no descriptor came with it",
                           what);
    /* our own /proc: the name the kernel gave the file the descriptor refers to */
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
        n = 0;
    target[n] = '\0';
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || strncmp(target, "/memfd:", 7) != 0)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "%s: the descriptor is no memfd (%s)", what,
                           target[0] != '\0' ? target : "unknown file");
    if ((seals = fcntl(fd, F_GET_SEALS)) < 0 || !(seals & F_SEAL_SHRINK))
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "%s: the memfd is not sealed against shrinking (F_SEAL_SHRINK)", what);
    if (len == 0 || (uint64_t)st.st_size != len)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "%s: the memfd holds %lld bytes, not the %llu announced", what,
                           (long long)st.st_size, (unsigned long long)len);
    return A2A_OK;
}

a2a_status
shm_map_fd(int fd, uint64_t len, const char *what, int populate, void **out, char *err,
           size_t errlen)
{
    a2a_status st;
    void *p;

    *out = NULL;
    if ((st = shm_check_memfd(fd, len, what, err, errlen)) != A2A_OK)
        return st;
    if (len > SIZE_MAX)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "%s: too large", what);
    p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
             fd, 0);
    if (p == MAP_FAILED)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT, "%s: cannot map the memfd: %s",
                           what, strerror(errno));
    *out = p;
    return A2A_OK;
}

a2a_status
shm_map(xfer_sess *s, int fd, uint64_t addr, uint64_t len, char *err, size_t errlen)
{
    eng_map *m;
    a2a_status st = A2A_OK;
    void *p;

    if (addr + len < addr)
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "buffer at 0x%llx of %llu bytes wraps around", (unsigned long long)addr,
                           (unsigned long long)len);
    if ((st = shm_map_fd(fd, len, "shared buffer", 0, &p, err, errlen)) != A2A_OK)
        return st;
    if ((m = calloc(1, sizeof(*m))) == NULL) {
        munmap(p, (size_t)len);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    m->sess = s;
    m->addr = addr;
    m->len = len;
    m->ptr = p;
    pthread_mutex_lock(&s->mtx);
    if (s->closed)
        st = status_fail(err, errlen, A2A_ERR_UNAVAILABLE, "the session is closing");
    else if (s->nmaps >= SHM_MAX_PER_JOB)
        st = status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                         "the job shares %d buffers already", SHM_MAX_PER_JOB);
    for (eng_map *x = s->maps; x != NULL && st == A2A_OK; x = x->next)
        if (!x->dead && addr < x->addr + x->len && x->addr < addr + len)
            st = status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                             "buffer at 0x%llx of %llu bytes overlaps one shared already",
                             (unsigned long long)addr, (unsigned long long)len);
    if (st == A2A_OK) {
        m->next = s->maps;
        s->maps = m;
        s->nmaps++;
    }
    pthread_mutex_unlock(&s->mtx);
    if (st != A2A_OK) {
        munmap(p, (size_t)len);
        free(m);
        return st;
    }
    log_debug("session %llu: mapped %llu bytes", (unsigned long long)s->id,
              (unsigned long long)len);
    return A2A_OK;
}

/* unlink_wait takes m out of s's list once nobody uses it; under s->mtx. */
static void
unlink_wait(xfer_sess *s, eng_map *m)
{
    m->dead = 1;
    while (m->refs > 0)
        pthread_cond_wait(&s->cv, &s->mtx);
    for (eng_map **pp = &s->maps; *pp != NULL; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            s->nmaps--;
            break;
        }
}

a2a_status
shm_unmap(xfer_sess *s, uint64_t addr, char *err, size_t errlen)
{
    eng_map *m;

    pthread_mutex_lock(&s->mtx);
    for (m = s->maps; m != NULL; m = m->next)
        if (m->addr == addr && !m->dead)
            break;
    if (m != NULL)
        unlink_wait(s, m);
    pthread_mutex_unlock(&s->mtx);
    if (m == NULL)
        return status_fail(err, errlen, A2A_ERR_NOT_FOUND, "no shared buffer at 0x%llx",
                           (unsigned long long)addr);
    munmap(m->ptr, (size_t)m->len);
    free(m);
    return A2A_OK;
}

void
shm_unmap_all(xfer_sess *s)
{
    pthread_mutex_lock(&s->mtx);
    while (s->maps != NULL) {
        eng_map *m = s->maps;
        unlink_wait(s, m);
        pthread_mutex_unlock(&s->mtx);
        munmap(m->ptr, (size_t)m->len);
        free(m);
        pthread_mutex_lock(&s->mtx);
    }
    pthread_mutex_unlock(&s->mtx);
}

void
shm_free_all(engine *e)
{
    (void)e; /* every mapping belongs to a session, which unmaps it when it ends */
}
