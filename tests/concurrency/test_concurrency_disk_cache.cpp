// The compiled-kernel disk cache (src/vm_gpu/disk_cache.hpp) filled by two processes at once,
// two threads each, storing the same keys with payloads of different sizes and loading every
// key after each store. What the cache promises (docs/THREADS.md): entries are written to a
// temporary file and renamed, so a load sees a whole entry or none; once an entry was stored,
// later loads find one (some process's), never a torn or foreign payload; nothing is left
// behind. The test executable is its own writer: run with --cache-writer FOLDER ID it fills
// FOLDER and exits 0, or 1 naming the first broken promise.
#define DOCTEST_CONFIG_IMPLEMENT
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "concurrency_support.hpp"
#include "disk_cache.hpp"

extern char** environ;

namespace tapevm::test {
namespace {

using gpu::detail::DiskCache;

constexpr unsigned key_count = 8;
constexpr unsigned iterations = repetitions(150, 60);
constexpr unsigned threads_per_process = 2;

std::string key_name(unsigned key) { return "kernel-concurrency-test-" + std::to_string(key); }

// Writer w's payload for `key` in `iteration`: a 16-byte header (key, writer, iteration, size)
// and bytes that are a function of all four, 256 to 8447 bytes long so that the writers'
// entries differ in size.
std::vector<std::byte> make_payload(unsigned key, unsigned writer, unsigned iteration) {
    const std::uint32_t size = 256 + (writer * 7919u + iteration * 104729u + key * 31u) % 8192u;
    std::vector<std::byte> payload(size);
    const std::uint32_t header[4] = {key, writer, iteration, size};
    std::memcpy(payload.data(), header, sizeof header);
    for (std::size_t i = sizeof header; i < size; ++i)
        payload[i] = static_cast<std::byte>((i * 131 + key * 17 + writer * 7 + iteration) & 0xff);
    return payload;
}

// "" when `payload` is one make_payload(key, ...) wrote, else what is wrong with it.
std::string check_payload(unsigned key, const std::vector<std::byte>& payload) {
    std::uint32_t header[4];
    if (payload.size() < sizeof header) return "a payload of " + std::to_string(payload.size()) + " bytes";
    std::memcpy(header, payload.data(), sizeof header);
    if (header[0] != key)
        return "the payload of key " + std::to_string(header[0]) + " under key " + std::to_string(key);
    if (header[3] != payload.size())
        return "a payload of " + std::to_string(payload.size()) + " bytes claiming " +
               std::to_string(header[3]);
    if (payload != make_payload(header[0], header[1], header[2])) return "a payload whose bytes differ";
    return "";
}

// One writer: stores every key each iteration and loads every key after each store.
std::string fill(const std::filesystem::path& folder, unsigned writer) {
    const DiskCache cache(folder);
    std::array<bool, key_count> stored{};
    for (unsigned iteration = 0; iteration < iterations; ++iteration) {
        for (unsigned key = 0; key < key_count; ++key) {
            cache.store(key_name(key), make_payload(key, writer, iteration));
            stored[key] = true;
            for (unsigned probe = 0; probe < key_count; ++probe) {
                const auto loaded = cache.load(key_name(probe));
                const std::string where = "writer " + std::to_string(writer) + ", iteration " +
                                          std::to_string(iteration) + ", key " + std::to_string(probe) + ": ";
                if (!loaded) {
                    if (stored[probe]) return where + "a miss after this writer stored the key";
                    continue;
                }
                if (const std::string wrong = check_payload(probe, *loaded); !wrong.empty())
                    return where + wrong;
            }
        }
    }
    return "";
}

// The writer process: threads_per_process writers at once.
int writer_main(const std::filesystem::path& folder, unsigned process) {
    std::array<std::string, threads_per_process> errors;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < threads_per_process; ++t)
        threads.emplace_back([&, t] { errors[t] = fill(folder, process * threads_per_process + t); });
    for (auto& thread : threads) thread.join();
    int status = 0;
    for (const auto& error : errors) {
        if (error.empty()) continue;
        std::fprintf(stderr, "cache writer process %u: %s\n", process, error.c_str());
        status = 1;
    }
    return status;
}

pid_t spawn_writer(const std::filesystem::path& folder, unsigned process) {
    std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string flag = "--cache-writer", folder_text = folder.string(), id = std::to_string(process);
    char* argv[] = {self.data(), flag.data(), folder_text.data(), id.data(), nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ) == 0);
    return pid;
}

TEST_CASE("two processes filling one disk cache at once: every load after a store finds a whole entry") {
    const auto folder = std::filesystem::temp_directory_path() /
                        ("tapevm-cache-concurrency-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::remove_all(folder);
    const pid_t first = spawn_writer(folder, 0);
    const pid_t second = spawn_writer(folder, 1);
    for (const pid_t pid : {first, second}) {
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        CHECK_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                      "a writer process failed (its message is above), status " << status);
    }
    // Afterwards: every key holds a whole entry of some writer, and only the entries are there.
    const DiskCache cache(folder);
    for (unsigned key = 0; key < key_count; ++key) {
        const auto loaded = cache.load(key_name(key));
        REQUIRE_MESSAGE(loaded.has_value(), "key " << key);
        CHECK_MESSAGE(check_payload(key, *loaded).empty(), check_payload(key, *loaded));
    }
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        ++files;
        CHECK_MESSAGE(entry.path().extension() == ".bin", "left behind: " << entry.path());
    }
    CHECK(files == key_count);
    std::filesystem::remove_all(folder);
}

TEST_CASE("a corrupted or truncated entry is a miss, and the next store replaces it") {
    const auto folder = std::filesystem::temp_directory_path() /
                        ("tapevm-cache-corrupt-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::remove_all(folder);
    const DiskCache cache(folder);
    const auto payload = make_payload(0, 0, 0);
    cache.store(key_name(0), payload);
    REQUIRE(cache.load(key_name(0)).has_value());
    std::filesystem::resize_file(cache.path(key_name(0)), 40);  // a torn write, as a crash leaves it
    CHECK_FALSE(cache.load(key_name(0)).has_value());
    cache.store(key_name(0), payload);
    const auto loaded = cache.load(key_name(0));
    REQUIRE(loaded.has_value());
    CHECK(*loaded == payload);
    std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tapevm::test

int main(int argc, char** argv) {
    if (argc == 4 && std::string(argv[1]) == "--cache-writer")
        return tapevm::test::writer_main(argv[2], static_cast<unsigned>(std::stoul(argv[3])));
    return doctest::Context(argc, argv).run();
}
