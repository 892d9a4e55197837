// The .tape file format (layout in tape_file.hpp).
//
// Writing: to_bytes() sizes the image from the tape's counts and stores every field little-endian,
// byte by byte, so the image is the same on every host. Reading: from_bytes() checks, in order,
//   1. the header (magic, version, flags), reading only bytes that are present;
//   2. that the header's counts give exactly the file's size (64-bit arithmetic, no overflow:
//      every count is a u32), before anything is allocated, so a corrupt count cannot make the
//      loader read or allocate more than the file holds;
//   3. the CRC-32 of everything before the last 4 bytes;
//   4. every tape invariant, with find_defect() (tape.hpp), whose (section, index, field) is
//      mapped back to the byte offset of that field in the file.
// Every failure throws FormatError naming the offset and the field.
#include "tapevm/tape_file.hpp"

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <istream>
#include <ostream>
#include <random>
#include <string>
#include <system_error>

#include "tapevm/error.hpp"

namespace tapevm {
namespace {

// Byte offsets and record sizes of the layout.
constexpr std::array<unsigned char, 8> magic = {0x54, 0x41, 0x50, 0x45, 0x56, 0x4D, 0x0D, 0x0A};
constexpr std::uint64_t version_offset = 8;
constexpr std::uint64_t flags_offset = 12;
constexpr std::uint64_t counts_offset = 16;  // n_inputs, n_params, n_instructions, ... (u32 each)
constexpr std::uint64_t header_size = 40;
constexpr std::uint64_t checksum_size = 4;
constexpr std::uint64_t instruction_size = 16;
constexpr std::uint64_t constant_size = 8;
constexpr std::uint64_t output_size = 4;
constexpr std::uint64_t guard_size = 8;

// The six header counts, in file order.
enum Count : std::uint32_t { n_inputs, n_params, n_instructions, n_constants, n_outputs, n_guards };
constexpr std::array<const char*, 6> count_names = {"n_inputs",    "n_params",  "n_instructions",
                                                    "n_constants", "n_outputs", "n_guards"};

constexpr std::uint64_t count_offset(std::uint32_t count) { return counts_offset + 4 * std::uint64_t{count}; }

// The sections after the header, in file order: the count that sizes each and its record size.
struct Section {
    Count count;
    std::uint64_t record_size;
    const char* record_name;
};
constexpr std::array<Section, 4> sections = {{{n_instructions, instruction_size, "instruction"},
                                              {n_constants, constant_size, "constant"},
                                              {n_outputs, output_size, "output"},
                                              {n_guards, guard_size, "guard"}}};

constexpr std::array<std::uint32_t, 256> make_crc_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t n = 0; n < 256; ++n) {
        std::uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}
constexpr std::array<std::uint32_t, 256> crc_table = make_crc_table();

// Appends little-endian fields to a preallocated image.
class Writer {
public:
    explicit Writer(std::vector<std::byte>& bytes) : bytes_(bytes) {}

    void u32(std::uint32_t value) {
        for (int k = 0; k < 4; ++k) bytes_[at_++] = static_cast<std::byte>((value >> (8 * k)) & 0xFF);
    }
    void u64(std::uint64_t value) {
        for (int k = 0; k < 8; ++k) bytes_[at_++] = static_cast<std::byte>((value >> (8 * k)) & 0xFF);
    }
    void raw(std::span<const unsigned char> values) {
        for (unsigned char value : values) bytes_[at_++] = static_cast<std::byte>(value);
    }
    std::size_t position() const { return at_; }

private:
    std::vector<std::byte>& bytes_;
    std::size_t at_ = 0;
};

// Little-endian reads at offsets the caller has checked to be inside `bytes`.
std::uint32_t read_u32(std::span<const std::byte> bytes, std::uint64_t offset) {
    std::uint32_t value = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        value |= std::uint32_t{std::to_integer<std::uint8_t>(bytes[static_cast<std::size_t>(offset) + k])}
                 << (8 * k);
    }
    return value;
}

std::uint64_t read_u64(std::span<const std::byte> bytes, std::uint64_t offset) {
    std::uint64_t value = 0;
    for (std::size_t k = 0; k < 8; ++k) {
        value |= std::uint64_t{std::to_integer<std::uint8_t>(bytes[static_cast<std::size_t>(offset) + k])}
                 << (8 * k);
    }
    return value;
}

