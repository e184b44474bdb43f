/* mbuf.h - msgpack bytes built by hand, for the codec suites in tests/unit/. */
#ifndef A2A_TESTS_MBUF_H
#define A2A_TESTS_MBUF_H

#include <CUnit/Basic.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

/* A message under construction: an sbuffer and its packer. */
typedef struct {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} mbuf;

static inline void
mb_init(mbuf *b)
{
    msgpack_sbuffer_init(&b->sb);
    msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
}

static inline void
mb_fini(mbuf *b)
{
    msgpack_sbuffer_destroy(&b->sb);
}

static inline void
mb_strn(mbuf *b, const char *s, size_t n)
{
    msgpack_pack_str(&b->pk, n);
    if (n > 0)
        msgpack_pack_str_body(&b->pk, s, n);
}

static inline void
mb_str(mbuf *b, const char *s)
{
    mb_strn(b, s, strlen(s));
}

/* A string of n copies of ch, malloc'd and terminated. */
static inline char *
repeat(char ch, size_t n)
{
    char *s = malloc(n + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    memset(s, ch, n);
    s[n] = '\0';
    return s;
}

#endif
