// safetensors (safetensors.hpp): the validating parser, the encoder, save through a temporary
// file, and SafetensorsFile over a read-only mmap.
//
// The parser reads the header with nlohmann::json through a parse callback that tracks the keys
// of every open object (nlohmann keeps the last of duplicate keys silently) and refuses nesting
// deeper than the format has (root, tensor, shape array), so no input builds a deep tree.
#include "tapevm/nn/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tapevm::nn {

// Tensor bytes are stored little-endian and copied as they are.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

SafetensorsError::SafetensorsError(std::string file, std::string key, std::string field,
                                   const std::string& what)
    : Error("safetensors '" + file + "'" + (key.empty() ? std::string() : ": tensor '" + key + "'") + ": " +
            field + ": " + what),
      file_(std::move(file)), key_(std::move(key)), field_(std::move(field)) {}

namespace {

constexpr std::string_view metadata_key = "__metadata__";
constexpr std::size_t length_bytes = 8;

struct FormatDType {
    std::string_view name;
    std::size_t size;
    std::optional<DType> dtype;
};

// Every dtype of the format with whole-byte elements.
constexpr FormatDType format_dtypes[] = {
    {"BOOL", 1, std::nullopt},    {"U8", 1, std::nullopt},      {"I8", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E8M0", 1, std::nullopt},
    {"I16", 2, std::nullopt},     {"U16", 2, std::nullopt},     {"F16", 2, DType::f16},
    {"BF16", 2, DType::bf16},     {"I32", 4, DType::i32},       {"U32", 4, std::nullopt},
    {"F32", 4, DType::f32},       {"F64", 8, DType::f64},       {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},     {"C64", 8, std::nullopt},
};

const FormatDType* find_format_dtype(std::string_view name) {
    for (const FormatDType& entry : format_dtypes)
        if (entry.name == name) return &entry;
    return nullptr;
}

std::string printable(std::string_view text, std::size_t limit = 60) {
    std::string out;
    for (char c : text.substr(0, limit)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f) {
            out += c;
        } else {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 15];
        }
    }
    if (text.size() > limit) out += "...";
    return out;
}

/// Parses `text` as JSON, rejecting duplicate keys in any object and nesting deeper than
/// `max_depth` containers. Returns nullopt (with `problem` set) when invalid.
std::optional<nlohmann::json> parse_json_strict(std::string_view text, std::string& problem) {
    constexpr int max_depth = 3;
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    bool too_deep = false;
    nlohmann::json::parser_callback_t callback = [&](int depth, nlohmann::json::parse_event_t event,
                                                     nlohmann::json& parsed) {
        using Event = nlohmann::json::parse_event_t;
        switch (event) {
            case Event::object_start:
                open_objects.emplace_back();
                if (depth >= max_depth) too_deep = true;
                return depth < max_depth;
            case Event::array_start:
                if (depth >= max_depth) too_deep = true;
                return depth < max_depth;
            case Event::object_end:
                if (!open_objects.empty()) open_objects.pop_back();
                return true;
            case Event::key:
                if (!open_objects.empty() && !open_objects.back().insert(parsed.get<std::string>()).second &&
                    duplicate.empty())
                    duplicate = parsed.get<std::string>();
                return true;
            default: return true;
        }
    };
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(text.begin(), text.end(), callback, true, false);
    } catch (const nlohmann::json::exception& error) {
        problem = std::string("invalid JSON: ") + error.what();
        return std::nullopt;
    }
    // First: nlohmann reports no object_end for a discarded (too deep) object, so the key
    // tracking is only meaningful when nothing was discarded.
    if (too_deep) {
        problem = "nested deeper than the format allows (" + std::to_string(max_depth) + " levels)";
        return std::nullopt;
    }
    if (!duplicate.empty()) {
        problem = "key '" + printable(duplicate) + "' appears twice in one object";
        return std::nullopt;
    }
    return value;
}

std::uint64_t read_length(std::span<const std::byte> bytes) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < length_bytes; ++i)
        value |= std::uint64_t(std::to_integer<unsigned>(bytes[i])) << (8 * i);
    return value;
}

/// A JSON value that must be a non-negative integer.
std::optional<std::uint64_t> unsigned_value(const nlohmann::json& value) {
    if (value.is_number_unsigned()) return value.get<std::uint64_t>();
    if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
        return std::uint64_t(value.get<std::int64_t>());
    return std::nullopt;
}

