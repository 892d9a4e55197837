// Training logs: the JSON-lines format (written, read back, what Python's json module reads),
// and the progress display in terminal and plain modes.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>
#include <unistd.h>

#include "tapevm/nn/log.hpp"

using namespace tapevm::nn;

namespace {

std::filesystem::path temporary_path(const std::string& name) {
    return std::filesystem::temp_directory_path() /
           ("tapevm_test_" + std::to_string(::getpid()) + "_" + name);
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// What `write` puts on a FILE, through a temporary file.
template <class Write> std::string captured(Write write) {
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    write(file);
    std::fflush(file);
    std::rewind(file);
    std::string text;
    for (int c; (c = std::fgetc(file)) != EOF;) text += char(c);
    std::fclose(file);
    return text;
}

}  // namespace

TEST_CASE("a log record is one JSON object with the measured fields") {
    CHECK(format_log_record({.step = 3, .loss = 2.5, .lr = 0.001, .tokens_per_s = 1000.0, .elapsed = 1.25}) ==
          R"({"step":3,"loss":2.5,"lr":0.001,"tokens_per_s":1000.0,"elapsed":1.25})");
    CHECK(format_log_record({.step = 100, .val_loss = 1.75, .elapsed = 60.0}) ==
          R"({"step":100,"val_loss":1.75,"elapsed":60.0})");
    // JSON has no NaN: a diverged loss is null, and reads back as NaN.
    const std::string line = format_log_record({.step = 7, .loss = std::nan(""), .elapsed = 2.0});
    CHECK(line == R"({"step":7,"loss":null,"elapsed":2.0})");
    CHECK(std::isnan(*parse_log_record(line).loss));

    const LogRecord record{
        .step = 12, .loss = 3.0625, .val_loss = 3.125, .lr = 6e-4, .tokens_per_s = 4.5e5, .elapsed = 9.5};
    CHECK(parse_log_record(format_log_record(record)) == record);
    CHECK_THROWS_AS(parse_log_record("[1]"), LogError);
    CHECK_THROWS_AS(parse_log_record(R"({"loss":1})"), LogError);
    CHECK_THROWS_AS(parse_log_record(R"({"step":1,"loss":"low"})"), LogError);
}

TEST_CASE("JsonLinesLog writes one line per record, appends on resume, and reads back") {
    const std::filesystem::path path = temporary_path("run.jsonl");
    {
        JsonLinesLog log(path);
        log.write({.step = 1, .loss = 4.0, .elapsed = 0.5});
        log.write({.step = 2, .loss = 3.5, .elapsed = 1.0});
        // Flushed at once: the file holds both lines while the log is open.
        CHECK(read_text(path) ==
              "{\"step\":1,\"loss\":4.0,\"elapsed\":0.5}\n{\"step\":2,\"loss\":3.5,\"elapsed\":1.0}\n");
    }
    {
        JsonLinesLog log(path, true);
        log.write({.step = 3, .val_loss = 3.25, .elapsed = 1.5});
    }
    const std::vector<LogRecord> records = read_log(path);
    REQUIRE(records.size() == 3);
    CHECK(records[2] == LogRecord{.step = 3, .val_loss = 3.25, .elapsed = 1.5});
    { JsonLinesLog fresh(path); }
    CHECK(read_log(path).empty());
    {
        std::ofstream out(path);
        out << "{\"step\":1}\n\n{\"step\":oops}\n";
    }
    CHECK_THROWS_WITH_AS(read_log(path), doctest::Contains("line 3"), LogError);
    std::filesystem::remove(path);
    CHECK_THROWS_AS(JsonLinesLog("/nonexistent/dir/run.jsonl"), LogError);
}

TEST_CASE("durations, rates and progress lines") {
    CHECK(format_duration(0.4) == "0s");
    CHECK(format_duration(45) == "45s");
    CHECK(format_duration(192) == "3m12s");
    CHECK(format_duration(7500) == "2h05m");
    CHECK(format_duration(-1) == "?");
    CHECK(format_rate(950) == "950");
    CHECK(format_rate(412345) == "412.3k");
    CHECK(format_rate(1.2e6) == "1.20M");

    const ProgressLine line{
        .step = 50, .total_steps = 200, .loss = 2.34567, .val_loss = 2.5, .tokens_per_s = 412345, .eta = 192};
    CHECK(format_progress(line, true) ==
          "step 50/200 [#####...............] loss 2.3457 | val 2.5000 | 412.3k tok/s | ETA 3m12s");
    CHECK(format_progress(line, false) == "step 50/200 loss 2.3457 | val 2.5000 | 412.3k tok/s | ETA 3m12s");
    CHECK(format_progress({.step = 3}, true) == "step 3");
}

TEST_CASE("ProgressBar: one redrawn line on a terminal, plain lines otherwise, ETA from the step rate") {
    const std::string terminal = captured([](std::FILE* out) {
        ProgressBar bar(100, out, ProgressMode::terminal);
        CHECK(bar.terminal());
        bar.update({.step = 10, .loss = 3.0, .elapsed = 1.0});
        bar.update({.step = 20, .loss = 2.5, .val_loss = 2.75, .elapsed = 2.0});
        bar.update({.step = 30, .loss = 2.0, .elapsed = 3.0});
        bar.finish();
    });
    CHECK(terminal ==
          "\rstep 10/100 [##..................] loss 3.0000\x1b[K"
          "\rstep 20/100 [####................] loss 2.5000 | val 2.7500 | ETA 8s\x1b[K"
          "\rstep 30/100 [######..............] loss 2.0000 | val 2.7500 | ETA 7s\x1b[K\n");

    const std::string plain = captured([](std::FILE* out) {
        ProgressBar bar(100, out, ProgressMode::automatic);  // a file is not a terminal
        CHECK_FALSE(bar.terminal());
        bar.update({.step = 10, .loss = 3.0, .tokens_per_s = 2000, .elapsed = 1.0});
        bar.update({.step = 20, .loss = 2.5, .tokens_per_s = 2000, .elapsed = 3.0});
        bar.finish();
    });
    CHECK(plain ==
          "step 10/100 loss 3.0000 | 2.0k tok/s\n"
          "step 20/100 loss 2.5000 | 2.0k tok/s | ETA 16s\n");
}
