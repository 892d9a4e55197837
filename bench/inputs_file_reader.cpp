// parse_inputs_file (inputs_file.hpp): the inputs file's layout read back, every count checked
// against the bytes that remain before anything is allocated from it.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "inputs_file.hpp"
#include "tapevm/error.hpp"

namespace tapevm::bench {
namespace {

static_assert(std::endian::native == std::endian::little, "the inputs file is read as the host lays it out");

constexpr std::size_t name_bytes = 16;
constexpr std::uint64_t sample_window = 65536;  // write_inputs_file's min(points, 65536)
// Mode's names (config.cpp's mode_name, not linked here: fuzz/ builds this file alone).
constexpr const char* mode_names[] = {"forward", "gradient", "jacobian"};

class Reader {
public:
    explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}

    Error fail(std::uint64_t offset, const std::string& field, const std::string& what) const {
        return Error("inputs file: byte " + std::to_string(offset) + ": " + field + ": " + what);
    }
    std::uint64_t offset() const { return at_; }
    std::uint64_t remaining() const { return bytes_.size() - at_; }

    // The next `size` bytes, or a truncation error naming `field`.
    std::span<const std::byte> take(std::uint64_t size, const std::string& field) {
        if (size > remaining()) {
            throw fail(at_, field,
                       "needs " + std::to_string(size) + " bytes but the file ends " +
                           std::to_string(remaining()) + " bytes later (truncated file or corrupt count)");
        }
        const auto part = bytes_.subspan(static_cast<std::size_t>(at_), static_cast<std::size_t>(size));
        at_ += size;
        return part;
    }
    template <class T> T value(const std::string& field) {
        T v;
        std::memcpy(&v, take(sizeof v, field).data(), sizeof v);
        return v;
    }
    // `count` values of T: the count is checked against the bytes left before anything is
    // allocated, so a corrupt count cannot overflow or exhaust memory.
    template <class T> std::vector<T> values(std::uint64_t count, const std::string& field) {
        if (count > remaining() / sizeof(T)) {
            throw fail(at_, field,
                       std::to_string(count) + " values of " + std::to_string(sizeof(T)) +
                           " bytes do not fit in the " + std::to_string(remaining()) +
                           " bytes left (truncated file or corrupt count)");
        }
        const auto part = take(count * sizeof(T), field);
        std::vector<T> v(static_cast<std::size_t>(count));
        if (count > 0) std::memcpy(v.data(), part.data(), part.size());
        return v;
    }

private:
    std::span<const std::byte> bytes_;
    std::uint64_t at_ = 0;
};

// `a` x `b` values, or an error when the product overflows 64 bits.
std::uint64_t product(const Reader& in, std::uint64_t a, std::uint64_t b, const std::string& field) {
    if (b != 0 && a > UINT64_MAX / b)
        throw in.fail(in.offset(), field, std::to_string(a) + " x " + std::to_string(b) + " values overflow");
    return a * b;
}

}  // namespace

InputsFile parse_inputs_file(std::span<const std::byte> bytes) {
    Reader in(bytes);
    InputsFile file;
    if (bytes.size() < 8 || std::memcmp(bytes.data(), "TVBENCH1", 8) != 0)
        throw in.fail(0, "magic", "not a tapevm bench inputs file (no TVBENCH1)");
    in.take(8, "magic");

    const auto name = in.take(name_bytes, "workload");
    const auto* chars = reinterpret_cast<const char*>(name.data());
    const std::size_t length = static_cast<std::size_t>(std::find(chars, chars + name_bytes, '\0') - chars);
    if (length == name_bytes ||
        std::any_of(chars + length, chars + name_bytes, [](char c) { return c != '\0'; }))
        throw in.fail(8, "workload", "the name is not NUL-padded");
    file.workload.assign(chars, length);

    const std::uint64_t mode_offset = in.offset();
    const auto mode = in.value<std::uint32_t>("mode");
    if (mode > static_cast<std::uint32_t>(Mode::jacobian))
        throw in.fail(mode_offset, "mode", "unknown mode " + std::to_string(mode) + " (0, 1 or 2)");
    file.mode = static_cast<Mode>(mode);
    file.n_inputs = in.value<std::uint32_t>("n_inputs");
    file.n_params = in.value<std::uint32_t>("n_params");
    file.n_outputs = in.value<std::uint32_t>("n_outputs");
    file.instructions = in.value<std::uint32_t>("instructions");
    file.points = in.value<std::uint64_t>("points");

    file.constants = in.values<double>(in.value<std::uint64_t>("n_constants"), "constants");
    file.inputs = in.values<double>(product(in, file.points, file.n_inputs, "inputs"), "inputs");
    file.params = in.values<double>(product(in, file.points, file.n_params, "params"), "params");

    const std::uint64_t sample_count = in.value<std::uint64_t>("sample");
    const std::uint64_t sample_offset = in.offset();
    file.sample = in.values<std::uint64_t>(sample_count, "sample");
    const std::uint64_t window = std::min(file.points, sample_window);
    for (std::size_t k = 0; k < file.sample.size(); ++k) {
        if (file.sample[k] >= window)
            throw in.fail(sample_offset + 8 * k, "sample[" + std::to_string(k) + "]",
                          "point " + std::to_string(file.sample[k]) +
                              " is not below min(points, 65536) = " + std::to_string(window));
    }

    const std::uint64_t width_offset = in.offset();
    file.width = in.value<std::uint64_t>("width");
    const std::uint64_t expected_width = file.mode == Mode::forward ? file.n_outputs
                                         : file.mode == Mode::gradient
                                             ? file.n_inputs
                                             : std::uint64_t{file.n_outputs} * file.n_inputs;
    if (file.width != expected_width)
        throw in.fail(width_offset, "width",
                      std::to_string(file.width) + " values per point, but mode " + mode_names[mode] +
                          " gives " + std::to_string(expected_width));
    file.reference = in.values<double>(product(in, sample_count, file.width, "reference"), "reference");
    if (in.remaining() != 0)
        throw in.fail(in.offset(), "trailing data",
                      std::to_string(in.remaining()) + " bytes after the reference values");
    return file;
}

}  // namespace tapevm::bench
