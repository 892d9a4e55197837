// The .tape file format: the byte layout against independently computed images, round trips
// (bytes, streams, files) of every example and of edge-case tapes, each kind of defect with
// the offset and field it must name, every single-byte corruption and every truncation.
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/tape.hpp"
#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"

// The largest single allocation made while `tracking_allocations` is set: this executable
// replaces the global operator new so a test can prove that a corrupt count allocates nothing
// large. The replacements are noinline: once inlined, GCC 12 pairs free() with operator new
// and raises a false -Wmismatched-new-delete.
namespace {
std::atomic<bool> tracking_allocations{false};
std::atomic<std::size_t> largest_allocation{0};
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t size) {
    if (tracking_allocations.load(std::memory_order_relaxed)) {
        std::size_t seen = largest_allocation.load(std::memory_order_relaxed);
        while (size > seen && !largest_allocation.compare_exchange_weak(seen, size)) {
        }
    }
    if (void* memory = std::malloc(size == 0 ? 1 : size)) return memory;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* memory) noexcept { std::free(memory); }
[[gnu::noinline]] void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

namespace {

using tapevm::FormatError;
using tapevm::Guard;
using tapevm::Instruction;
using tapevm::Op;
using tapevm::Tape;
using tapevm::TapeParts;
using Bytes = std::vector<std::byte>;

// The byte layout of tape_file.hpp, restated for the tests.
constexpr std::size_t header_size = 40;
constexpr std::size_t instruction_size = 16;

std::uint32_t get_u32(const Bytes& bytes, std::size_t offset) {
    std::uint32_t value = 0;
    for (std::size_t k = 0; k < 4; ++k) value |= std::to_integer<std::uint32_t>(bytes[offset + k]) << (8 * k);
    return value;
}

void put_u32(Bytes& bytes, std::size_t offset, std::uint32_t value) {
    for (std::size_t k = 0; k < 4; ++k) bytes[offset + k] = static_cast<std::byte>((value >> (8 * k)) & 0xFF);
}

Bytes from_hex(const std::string& hex) {
    Bytes bytes;
    for (std::size_t k = 0; k + 1 < hex.size(); k += 2) {
        bytes.push_back(static_cast<std::byte>(std::stoul(hex.substr(k, 2), nullptr, 16)));
    }
    return bytes;
}

Bytes as_bytes(const std::string& text) {
    Bytes bytes;
    for (char c : text) bytes.push_back(static_cast<std::byte>(c));
    return bytes;
}

// Stores the CRC-32 of all but the last 4 bytes in the last 4 bytes.
Bytes reseal(Bytes bytes) {
    const std::size_t body = bytes.size() - 4;
    put_u32(bytes, body, tapevm::crc32(std::span<const std::byte>(bytes).first(body)));
    return bytes;
}

// How a load ended: the FormatError's offset and field, or "loaded".
struct Outcome {
    std::uint64_t offset = 0;
    std::string field;

