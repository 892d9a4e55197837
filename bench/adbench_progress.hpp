// Progress of a long `tapevm adbench` run on stderr. On a terminal: a bar redrawn in place
// ("jacobian  [########------------]  2/5"), drawn only once the run has taken a few seconds,
// so short runs print nothing. Elsewhere (a file, a pipe, the tests' string stream): one line
// per phase ("adbench: jacobian: 5 runs"). Updates happen between timed runs, never inside.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace tapevm::bench::adbench {

class Progress {
public:
    /// `terminal`: whether `out` is a terminal (the command passes isatty(2) for std::cerr).
    Progress(std::ostream& out, bool terminal);
    ~Progress();

    /// Starts a phase of `steps` steps (0: no steps, a line of its own).
    void phase(const std::string& name, std::size_t steps);
    /// One step of the current phase is done.
    void step();
    /// Clears the bar (on a terminal).
    void finish();

private:
    void draw();

    std::ostream& out_;
    bool terminal_;
    std::chrono::steady_clock::time_point start_;
    std::string phase_;
    std::size_t steps_ = 0, done_ = 0;
    bool drawn_ = false;
};

}  // namespace tapevm::bench::adbench
