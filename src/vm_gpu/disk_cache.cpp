#include "disk_cache.hpp"

#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>

namespace tapevm::gpu::detail {

namespace {

constexpr char magic[8] = {'t', 'v', 'c', 'a', 'c', 'h', 'e', '2'};

struct Header {
    char magic[8];
    std::uint64_t key_bytes;
    std::uint64_t payload_bytes;
    std::uint64_t checksum;  // hash64 of key then payload
};
static_assert(sizeof(Header) == 32);

std::span<const std::byte> bytes_of(std::string_view text) {
    return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::uint64_t checksum(std::string_view key, std::span<const std::byte> payload) {
    return hash64(payload, hash64(bytes_of(key)));
}

const char* environment(const char* name) {
    const char* value = std::getenv(name);
    return value;
}

}  // namespace

std::filesystem::path default_cache_folder() {
    if (const char* folder = environment("TAPEVM_CACHE_DIR")) return folder;  // "" disables
    if (const char* xdg = environment("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
        return std::filesystem::path(xdg) / "tapevm";
    if (const char* home = environment("HOME"); home != nullptr && *home != '\0')
        return std::filesystem::path(home) / ".cache" / "tapevm";
    return {};
}

namespace {

// XXH64 (xxHash, 64 bit): eight bytes a step, a few GB/s, where FNV-1a's byte-at-a-time chain
// of multiplies took ~1 ms per 300 KB of SPIR-V or pipeline cache on every cache hit.
constexpr std::uint64_t prime1 = 0x9E3779B185EBCA87ull, prime2 = 0xC2B2AE3D27D4EB4Full,
                        prime3 = 0x165667B19E3779F9ull, prime4 = 0x85EBCA77C2B2AE63ull,
                        prime5 = 0x27D4EB2F165667C5ull;

std::uint64_t rotate_left(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads whatever the host's byte order (the cache's names and checksums are
// the same on every machine).
template <class Word> Word load_little(const std::byte* p) {
    Word value;
    std::memcpy(&value, p, sizeof value);
    if constexpr (std::endian::native == std::endian::big) {
        Word swapped = 0;
        for (std::size_t i = 0; i < sizeof value; ++i) swapped = (swapped << 8) | ((value >> (8 * i)) & 0xff);
        value = swapped;
    }
    return value;
}
std::uint64_t load64(const std::byte* p) { return load_little<std::uint64_t>(p); }
std::uint64_t load32(const std::byte* p) { return load_little<std::uint32_t>(p); }

std::uint64_t round64(std::uint64_t accumulator, std::uint64_t input) {
    return rotate_left(accumulator + input * prime2, 31) * prime1;
}
std::uint64_t merge64(std::uint64_t hash, std::uint64_t accumulator) {
    return (hash ^ round64(0, accumulator)) * prime1 + prime4;
}

}  // namespace

std::uint64_t hash64(std::span<const std::byte> bytes, std::uint64_t seed) {
    const std::byte* p = bytes.data();
    const std::byte* const end = p + bytes.size();
    std::uint64_t hash;
    if (bytes.size() >= 32) {
        std::uint64_t v1 = seed + prime1 + prime2, v2 = seed + prime2, v3 = seed, v4 = seed - prime1;
        for (; end - p >= 32; p += 32) {
            v1 = round64(v1, load64(p));
            v2 = round64(v2, load64(p + 8));
            v3 = round64(v3, load64(p + 16));
            v4 = round64(v4, load64(p + 24));
        }
        hash = rotate_left(v1, 1) + rotate_left(v2, 7) + rotate_left(v3, 12) + rotate_left(v4, 18);
        hash = merge64(merge64(merge64(merge64(hash, v1), v2), v3), v4);
    } else {
        hash = seed + prime5;
    }
    hash += bytes.size();
    for (; end - p >= 8; p += 8) hash = rotate_left(hash ^ round64(0, load64(p)), 27) * prime1 + prime4;
    if (end - p >= 4) {
        hash = rotate_left(hash ^ (load32(p) * prime1), 23) * prime2 + prime3;
        p += 4;
    }
    for (; p < end; ++p) hash = rotate_left(hash ^ (static_cast<std::uint64_t>(*p) * prime5), 11) * prime1;
    hash ^= hash >> 33;
    hash *= prime2;
    hash ^= hash >> 29;
    hash *= prime3;
    return hash ^ (hash >> 32);
}

DiskCache::DiskCache(std::filesystem::path folder) : folder_(std::move(folder)) {}

std::filesystem::path DiskCache::path(std::string_view key) const {
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(hash64(bytes_of(key))));
    return folder_ / name;
}

std::optional<std::vector<std::byte>> DiskCache::load(std::string_view key) const {
    if (folder_.empty()) return std::nullopt;
    const std::filesystem::path file = path(key);
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::nullopt;
    const auto reject = [&]() -> std::optional<std::vector<std::byte>> {
        in.close();
        std::error_code ignored;
        std::filesystem::remove(file, ignored);
        return std::nullopt;
    };
    // The size of the file that was opened, not of the path: another process may have renamed a
    // new entry (of another size) onto the path since, and the open file is the one read.
    // (std::filesystem::file_size(file) here made such a load reject, and remove, the other
    // process's good entry: tests/concurrency/test_concurrency_disk_cache.cpp.)
    if (!in.seekg(0, std::ios::end)) return reject();
    const std::streamoff end = in.tellg();
    if (end < 0 || !in.seekg(0, std::ios::beg)) return reject();
    const auto size = static_cast<std::uintmax_t>(end);
    Header header{};
    if (size < sizeof header || !in.read(reinterpret_cast<char*>(&header), sizeof header)) return reject();
    if (std::memcmp(header.magic, magic, sizeof magic) != 0 || header.key_bytes != key.size() ||
        header.payload_bytes != size - sizeof header - header.key_bytes || header.key_bytes > size)
        return reject();
    std::string stored_key(header.key_bytes, '\0');
    std::vector<std::byte> payload(header.payload_bytes);
    if (!in.read(stored_key.data(), static_cast<std::streamsize>(stored_key.size())) ||
        !in.read(reinterpret_cast<char*>(payload.data()), static_cast<std::streamsize>(payload.size())))
        return reject();
    if (stored_key != key || checksum(stored_key, payload) != header.checksum) return reject();
    return payload;
}

void DiskCache::store(std::string_view key, std::span<const std::byte> payload) const {
    if (folder_.empty()) return;
    static std::atomic<unsigned> counter{0};
    std::error_code error;
    std::filesystem::create_directories(folder_, error);
    if (error) return;
    const std::filesystem::path file = path(key);
    const std::filesystem::path temporary =
        file.string() + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out) return;
        Header header{};
        std::memcpy(header.magic, magic, sizeof magic);
        header.key_bytes = key.size();
        header.payload_bytes = payload.size();
        header.checksum = checksum(key, payload);
        out.write(reinterpret_cast<const char*>(&header), sizeof header);
        out.write(key.data(), static_cast<std::streamsize>(key.size()));
        out.write(reinterpret_cast<const char*>(payload.data()),
                  static_cast<std::streamsize>(payload.size()));
        out.close();
        if (!out) {
            std::filesystem::remove(temporary, error);
            return;
        }
    }
    std::filesystem::rename(temporary, file, error);
    if (error) std::filesystem::remove(temporary, error);
}

}  // namespace tapevm::gpu::detail
