/* shm.c - memory that jobs share with the worker (a2a_buffer_alloc): mapped
 * from the job's memfd through /proc/PID/fd, so that slices inside it go to
 * and from the sockets with no copy in the worker. */
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

#define SHM_MAX_PER_JOB 1024

uint8_t *
shm_get(engine *e, pid_t pid, uint64_t addr, uint64_t len, eng_map **m)
{
    *m = NULL;
    for (eng_map *x = e->maps; x != NULL; x = x->next)
        if (x->pid == pid && !x->dead && addr >= x->addr && len <= x->len &&
            addr - x->addr <= x->len - len) {
            x->refs++;
            *m = x;
            return x->ptr + (addr - x->addr);
        }
    return NULL;
}

void
shm_put(engine *e, eng_map *m)
{
    if (m != NULL && --m->refs == 0)
        pthread_cond_broadcast(&e->map_cv);
}

a2a_status
shm_open_memfd(pid_t pid, int64_t fd, uint64_t len, int *out, char *err, size_t errlen)
{
    char path[64];
    struct stat st;
    int f, seals;

    *out = -1;
    snprintf(path, sizeof(path), "/proc/%d/fd/%lld", (int)pid, (long long)fd);
    if ((f = open(path, O_RDWR | O_CLOEXEC)) < 0)
        return status_fail(err, errlen, A2A_ERR_PERMISSION_DENIED, "cannot open %s: %s", path,
                           strerror(errno));
    if (fstat(f, &st) != 0 || len == 0 || (uint64_t)st.st_size < len) {
        close(f);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "%s holds fewer than the %llu bytes announced", path,
                           (unsigned long long)len);
    }
    if ((seals = fcntl(f, F_GET_SEALS)) < 0 || !(seals & F_SEAL_SHRINK)) {
        close(f);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "%s is not sealed against shrinking (F_SEAL_SHRINK)", path);
    }
    *out = f;
    return A2A_OK;
}

a2a_status
shm_map(engine *e, pid_t pid, int fd, uint64_t addr, uint64_t len, char *err, size_t errlen)
{
    eng_map *m;
    size_t n = 0;
    a2a_status st;
    void *p;
    int f;

    if ((st = shm_open_memfd(pid, fd, len, &f, err, errlen)) != A2A_OK)
        return st;
    p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    close(f);
    if (p == MAP_FAILED)
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "cannot map /proc/%d/fd/%d: %s",
                           (int)pid, fd, strerror(errno));
    if ((m = calloc(1, sizeof(*m))) == NULL) {
        munmap(p, (size_t)len);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
    m->pid = pid;
    m->addr = addr;
    m->len = len;
    m->ptr = p;
    pthread_mutex_lock(&e->mtx);
    for (eng_map *x = e->maps; x != NULL; x = x->next)
        n += x->pid == pid;
    if (n >= SHM_MAX_PER_JOB) {
        pthread_mutex_unlock(&e->mtx);
        munmap(p, (size_t)len);
        free(m);
        return status_fail(err, errlen, A2A_ERR_RESOURCE_EXHAUSTED,
                           "process %d shares %d buffers already", (int)pid, SHM_MAX_PER_JOB);
    }
    m->next = e->maps;
    e->maps = m;
    pthread_mutex_unlock(&e->mtx);
    log_debug("mapped %llu bytes of process %d", (unsigned long long)len, (int)pid);
    return A2A_OK;
}

/* unlink_wait takes m out of the list once nobody uses it; under e->mtx. */
static void
unlink_wait(engine *e, eng_map *m)
{
    m->dead = 1;
    while (m->refs > 0)
        pthread_cond_wait(&e->map_cv, &e->mtx);
    for (eng_map **pp = &e->maps; *pp != NULL; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
}

a2a_status
shm_unmap(engine *e, pid_t pid, uint64_t addr, char *err, size_t errlen)
{
    eng_map *m;

    pthread_mutex_lock(&e->mtx);
    for (m = e->maps; m != NULL; m = m->next)
        if (m->pid == pid && m->addr == addr && !m->dead)
            break;
    if (m != NULL)
        unlink_wait(e, m);
    pthread_mutex_unlock(&e->mtx);
    if (m == NULL)
        return status_fail(err, errlen, A2A_ERR_NOT_FOUND, "no shared buffer at 0x%llx",
                           (unsigned long long)addr);
    munmap(m->ptr, (size_t)m->len);
    free(m);
    return A2A_OK;
}

void
shm_free_all(engine *e)
{
    while (e->maps != NULL) {
        eng_map *m = e->maps;
        e->maps = m->next;
        munmap(m->ptr, (size_t)m->len);
        free(m);
    }
}