std::string hex32(std::uint32_t value) {
    static const char digits[] = "0123456789abcdef";
    std::string text = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) text += digits[(value >> shift) & 0xF];
    return text;
}

// Where each section starts, from the header's counts (u64: cannot overflow for u32 counts).
struct Layout {
    std::array<std::uint64_t, 4> section_start{};
    std::uint64_t checksum_offset = 0;
    std::uint64_t file_size = 0;
};

Layout layout_of(const std::array<std::uint32_t, 6>& counts) {
    Layout layout;
    std::uint64_t at = header_size;
    for (std::size_t k = 0; k < sections.size(); ++k) {
        layout.section_start[k] = at;
        at += std::uint64_t{counts[sections[k].count]} * sections[k].record_size;
    }
    layout.checksum_offset = at;
    layout.file_size = at + checksum_size;
    return layout;
}

// One parse of a file image. `source` (a path, or empty) is appended to every error message.
class Parser {
public:
    Parser(std::span<const std::byte> bytes, std::string source)
        : bytes_(bytes), size_(bytes.size()), where_(source.empty() ? "" : " (in " + source + ")") {}

    Tape parse() {
        check_magic();
        const std::uint32_t version = header_u32(version_offset, "header.version");
        if (version != tape_file_version) {
            throw fail(version_offset, "header.version",
                       "unsupported version " + std::to_string(version) + " (this library reads version " +
                           std::to_string(tape_file_version) + ")");
        }
        const std::uint32_t flags = header_u32(flags_offset, "header.flags");
        if (flags != 0) {
            throw fail(flags_offset, "header.flags", "reserved flags are " + hex32(flags) + ", not 0");
        }
        for (std::uint32_t k = 0; k < counts_.size(); ++k) {
            counts_[k] = header_u32(count_offset(k), std::string("header.") + count_names[k]);
        }
        layout_ = layout_of(counts_);
        check_size();  // before allocating anything
        check_checksum();
        TapeParts parts = read_parts();
        if (auto defect = find_defect(parts)) throw defect_error(*defect);
        return Tape(std::move(parts));
    }

private:
    FormatError fail(std::uint64_t offset, const std::string& field, const std::string& what) const {
        return FormatError(offset, field, what + where_);
    }

    void check_magic() const {
        const std::size_t present = size_ < magic.size() ? static_cast<std::size_t>(size_) : magic.size();
        for (std::size_t k = 0; k < present; ++k) {
            if (std::to_integer<unsigned char>(bytes_[k]) != magic[k]) {
                throw fail(0, "header.magic", "not a tape file (bad magic number)");
            }
        }
        if (present < magic.size()) {
            throw fail(
                0, "header.magic",
                "file truncated: it ends at byte " + std::to_string(size_) + ", inside the magic number");
        }
    }

    // Reads a u32 header field, or throws naming it when the file ends inside it.
    std::uint32_t header_u32(std::uint64_t offset, const std::string& field) const {
        if (offset + 4 > size_) {
            throw fail(offset, field,
                       "file truncated: it ends at byte " + std::to_string(size_) + ", inside the " +
                           std::to_string(header_size) + "-byte header");
        }
        return read_u32(bytes_, offset);
    }

    // Throws unless the counts give exactly the file's size. A section that runs past the end
    // of the file blames its count (a truncated file or a corrupt count: the loader cannot
    // tell); a file that ends inside the checksum blames the checksum; extra bytes are
    // trailing data.
    void check_size() const {
        if (layout_.file_size == size_) return;
        for (std::size_t k = 0; k < sections.size(); ++k) {
            const Section& section = sections[k];
            const std::uint64_t count = counts_[section.count];
            const std::uint64_t end = layout_.section_start[k] + count * section.record_size;
            if (end > size_) {
                throw fail(count_offset(section.count), std::string("header.") + count_names[section.count],
                           std::to_string(count) + " " + section.record_name + " records of " +
                               std::to_string(section.record_size) + " bytes end at byte " +
                               std::to_string(end) + " but the file has " + std::to_string(size_) +
                               " bytes (truncated file or corrupt count)");
            }
        }
        if (layout_.file_size > size_) {
            throw fail(layout_.checksum_offset, "checksum",
                       "file truncated: it ends at byte " + std::to_string(size_) +
                           ", inside the checksum that the header's counts place at byte " +
                           std::to_string(layout_.checksum_offset));
        }
        throw fail(layout_.file_size, "trailing data",
                   std::to_string(size_ - layout_.file_size) +
                       " bytes after the checksum (the header's counts give a " +
                       std::to_string(layout_.file_size) + "-byte file)");
    }