    friend bool operator==(const Outcome&, const Outcome&) = default;
    friend std::ostream& operator<<(std::ostream& out, const Outcome& outcome) {
        return out << "{" << outcome.offset << ", " << outcome.field << "}";
    }
};
const Outcome loaded{0, "(loaded)"};

// Any exception other than FormatError propagates and fails the test case.
Outcome load_outcome(const Bytes& bytes) {
    try {
        (void)tapevm::from_bytes(bytes);
        return loaded;
    } catch (const FormatError& error) {
        return Outcome{error.offset(), error.field()};
    }
}

// A hand-built tape using every kind of record: 2 inputs, 1 parameter, both Const entries,
// Powi with a negative exponent, a comparison, Select, Fma, 2 outputs and 2 guards.
//   section       offset
//   instructions  40  (11 x 16)
//   constants     216 (2 x 8)
//   outputs       232 (2 x 4)
//   guards        240 (2 x 8)
//   checksum      256; file size 260
TapeParts sample_parts() {
    TapeParts parts;
    parts.inputs = 2;
    parts.params = 1;
    parts.instructions = {
        {Op::Input, 0, 0, 0}, {Op::Input, 1, 0, 0},  {Op::Param, 0, 0, 0},
        {Op::Const, 0, 0, 0}, {Op::Mul, 0, 2, 0},    {Op::Powi, 4, static_cast<std::uint32_t>(-3), 0},
        {Op::Lt, 0, 1, 0},    {Op::Select, 6, 5, 3}, {Op::Fma, 7, 1, 4},
        {Op::Const, 1, 0, 0}, {Op::Neg, 9, 0, 0},
    };
    parts.constants = {2.5, -0.0};
    parts.outputs = {8, 10};
    parts.guards = {{6, 1}, {6, 0}};
    return parts;
}
Tape sample_tape() { return Tape(sample_parts()); }
constexpr std::size_t sample_constants = 216, sample_outputs = 232, sample_guards = 240,
                      sample_checksum = 256, sample_size = 260;

std::size_t field_of(std::size_t instruction, std::size_t field) {
    return header_size + instruction * instruction_size + 4 * field;
}

// Constants whose bits a careless format would change: NaNs (quiet, signalling, negative,
// with payload), signed zeros, infinities, subnormals.
Tape special_constants_tape() {
    const std::vector<std::uint64_t> bits = {
        0x7FF8000000000000u,  // quiet NaN
        0x7FF0000000000001u,  // signalling NaN, payload 1
        0xFFF8000000000000u,  // negative quiet NaN
        0x7FFDEADBEEF12345u,  // NaN with a payload
        0x8000000000000000u,  // -0
        0x0000000000000000u,  // +0
        0x7FF0000000000000u,  // +inf
        0xFFF0000000000000u,  // -inf
        0x0000000000000001u,  // smallest subnormal
        0x800FFFFFFFFFFFFFu,  // largest negative subnormal
        0x7FEFFFFFFFFFFFFFu,  // largest finite
    };
    TapeParts parts;
    parts.inputs = 1;
    parts.instructions.push_back({Op::Input, 0, 0, 0});
    for (std::uint32_t k = 0; k < bits.size(); ++k) {
        parts.constants.push_back(std::bit_cast<double>(bits[k]));
        parts.instructions.push_back({Op::Const, k, 0, 0});
        parts.outputs.push_back(k + 1);
    }
    return Tape(std::move(parts));
}

// Recorded with a parameter and a C++ branch on a comparison of variables (a guard).
Tape recorded_with_params_and_guards() {
    const std::vector<double> x = {0.5, 2.0};
    const std::vector<double> p = {3.0};
    return tapevm::record(std::span<const double>(x), std::span<const double>(p),
                          [](std::span<const tapevm::Var> v, std::span<const tapevm::Var> q) {
                              tapevm::Var y = v[0] * q[0];
                              if (v[0] < v[1]) y = y + sin(v[1]);
                              if (y > q[0]) y = y * 2.0;
                              return std::vector<tapevm::Var>{y, v[1] * q[0]};
                          });
}

struct NamedTape {
    std::string name;
    Tape tape;
};

// Every tape the round-trip, corruption and truncation tests run on.
std::vector<NamedTape> all_tapes() {
    std::vector<NamedTape> tapes;
    for (const auto& example : tapevm::examples::example_list()) {
        tapes.push_back({std::string(example.name), tapevm::examples::example_tape(example.name)});
    }
    tapes.push_back({"sample", sample_tape()});
    tapes.push_back({"special constants", special_constants_tape()});
    tapes.push_back({"params and guards", recorded_with_params_and_guards()});
    tapes.push_back({"empty", Tape()});
    return tapes;
}

// A fresh directory under the system's temporary directory, removed with its contents.
class TemporaryDirectory {
public:
    TemporaryDirectory() {
        std::random_device random;
        path_ = std::filesystem::temp_directory_path() /
                ("tapevm_test_tape_file_" + std::to_string(random()) + std::to_string(random()));
        std::filesystem::create_directories(path_);
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

    const std::filesystem::path& path() const { return path_; }
    std::size_t entry_count() const {
        std::size_t count = 0;
        for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(path_)) ++count;
        return count;
    }

private:
    std::filesystem::path path_;
};

// A stream buffer whose reads fail as a broken disk's would.
class FailingBuffer : public std::streambuf {
protected:
    int_type underflow() override { throw std::runtime_error("simulated read error"); }
};

}  // namespace