SafetensorsEntry parse_entry(const std::string& file, const std::string& name, const nlohmann::json& info) {
    auto fail = [&](const char* field, const std::string& what) -> SafetensorsError {
        return SafetensorsError(file, name, field, what);
    };
    if (!info.is_object()) throw fail("header", "expected an object with dtype, shape and data_offsets");
    for (const auto& [field, value] : info.items()) {
        (void)value;
        if (field != "dtype" && field != "shape" && field != "data_offsets")
            throw fail("header", "unknown field '" + printable(field) + "'");
    }
    SafetensorsEntry entry;
    entry.name = name;

    const auto dtype = info.find("dtype");
    if (dtype == info.end()) throw fail("dtype", "missing");
    if (!dtype->is_string()) throw fail("dtype", "not a string");
    entry.dtype_name = dtype->get<std::string>();
    const FormatDType* format = find_format_dtype(entry.dtype_name);
    if (format == nullptr) throw fail("dtype", "unknown dtype '" + printable(entry.dtype_name) + "'");
    entry.dtype = format->dtype;
    entry.element_size = format->size;

    const auto shape = info.find("shape");
    if (shape == info.end()) throw fail("shape", "missing");
    if (!shape->is_array()) throw fail("shape", "not an array");
    for (const nlohmann::json& extent : *shape) {
        const std::optional<std::uint64_t> value = unsigned_value(extent);
        if (!value)
            throw fail("shape", "extent " + printable(extent.dump()) + " is not a non-negative integer");
        if (*value > std::numeric_limits<std::size_t>::max()) throw fail("shape", "extent too large");
        entry.shape.push_back(std::size_t(*value));
    }
    // Elements without overflow (a zero extent makes any product 0).
    std::uint64_t elements = 1;
    bool overflow = false;
    if (std::find(entry.shape.begin(), entry.shape.end(), std::size_t(0)) != entry.shape.end()) {
        elements = 0;
    } else {
        for (std::size_t extent : entry.shape) {
            if (elements > std::numeric_limits<std::uint64_t>::max() / extent) overflow = true;
            elements *= extent;
        }
    }

    const auto offsets = info.find("data_offsets");
    if (offsets == info.end()) throw fail("data_offsets", "missing");
    if (!offsets->is_array() || offsets->size() != 2) throw fail("data_offsets", "expected [begin, end]");
    const std::optional<std::uint64_t> begin = unsigned_value((*offsets)[0]);
    const std::optional<std::uint64_t> end = unsigned_value((*offsets)[1]);
    if (!begin || !end) throw fail("data_offsets", "offsets must be non-negative integers");
    if (*end < *begin)
        throw fail("data_offsets", "end " + std::to_string(*end) + " before begin " + std::to_string(*begin));
    entry.begin = *begin;
    entry.end = *end;

    if (overflow || elements > std::numeric_limits<std::uint64_t>::max() / format->size)
        throw fail("shape", shape_string(entry.shape) + " overflows the byte count");
    const std::uint64_t bytes = elements * format->size;
    if (*end - *begin != bytes)
        throw fail("data_offsets", "holds " + std::to_string(*end - *begin) + " bytes, but " +
                                       entry.dtype_name + shape_string(entry.shape) + " needs " +
                                       std::to_string(bytes));
    return entry;
}

/// What the header says of one tensor to write: the data itself comes separately.
struct Layout {
    std::string_view name;
    DType dtype;
    const Shape* shape;
    std::size_t bytes;
};

/// The Python package's write order: its dtype enum's order, descending (F64, F32, I32, BF16,
/// F16: element sizes never grow, so each tensor starts aligned to its element size), then the
/// name. Files we write are then byte for byte what it writes for the same tensors.
int write_rank(DType dtype) {
    switch (dtype) {
        case DType::f64: return 4;
        case DType::f32: return 3;
        case DType::i32: return 2;
        case DType::bf16: return 1;
        case DType::f16: return 0;
    }
    return 0;
}

