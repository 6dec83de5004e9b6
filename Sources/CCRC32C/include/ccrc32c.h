// CRC-32C with the processor's own instruction, where it has one.
//
// The journal checksums every record it writes and every record it reads. Swift cannot enable a
// processor feature for one function, so these few lines are C: each routine that uses the
// instruction is compiled for it alone (a target attribute), and is called only after the
// processor said it has it. Everywhere else the Swift tables (OutboxCore's CRC32C) answer.
#ifndef OUTBOX_CCRC32C_H
#define OUTBOX_CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this processor computes CRC-32C itself (SSE 4.2 on x86-64, the CRC extension on
/// 64-bit ARM), else 0.
int outbox_crc32c_has_instruction(void);

/// The CRC-32C register after `count` bytes at `bytes`, from `crc` (no inversion in or out).
/// Call only when `outbox_crc32c_has_instruction()` answered 1.
uint32_t outbox_crc32c_update(uint32_t crc, const void *bytes, size_t count);

#endif
