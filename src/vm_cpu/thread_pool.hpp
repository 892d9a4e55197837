// A small pool of worker threads for the CPU VM. A call runs one body on the calling thread
// and on up to `helpers` idle workers at once; the body itself takes blocks from an atomic
// counter, so whoever starts first does most of the work and a call never waits for a worker
// that is busy with another caller's call (several user threads may call run() at once).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tapevm::cpu::detail {

class ThreadPool {
public:
    /// Starts `workers` threads (0: none; every call then runs on its caller alone).
    explicit ThreadPool(unsigned workers);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned workers() const { return static_cast<unsigned>(threads_.size()); }

    /// Runs body(context) on this thread and on up to `helpers` workers concurrently and
    /// returns when every copy that started has returned. Copies no worker picked up by the
    /// time this thread's copy returns are dropped. Rethrows the first exception a copy threw.
    void run(unsigned helpers, void (*body)(void*), void* context);

private:
    struct Job {
        void (*body)(void*);
        void* context;
        unsigned unclaimed;
        unsigned running;
        std::exception_ptr error;
    };

    void work();

    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable job_done_;
    std::deque<Job*> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace tapevm::cpu::detail
