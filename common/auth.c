/* auth.c - HMAC-SHA256 (mbedTLS) over nonces: proofs of the shared secret. */
#include "auth.h"

#include "status.h"

#include <errno.h>
#include <mbedtls/md.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int
is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

a2a_status
auth_key_load(auth_key *k, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    size_t n, start = 0;
    uint8_t extra;

    memset(k, 0, sizeof(*k));
    if (f == NULL)
        return status_fail(err, errlen, A2A_ERR_NOT_FOUND, "token file %s: %s", path,
                           strerror(errno));
    n = fread(k->key, 1, sizeof(k->key), f);
    if (n == sizeof(k->key) && fread(&extra, 1, 1, f) == 1) {
        fclose(f);
        auth_key_wipe(k);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "token file %s is longer than %d bytes", path, AUTH_KEY_MAX);
    }
    fclose(f);
    while (n > 0 && is_space(k->key[n - 1]))
        n--;
    while (start < n && is_space(k->key[start]))
        start++;
    memmove(k->key, k->key + start, n - start);
    k->len = n - start;
    if (k->len < AUTH_KEY_MIN) {
        auth_key_wipe(k);
        return status_fail(err, errlen, A2A_ERR_INVALID_ARGUMENT,
                           "token file %s holds %zu bytes of secret; use at least %d", path,
                           n - start, AUTH_KEY_MIN);
    }
    return A2A_OK;
}

int
auth_key_from_env(auth_key *k, char *err, size_t errlen)
{
    const char *path = getenv("A2A_TOKEN_FILE");
    if (path == NULL || *path == '\0')
        return 0;
    return auth_key_load(k, path, err, errlen) == A2A_OK ? 1 : -1;
}

void
auth_nonce(uint8_t out[AUTH_NONCE_LEN])
{
    size_t got = 0;
    while (got < AUTH_NONCE_LEN) {
        ssize_t n = getrandom(out + got, AUTH_NONCE_LEN - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            abort(); /* no randomness: a nonce must never repeat */
        got += (size_t)n;
    }
}

void
auth_mac(const auth_key *k, const char *label, const uint8_t *a, size_t alen, const uint8_t *b,
         size_t blen, uint8_t out[AUTH_MAC_LEN])
{
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t ctx;

    mbedtls_md_init(&ctx);
    if (mbedtls_md_setup(&ctx, md, 1) != 0 || mbedtls_md_hmac_starts(&ctx, k->key, k->len) != 0 ||
        mbedtls_md_hmac_update(&ctx, (const uint8_t *)label, strlen(label) + 1) != 0 ||
        mbedtls_md_hmac_update(&ctx, a, alen) != 0 || mbedtls_md_hmac_update(&ctx, b, blen) != 0 ||
        mbedtls_md_hmac_finish(&ctx, out) != 0)
        abort(); /* only out of memory: a proof cannot be made */
    mbedtls_md_free(&ctx);
}

int
auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

void
auth_key_wipe(auth_key *k)
{
    volatile uint8_t *p = k->key;
    for (size_t i = 0; i < sizeof(k->key); i++)
        p[i] = 0;
    k->len = 0;
}
