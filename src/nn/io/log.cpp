// Training logs (log.hpp): JSON-lines records and the progress display.
#include "tapevm/nn/log.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>
#include <unistd.h>

namespace tapevm::nn {

namespace {

void put(nlohmann::ordered_json& json, const char* field, const std::optional<double>& value) {
    if (!value) return;
    if (std::isfinite(*value))
        json[field] = *value;
    else
        json[field] = nullptr;
}

std::optional<double> get(const nlohmann::json& json, const char* field, std::string_view line) {
    const auto found = json.find(field);
    if (found == json.end()) return std::nullopt;
    if (found->is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!found->is_number())
        throw LogError("log line: '" + std::string(field) +
                       "' is not a number: " + std::string(line.substr(0, 200)));
    return found->get<double>();
}

}  // namespace

std::string format_log_record(const LogRecord& record) {
    nlohmann::ordered_json json = nlohmann::ordered_json::object();
    json["step"] = record.step;
    put(json, "loss", record.loss);
    put(json, "val_loss", record.val_loss);
    put(json, "lr", record.lr);
    put(json, "tokens_per_s", record.tokens_per_s);
    json["elapsed"] = std::isfinite(record.elapsed) ? record.elapsed : 0.0;
    return json.dump();
}

LogRecord parse_log_record(std::string_view line) {
    const nlohmann::json json = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object())
        throw LogError("log line is not a JSON object: " + std::string(line.substr(0, 200)));
    const auto step = json.find("step");
    if (step == json.end() || !step->is_number_unsigned())
        throw LogError("log line lacks a non-negative integer 'step': " + std::string(line.substr(0, 200)));
    LogRecord record;
    record.step = step->get<std::uint64_t>();
    record.loss = get(json, "loss", line);
    record.val_loss = get(json, "val_loss", line);
    record.lr = get(json, "lr", line);
    record.tokens_per_s = get(json, "tokens_per_s", line);
    record.elapsed = get(json, "elapsed", line).value_or(0.0);
    return record;
}

JsonLinesLog::JsonLinesLog(const std::filesystem::path& path, bool append) : path_(path) {
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (file_ == nullptr) throw LogError("log " + path.string() + ": cannot open: " + std::strerror(errno));
}

JsonLinesLog::~JsonLinesLog() {
    if (file_ != nullptr) std::fclose(file_);
}

void JsonLinesLog::write(const LogRecord& record) {
    const std::string line = format_log_record(record) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
        throw LogError("log " + path_.string() + ": write failed: " + std::strerror(errno));
}

std::vector<LogRecord> read_log(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw LogError("log " + path.string() + ": cannot open: " + std::strerror(errno));
    std::vector<LogRecord> records;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            records.push_back(parse_log_record(line));
        } catch (const LogError& error) {
            throw LogError("log " + path.string() + ": line " + std::to_string(number) + ": " + error.what());
        }
    }
    return records;
}

// ---- progress ---------------------------------------------------------------------------------

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const auto total = static_cast<std::uint64_t>(std::llround(seconds));
    char text[32];
    if (total < 60)
        std::snprintf(text, sizeof text, "%us", unsigned(total));
    else if (total < 3600)
        std::snprintf(text, sizeof text, "%um%02us", unsigned(total / 60), unsigned(total % 60));
    else
        std::snprintf(text, sizeof text, "%luh%02um", static_cast<unsigned long>(total / 3600),
                      unsigned(total % 3600 / 60));
    return text;
}

std::string format_rate(double per_second) {
    char text[32];
    if (!std::isfinite(per_second)) return "?";
    if (per_second >= 1e6)
        std::snprintf(text, sizeof text, "%.2fM", per_second / 1e6);
    else if (per_second >= 1e3)
        std::snprintf(text, sizeof text, "%.1fk", per_second / 1e3);
    else
        std::snprintf(text, sizeof text, "%.0f", per_second);
    return text;
}

std::string format_progress(const ProgressLine& line, bool bar) {
    // Appended piece by piece: g++ 12 at -O3 reports a false -Wrestrict for "literal" + string&&.
    std::string text = "step ";
    text += std::to_string(line.step);
    if (line.total_steps > 0) {
        text += '/';
        text += std::to_string(line.total_steps);
    }
    if (bar && line.total_steps > 0) {
        constexpr std::size_t width = 20;
        const std::size_t filled =
            std::size_t(std::min<std::uint64_t>(line.step, line.total_steps) * width / line.total_steps);
        text += " [" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
    }
    char number[64];
    auto loss_text = [&](double value) {
        std::snprintf(number, sizeof number, "%.4f", value);
        return std::string(number);
    };
    if (line.loss) text += " loss " + loss_text(*line.loss);
    if (line.val_loss) text += " | val " + loss_text(*line.val_loss);
    if (line.tokens_per_s) text += " | " + format_rate(*line.tokens_per_s) + " tok/s";
    if (line.eta) text += " | ETA " + format_duration(*line.eta);
    return text;
}

ProgressBar::ProgressBar(std::uint64_t total_steps, std::FILE* out, ProgressMode mode)
    : total_steps_(total_steps), out_(out),
      terminal_(mode == ProgressMode::terminal ||
                (mode == ProgressMode::automatic && out != nullptr && ::isatty(::fileno(out)) != 0)) {}

void ProgressBar::update(const LogRecord& record) {
    if (record.val_loss) val_loss_ = record.val_loss;
    if (!first_) first_ = std::pair(record.step, record.elapsed);
    ProgressLine line{record.step, total_steps_, record.loss, val_loss_, record.tokens_per_s, std::nullopt};
    const auto [first_step, first_elapsed] = *first_;
    if (record.step > first_step && record.elapsed > first_elapsed && total_steps_ >= record.step)
        line.eta = (record.elapsed - first_elapsed) / double(record.step - first_step) *
                   double(total_steps_ - record.step);
    const std::string text = format_progress(line, terminal_);
    if (out_ == nullptr) return;
    if (terminal_) {
        std::fprintf(out_, "\r%s\x1b[K", text.c_str());
        line_open_ = true;
    } else {
        std::fprintf(out_, "%s\n", text.c_str());
    }
    std::fflush(out_);
}

void ProgressBar::finish() {
    if (out_ != nullptr && terminal_ && line_open_) {
        std::fputc('\n', out_);
        std::fflush(out_);
    }
    line_open_ = false;
}

}  // namespace tapevm::nn
