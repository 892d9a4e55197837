// Training logs: a JSON-lines file (one object per training step or evaluation, the input of
// bench/plot_loss.py) and a progress display on stdout.
//
//   nn::JsonLinesLog log("run.jsonl");
//   nn::ProgressBar progress(5000);
//   nn::LogRecord record{.step = step, .loss = loss, .lr = lr, .tokens_per_s = rate, .elapsed = seconds};
//   log.write(record);
//   progress.update(record);
//   ...
//   progress.finish();
//
// A line of the log: {"step":120,"loss":2.3456,"val_loss":2.41,"lr":0.001,"tokens_per_s":412000.5,
// "elapsed":31.2}; fields that were not measured are left out, and a loss that is not finite
// is written as null (JSON has no NaN).
//
// Threads: each object is used by one thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"

namespace tapevm::nn {

/// A log that cannot be written or read back. The message names the file and the line.
class LogError : public Error {
public:
    using Error::Error;
};

struct LogRecord {
    std::uint64_t step = 0;
    /// The training loss of this step, the validation loss when this step evaluated.
    std::optional<double> loss = std::nullopt;
    std::optional<double> val_loss = std::nullopt;
    /// The learning rate used by this step.
    std::optional<double> lr = std::nullopt;
    std::optional<double> tokens_per_s = std::nullopt;
    /// Seconds since training started.
    double elapsed = 0;
    friend bool operator==(const LogRecord&, const LogRecord&) = default;
};

/// One JSON object, no newline (the format at the top).
std::string format_log_record(const LogRecord& record);
/// The inverse: LogError for a line that is not such an object ("null" fields read back as NaN).
LogRecord parse_log_record(std::string_view line);

/// Appends records to a JSON-lines file, one line each, flushed at once (a crashed run keeps
/// every line it wrote). LogError when the file cannot be opened or written.
class JsonLinesLog {
public:
    /// `append`: keep the file's lines (a resumed run); otherwise start it empty.
    explicit JsonLinesLog(const std::filesystem::path& path, bool append = false);
    ~JsonLinesLog();
    JsonLinesLog(const JsonLinesLog&) = delete;
    JsonLinesLog& operator=(const JsonLinesLog&) = delete;

    void write(const LogRecord& record);
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
    std::FILE* file_ = nullptr;
};

/// Every record of a JSON-lines log (blank lines skipped). LogError naming the line otherwise.
std::vector<LogRecord> read_log(const std::filesystem::path& path);

enum class ProgressMode {
    /// A terminal line redrawn in place when the output is a terminal (isatty), else plain.
    automatic,
    terminal,
    /// One line per update.
    plain,
};

/// "45s", "3m12s", "2h05m".
std::string format_duration(double seconds);
/// "412.3k", "1.20M", "950".
std::string format_rate(double per_second);

/// What the progress display shows of one update.
struct ProgressLine {
    std::uint64_t step = 0;
    std::uint64_t total_steps = 0;
    std::optional<double> loss = std::nullopt;
    /// The latest validation loss seen, if any.
    std::optional<double> val_loss = std::nullopt;
    std::optional<double> tokens_per_s = std::nullopt;
    /// Seconds left, when known.
    std::optional<double> eta = std::nullopt;
};
/// The text of one update: "step 120/5000 [###.......] loss 2.3456 | val 2.4100 | 412.3k tok/s |
/// ETA 3m12s" with a bar when `bar` (terminal mode), without it otherwise.
std::string format_progress(const ProgressLine& line, bool bar);

/// Shows training progress on `out` (stdout by default): in terminal mode one line redrawn in
/// place (carriage return, clear to the end of the line), in plain mode one line per update.
/// The ETA comes from the rate of steps since the first update.
class ProgressBar {
public:
    explicit ProgressBar(std::uint64_t total_steps, std::FILE* out = stdout,
                         ProgressMode mode = ProgressMode::automatic);
    void update(const LogRecord& record);
    /// Ends the redrawn line with a newline (terminal mode); updates after it start a new one.
    void finish();
    bool terminal() const { return terminal_; }

private:
    std::uint64_t total_steps_;
    std::FILE* out_;
    bool terminal_;
    bool line_open_ = false;
    std::optional<double> val_loss_ = std::nullopt;
    std::optional<std::pair<std::uint64_t, double>> first_;  // (step, elapsed) of the first update
};

}  // namespace tapevm::nn
