internal import CCRC32C

/// CRC-32C (Castagnoli), the checksum of every journal record.
///
/// Detects every single-bit and every burst error up to 32 bits, so a flipped byte anywhere in
/// a record is always caught. Computed by the processor's own instruction where it has one
/// (SSE 4.2 on x86-64, the CRC extension on 64-bit ARM: `CCRC32C`), else eight bytes at a time
/// from eight tables (slicing-by-8), built once from the reflected polynomial 0x82F63B78. Both
/// give the same register; a test holds them to it.
package enum CRC32C {
    /// Whether the processor computes it: asked once.
    package static let usesInstruction = outbox_crc32c_has_instruction() != 0

    /// Eight tables of 256 entries, one after another: table `t` starts at `t * 256`.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The checksum of `bytes`.
    package static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        checksum(bytes, start: 0xFFFF_FFFF)
    }

    /// The checksum of `bytes` with the register starting at `start` (inverted at the end).
    private static func checksum(_ bytes: UnsafeRawBufferPointer, start: UInt32) -> UInt32 {
        guard usesInstruction, let base = bytes.baseAddress else { return tableChecksum(bytes, start: start) }
        return outbox_crc32c_update(start, base, bytes.count) ^ 0xFFFF_FFFF
    }

    /// ``checksum(_:start:)`` from the tables alone: what a processor without the instruction
    /// computes (and what the tests compare the instruction with).
    package static func tableChecksum(_ bytes: UnsafeRawBufferPointer, start: UInt32) -> UInt32 {
        var crc = start
        var index = 0
        let count = bytes.count
        tables.withUnsafeBufferPointer { table in
            // Every index below is a byte plus a multiple of 256 under 2048: always in bounds.
            guard let t = table.baseAddress else { return }
            while index + 8 <= count {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = crc ^ UInt32(truncatingIfNeeded: word)
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
                index += 1
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    package static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    // MARK: Continuing

    /// The register after `bytes`, from `register` (no inversion in or out): the checksum of a
    /// message is `register(of:from: 0xFFFFFFFF) ^ 0xFFFFFFFF`.
    package static func register(of bytes: UnsafeRawBufferPointer, from register: UInt32) -> UInt32 {
        ~checksum(bytes, start: register)
    }

    /// The register after `count` zero bytes, from `register`. The register is linear in what
    /// it reads: after a message `b` it is the register after as many zeros, from where it
    /// began, xor the register after `b` from zero. So a record's body is checksummed once, on
    /// the producer's task, and its header, known only when the writer gives it a seq, apart.
    package static func register(afterZeros count: Int, from register: UInt32) -> UInt32 {
        var crc = register
        var index = 0
        tables.withUnsafeBufferPointer { table in
            guard let t = table.baseAddress else { return }
            // Eight zero bytes at a time: only the register's own bytes index the tables
            // (every table holds 0 at 0).
            while index + 8 <= count {
                crc = t[7 * 256 + Int(crc & 0xFF)] ^ t[6 * 256 + Int((crc >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((crc >> 16) & 0xFF)] ^ t[4 * 256 + Int(crc >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int(crc & 0xFF)]
                index += 1
            }
        }
        return crc
    }
}
