// A fixed set of threads that split one range of points between them, for the backends that
// have no threads of their own (the native baselines). The calling thread is one of them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tapevm::bench {

class WorkerPool {
public:
    /// `threads` >= 1 workers in all, the caller included.
    explicit WorkerPool(unsigned threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

    /// Calls work(begin, end) on each thread for its contiguous share of [0, count) (shares
    /// are multiples of `granularity` but the last) and returns when all are done.
    void run(std::size_t count, std::size_t granularity,
             const std::function<void(std::size_t, std::size_t)>& work);
    /// The same with the thread's index (0 = the caller, < threads()) as work's first
    /// argument, for work that keeps a record per thread.
    void run_indexed(std::size_t count, std::size_t granularity,
                     const std::function<void(unsigned, std::size_t, std::size_t)>& work);

private:
    void share(unsigned index);
    void worker_loop(unsigned index);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(unsigned, std::size_t, std::size_t)>* work_ = nullptr;
    std::size_t count_ = 0, granularity_ = 1;
    unsigned long generation_ = 0;
    unsigned pending_ = 0;
    bool stopping_ = false;
};

}  // namespace tapevm::bench