/// Checks names and sizes; returns the write order (write_rank, then name).
std::vector<std::size_t> checked_order(const std::vector<Layout>& tensors, const std::string& file) {
    std::set<std::string_view> names;
    for (const Layout& tensor : tensors) {
        const std::string name(tensor.name);
        if (name.empty()) throw SafetensorsError(file, "", "name", "empty tensor name");
        if (name == metadata_key) throw SafetensorsError(file, name, "name", "reserved for the metadata");
        if (!names.insert(tensor.name).second) throw SafetensorsError(file, name, "name", "given twice");
        const std::size_t expected = element_count(*tensor.shape) * dtype_size(tensor.dtype);
        if (tensor.bytes != expected)
            throw SafetensorsError(file, name, "data",
                                   std::to_string(tensor.bytes) + " bytes given, " +
                                       std::string(dtype_name(tensor.dtype)) + shape_string(*tensor.shape) +
                                       " needs " + std::to_string(expected));
    }
    std::vector<std::size_t> order(tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const int rank_a = write_rank(tensors[a].dtype), rank_b = write_rank(tensors[b].dtype);
        if (rank_a != rank_b) return rank_a > rank_b;
        return tensors[a].name < tensors[b].name;
    });
    return order;
}

std::string header_json(const std::vector<Layout>& tensors, const SafetensorsMetadata& metadata,
                        const std::vector<std::size_t>& order, const std::string& file) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        nlohmann::ordered_json strings = nlohmann::ordered_json::object();
        for (const auto& [key, value] : metadata) strings[key] = value;
        header[std::string(metadata_key)] = std::move(strings);
    }
    std::uint64_t offset = 0;
    for (std::size_t index : order) {
        const Layout& tensor = tensors[index];
        const std::uint64_t end = offset + tensor.bytes;
        nlohmann::ordered_json shape = nlohmann::ordered_json::array();
        for (std::size_t extent : *tensor.shape) shape.push_back(std::uint64_t(extent));
        nlohmann::ordered_json info = nlohmann::ordered_json::object();
        info["dtype"] = std::string(safetensors_dtype_name(tensor.dtype));
        info["shape"] = std::move(shape);
        info["data_offsets"] = nlohmann::ordered_json::array({offset, end});
        header[std::string(tensor.name)] = std::move(info);
        offset = end;
    }
    try {
        return header.dump();
    } catch (const nlohmann::json::exception& error) {
        throw SafetensorsError(file, "", "name",
                               std::string("a name or metadata string is not UTF-8: ") + error.what());
    }
}

/// The 8-byte length and the header padded with spaces to a multiple of 8.
std::vector<std::byte> header_bytes(std::string json) {
    json.append((length_bytes - json.size() % length_bytes) % length_bytes, ' ');
    std::vector<std::byte> bytes(length_bytes + json.size());
    const std::uint64_t length = json.size();
    for (std::size_t i = 0; i < length_bytes; ++i) bytes[i] = std::byte((length >> (8 * i)) & 0xff);
    std::memcpy(bytes.data() + length_bytes, json.data(), json.size());
    return bytes;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f64: return "F64";
        case DType::f32: return "F32";
        case DType::f16: return "F16";
        case DType::bf16: return "BF16";
        case DType::i32: return "I32";
    }
    return "?";
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
    const FormatDType* format = find_format_dtype(name);
    return format != nullptr ? format->dtype : std::nullopt;
}

