// safetensors files: save named tensors, open files through mmap, validate every byte.
//
//   nn::save_safetensors("model.safetensors", {{"head.weight", w}}, {{"step", "100"}});
//   nn::SafetensorsFile file = nn::SafetensorsFile::open("model.safetensors");
//   nn::Tensor w = file.load("head.weight", nn::Device::cpu());
//
// The format (https://github.com/huggingface/safetensors, as its Rust reader checks it):
//   8 bytes   N, the header's length, unsigned little-endian
//   N bytes   a JSON object, UTF-8, starting with '{', padded at the end with spaces:
//             {"__metadata__": {"k": "v", ...},
//              "NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...}
//   the rest  the data section: each tensor's row-major little-endian bytes at [BEGIN, END)
//             relative to the section's start.
// Rules enforced by parse_safetensors (each breach a SafetensorsError): N <= 100,000,000 and
// 8 + N <= the file's size; the header valid JSON and UTF-8, an object, no key twice in any
// object; `__metadata__` an object of strings; each tensor exactly the fields dtype (a name
// the format defines), shape (non-negative integers) and data_offsets (two non-negative
// integers, BEGIN <= END); END - BEGIN == elements x element size without overflow; the
// tensors, ordered by offset, tile the data section exactly: no overlap, no gap, nothing
// after the last one (the format forbids holes so that files cannot hide other content).
//
// Writing follows the Python package byte for byte: the header padded with spaces to a
// multiple of 8 bytes, `__metadata__` first (when not empty), tensors in the data section
// ordered F64, F32, I32, BF16, F16, then by name, so each starts at a multiple of its element
// size.
//
// Threads: a SafetensorsFile may be read from several threads at once (it never changes after
// open); loading into a Device follows the Device's rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

/// A malformed or unusable safetensors file, or a save that cannot be written. `file()` is
/// the path (or the name given to the parser), `key()` the tensor's name ("" for the file's
/// header, "__metadata__" for the metadata) and `field()` what was wrong ("header length",
/// "header", "dtype", "shape", "data_offsets", "data", "name", "metadata", "file").
class SafetensorsError : public Error {
public:
    SafetensorsError(std::string file, std::string key, std::string field, const std::string& what);
    const std::string& file() const noexcept { return file_; }
    const std::string& key() const noexcept { return key_; }
    const std::string& field() const noexcept { return field_; }

private:
    std::string file_;
    std::string key_;
    std::string field_;
};

/// The safetensors dtype name of a tapevm dtype: "F64", "F32", "F16", "BF16", "I32".
std::string_view safetensors_dtype_name(DType dtype);
/// The tapevm dtype of a safetensors name; nullopt for names tapevm has no dtype for
/// (including valid ones such as "I64" or "BOOL").
std::optional<DType> dtype_from_safetensors_name(std::string_view name);

/// The largest header parse_safetensors accepts (the format's own limit).
inline constexpr std::uint64_t safetensors_max_header_bytes = 100'000'000;

/// `__metadata__`: free-form strings.
using SafetensorsMetadata = std::map<std::string, std::string>;

/// One tensor as the header describes it.
struct SafetensorsEntry {
    std::string name;
    /// As written in the file ("F32", "I64", ...): every dtype the format defines is accepted
    /// by the parser; loading needs one that tapevm has (`dtype`).
    std::string dtype_name;
    std::optional<DType> dtype;
    std::size_t element_size = 0;
    Shape shape;
    /// [begin, end) relative to the data section's start.
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

/// A validated header. `entries` are ordered by their data offsets.
struct SafetensorsHeader {
    std::vector<SafetensorsEntry> entries;
    SafetensorsMetadata metadata;
    /// Where the data section starts in the file: 8 + the header's length.
    std::uint64_t data_offset = 0;
};

/// Parses and validates a whole safetensors file held in `file` (the rules at the top); a
/// pure function over the bytes: it reads nothing else, writes nothing, and throws only
/// SafetensorsError, naming `file_name`. A fuzzer calls it directly.
SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view file_name = "<memory>");

/// A tensor to encode: its name, dtype, shape and exactly elements x dtype_size bytes.
struct SafetensorsTensorBytes {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
    std::span<const std::byte> data;
};

/// A whole safetensors file in memory (the layout described at the top). Throws
/// SafetensorsError for an empty, duplicate or "__metadata__" name, a name or metadata string
/// that is not UTF-8, or data of the wrong size. `file_name` is for messages.
std::vector<std::byte> encode_safetensors(std::span<const SafetensorsTensorBytes> tensors,
                                          const SafetensorsMetadata& metadata = {},
                                          std::string_view file_name = "<memory>");

/// Writes `tensors` (read back from their devices, waiting for the work that writes them) to
/// `path`, through a temporary file renamed over `path`, so a crash leaves the old file or
/// the new one. Throws SafetensorsError as encode_safetensors does, for an undefined tensor,
/// and when the file cannot be written.
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata = {});

/// An opened, validated safetensors file, mapped read-only into memory: `bytes()` are views
/// of the mapping (no copy) until `load` uploads them. A shared handle: copies share the
/// mapping, which lives as long as the last copy. (Another process truncating the file while
/// it is mapped is outside the contract: the OS may kill the reader.)
class SafetensorsFile {
public:
    /// Maps and validates `path`. Throws SafetensorsError when it cannot be opened or is
    /// malformed.
    static SafetensorsFile open(const std::filesystem::path& path);
    /// Validates a file already in memory (a copy is kept). `name` is for messages.
    static SafetensorsFile from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");

    const std::string& path() const;
    /// Tensor names, sorted.
    std::vector<std::string> keys() const;
    bool contains(std::string_view key) const;
    /// The header's entry for `key` (SafetensorsError when absent).
    const SafetensorsEntry& entry(std::string_view key) const;
    /// The tapevm dtype of `key` (SafetensorsError when tapevm has no such dtype).
    DType dtype(std::string_view key) const;
    const Shape& shape(std::string_view key) const;
    const SafetensorsMetadata& metadata() const;
    const SafetensorsHeader& header() const;
    /// The tensor's raw little-endian bytes inside the mapping.
    std::span<const std::byte> bytes(std::string_view key) const;

    /// A new tensor on `device` holding `key`'s data, in the file's dtype.
    Tensor load(std::string_view key, const Device& device) const;
    /// The same converted to `dtype` (through f64 on the host; i32 from a float dtype
    /// truncates as round_to does).
    Tensor load(std::string_view key, const Device& device, DType dtype) const;
    /// Every tensor, by name.
    std::map<std::string, Tensor> load_all(const Device& device) const;

private:
    struct State;
    explicit SafetensorsFile(std::shared_ptr<const State> state) : state_(std::move(state)) {}
    std::shared_ptr<const State> state_;
};

}  // namespace tapevm::nn
