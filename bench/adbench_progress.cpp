#include "adbench_progress.hpp"

#include <algorithm>

namespace tapevm::bench::adbench {
namespace {

// A terminal shows the bar only after this long.
constexpr std::chrono::seconds quiet_for{2};
constexpr std::size_t bar_width = 24;

}  // namespace

Progress::Progress(std::ostream& out, bool terminal)
    : out_(out), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { finish(); }

void Progress::phase(const std::string& name, std::size_t steps) {
    phase_ = name;
    steps_ = steps;
    done_ = 0;
    if (!terminal_) {
        out_ << "adbench: " << name;
        if (steps > 0) out_ << ": " << steps << (steps == 1 ? " run" : " runs");
        out_ << '\n' << std::flush;
        return;
    }
    draw();
}

void Progress::step() {
    done_ = std::min(done_ + 1, steps_);
    if (terminal_) draw();
}

void Progress::finish() {
    if (terminal_ && drawn_) out_ << "\r\033[K" << std::flush;
    drawn_ = false;
}

void Progress::draw() {
    if (std::chrono::steady_clock::now() - start_ < quiet_for) return;
    std::string line = "\r\033[Kadbench: " + phase_;
    if (steps_ > 0) {
        const std::size_t filled = bar_width * done_ / steps_;
        line += "  [" + std::string(filled, '#') + std::string(bar_width - filled, '-') + "]  " +
                std::to_string(done_) + "/" + std::to_string(steps_);
    }
    out_ << line << std::flush;
    drawn_ = true;
}

}  // namespace tapevm::bench::adbench