SafetensorsHeader parse_safetensors(std::span<const std::byte> file, std::string_view file_name) {
    const std::string name(file_name);
    if (file.size() < length_bytes)
        throw SafetensorsError(
            name, "", "header length",
            "file of " + std::to_string(file.size()) + " bytes is shorter than the 8-byte length");
    const std::uint64_t length = read_length(file);
    if (length > safetensors_max_header_bytes)
        throw SafetensorsError(name, "", "header length",
                               std::to_string(length) + " bytes is more than the format's limit of " +
                                   std::to_string(safetensors_max_header_bytes));
    if (length > file.size() - length_bytes)
        throw SafetensorsError(name, "", "header length",
                               std::to_string(length) + " bytes runs past the end of the file (" +
                                   std::to_string(file.size()) + " bytes)");
    const std::string_view text(reinterpret_cast<const char*>(file.data() + length_bytes),
                                std::size_t(length));
    if (text.empty() || text.front() != '{')
        throw SafetensorsError(name, "", "header", "does not start with '{'");

    std::string problem;
    const std::optional<nlohmann::json> json = parse_json_strict(text, problem);
    if (!json) throw SafetensorsError(name, "", "header", problem);
    if (!json->is_object()) throw SafetensorsError(name, "", "header", "not a JSON object");

    SafetensorsHeader header;
    header.data_offset = length_bytes + length;
    for (const auto& [key, value] : json->items()) {
        if (key == metadata_key) {
            if (!value.is_object()) throw SafetensorsError(name, key, "metadata", "not an object of strings");
            for (const auto& [meta_key, meta_value] : value.items()) {
                if (!meta_value.is_string())
                    throw SafetensorsError(name, key, "metadata",
                                           "value of '" + printable(meta_key) + "' is not a string");
                header.metadata.emplace(meta_key, meta_value.get<std::string>());
            }
            continue;
        }
        header.entries.push_back(parse_entry(name, key, value));
    }

    // The tensors tile the data section: sorted by offsets, each starts where the last ended.
    std::sort(header.entries.begin(), header.entries.end(),
              [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
                  return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
              });
    const std::uint64_t data_size = file.size() - header.data_offset;
    std::uint64_t covered = 0;
    const SafetensorsEntry* previous = nullptr;
    for (const SafetensorsEntry& entry : header.entries) {
        if (entry.end > data_size)
            throw SafetensorsError(name, entry.name, "data_offsets",
                                   "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                                       ") runs past the data section (" + std::to_string(data_size) +
                                       " bytes)");
        if (entry.begin < covered)
            throw SafetensorsError(name, entry.name, "data_offsets",
                                   "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                                       ") overlaps tensor '" + printable(previous->name) + "' (ends at " +
                                       std::to_string(covered) + ")");
        if (entry.begin > covered)
            throw SafetensorsError(name, entry.name, "data_offsets",
                                   "starts at " + std::to_string(entry.begin) +
                                       ", leaving a gap after byte " + std::to_string(covered));
        if (entry.end > covered) previous = &entry;
        covered = entry.end;
    }
    if (covered != data_size)
        throw SafetensorsError(
            name, "", "data",
            std::to_string(data_size - covered) + " bytes after the last tensor (data section of " +
                std::to_string(data_size) + " bytes, tensors cover " + std::to_string(covered) + ")");
    return header;
}

std::vector<std::byte> encode_safetensors(std::span<const SafetensorsTensorBytes> tensors,
                                          const SafetensorsMetadata& metadata, std::string_view file_name) {
    const std::string file(file_name);
    std::vector<Layout> layout;
    for (const SafetensorsTensorBytes& tensor : tensors)
        layout.push_back({tensor.name, tensor.dtype, &tensor.shape, tensor.data.size()});
    const std::vector<std::size_t> order = checked_order(layout, file);
    std::vector<std::byte> bytes = header_bytes(header_json(layout, metadata, order, file));
    for (std::size_t index : order)
        bytes.insert(bytes.end(), tensors[index].data.begin(), tensors[index].data.end());
    return bytes;
}

void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata) {
    const std::string file = path.string();
    std::vector<Layout> layout;
    std::vector<const Tensor*> handles;
    for (const auto& [name, tensor] : tensors) {
        if (!tensor.defined()) throw SafetensorsError(file, name, "data", "undefined tensor");
        layout.push_back({name, tensor.dtype(), &tensor.shape(), tensor.bytes()});
        handles.push_back(&tensor);
    }
    const std::vector<std::size_t> order = checked_order(layout, file);
    const std::vector<std::byte> header = header_bytes(header_json(layout, metadata, order, file));

    // Written beside the target and renamed over it; tensors are read back one at a time.
    std::filesystem::path temporary = path;
    temporary += ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            throw SafetensorsError(file, "", "file",
                                   "cannot create " + temporary.string() + ": " + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(header.data()), std::streamsize(header.size()));
        for (std::size_t index : order) {
            const std::vector<std::byte> data = handles[index]->to_bytes();
            out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
        }
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw SafetensorsError(file, "", "file", "write failed (" + temporary.string() + ")");
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw SafetensorsError(file, "", "file",
                               "cannot rename " + temporary.string() + ": " + error.message());
    }
}

// ---- SafetensorsFile ---------------------------------------------------------------------------

struct SafetensorsFile::State {
    std::string path;
    // Either a read-only mapping (mapped, mapped_size) or bytes held in memory (owned).
    void* mapped = nullptr;
    std::size_t mapped_size = 0;
    std::vector<std::byte> owned;
    std::span<const std::byte> file;
    SafetensorsHeader header;
    std::map<std::string, std::size_t, std::less<>> index;  // name -> header.entries[i]

    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() {
        if (mapped != nullptr) ::munmap(mapped, mapped_size);
    }

