#include "compile_pool.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tuning.hpp"

namespace tapevm::gpu::detail {

namespace {

class CompilePool {
public:
    explicit CompilePool(unsigned threads) : limit_(threads) {}
    ~CompilePool() {
        {
            const std::lock_guard lock(mutex_);
            stopping_ = true;
            unfinished_ -= jobs_.size();
            jobs_.clear();  // not started: their builds stay queued (a waiter builds them itself)
        }
        wake_.notify_all();
        for (std::thread& thread : threads_) thread.join();
    }
    CompilePool(const CompilePool&) = delete;
    CompilePool& operator=(const CompilePool&) = delete;

    void submit(std::function<void()> job) {
        std::unique_lock lock(mutex_);
        jobs_.push_back(std::move(job));
        ++unfinished_;
        if (idle_ == 0 && threads_.size() < limit_) {
            try {
                threads_.emplace_back([this] { work(); });
            } catch (...) {
                if (threads_.empty()) {
                    jobs_.pop_back();
                    --unfinished_;
                    throw;
                }
            }
        }
        lock.unlock();
        wake_.notify_one();
    }

    void wait_idle() {
        std::unique_lock lock(mutex_);
        idle_changed_.wait(lock, [this] { return unfinished_ == 0; });
    }

private:
    void work() {
        std::unique_lock lock(mutex_);
        for (;;) {
            ++idle_;
            wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            --idle_;
            if (stopping_) return;
            std::function<void()> job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            job = nullptr;  // what it owns is released outside the lock
            lock.lock();
            if (--unfinished_ == 0) idle_changed_.notify_all();
        }
    }

    const unsigned limit_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_changed_;
    std::size_t unfinished_ = 0;  // jobs queued or running
    std::deque<std::function<void()>> jobs_;
    std::vector<std::thread> threads_;
    unsigned idle_ = 0;
    bool stopping_ = false;
};

CompilePool& pool() {
    // What jobs use is made before the pool (the callers make the device and the compiler's
    // memory cache first), so that it is destroyed after the pool has joined its threads at
    // exit: statics are destroyed in the reverse order of their construction.
    (void)tuning();
    static CompilePool instance(compile_pool_threads());
    return instance;
}

}  // namespace

unsigned compile_pool_threads() {
    if (const char* text = std::getenv("TAPEVM_GPU_COMPILE_THREADS"); text != nullptr && *text != '\0') {
        char* end = nullptr;
        const long value = std::strtol(text, &end, 10);
        if (end != nullptr && *end == '\0' && value >= 1 && value <= 64) return static_cast<unsigned>(value);
    }
    return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
}

void submit_compile_job(std::function<void()> job) { pool().submit(std::move(job)); }

void wait_for_compile_pool_idle() { pool().wait_idle(); }

}  // namespace tapevm::gpu::detail