TEST_SUITE("tape_file") {
    TEST_CASE("crc32 is CRC-32/ISO-HDLC") {
        CHECK(tapevm::crc32(as_bytes("123456789")) == 0xCBF43926u);
        CHECK(tapevm::crc32({}) == 0u);
        CHECK(tapevm::crc32(as_bytes("a")) == 0xE8B7BE43u);
    }

    TEST_CASE("the empty tape's image is byte for byte the documented layout") {
        // Built by Python's struct and zlib.crc32, independently of this library.
        const Bytes expected = from_hex(
            "54415045564d0d0a01000000000000000000000000000000000000000000000000000000000000"
            "00ce15e350");
        REQUIRE(expected.size() == 44);
        CHECK(tapevm::to_bytes(Tape()) == expected);
        const Tape loaded_tape = tapevm::from_bytes(expected);
        CHECK(loaded_tape == Tape());
        CHECK(loaded_tape.instruction_count() == 0);
        CHECK(loaded_tape.output_count() == 0);
    }

    TEST_CASE("the sample tape's fields are little-endian at their documented offsets") {
        const Bytes bytes = tapevm::to_bytes(sample_tape());
        REQUIRE(bytes.size() == sample_size);
        CHECK(bytes[0] == std::byte{0x54});
        CHECK(bytes[7] == std::byte{0x0A});
        CHECK(get_u32(bytes, 8) == tapevm::tape_file_version);
        CHECK(get_u32(bytes, 12) == 0u);
        CHECK(get_u32(bytes, 16) == 2u);   // n_inputs
        CHECK(get_u32(bytes, 20) == 1u);   // n_params
        CHECK(get_u32(bytes, 24) == 11u);  // n_instructions
        CHECK(get_u32(bytes, 28) == 2u);   // n_constants
        CHECK(get_u32(bytes, 32) == 2u);   // n_outputs
        CHECK(get_u32(bytes, 36) == 2u);   // n_guards
        // instruction[5] = Powi 4, -3: op 16, then a, then b = 0xFFFFFFFD, least significant byte first.
        CHECK(bytes[field_of(5, 0)] == std::byte{16});
        CHECK(get_u32(bytes, field_of(5, 1)) == 4u);
        CHECK(bytes[field_of(5, 2)] == std::byte{0xFD});
        CHECK(bytes[field_of(5, 2) + 3] == std::byte{0xFF});
        CHECK(get_u32(bytes, field_of(7, 0)) == static_cast<std::uint32_t>(Op::Select));
        CHECK(get_u32(bytes, field_of(7, 3)) == 3u);
        // constant[0] = 2.5 = 0x4004000000000000, constant[1] = -0 = 0x8000000000000000.
        CHECK(bytes[sample_constants + 6] == std::byte{0x04});
        CHECK(bytes[sample_constants + 7] == std::byte{0x40});
        CHECK(bytes[sample_constants + 15] == std::byte{0x80});
        CHECK(get_u32(bytes, sample_outputs) == 8u);
        CHECK(get_u32(bytes, sample_outputs + 4) == 10u);
        CHECK(get_u32(bytes, sample_guards) == 6u);
        CHECK(get_u32(bytes, sample_guards + 4) == 1u);
        CHECK(get_u32(bytes, sample_guards + 12) == 0u);
        // The whole image's CRC, computed by zlib over the image Python's struct built.
        CHECK(get_u32(bytes, sample_checksum) == 0xD6D7A9B5u);
    }

    TEST_CASE("every tape round-trips through bytes, streams and files") {
        TemporaryDirectory directory;
        for (const NamedTape& named : all_tapes()) {
            // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
            const std::string& name = named.name;
            const Tape& tape = named.tape;
            CAPTURE(name);
            const Bytes bytes = tapevm::to_bytes(tape);
            CHECK(bytes.size() == 44 + 16 * std::size_t{tape.instruction_count()} +
                                      8 * tape.constant_count() + 4 * tape.output_count() +
                                      8 * tape.guard_count());
            const Tape from_bytes = tapevm::from_bytes(bytes);
            CHECK(from_bytes == tape);
            CHECK(from_bytes.dump() == tape.dump());
            CHECK(tapevm::to_bytes(from_bytes) == bytes);

            std::stringstream stream;
            tapevm::save(tape, stream);
            CHECK(stream.str().size() == bytes.size());
            CHECK(tapevm::load(stream) == tape);

            const auto path = directory.path() / (name + ".tape");
            tapevm::save_file(tape, path);
            CHECK(std::filesystem::file_size(path) == bytes.size());
            CHECK(tapevm::load_file(path) == tape);
        }
        // Nothing but the saved files is left beside them.
        CHECK(directory.entry_count() == all_tapes().size());
    }

    TEST_CASE("edge-case tapes keep every bit") {
        SUBCASE("NaN payloads, signed zeros, infinities, subnormals") {
            const Tape tape = special_constants_tape();
            const Tape loaded_tape = tapevm::from_bytes(tapevm::to_bytes(tape));
            REQUIRE(loaded_tape.constant_count() == tape.constant_count());
            for (std::size_t k = 0; k < tape.constant_count(); ++k) {
                CAPTURE(k);
                CHECK(std::bit_cast<std::uint64_t>(loaded_tape.constants()[k]) ==
                      std::bit_cast<std::uint64_t>(tape.constants()[k]));
            }
            CHECK(loaded_tape == tape);
        }
        SUBCASE("parameters and guards") {
            const Tape tape = recorded_with_params_and_guards();
            REQUIRE(tape.param_count() == 1);
            REQUIRE(tape.guard_count() == 2);
            const Tape loaded_tape = tapevm::from_bytes(tapevm::to_bytes(tape));
            CHECK(loaded_tape.param_count() == 1);
            CHECK(loaded_tape.input_count() == 2);
            CHECK(loaded_tape.guards()[0] == tape.guards()[0]);
            CHECK(loaded_tape.guards()[1] == tape.guards()[1]);
            CHECK(loaded_tape == tape);
        }
        SUBCASE("tapes that differ in one bit of a constant differ after loading") {
            TapeParts parts = sample_parts();
            parts.constants[1] = 0.0;  // +0 instead of -0
            const Tape positive_zero(std::move(parts));
            CHECK_FALSE(tapevm::from_bytes(tapevm::to_bytes(positive_zero)) == sample_tape());
        }
    }

    TEST_CASE("each defect names its offset and field") {
        const Bytes good = tapevm::to_bytes(sample_tape());
        REQUIRE(load_outcome(good) == loaded);
        // `change` edits a copy of the good image; the checksum is recomputed afterwards, so that
        // the defect itself, not the checksum, is what the loader must report.
        auto outcome = [&](auto change) {
            Bytes bytes = good;
            change(bytes);
            return load_outcome(reseal(bytes));
        };
        auto set_u32 = [&](std::size_t offset, std::uint32_t value) {
            return outcome([&](Bytes& bytes) { put_u32(bytes, offset, value); });
        };

        SUBCASE("bad magic") {
            CHECK(outcome([](Bytes& b) { b[0] = std::byte{'X'}; }) == Outcome{0, "header.magic"});
            CHECK(outcome([](Bytes& b) { b[7] ^= std::byte{0x01}; }) == Outcome{0, "header.magic"});
            CHECK(load_outcome(as_bytes("not a tape file at all, but long enough to have a header.....")) ==
                  Outcome{0, "header.magic"});
        }
        SUBCASE("unsupported version") {
            CHECK(set_u32(8, 2) == Outcome{8, "header.version"});
            CHECK(set_u32(8, 0) == Outcome{8, "header.version"});
            CHECK(set_u32(8, 0x01000000) == Outcome{8, "header.version"});  // big-endian 1
        }
        SUBCASE("nonzero flags") {
            CHECK(set_u32(12, 1) == Outcome{12, "header.flags"});
            CHECK(set_u32(12, 0x80000000u) == Outcome{12, "header.flags"});
        }
        SUBCASE("unknown op") {
            CHECK(set_u32(field_of(4, 0), tapevm::op_count) == Outcome{field_of(4, 0), "instruction[4].op"});
            CHECK(set_u32(field_of(10, 0), 0xFFFFFFFFu) == Outcome{field_of(10, 0), "instruction[10].op"});
        }
        SUBCASE("operand not earlier than its slot") {
            CHECK(set_u32(field_of(8, 2), 8) == Outcome{field_of(8, 2), "instruction[8].b"});
            CHECK(set_u32(field_of(7, 3), 9) == Outcome{field_of(7, 3), "instruction[7].c"});
            CHECK(set_u32(field_of(4, 1), 0xFFFFFFFFu) == Outcome{field_of(4, 1), "instruction[4].a"});
            CHECK(set_u32(field_of(5, 1), 5) ==
                  Outcome{field_of(5, 1), "instruction[5].a"});  // Powi's operand
        }
        SUBCASE("constant index out of range") {
            CHECK(set_u32(field_of(9, 1), 2) == Outcome{field_of(9, 1), "instruction[9].a"});
            CHECK(set_u32(field_of(3, 1), 0xFFFFFFFFu) == Outcome{field_of(3, 1), "instruction[3].a"});
        }
        SUBCASE("output out of range") {
            CHECK(set_u32(sample_outputs + 4, 11) == Outcome{sample_outputs + 4, "output[1]"});
            CHECK(set_u32(sample_outputs, 0xFFFFFFFFu) == Outcome{sample_outputs, "output[0]"});
        }
        SUBCASE("guard out of range, expected neither 0 nor 1") {
            CHECK(set_u32(sample_guards + 8, 11) == Outcome{sample_guards + 8, "guard[1].slot"});
            CHECK(set_u32(sample_guards + 4, 2) == Outcome{sample_guards + 4, "guard[0].expected"});
            CHECK(set_u32(sample_guards + 12, 0xFFFFFFFFu) ==
                  Outcome{sample_guards + 12, "guard[1].expected"});
        }
        SUBCASE("Input/Param prefix broken") {
            const auto input = static_cast<std::uint32_t>(Op::Input);
            const auto param = static_cast<std::uint32_t>(Op::Param);
            const auto constant = static_cast<std::uint32_t>(Op::Const);
            CHECK(set_u32(field_of(0, 0), constant) == Outcome{field_of(0, 0), "instruction[0].op"});
            CHECK(set_u32(field_of(2, 0), input) == Outcome{field_of(2, 0), "instruction[2].op"});
            CHECK(set_u32(field_of(1, 1), 0) == Outcome{field_of(1, 1), "instruction[1].a"});
            CHECK(set_u32(field_of(2, 1), 1) == Outcome{field_of(2, 1), "instruction[2].a"});
            CHECK(set_u32(field_of(9, 0), param) == Outcome{field_of(9, 0), "instruction[9].op"});
            CHECK(set_u32(16, 1) == Outcome{field_of(1, 0), "instruction[1].op"});  // 2nd Input outside
            CHECK(set_u32(16, 3) == Outcome{field_of(2, 0), "instruction[2].op"});  // Param where Input due
            CHECK(set_u32(20, 0) == Outcome{field_of(2, 0), "instruction[2].op"});  // Param outside
            CHECK(set_u32(16, 12) == Outcome{16, "header.n_inputs"});  // more than the instructions
            CHECK(set_u32(20, 0xFFFFFFFFu) == Outcome{20, "header.n_params"});
        }
        SUBCASE("unused operand field not 0") {
            CHECK(set_u32(field_of(3, 2), 1) == Outcome{field_of(3, 2), "instruction[3].b"});     // Const
            CHECK(set_u32(field_of(0, 3), 7) == Outcome{field_of(0, 3), "instruction[0].c"});     // Input
            CHECK(set_u32(field_of(2, 2), 1) == Outcome{field_of(2, 2), "instruction[2].b"});     // Param
            CHECK(set_u32(field_of(10, 2), 1) == Outcome{field_of(10, 2), "instruction[10].b"});  // Neg
            CHECK(set_u32(field_of(5, 3), 1) == Outcome{field_of(5, 3), "instruction[5].c"});     // Powi
            CHECK(set_u32(field_of(4, 3), 1) == Outcome{field_of(4, 3), "instruction[4].c"});     // Mul
        }
        SUBCASE("truncated file") {
            auto cut = [&](std::size_t size) {
                return load_outcome(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)));
            };
            CHECK(cut(0) == Outcome{0, "header.magic"});
            CHECK(cut(5) == Outcome{0, "header.magic"});
            CHECK(cut(8) == Outcome{8, "header.version"});
            CHECK(cut(14) == Outcome{12, "header.flags"});
            CHECK(cut(30) == Outcome{28, "header.n_constants"});
            CHECK(cut(39) == Outcome{36, "header.n_guards"});
            CHECK(cut(40) == Outcome{24, "header.n_instructions"});
            CHECK(cut(sample_constants + 3) == Outcome{28, "header.n_constants"});
            CHECK(cut(sample_guards + 8) == Outcome{36, "header.n_guards"});
            CHECK(cut(sample_checksum) == Outcome{sample_checksum, "checksum"});
            CHECK(cut(sample_size - 1) == Outcome{sample_checksum, "checksum"});
        }
        SUBCASE("checksum mismatch") {
            Bytes bytes = good;
            bytes[sample_checksum] ^= std::byte{0x01};
            CHECK(load_outcome(bytes) == Outcome{sample_checksum, "checksum"});
            bytes = good;
            bytes[sample_constants] ^= std::byte{0x10};  // a change that is otherwise valid
            CHECK(load_outcome(bytes) == Outcome{sample_checksum, "checksum"});
            CHECK(load_outcome(reseal(bytes)) == loaded);
        }
        SUBCASE("absurd counts") {
            CHECK(set_u32(24, 0xFFFFFFFFu) == Outcome{24, "header.n_instructions"});
            CHECK(set_u32(28, 0xFFFFFFFFu) == Outcome{28, "header.n_constants"});
            CHECK(set_u32(32, 0xFFFFFFFFu) == Outcome{32, "header.n_outputs"});
            CHECK(set_u32(36, 0xFFFFFFFFu) == Outcome{36, "header.n_guards"});
            CHECK(set_u32(24, 100) == Outcome{24, "header.n_instructions"});
            // The first section that runs past the end of the file is blamed: one instruction too
            // many pushes the guards out (the loader cannot tell which count is wrong).
            CHECK(set_u32(24, 12) == Outcome{36, "header.n_guards"});
        }
        SUBCASE("trailing data") {
            Bytes longer = good;
            longer.push_back(std::byte{0});
            CHECK(load_outcome(longer) == Outcome{sample_size, "trailing data"});
            CHECK(load_outcome(reseal(longer)) == Outcome{sample_size, "trailing data"});
            longer.insert(longer.end(), good.begin(), good.end());  // two files back to back
            CHECK(load_outcome(longer) == Outcome{sample_size, "trailing data"});
            // A count one too small leaves a record's worth of bytes over.
            CHECK(set_u32(36, 1) == Outcome{sample_size - 8, "trailing data"});
        }
    }

    TEST_CASE("a FormatError's message names the offset and the field") {
        Bytes bytes = tapevm::to_bytes(sample_tape());
        put_u32(bytes, field_of(8, 2), 8);
        try {
            (void)tapevm::from_bytes(reseal(bytes));
            FAIL("a self-referencing operand loaded");
        } catch (const FormatError& error) {
            const std::string message = error.what();
            CHECK(message.find("byte " + std::to_string(field_of(8, 2))) != std::string::npos);
            CHECK(message.find("instruction[8].b") != std::string::npos);
            CHECK(message.find("not earlier") != std::string::npos);
        }
    }

    TEST_CASE("a huge count in a small file throws before allocating") {
        Bytes bytes = tapevm::to_bytes(sample_tape());
        for (std::size_t offset : {24u, 28u, 32u, 36u}) {
            CAPTURE(offset);
            Bytes corrupt = bytes;
            put_u32(corrupt, offset, 0xFFFFFFFFu);
            corrupt = reseal(corrupt);
            largest_allocation = 0;
            tracking_allocations = true;
            const Outcome result = load_outcome(corrupt);
            tracking_allocations = false;
            CHECK(result.offset == offset);
            CHECK(result.field.starts_with("header.n_"));
            CHECK(largest_allocation.load() < 4096);  // only the error message's strings
        }
        // The same through a stream: only the bytes present are read.
        put_u32(bytes, 24, 0xFFFFFFFFu);
        std::istringstream stream(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
        CHECK_THROWS_AS(tapevm::load(stream), FormatError);
    }

    TEST_CASE("every single-byte change is caught by the checksum or loads as a valid tape") {
        const std::uint8_t flips[] = {0x01, 0x80, 0xFF};
        for (const NamedTape& named : all_tapes()) {
            // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
            const std::string& name = named.name;
            const Tape& tape = named.tape;
            CAPTURE(name);
            const Bytes good = tapevm::to_bytes(tape);
            std::size_t stale_not_rejected = 0, resealed_loaded = 0, resealed_rejected = 0;
            std::size_t accepted_but_wrong = 0;
            std::string first_problem;
            for (std::size_t offset = 0; offset < good.size(); ++offset) {
                for (std::uint8_t flip : flips) {
                    Bytes bytes = good;
                    bytes[offset] ^= std::byte{flip};
                    const std::string where = "byte " + std::to_string(offset) + " ^ " + std::to_string(flip);
                    // With the stale checksum: always an error (CRC-32 detects every burst <= 32 bits).
                    if (load_outcome(bytes) == loaded) {
                        ++stale_not_rejected;
                        if (first_problem.empty()) first_problem = where + " loaded with a stale checksum";
                    }
                    // With the checksum recomputed: a valid tape that saves to the same bytes, or an error.
                    if (offset >= good.size() - 4) continue;  // in the checksum: resealing undoes it
                    const Bytes resealed = reseal(bytes);
                    try {
                        const Tape loaded_tape = tapevm::from_bytes(resealed);
                        ++resealed_loaded;
                        tapevm::validate(loaded_tape.parts());
                        if (tapevm::to_bytes(loaded_tape) != resealed || loaded_tape == tape) {
                            ++accepted_but_wrong;
                            if (first_problem.empty()) first_problem = where + " loaded as a different image";
                        }
                    } catch (const FormatError&) {
                        ++resealed_rejected;
                    }
                }
            }
            INFO(first_problem);
            CHECK(stale_not_rejected == 0);
            CHECK(accepted_but_wrong == 0);
            CHECK(resealed_rejected > 0);  // header and structure bytes
            if (tape.constant_count() > 0) {
                CHECK(resealed_loaded > 0);  // constants' bits are free
            }
        }
    }

    TEST_CASE("every truncation throws FormatError") {
        for (const NamedTape& named : all_tapes()) {
            // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
            const std::string& name = named.name;
            const Tape& tape = named.tape;
            CAPTURE(name);
            const Bytes good = tapevm::to_bytes(tape);
            std::size_t not_rejected = 0;
            std::size_t first = good.size();
            for (std::size_t size = 0; size < good.size(); ++size) {
                const Bytes prefix(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size));
                if (load_outcome(prefix) == loaded && ++not_rejected == 1) first = size;
                // The prefix with a valid checksum of its own appended: still too short for its counts.
                if (size + 4 < good.size()) {
                    Bytes sealed = prefix;
                    sealed.resize(size + 4);
                    if (load_outcome(reseal(sealed)) == loaded && ++not_rejected == 1) first = size;
                }
            }
            CAPTURE(first);
            CHECK(not_rejected == 0);
        }
    }

    TEST_CASE("streams") {
        const Tape tape = tapevm::examples::example_tape("ba");
        SUBCASE("load reads the whole stream") {
            std::stringstream stream;
            tapevm::save(tape, stream);
            tapevm::save(tape, stream);  // a second image after the first is trailing data
            try {
                (void)tapevm::load(stream);
                FAIL("two images in one stream loaded");
            } catch (const FormatError& error) {
                CHECK(error.offset() == tapevm::to_bytes(tape).size());
                CHECK(error.field() == "trailing data");
            }
        }
        SUBCASE("an empty stream is a truncated file") {
            std::istringstream stream;
            try {
                (void)tapevm::load(stream);
                FAIL("an empty stream loaded");
            } catch (const FormatError& error) {
                CHECK(error.offset() == 0);
                CHECK(error.field() == "header.magic");
            }
        }
        SUBCASE("a failing output stream throws") {
            std::ostringstream out;
            out.setstate(std::ios::badbit);
            CHECK_THROWS_AS(tapevm::save(tape, out), tapevm::Error);
        }
        SUBCASE("a failing input stream throws Error, not FormatError") {
            FailingBuffer buffer;
            std::istream in(&buffer);
            bool threw_error = false;
            try {
                (void)tapevm::load(in);
            } catch (const FormatError&) {
                FAIL("a read error reported as a malformed file");
            } catch (const tapevm::Error&) {
                threw_error = true;
            }
            CHECK(threw_error);
        }
    }

    TEST_CASE("files") {
        TemporaryDirectory directory;
        const Tape first = tapevm::examples::example_tape("rosenbrock16");
        const Tape second = tapevm::examples::example_tape("trig16");
        const auto path = directory.path() / "function.tape";

        SUBCASE("saving over a file replaces it and leaves no temporary file") {
            tapevm::save_file(first, path);
            tapevm::save_file(second, path);
            CHECK(tapevm::load_file(path) == second);
            CHECK(directory.entry_count() == 1);
        }
        SUBCASE("a failed save leaves what was there intact and removes its temporary file") {
            // The target is a non-empty directory: the temporary file is written, the rename fails.
            std::filesystem::create_directory(path);
            tapevm::save_file(first, path / "inner.tape");
            CHECK_THROWS_AS(tapevm::save_file(second, path), tapevm::Error);
            CHECK(std::filesystem::is_directory(path));
            CHECK(tapevm::load_file(path / "inner.tape") == first);
            CHECK(directory.entry_count() == 1);
        }
        SUBCASE("saving into a missing directory names the path") {
            const auto missing = directory.path() / "no such directory" / "function.tape";
            try {
                tapevm::save_file(first, missing);
                FAIL("saved into a missing directory");
            } catch (const tapevm::Error& error) {
                CHECK(std::string(error.what()).find(missing.string()) != std::string::npos);
            }
        }
        SUBCASE("loading a missing file throws Error naming the path") {
            const auto missing = directory.path() / "missing.tape";
            try {
                (void)tapevm::load_file(missing);
                FAIL("loaded a missing file");
            } catch (const FormatError&) {
                FAIL("a missing file reported as a malformed file");
            } catch (const tapevm::Error& error) {
                CHECK(std::string(error.what()).find(missing.string()) != std::string::npos);
            }
        }
        SUBCASE("loading a directory throws Error naming the path") {
            try {
                (void)tapevm::load_file(directory.path());
                FAIL("loaded a directory");
            } catch (const FormatError&) {
                FAIL("a directory reported as a malformed file");
            } catch (const tapevm::Error& error) {
                CHECK(std::string(error.what()).find(directory.path().string()) != std::string::npos);
            }
        }
        SUBCASE("a malformed file's error names the path, the offset and the field") {
            Bytes bytes = tapevm::to_bytes(first);
            put_u32(bytes, 12, 1);
            {
                std::ofstream out(path, std::ios::binary);
                out.write(reinterpret_cast<const char*>(bytes.data()),
                          static_cast<std::streamsize>(bytes.size()));
            }
            try {
                (void)tapevm::load_file(path);
                FAIL("loaded a file with flags set");
            } catch (const FormatError& error) {
                CHECK(error.offset() == 12);
                CHECK(error.field() == "header.flags");
                CHECK(std::string(error.what()).find(path.string()) != std::string::npos);
            }
        }
    }

}  // TEST_SUITE
