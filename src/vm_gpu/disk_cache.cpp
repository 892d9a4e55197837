#include "disk_cache.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>
#include <xxhash.h>

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

std::uint64_t hash64(std::span<const std::byte> bytes, std::uint64_t seed) {
    // XXH64 reads its input as little-endian words on every host, so names and checksums are the
    // same on every machine (and the same as the hand-written XXH64 this replaced: old entries
    // still load).
    return XXH64(bytes.data(), bytes.size(), seed);
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
