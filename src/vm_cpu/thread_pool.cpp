#include "thread_pool.hpp"

#include <algorithm>

namespace tapevm::cpu::detail {

ThreadPool::ThreadPool(unsigned workers) {
    threads_.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
}

void ThreadPool::run(unsigned helpers, void (*body)(void*), void* context) {
    helpers = std::min(helpers, workers());
    if (helpers == 0) {
        body(context);
        return;
    }
    Job job{body, context, helpers, 0, nullptr};
    {
        const std::lock_guard lock(mutex_);
        queue_.push_back(&job);
    }
    if (helpers == 1) {
        work_ready_.notify_one();
    } else {
        work_ready_.notify_all();
    }
    std::exception_ptr own_error;
    try {
        body(context);
    } catch (...) {
        own_error = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    if (job.unclaimed > 0) {
        job.unclaimed = 0;
        queue_.erase(std::find(queue_.begin(), queue_.end(), &job));
    }
    job_done_.wait(lock, [&] { return job.running == 0; });
    if (own_error) std::rethrow_exception(own_error);
    if (job.error) std::rethrow_exception(job.error);
}

void ThreadPool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        Job* job = queue_.front();
        if (--job->unclaimed == 0) queue_.pop_front();
        ++job->running;
        lock.unlock();
        std::exception_ptr error;
        try {
            job->body(job->context);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !job->error) job->error = error;
        if (--job->running == 0) job_done_.notify_all();
    }
}

}  // namespace tapevm::cpu::detail
