// Work that a block's sweeps do on the side, a little at each instruction (Background::issue,
// called once per program entry or per instruction): prefetching the next block's inputs and
// results, and writing the previous block's streamed results out of the participant's staging
// buffer with non-temporal stores. Spread over the sweeps, those memory transfers overlap with
// the arithmetic instead of stalling the gather and scatter at the block's ends. Include only
// from kernel.hpp (compiled per instruction set).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "request.hpp"
#include "transpose.hpp"

namespace tapevm::cpu::detail {

/// Prefetches of the next block's inputs and results, `per_issue` cache lines per issue().
class Prefetch {
public:
    void add(const void* begin, std::size_t bytes, bool write) {
        if (bytes == 0 || ranges_ == max_ranges) return;
        const char* p = static_cast<const char*>(begin);
        range_[ranges_++] = {p, p + bytes, write};
        lines_ += (bytes + line - 1) / line;
    }
    /// Spreads the prefetches over `issues` calls of issue().
    void spread_over(std::size_t issues) { per_issue_ = lines_ / std::max<std::size_t>(1, issues) + 1; }
    void issue() {
        for (std::size_t k = 0; k < per_issue_ && current_ < ranges_; ++k) {
            Range& r = range_[current_];
            if (r.write) {
                __builtin_prefetch(r.next, 1, 2);
            } else {
                __builtin_prefetch(r.next, 0, 2);
            }
            r.next += line;
            if (r.next >= r.end) ++current_;
        }
    }

private:
    struct Range {
        const char* next;
        const char* end;
        bool write;
    };
    static constexpr std::size_t line = 64;
    static constexpr std::size_t max_ranges = 4;
    Range range_[max_ranges] = {};
    std::size_t ranges_ = 0;
    std::size_t current_ = 0;
    std::size_t lines_ = 0;
    std::size_t per_issue_ = 0;
};

/// Streamed results (Request::stream_results) of one block on their way from the staging
/// buffer, where the scatter left them in the caller's layout, to the caller's array.
template <class Arch, class Real> struct ResultStream {
    using T = Transpose<Arch, Real>;
    using V = typename T::V;
    static constexpr std::size_t width = T::width;

    static constexpr std::size_t line = 64;
    static_assert(line % (width * sizeof(Real)) == 0);

    /// The reals of destination[0, reals) before its first cache line boundary and after its
    /// last: the part of the first and last lines that are not whole, which begin() writes
    /// with plain stores. Prefetch those lines for writing.
    static std::size_t head(const Real* destination, std::size_t reals) {
        const std::size_t misaligned = reinterpret_cast<std::uintptr_t>(destination) % line;
        return std::min(reals, misaligned == 0 ? 0 : (line - misaligned) / sizeof(Real));
    }
    static std::size_t body_end(const Real* destination, std::size_t reals) {
        const std::size_t first = head(destination, reals);
        constexpr std::size_t per_line = line / sizeof(Real);
        return first + (reals - first) / per_line * per_line;
    }

    /// Starts moving staging[0, reals) to destination[0, reals): the partial cache lines at
    /// either end are written now (plain stores; a line is never written both ways), the
    /// whole lines between them by write() and finish().
    static void begin(PendingResults<Real>& pending, Real* destination, const Real* staging,
                      std::size_t reals) {
        const std::size_t first = head(destination, reals);
        const std::size_t end = body_end(destination, reals);
        for (std::size_t i = 0; i < first; ++i) destination[i] = staging[i];
        for (std::size_t i = end; i < reals; ++i) destination[i] = staging[i];
        pending = {destination, staging, first, end};
    }

    /// Writes at most `vectors` of the pending vectors.
    static void write(PendingResults<Real>& pending, std::size_t vectors) {
        const std::size_t end = std::min(pending.end, pending.next + vectors * width);
        Real* const destination = pending.destination;
        const Real* const staging = pending.staging;
        for (std::size_t i = pending.next; i < end; i += width)
            T::stream(destination + i, V::load_unaligned(staging + i));
        pending.next = end;
    }

    static std::size_t vectors_left(const PendingResults<Real>& pending) {
        return (pending.end - pending.next) / width;
    }

    /// Writes everything pending; with `fence`, orders the non-temporal stores before any
    /// later store (so another thread that synchronises with this one sees the results).
    static void finish(PendingResults<Real>& pending, bool fence) {
        write(pending, vectors_left(pending));
        if (fence) T::fence();
    }
};

/// Everything a block does on the side, one share per issue().
template <class Arch, class Real> class Background {
public:
    /// `issues`: the calls of issue() the block's sweeps make, over which both the
    /// prefetches and the pending results are spread.
    Background(Prefetch prefetch, PendingResults<Real>& pending, std::size_t issues)
        : prefetch_(prefetch), pending_(pending) {
        prefetch_.spread_over(issues);
        const std::size_t vectors = ResultStream<Arch, Real>::vectors_left(pending);
        vectors_per_issue_ = vectors == 0 ? 0 : vectors / std::max<std::size_t>(1, issues) + 1;
    }
    void issue() {
        prefetch_.issue();
        if (vectors_per_issue_ != 0) ResultStream<Arch, Real>::write(pending_, vectors_per_issue_);
    }

private:
    Prefetch prefetch_;
    PendingResults<Real>& pending_;
    std::size_t vectors_per_issue_ = 0;
};

}  // namespace tapevm::cpu::detail
