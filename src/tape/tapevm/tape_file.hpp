// The .tape file format, version 1. Little-endian throughout.
//
//   offset  size  field
//   0       8     magic "TAPEVM\r\n" (54 41 50 45 56 4D 0D 0A)
//   8       4     version (1)
//   12      4     flags (0; reserved)
//   16      4     n_inputs
//   20      4     n_params
//   24      4     n_instructions
//   28      4     n_constants
//   32      4     n_outputs
//   36      4     n_guards
//   40      16 x n_instructions   instructions: op, a, b, c (u32 each)
//   ...     8 x n_constants       constants (IEEE 754 binary64)
//   ...     4 x n_outputs         output slots (u32)
//   ...     8 x n_guards          guards: slot, expected (u32 each)
//   end-4   4     CRC-32 (ISO-HDLC, as zlib's crc32) of every byte before it
//
// The loader checks the header, then that the counts match the file's size exactly (so a
// corrupted count can never make it read or allocate more than the file holds), then the
// checksum, then every tape invariant (find_defect in tape.hpp). Each failure throws
// FormatError naming the byte offset and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm {

inline constexpr std::uint32_t tape_file_version = 1;

/// The file image of `tape`.
std::vector<std::byte> to_bytes(const Tape& tape);

/// Parses a file image; throws FormatError (offset and field) for anything malformed.
Tape from_bytes(std::span<const std::byte> bytes);

/// Writes / reads a stream holding one file image (the whole stream on reading).
void save(const Tape& tape, std::ostream& out);
Tape load(std::istream& in);

/// Writes / reads a file. Saving writes a temporary file beside `path` and renames it, so a
/// failed save leaves any previous file intact. Errors opening or reading throw tapevm::Error.
/// Threads and processes: saves and loads of one path may run at once; a load reads the file
/// of one whole save (the rename is atomic), never part of one.
void save_file(const Tape& tape, const std::filesystem::path& path);
Tape load_file(const std::filesystem::path& path);

/// CRC-32 (ISO-HDLC) of `bytes`, as stored in the last 4 bytes of a file image.
std::uint32_t crc32(std::span<const std::byte> bytes);

}  // namespace tapevm
