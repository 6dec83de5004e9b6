#include "ccrc32c.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))

int outbox_crc32c_has_instruction(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") ? 1 : 0;
}

__attribute__((target("sse4.2")))
uint32_t outbox_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        p += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count > 0) {
        narrow = __builtin_ia32_crc32qi(narrow, *p);
        p += 1;
        count -= 1;
    }
    return narrow;
}

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)

#include <arm_acle.h>

// Built for a processor that has the CRC extension (every Apple one does): always there.
int outbox_crc32c_has_instruction(void) { return 1; }

uint32_t outbox_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = __crc32cb(crc, *p);
        p += 1;
        count -= 1;
    }
    return crc;
}

#else

int outbox_crc32c_has_instruction(void) { return 0; }

uint32_t outbox_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
