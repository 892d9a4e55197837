// Helpers of the concurrency suites (docs/THREADS.md): run a body on 8 threads released at the
// same moment, and compare results bit for bit.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <exception>
#include <functional>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#if defined(__SANITIZE_THREAD__)
#define TAPEVM_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TAPEVM_TEST_TSAN 1
#endif
#endif

namespace tapevm::test {

inline constexpr unsigned concurrent_threads = 8;

/// Under ThreadSanitizer (built at -O0 to keep dev.sh's tsan step short, and 5-15x slower
/// besides) the suites repeat less: TSan needs the concurrent calls, not many of them.
#ifdef TAPEVM_TEST_TSAN
inline constexpr bool under_thread_sanitizer = true;
#else
inline constexpr bool under_thread_sanitizer = false;
#endif
/// `normal` repetitions, or `sanitized` under ThreadSanitizer.
inline constexpr unsigned repetitions(unsigned normal, unsigned sanitized) {
    return under_thread_sanitizer ? sanitized : normal;
}

/// Runs body(thread) on `threads` threads that start together (a latch) and joins them.
/// Returns the first exception's message per thread ("" where none was thrown): doctest's
/// assertions are not thread-safe, so bodies report through their return values and the
/// caller checks on this thread.
inline std::vector<std::string> run_concurrently(const std::function<void(unsigned)>& body,
                                                 unsigned threads = concurrent_threads) {
    std::latch start(threads);
    std::vector<std::string> errors(threads);
    std::vector<std::thread> workers;
    workers.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            start.arrive_and_wait();
            try {
                body(t);
            } catch (const std::exception& error) {
                errors[t] = error.what();
            } catch (...) {
                errors[t] = "an exception that is not a std::exception";
            }
        });
    }
    for (auto& worker : workers) worker.join();
    return errors;
}

/// Checks that no thread of run_concurrently threw.
inline void check_no_errors(const std::vector<std::string>& errors) {
    for (std::size_t t = 0; t < errors.size(); ++t)
        CHECK_MESSAGE(errors[t].empty(), "thread " << t << ": " << errors[t]);
}

/// True when a and b hold the same bytes (NaNs and signed zeros included).
template <class T> bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Counts mismatches found on worker threads, with the first one's description.
class Mismatches {
public:
    void add(const std::string& what) {
        if (count_.fetch_add(1) == 0) {
            const std::lock_guard lock(mutex_);
            first_ = what;
        }
    }
    std::size_t count() const { return count_.load(); }
    std::string first() const {
        const std::lock_guard lock(mutex_);
        return first_;
    }

private:
    std::atomic<std::size_t> count_{0};
    mutable std::mutex mutex_;
    std::string first_;
};

}  // namespace tapevm::test
