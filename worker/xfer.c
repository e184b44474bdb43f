/* xfer.c - copies to and from the memory a job handed over on its session (shm.c maps it). */
#include "xfer.h"

#include <errno.h>
#include <string.h>

#include "engine_int.h"
#include "shm.h"

/* xfer_copy copies between buf and the mapping of s that holds [addr, addr + len). */
static int
xfer_copy(xfer_sess *s, uint64_t addr, void *buf, size_t len, int to_job)
{
    eng_map *m;
    uint8_t *p;

    if (len == 0)
        return 0;
    if (s == NULL || (p = shm_find(s, addr, len, &m)) == NULL)
        return EFAULT;
    if (to_job)
        memcpy(p, buf, len);
    else
        memcpy(buf, p, len);
    shm_release(m);
    return 0;
}

int
xfer_read(xfer_sess *s, uint64_t addr, void *buf, size_t len)
{
    return xfer_copy(s, addr, buf, len, 0);
}

int
xfer_write(xfer_sess *s, uint64_t addr, const void *buf, size_t len)
{
    return xfer_copy(s, addr, (void *)buf, len, 1);
}

int
xfer_probe(xfer_sess *s)
{
    int live;
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->mtx);
    live = !s->closed;
    pthread_mutex_unlock(&s->mtx);
    return live;
}
