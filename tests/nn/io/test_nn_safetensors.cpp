// safetensors at the byte level: the pure parser and encoder against a file spelled out from
// the format's description, round trips of every dtype, and malformed files (each a typed
// SafetensorsError naming the key and the field, never a crash).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "tapevm/nn/safetensors.hpp"

using namespace tapevm::nn;

namespace {

std::vector<std::byte> as_bytes(std::string_view text) {
    std::vector<std::byte> bytes(text.size());
    if (!text.empty()) std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;
}

/// A file: the 8-byte little-endian `length` (the header's true length unless given), the
/// header text, then `data`.
std::vector<std::byte> make_file(std::string_view header, std::vector<std::byte> data = {},
                                 std::optional<std::uint64_t> length = std::nullopt) {
    const std::uint64_t n = length.value_or(header.size());
    std::vector<std::byte> file;
    for (int i = 0; i < 8; ++i) file.push_back(std::byte((n >> (8 * i)) & 0xff));
    const std::vector<std::byte> text = as_bytes(header);
    file.insert(file.end(), text.begin(), text.end());
    file.insert(file.end(), data.begin(), data.end());
    return file;
}

std::vector<std::byte> zeros(std::size_t n) { return std::vector<std::byte>(n); }

/// Parses `file`, expecting a SafetensorsError about `key` and `field` whose message contains
/// `words`.
void expect_error(const std::vector<std::byte>& file, const std::string& key, const std::string& field,
                  const std::string& words) {
    try {
        parse_safetensors(file, "bad.safetensors");
        FAIL("parsed a malformed file; expected an error about " << field);
    } catch (const SafetensorsError& error) {
        INFO(error.what());
        CHECK(error.file() == "bad.safetensors");
        CHECK(error.key() == key);
        CHECK(error.field() == field);
        CHECK(std::string(error.what()).find(words) != std::string::npos);
    }
}

// The file the Python package writes for save_file({"w": tensor([1.0, -2.5]), "i":
// tensor(7, dtype=int32)}, metadata={"format": "pt"}), spelled out from the format: length 144
// (138 bytes of JSON and 6 spaces), the header, then w's 8 bytes and i's 4.
const std::string reference_header =
    R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
    R"("i":{"dtype":"I32","shape":[],"data_offsets":[8,12]}}      )";
std::vector<std::byte> reference_file() {
    std::vector<std::byte> file = {std::byte{0x90}, std::byte{0}, std::byte{0}, std::byte{0},
                                   std::byte{0},    std::byte{0}, std::byte{0}, std::byte{0}};
    const std::vector<std::byte> text = as_bytes(reference_header);
    file.insert(file.end(), text.begin(), text.end());
    for (unsigned value :
         {0x00u, 0x00u, 0x80u, 0x3fu, 0x00u, 0x00u, 0x20u, 0xc0u, 0x07u, 0x00u, 0x00u, 0x00u})
        file.push_back(std::byte(value));
    return file;
}

std::filesystem::path temporary_path(const std::string& name) {
    return std::filesystem::temp_directory_path() /
           ("tapevm_test_" + std::to_string(::getpid()) + "_" + name);
}

void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("the reference file parses, and encoding the same tensors gives its bytes") {
    const std::vector<std::byte> file = reference_file();
    REQUIRE(file.size() == 8 + 144 + 12);
    const SafetensorsHeader header = parse_safetensors(file);
    CHECK(header.data_offset == 152);
    CHECK(header.metadata == SafetensorsMetadata{{"format", "pt"}});
    REQUIRE(header.entries.size() == 2);
    CHECK(header.entries[0].name == "w");
    CHECK(header.entries[0].dtype == DType::f32);
    CHECK(header.entries[0].shape == Shape{2});
    CHECK(header.entries[0].begin == 0);
    CHECK(header.entries[0].end == 8);
    CHECK(header.entries[1].name == "i");
    CHECK(header.entries[1].dtype == DType::i32);
    CHECK(header.entries[1].shape.empty());
    CHECK(header.entries[1].begin == 8);

    const float w[] = {1.0f, -2.5f};
    const std::int32_t i = 7;
    const SafetensorsTensorBytes tensors[] = {
        {"i", DType::i32, {}, std::as_bytes(std::span(&i, 1))},
        {"w", DType::f32, {2}, std::as_bytes(std::span(w))},
    };
    CHECK(encode_safetensors(tensors, {{"format", "pt"}}) == file);
}

TEST_CASE("every dtype round-trips through the encoder, the parser and a mapped file") {
    const double f64[] = {1.5, -0.0, 1e300};
    const float f32[] = {3.25f, -7.0f};
    const std::uint16_t f16[] = {float_to_half(0.5f), float_to_half(-65504.0f), 0x7e00};
    const std::uint16_t bf16[] = {float_to_bfloat(1.0f), float_to_bfloat(-3.0e38f)};
    const std::int32_t i32[] = {-2147483647 - 1, 0, 2147483647, 5, 6, 7};
    const SafetensorsTensorBytes tensors[] = {
        {"half", DType::f16, {3}, std::as_bytes(std::span(f16))},
        {"brain", DType::bf16, {1, 2}, std::as_bytes(std::span(bf16))},
        {"ids", DType::i32, {2, 3}, std::as_bytes(std::span(i32))},
        {"double", DType::f64, {3}, std::as_bytes(std::span(f64))},
        {"single", DType::f32, {2, 1}, std::as_bytes(std::span(f32))},
        {"empty", DType::f32, {0, 4}, {}},
    };
    const SafetensorsMetadata metadata = {{"step", "12"}, {"note", "\xc3\xa9t\xc3\xa9"}};
    const std::vector<std::byte> file = encode_safetensors(tensors, metadata);
    const std::uint64_t header_length = parse_safetensors(file).data_offset - 8;
    CHECK(header_length % 8 == 0);

    const std::filesystem::path path = temporary_path("all_dtypes.safetensors");
    write_file(path, file);
    const SafetensorsFile opened = SafetensorsFile::open(path);
    std::filesystem::remove(path);  // the mapping keeps the data
    CHECK(opened.keys() == std::vector<std::string>{"brain", "double", "empty", "half", "ids", "single"});
    CHECK(opened.metadata() == metadata);
    for (const SafetensorsTensorBytes& tensor : tensors) {
        CAPTURE(tensor.name);
        CHECK(opened.dtype(tensor.name) == tensor.dtype);
        CHECK(opened.shape(tensor.name) == tensor.shape);
        const std::span<const std::byte> view = opened.bytes(tensor.name);
        CHECK(std::equal(view.begin(), view.end(), tensor.data.begin(), tensor.data.end()));
        // Each tensor starts at a multiple of its element size within the file.
        CHECK((opened.header().data_offset + opened.entry(tensor.name).begin) % dtype_size(tensor.dtype) ==
              0);
        CHECK(opened.entry(tensor.name).dtype_name == safetensors_dtype_name(tensor.dtype));
    }
    // Largest element first, as the Python package orders them.
    CHECK(opened.header().entries.front().name == "double");
    CHECK(opened.header().entries.back().name == "half");
    CHECK_THROWS_AS(opened.entry("missing"), SafetensorsError);

    const SafetensorsFile copy = SafetensorsFile::from_bytes(file, "copy");
    CHECK(copy.keys() == opened.keys());
}

TEST_CASE("dtypes tapevm lacks parse, and using them is a typed error") {
    const std::vector<std::byte> file =
        make_file(R"({"position_ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", zeros(16));
    const SafetensorsFile opened = SafetensorsFile::from_bytes(file, "pt.safetensors");
    CHECK_FALSE(opened.entry("position_ids").dtype.has_value());
    CHECK(opened.entry("position_ids").element_size == 8);
    CHECK(opened.bytes("position_ids").size() == 16);
    try {
        (void)opened.dtype("position_ids");
        FAIL("expected an error");
    } catch (const SafetensorsError& error) {
        CHECK(error.key() == "position_ids");
        CHECK(error.field() == "dtype");
    }
    CHECK(dtype_from_safetensors_name("I64") == std::nullopt);
    CHECK(dtype_from_safetensors_name("BF16") == DType::bf16);
}

TEST_CASE("malformed files give a SafetensorsError naming the key and the field") {
    const std::string one = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

    SUBCASE("shorter than the length field") { expect_error(zeros(5), "", "header length", "shorter"); }
    SUBCASE("header length past the end of the file") {
        expect_error(make_file(one, zeros(8), one.size() + 9), "", "header length", "past the end");
    }
    SUBCASE("huge header length") {
        expect_error(make_file(one, zeros(8), std::uint64_t(1) << 63), "", "header length", "limit");
        expect_error(make_file(one, zeros(8), ~std::uint64_t(0)), "", "header length", "limit");
    }
    SUBCASE("data truncated") {
        expect_error(make_file(one, zeros(7)), "a", "data_offsets", "past the data");
    }
    SUBCASE("bytes after the last tensor") {
        expect_error(make_file(one, zeros(9)), "", "data", "after the last");
    }
    SUBCASE("overlapping offsets") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                               zeros(8)),
                     "b", "data_offsets", "overlaps tensor 'a'");
    }
    SUBCASE("a gap between tensors") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                               zeros(12)),
                     "b", "data_offsets", "gap");
    }
    SUBCASE("offsets out of range") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,)"
                               R"(18446744073709551615]}})",
                               zeros(4)),
                     "a", "data_offsets", "holds 3 bytes");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[100,104]}})", zeros(4)),
                     "a", "data_offsets", "past the data");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", zeros(8)), "a",
                     "data_offsets", "before begin");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", zeros(4)), "a",
                     "data_offsets", "non-negative");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", zeros(4)), "a",
                     "data_offsets", "[begin, end]");
    }
    SUBCASE("wrong byte count for dtype and shape") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,6]}})", zeros(6)), "a",
                     "data_offsets", "needs 8");
        expect_error(make_file(R"({"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,16]}})", zeros(16)),
                     "a", "data_offsets", "needs 8");
    }
    SUBCASE("shape whose byte count overflows") {
        expect_error(
            make_file(R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"), "a",
            "shape", "overflows");
        expect_error(make_file(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})"),
                     "a", "shape", "overflows");
    }
    SUBCASE("bad shapes") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})"), "a", "shape",
                     "non-negative");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,0]}})"), "a", "shape",
                     "non-negative");
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":3,"data_offsets":[0,0]}})"), "a", "shape",
                     "not an array");
        expect_error(make_file(R"({"a":{"dtype":"F32","data_offsets":[0,0]}})"), "a", "shape", "missing");
    }
    SUBCASE("duplicate keys") {
        expect_error(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                               R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                               zeros(8)),
                     "", "header", "'a' appears twice");
        expect_error(
            make_file(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", zeros(4)),
            "", "header", "'dtype' appears twice");
        expect_error(make_file(R"({"__metadata__":{"k":"1","k":"2"}})"), "", "header", "'k' appears twice");
    }
    SUBCASE("unknown dtype and bad dtype values") {
        expect_error(make_file(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", zeros(4)), "a",
                     "dtype", "unknown dtype 'F31'");
        expect_error(make_file(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", zeros(4)), "a",
                     "dtype", "not a string");
        expect_error(make_file(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", zeros(4)), "a", "dtype",
                     "missing");
    }
    SUBCASE("bad JSON") {
        expect_error(make_file(R"({"a":{"dtype":"F32",)"), "", "header", "invalid JSON");
        expect_error(make_file(R"({"a":1} trailing)"), "", "header", "invalid JSON");
        expect_error(make_file("{\"a\xff\":1}"), "", "header", "invalid JSON");
        expect_error(make_file(""), "", "header", "start with '{'");
        expect_error(make_file(R"( {})"), "", "header", "start with '{'");
        expect_error(make_file(R"([1,2])"), "", "header", "start with '{'");
        expect_error(make_file(R"({"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]})"), "",
                     "header", "nested deeper");
    }
    SUBCASE("structure the format does not allow") {
        expect_error(make_file(R"({"a":[0,4]})"), "a", "header", "expected an object");
        expect_error(
            make_file(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"extra":1}})", zeros(4)), "a",
            "header", "unknown field 'extra'");
        expect_error(make_file(R"({"__metadata__":{"k":1}})"), "__metadata__", "metadata", "not a string");
        expect_error(make_file(R"({"__metadata__":["k"]})"), "__metadata__", "metadata", "not an object");
    }
}

