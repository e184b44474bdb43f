/*
 * sp_raw.h - NNG's SP wire protocol over TCP, written by hand, for tests that talk to an NNG
 * server as an attacker would, with no NNG on their side (tests/unit/test_rpc.c,
 * tests/integration/preauth_check.c). A connection opens with an 8-byte greeting each way
 * (0, 'S', 'P', 0, the protocol number as 16 bits big endian, 0, 0); then every message is its
 * length (64 bits, big endian) and its bytes, which for REQ/REP start with the 32-bit request
 * id whose top bit marks the last hop. Also the tests' one parser of "tcp://HOST:PORT".
 */
#ifndef A2A_TESTS_SP_RAW_H
#define A2A_TESTS_SP_RAW_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t sp_req_greeting[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0}; /* REQ v0 */
static const uint8_t sp_rep_greeting[8] = {0, 'S', 'P', 0, 0, 0x31, 0, 0}; /* REP v0 */

/* sp_req_head writes the 12 bytes before a REQ message's payload of len bytes: the message's
 * length (the request id included) and request id id, marked as the last hop. */
static inline void
sp_req_head(uint8_t out[12], size_t len, uint32_t id)
{
    uint64_t mlen = 4 + (uint64_t)len;
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(mlen >> (56 - 8 * i));
    out[8] = (uint8_t)(0x80 | (id >> 24)), out[9] = (uint8_t)(id >> 16);
    out[10] = (uint8_t)(id >> 8), out[11] = (uint8_t)id;
}

/* sp_parse_url: "tcp://HOST:PORT" into sa (IPv4 only: the tests use 127.0.0.1); 0 or -1. */
static inline int
sp_parse_url(const char *url, struct sockaddr_in *sa)
{
    char host[64];
    const char *hp = strstr(url, "://"), *colon;
    if (hp == NULL || (colon = strrchr(hp + 3, ':')) == NULL ||
        (size_t)(colon - hp - 3) >= sizeof(host))
        return -1;
    snprintf(host, sizeof(host), "%.*s", (int)(colon - hp - 3), hp + 3);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

#endif
