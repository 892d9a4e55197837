#include "worker_pool.hpp"

#include <algorithm>

namespace tapevm::bench {

WorkerPool::WorkerPool(unsigned threads) {
    for (unsigned index = 1; index < std::max(threads, 1u); ++index)
        workers_.emplace_back([this, index] { worker_loop(index); });
}

WorkerPool::~WorkerPool() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::share(unsigned index) {
    const std::size_t chunks = (count_ + granularity_ - 1) / granularity_;
    const std::size_t first = chunks * index / threads() * granularity_;
    const std::size_t last = chunks * (index + 1) / threads() * granularity_;
    const std::size_t end = std::min(last, count_);
    if (first < end) (*work_)(index, first, end);
}

void WorkerPool::worker_loop(unsigned index) {
    unsigned long seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
        }
        share(index);
        {
            const std::lock_guard lock(mutex_);
            --pending_;
        }
        done_.notify_one();
    }
}

void WorkerPool::run(std::size_t count, std::size_t granularity,
                     const std::function<void(std::size_t, std::size_t)>& work) {
    run_indexed(count, granularity,
                [&work](unsigned, std::size_t begin, std::size_t end) { work(begin, end); });
}

void WorkerPool::run_indexed(std::size_t count, std::size_t granularity,
                             const std::function<void(unsigned, std::size_t, std::size_t)>& work) {
    {
        const std::lock_guard lock(mutex_);
        work_ = &work;
        count_ = count;
        granularity_ = std::max<std::size_t>(granularity, 1);
        pending_ = static_cast<unsigned>(workers_.size());
        ++generation_;
    }
    wake_.notify_all();
    share(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
}

}  // namespace tapevm::bench