TEST_CASE("a padded header, an empty file of tensors and zero-sized tensors are valid") {
    CHECK(parse_safetensors(make_file("{}")).entries.empty());
    CHECK(parse_safetensors(make_file("{}      ")).data_offset == 16);
    const SafetensorsHeader header =
        parse_safetensors(make_file(R"({"z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                                    R"("a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("e":{"dtype":"BF16","shape":[3,0],"data_offsets":[4,4]}})",
                                    zeros(4)));
    REQUIRE(header.entries.size() == 3);
    CHECK(header.entries[0].name == "a");
}

TEST_CASE("every prefix and 3,000 random mutations of a valid file parse or give SafetensorsError") {
    const std::vector<std::byte> file = reference_file();
    for (std::size_t size = 0; size < file.size(); ++size) {
        CAPTURE(size);
        const std::vector<std::byte> prefix(file.begin(), file.begin() + std::ptrdiff_t(size));
        CHECK_THROWS_AS(parse_safetensors(prefix), SafetensorsError);
    }
    std::mt19937_64 random(20);
    int parsed = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<std::byte> mutated = file;
        const int edits = 1 + int(random() % 3);
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = random() % mutated.size();
            switch (random() % 3) {
                case 0: mutated[at] = std::byte(random() & 0xff); break;
                case 1: mutated.erase(mutated.begin() + std::ptrdiff_t(at)); break;
                default:
                    mutated.insert(mutated.begin() + std::ptrdiff_t(at), std::byte(random() & 0xff));
                    break;
            }
        }
        try {
            const SafetensorsHeader header = parse_safetensors(mutated);
            for (const SafetensorsEntry& entry : header.entries)
                REQUIRE(header.data_offset + entry.end <= mutated.size());
            ++parsed;
        } catch (const SafetensorsError&) {
        }
    }
    CHECK(parsed < 3000);
}