    void check_checksum() const {
        const std::uint32_t stored = read_u32(bytes_, layout_.checksum_offset);
        const std::uint32_t computed = crc32(bytes_.first(static_cast<std::size_t>(layout_.checksum_offset)));
        if (stored != computed) {
            throw fail(layout_.checksum_offset, "checksum",
                       "stored CRC-32 " + hex32(stored) + " but the contents give " + hex32(computed));
        }
    }

    // The records, sized by counts that check_size() has bounded by the file's size.
    TapeParts read_parts() const {
        TapeParts parts;
        parts.inputs = counts_[n_inputs];
        parts.params = counts_[n_params];
        parts.instructions.resize(counts_[n_instructions]);
        for (std::size_t k = 0; k < parts.instructions.size(); ++k) {
            const std::uint64_t at = layout_.section_start[0] + k * instruction_size;
            parts.instructions[k] =
                Instruction{static_cast<Op>(read_u32(bytes_, at)), read_u32(bytes_, at + 4),
                            read_u32(bytes_, at + 8), read_u32(bytes_, at + 12)};
        }
        parts.constants.resize(counts_[n_constants]);
        for (std::size_t k = 0; k < parts.constants.size(); ++k) {
            parts.constants[k] =
                std::bit_cast<double>(read_u64(bytes_, layout_.section_start[1] + k * constant_size));
        }
        parts.outputs.resize(counts_[n_outputs]);
        for (std::size_t k = 0; k < parts.outputs.size(); ++k) {
            parts.outputs[k] = read_u32(bytes_, layout_.section_start[2] + k * output_size);
        }
        parts.guards.resize(counts_[n_guards]);
        for (std::size_t k = 0; k < parts.guards.size(); ++k) {
            const std::uint64_t at = layout_.section_start[3] + k * guard_size;
            parts.guards[k] = Guard{read_u32(bytes_, at), read_u32(bytes_, at + 4)};
        }
        return parts;
    }

    // The defect find_defect() reports, at the offset and under the name of its field in the file.
    FormatError defect_error(const TapeDefect& defect) const {
        using S = TapeDefect::Section;
        const std::string index = "[" + std::to_string(defect.index) + "]";
        switch (defect.section) {
            case S::header:
                // find_defect names header fields after TapeParts' members ("inputs", "params").
                for (std::uint32_t count = 0; count < count_names.size(); ++count) {
                    if ("n_" + defect.field == count_names[count]) {
                        return fail(count_offset(count), std::string("header.") + count_names[count],
                                    defect.what);
                    }
                }
                return fail(counts_offset, "header." + defect.field, defect.what);
            case S::instruction: {
                const std::uint64_t record = layout_.section_start[0] + defect.index * instruction_size;
                const std::array<const char*, 4> fields = {"op", "a", "b", "c"};
                std::uint64_t field_offset = 0;
                for (std::uint64_t k = 0; k < fields.size(); ++k) {
                    if (defect.field == fields[k]) field_offset = 4 * k;
                }
                return fail(record + field_offset, "instruction" + index + "." + defect.field, defect.what);
            }
            case S::constant:  // a constant record is one binary64
                return fail(layout_.section_start[1] + defect.index * constant_size, "constant" + index,
                            defect.what);
            case S::output:  // an output record is one u32 slot
                return fail(layout_.section_start[2] + defect.index * output_size, "output" + index,
                            defect.what);
            case S::guard: {
                const std::uint64_t record = layout_.section_start[3] + defect.index * guard_size;
                const std::uint64_t field_offset = defect.field == "expected" ? 4 : 0;
                return fail(record + field_offset, "guard" + index + "." + defect.field, defect.what);
            }
        }
        return fail(0, "tape", defect.what);
    }

    std::span<const std::byte> bytes_;
    std::uint64_t size_;
    std::string where_;
    std::array<std::uint32_t, 6> counts_{};
    Layout layout_;
};

