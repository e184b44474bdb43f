/*
 * auth.h - the shared secret (security.token_file) and the HMAC-SHA256
 * challenge-response that proves it without sending it.
 *
 * Each side of a connection contributes a fresh random nonce; a proof is
 * HMAC-SHA256(secret, label || nonce_a || nonce_b). A recorded proof is
 * worthless on another connection, whose nonces differ.
 */
#ifndef A2A_COMMON_AUTH_H
#define A2A_COMMON_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "a2a.h"

#define AUTH_NONCE_LEN 32
#define AUTH_MAC_LEN 32
#define AUTH_KEY_MIN 16 /* bytes of secret, at least */
#define AUTH_KEY_MAX 4096

typedef struct {
    uint8_t key[AUTH_KEY_MAX];
    size_t len;
} auth_key;

/*
 * auth_key_load reads the secret from path (surrounding whitespace removed).
 * Returns A2A_OK, or A2A_ERR_INVALID_ARGUMENT / NOT_FOUND with the reason in
 * err (a missing file, a secret shorter than AUTH_KEY_MIN bytes).
 */
a2a_status auth_key_load(auth_key *k, const char *path, char *err, size_t errlen);

/* auth_key_from_env loads $A2A_TOKEN_FILE into *k when it is set: 1 loaded, 0 unset, -1 error. */
int auth_key_from_env(auth_key *k, char *err, size_t errlen);

/* auth_nonce fills out with random bytes from the kernel. */
void auth_nonce(uint8_t out[AUTH_NONCE_LEN]);

/* auth_mac computes HMAC-SHA256(k, label || a || b) into out. */
void auth_mac(const auth_key *k, const char *label, const uint8_t *a, size_t alen, const uint8_t *b,
              size_t blen, uint8_t out[AUTH_MAC_LEN]);

/* auth_equal compares n bytes in constant time: 1 when equal. */
int auth_equal(const uint8_t *a, const uint8_t *b, size_t n);

/* auth_key_wipe clears the secret. */
void auth_key_wipe(auth_key *k);

#endif