TEST_CASE("the encoder refuses what the format cannot hold") {
    const float value = 1.0f;
    const auto data = std::as_bytes(std::span(&value, 1));
    auto field_of = [](std::vector<SafetensorsTensorBytes> tensors, SafetensorsMetadata metadata = {}) {
        try {
            encode_safetensors(tensors, metadata, "out.safetensors");
        } catch (const SafetensorsError& error) {
            CHECK(error.file() == "out.safetensors");
            return error.field();
        }
        return std::string("no error");
    };
    CHECK(field_of({{"", DType::f32, {1}, data}}) == "name");
    CHECK(field_of({{"__metadata__", DType::f32, {1}, data}}) == "name");
    CHECK(field_of({{"a", DType::f32, {1}, data}, {"a", DType::f32, {1}, data}}) == "name");
    CHECK(field_of({{"a", DType::f32, {2}, data}}) == "data");
    CHECK(field_of({{"bad\xff", DType::f32, {1}, data}}) == "name");
    CHECK(field_of({{"a", DType::f32, {1}, data}}, {{"k", "\xc3"}}) == "name");
    CHECK(field_of({{"a", DType::f32, {1}, data}}) == "no error");
}

TEST_CASE("opening a missing or malformed file names it") {
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(temporary_path("does_not_exist")),
                         doctest::Contains("cannot open"), SafetensorsError);
    const std::filesystem::path path = temporary_path("empty.safetensors");
    write_file(path, {});
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(path), doctest::Contains(path.string().c_str()),
                         SafetensorsError);
    std::filesystem::remove(path);
    CHECK_THROWS_WITH_AS(SafetensorsFile::open(std::filesystem::temp_directory_path()),
                         doctest::Contains("not a regular file"), SafetensorsError);
}