// Appends everything left in `in` to `bytes`; false when the stream fails (not at its end).
bool read_all(std::istream& in, std::vector<std::byte>& bytes) {
    std::array<char, 1 << 16> chunk;
    while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        const auto got = static_cast<std::size_t>(in.gcount());
        const auto* first = reinterpret_cast<const std::byte*>(chunk.data());
        bytes.insert(bytes.end(), first, first + got);
    }
    return !in.bad();
}

// Appends rather than `"'" + path.string()`, which GCC 12 flags with a false -Wrestrict
// (GCC bug 105329).
std::string quoted(const std::filesystem::path& path) {
    std::string text = "'";
    text += path.string();
    text += "'";
    return text;
}

std::string errno_text(int number) { return std::generic_category().message(number); }

// A name beside `path` that another save is unlikely to pick: the target's name, the
// process-wide save counter and random bits.
std::filesystem::path temporary_beside(const std::filesystem::path& path) {
    static std::atomic<std::uint64_t> counter{0};
    thread_local std::mt19937_64 random(
        std::random_device{}() ^
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::path temporary = path;
    temporary +=
        ".tmp-" + std::to_string(counter.fetch_add(1)) + "-" + std::to_string(random() & 0xFFFFFFFFu);
    return temporary;
}

}  // namespace

std::uint32_t crc32(std::span<const std::byte> bytes) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::byte byte : bytes) {
        crc = crc_table[(crc ^ std::to_integer<std::uint32_t>(byte)) & 0xFF] ^ (crc >> 8);
    }
    return crc ^ 0xFFFFFFFFu;
}

std::vector<std::byte> to_bytes(const Tape& tape) {
    const std::array<std::uint32_t, 6> counts = {tape.input_count(),       tape.param_count(),
                                                 tape.instruction_count(), tape.constant_count(),
                                                 tape.output_count(),      tape.guard_count()};
    const Layout layout = layout_of(counts);
    std::vector<std::byte> bytes(static_cast<std::size_t>(layout.file_size));
    Writer out(bytes);
    out.raw(magic);
    out.u32(tape_file_version);
    out.u32(0);  // flags
    for (std::uint32_t count : counts) out.u32(count);
    for (const Instruction& ins : tape.instructions()) {
        out.u32(static_cast<std::uint32_t>(ins.op));
        out.u32(ins.a);
        out.u32(ins.b);
        out.u32(ins.c);
    }
    for (double constant : tape.constants()) out.u64(std::bit_cast<std::uint64_t>(constant));
    for (std::uint32_t slot : tape.outputs()) out.u32(slot);
    for (const Guard& guard : tape.guards()) {
        out.u32(guard.slot);
        out.u32(guard.expected);
    }
    out.u32(crc32(std::span<const std::byte>(bytes).first(out.position())));
    return bytes;
}

Tape from_bytes(std::span<const std::byte> bytes) { return Parser(bytes, "").parse(); }

void save(const Tape& tape, std::ostream& out) {
    const std::vector<std::byte> bytes = to_bytes(tape);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw Error("tape file: writing to the stream failed");
}

Tape load(std::istream& in) {
    std::vector<std::byte> bytes;
    if (!read_all(in, bytes)) throw Error("tape file: reading the stream failed");
    return from_bytes(bytes);
}

void save_file(const Tape& tape, const std::filesystem::path& path) {
    const std::vector<std::byte> bytes = to_bytes(tape);
    const std::filesystem::path temporary = temporary_beside(path);
    {
        errno = 0;
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) {
            const int number = errno;
            throw Error("tape file: cannot save " + quoted(path) + ": cannot create " + quoted(temporary) +
                        (number != 0 ? ": " + errno_text(number) : std::string()));
        }
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(temporary, ignored);
            throw Error("tape file: cannot save " + quoted(path) + ": writing " + quoted(temporary) +
                        " failed");
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw Error("tape file: cannot save " + quoted(path) + ": renaming " + quoted(temporary) +
                    " failed: " + error.message());
    }
}

Tape load_file(const std::filesystem::path& path) {
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int number = errno;
        throw Error("tape file: cannot open " + quoted(path) +
                    (number != 0 ? ": " + errno_text(number) : std::string()));
    }
    std::vector<std::byte> bytes;
    if (!read_all(in, bytes)) {
        const int number = errno;
        throw Error("tape file: cannot read " + quoted(path) +
                    (number != 0 ? ": " + errno_text(number) : std::string()));
    }
    return Parser(bytes, path.string()).parse();
}

}  // namespace tapevm