    void parse() {
        header = parse_safetensors(file, path);
        for (std::size_t i = 0; i < header.entries.size(); ++i) index.emplace(header.entries[i].name, i);
    }
};

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
    auto state = std::make_shared<State>();
    state->path = path.string();
    const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0)
        throw SafetensorsError(state->path, "", "file", std::string("cannot open: ") + std::strerror(errno));
    struct stat info {};
    if (::fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
        const int saved = errno;
        ::close(descriptor);
        throw SafetensorsError(state->path, "", "file",
                               S_ISREG(info.st_mode) ? std::string("cannot stat: ") + std::strerror(saved)
                                                     : std::string("not a regular file"));
    }
    const auto size = static_cast<std::size_t>(info.st_size);
    if (size > 0) {
        void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
        if (mapped == MAP_FAILED) {
            const int saved = errno;
            ::close(descriptor);
            throw SafetensorsError(state->path, "", "file",
                                   std::string("cannot map: ") + std::strerror(saved));
        }
        state->mapped = mapped;
        state->mapped_size = size;
        state->file = std::span<const std::byte>(static_cast<const std::byte*>(mapped), size);
    }
    ::close(descriptor);  // the mapping keeps the file
    state->parse();
    return SafetensorsFile(std::move(state));
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string name) {
    auto state = std::make_shared<State>();
    state->path = std::move(name);
    state->owned = std::move(bytes);
    state->file = state->owned;
    state->parse();
    return SafetensorsFile(std::move(state));
}

const std::string& SafetensorsFile::path() const { return state_->path; }

std::vector<std::string> SafetensorsFile::keys() const {
    std::vector<std::string> names;
    names.reserve(state_->index.size());
    for (const auto& [name, index] : state_->index) names.push_back(name);
    return names;
}

bool SafetensorsFile::contains(std::string_view key) const {
    return state_->index.find(key) != state_->index.end();
}

const SafetensorsEntry& SafetensorsFile::entry(std::string_view key) const {
    const auto found = state_->index.find(key);
    if (found == state_->index.end())
        throw SafetensorsError(state_->path, std::string(key), "name",
                               "no such tensor (the file has " + std::to_string(state_->index.size()) + ")");
    return state_->header.entries[found->second];
}

DType SafetensorsFile::dtype(std::string_view key) const {
    const SafetensorsEntry& found = entry(key);
    if (!found.dtype)
        throw SafetensorsError(state_->path, found.name, "dtype",
                               found.dtype_name +
                                   " is valid safetensors but tapevm has no such dtype "
                                   "(it has F64, F32, F16, BF16, I32)");
    return *found.dtype;
}

const Shape& SafetensorsFile::shape(std::string_view key) const { return entry(key).shape; }

const SafetensorsMetadata& SafetensorsFile::metadata() const { return state_->header.metadata; }

const SafetensorsHeader& SafetensorsFile::header() const { return state_->header; }

std::span<const std::byte> SafetensorsFile::bytes(std::string_view key) const {
    const SafetensorsEntry& found = entry(key);
    return state_->file.subspan(std::size_t(state_->header.data_offset + found.begin),
                                std::size_t(found.end - found.begin));
}

Tensor SafetensorsFile::load(std::string_view key, const Device& device) const {
    const DType type = dtype(key);
    Tensor tensor = device.empty(shape(key), type);
    tensor.assign_bytes(bytes(key));
    return tensor;
}

Tensor SafetensorsFile::load(std::string_view key, const Device& device, DType target) const {
    const DType type = dtype(key);
    if (type == target) return load(key, device);
    const std::span<const std::byte> data = bytes(key);
    const std::size_t count = element_count(shape(key));
    std::vector<double> values(count);
    for (std::size_t i = 0; i < count; ++i) {
        const std::byte* element = data.data() + i * dtype_size(type);
        switch (type) {
            case DType::f64: std::memcpy(&values[i], element, 8); break;
            case DType::f32: {
                float value;
                std::memcpy(&value, element, 4);
                values[i] = value;
                break;
            }
            case DType::f16:
            case DType::bf16: {
                std::uint16_t bits;
                std::memcpy(&bits, element, 2);
                values[i] = type == DType::f16 ? half_to_float(bits) : bfloat_to_float(bits);
                break;
            }
            case DType::i32: {
                std::int32_t value;
                std::memcpy(&value, element, 4);
                values[i] = value;
                break;
            }
        }
    }
    return device.upload(shape(key), std::span<const double>(values), target);
}

std::map<std::string, Tensor> SafetensorsFile::load_all(const Device& device) const {
    std::map<std::string, Tensor> tensors;
    for (const auto& [name, index] : state_->index) tensors.emplace(name, load(name, device));
    return tensors;
}

}  // namespace tapevm::nn
