// The tape compiler's on-disk cache: blobs (SPIR-V, the driver's pipeline cache) in a folder
// under the user's cache directory, each named by the hash of its key.
//
// Every entry carries a header (magic, format version, key length, payload size, and a 64-bit
// checksum of key and payload) followed by the key and the payload. A load that finds the
// file missing, truncated, corrupted or holding another key is a miss (and the bad file is
// removed): nothing read from disk is trusted before it checks out. Stores write a temporary
// file and rename it, so concurrent processes never read half an entry. I/O errors never
// throw: the cache is an optimisation (a failed store is dropped, a failed load is a miss).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tapevm::gpu::detail {

/// TAPEVM_CACHE_DIR when set (empty: no disk cache), else $XDG_CACHE_HOME/tapevm, else
/// $HOME/.cache/tapevm; an empty path when none of them is set.
std::filesystem::path default_cache_folder();

/// XXH64 of `bytes` with `seed`, computed by libxxhash (0: xxHash's own XXH64 values; chain
/// hashes through the seed). Entry names and checksums are XXH64 values: the on-disk format.
std::uint64_t hash64(std::span<const std::byte> bytes, std::uint64_t seed = 0);

class DiskCache {
public:
    /// `folder` is created on the first store; an empty path disables the cache.
    explicit DiskCache(std::filesystem::path folder);

    std::optional<std::vector<std::byte>> load(std::string_view key) const;
    void store(std::string_view key, std::span<const std::byte> payload) const;
    /// The file an entry of `key` lives in (for tests).
    std::filesystem::path path(std::string_view key) const;
    const std::filesystem::path& folder() const { return folder_; }

private:
    std::filesystem::path folder_;
};

}  // namespace tapevm::gpu::detail
