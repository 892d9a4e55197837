// fuzz_kernel_cache: the GPU kernel cache's entry reader (src/vm_gpu/disk_cache.hpp,
// DiskCache::load), past its checksum. The input is one entry file: a 32-byte header (magic
// "tvcache2", key length, payload length, XXH64 checksum of key and payload; host order),
// the key, the payload.
//
// The target takes the key the entry names (when its length fits the file), recomputes the
// checksum of key and payload into the header as DiskCache::store does (with libxxhash's XXH64
// directly, not the cache's own hash64: the format is checked against xxHash itself), writes the entry
// where the cache looks for that key (a folder of its own under the temporary directory) and
// loads it. Properties checked, each a finding when broken:
//   - load() never throws (the cache's contract: a bad entry is a miss);
//   - it returns the payload exactly when the entry is well formed (magic, key length within
//     the file, payload length = what follows the key), and the payload is what follows the key;
//   - a rejected entry's file is removed.
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>
#include <xxhash.h>

#include "disk_cache.hpp"
#include "fuzz_support.hpp"

namespace {

using tapevm::fuzz::require;
namespace fs = std::filesystem;

constexpr std::size_t header_bytes = 32;
constexpr char magic[8] = {'t', 'v', 'c', 'a', 'c', 'h', 'e', '2'};

std::uint64_t u64_at(const std::vector<std::byte>& bytes, std::size_t offset) {
    std::uint64_t v;
    std::memcpy(&v, bytes.data() + offset, sizeof v);
    return v;
}

// This process's cache folder, removed at exit.
struct Folder {
    Folder() : path(fs::temp_directory_path() / ("tapevm-fuzz-cache-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~Folder() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
    fs::path path;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Folder folder;
    const tapevm::gpu::detail::DiskCache cache(folder.path);

    std::vector<std::byte> entry(tapevm::fuzz::bytes_of(data, size).begin(),
                                 tapevm::fuzz::bytes_of(data, size).end());
    std::string key = "kernel-not-in-this-entry";
    bool well_formed = false;
    std::span<const std::byte> payload;
    if (entry.size() >= header_bytes) {
        const std::uint64_t key_bytes = u64_at(entry, 8);
        if (key_bytes <= entry.size() - header_bytes) {
            key.assign(reinterpret_cast<const char*>(entry.data()) + header_bytes,
                       static_cast<std::size_t>(key_bytes));
            payload =
                std::span<const std::byte>(entry).subspan(header_bytes + static_cast<std::size_t>(key_bytes));
            const std::uint64_t checksum =
                XXH64(payload.data(), payload.size(), XXH64(key.data(), key.size(), 0));
            std::memcpy(entry.data() + 24, &checksum, sizeof checksum);
            well_formed =
                std::memcmp(entry.data(), magic, sizeof magic) == 0 && u64_at(entry, 16) == payload.size();
        }
    }
    const fs::path file = cache.path(key);
    {
        std::FILE* out = std::fopen(file.c_str(), "wb");
        require(out != nullptr, "the fuzz cache folder is writable");
        require(entry.empty() || std::fwrite(entry.data(), 1, entry.size(), out) == entry.size(),
                "entry written");
        std::fclose(out);
    }
    const auto loaded = cache.load(key);
    require(loaded.has_value() == well_formed, "load() accepts exactly the well-formed entries");
    if (loaded) {
        require(loaded->size() == payload.size() &&
                    (payload.empty() || std::memcmp(loaded->data(), payload.data(), payload.size()) == 0),
                "load() returns the payload");
    } else {
        require(!fs::exists(file), "a rejected entry is removed");
    }
    std::error_code ignored;
    fs::remove(file, ignored);
    return 0;
}
