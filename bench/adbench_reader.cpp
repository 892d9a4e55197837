#include "adbench_reader.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "tapevm/error.hpp"

namespace tapevm::bench::adbench {
namespace {

// The whitespace-separated words of the text, each with its line (1-based).
class Words {
public:
    explicit Words(std::string_view text) : text_(text) {}

    /// The next word, or an empty view at the end of the text.
    std::string_view next() {
        skip_space();
        const std::size_t start = at_;
        while (at_ < text_.size() && !is_space(text_[at_])) ++at_;
        word_line_ = line_;
        return text_.substr(start, at_ - start);
    }
    /// The line of the word next() returned last (or where the text ended).
    std::size_t line() const { return word_line_; }

private:
    static bool is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    }
    void skip_space() {
        while (at_ < text_.size() && is_space(text_[at_])) {
            if (text_[at_] == '\n') ++line_;
            ++at_;
        }
    }

    std::string_view text_;
    std::size_t at_ = 0, line_ = 1, word_line_ = 1;
};

// A word as it appears in a message: quoted, at most 24 characters, non-printable bytes as '?'.
std::string shown(std::string_view word) {
    std::string text(word.substr(0, 24));
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return "'" + text + (word.size() > 24 ? "...'" : "'");
}

class Parser {
public:
    Parser(std::string_view text, const std::string& name) : words_(text), name_(name) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(name_ + ": line " + std::to_string(words_.line()) + ": " + field + ": " + what);
    }

    std::string_view word(const std::string& field) {
        const std::string_view w = words_.next();
        if (w.empty()) fail(field, "missing (the file ends before it)");
        return w;
    }

    std::size_t count(const std::string& field) {
        const std::string_view w = word(field);
        std::uint64_t value = 0;
        const auto [end, error] = std::from_chars(w.data(), w.data() + w.size(), value);
        if (error == std::errc::result_out_of_range ||
            (error == std::errc{} && end == w.data() + w.size() && value > max_observations))
            fail(field, "count " + shown(w) + " exceeds the limit of " + std::to_string(max_observations));
        if (error != std::errc{} || end != w.data() + w.size())
            fail(field, "expected a whole number, found " + shown(w));
        if (value == 0) fail(field, "must be at least 1");
        return static_cast<std::size_t>(value);
    }

    double number(const std::string& field) {
        const std::string_view w = word(field);
        double value = 0;
        const auto [end, error] = std::from_chars(w.data(), w.data() + w.size(), value);
        if (error == std::errc::result_out_of_range) fail(field, shown(w) + " is out of range for double");
        if (error != std::errc{} || end != w.data() + w.size())
            fail(field, "expected a number, found " + shown(w));
        if (!std::isfinite(value)) fail(field, "must be finite, found " + shown(w));
        return value;
    }

    void expect_end() {
        const std::string_view w = words_.next();
        if (!w.empty()) fail("end of file", "unexpected " + shown(w) + " after the feature");
    }

private:
    Words words_;
    const std::string& name_;
};

std::string indexed(const char* name, std::size_t index) {
    return std::string(name) + "[" + std::to_string(index) + "]";
}

}  // namespace

BaFile parse_ba_file(std::string_view text, const std::string& name) {
    Parser parser(text, name);
    BaFile file;
    file.cameras = parser.count("n (cameras)");
    file.points = parser.count("m (points)");
    file.observations = parser.count("p (observations)");
    if (file.cameras > file.observations)
        parser.fail("n (cameras)", std::to_string(file.cameras) + " cameras but only " +
                                       std::to_string(file.observations) +
                                       " observations (each camera needs one)");
    if (file.points > file.observations)
        parser.fail("m (points)", std::to_string(file.points) + " points but only " +
                                      std::to_string(file.observations) +
                                      " observations (each point needs one)");
    for (std::size_t i = 0; i < camera_size; ++i) file.camera[i] = parser.number(indexed("camera", i));
    for (std::size_t i = 0; i < point_size; ++i) file.point[i] = parser.number(indexed("point", i));
    file.weight = parser.number("weight");
    for (std::size_t i = 0; i < 2; ++i) file.feature[i] = parser.number(indexed("feature", i));
    parser.expect_end();
    return file;
}

BaFile read_ba_file(const std::string& path) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) throw Error(path + ": cannot read: is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read: no such file or no permission");
    std::string text(max_file_bytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    if (in.bad()) throw Error(path + ": cannot read: I/O error");
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_file_bytes)
        throw Error(path + ": larger than " + std::to_string(max_file_bytes) +
                    " bytes: not an ADBench BA instance (those hold 20 numbers)");
    return parse_ba_file(text, path);
}

BaProblem replicate(const BaFile& file) {
    BaProblem problem;
    problem.cameras = file.cameras;
    problem.points = file.points;
    problem.observations = file.observations;
    problem.camera_values.resize(file.cameras * camera_size);
    for (std::size_t c = 0; c < file.cameras; ++c)
        for (std::size_t i = 0; i < camera_size; ++i)
            problem.camera_values[c * camera_size + i] = file.camera[i];
    problem.point_values.resize(file.points * point_size);
    for (std::size_t j = 0; j < file.points; ++j)
        for (std::size_t i = 0; i < point_size; ++i) problem.point_values[j * point_size + i] = file.point[i];
    problem.weights.assign(file.observations, file.weight);
    problem.features.resize(file.observations * 2);
    problem.observation_camera.resize(file.observations);
    problem.observation_point.resize(file.observations);
    for (std::size_t k = 0; k < file.observations; ++k) {
        problem.features[2 * k] = file.feature[0];
        problem.features[2 * k + 1] = file.feature[1];
        problem.observation_camera[k] = static_cast<std::int32_t>(k % file.cameras);
        problem.observation_point[k] = static_cast<std::int32_t>(k % file.points);
    }
    return problem;
}

void validate(const BaProblem& problem) {
    const auto fail = [](const std::string& what) { throw Error("BA problem: " + what); };
    const std::size_t p = problem.observations;
    if (p == 0 || p > max_observations)
        fail("observations must be in [1, " + std::to_string(max_observations) + "]");
    if (problem.cameras == 0 || problem.cameras > p) fail("cameras must be in [1, observations]");
    if (problem.points == 0 || problem.points > p) fail("points must be in [1, observations]");
    const auto size = [&](const char* name, std::size_t given, std::size_t expected) {
        if (given != expected)
            fail(std::string(name) + " has " + std::to_string(given) + " values, expected " +
                 std::to_string(expected));
    };
    size("camera_values", problem.camera_values.size(), problem.cameras * camera_size);
    size("point_values", problem.point_values.size(), problem.points * point_size);
    size("weights", problem.weights.size(), p);
    size("features", problem.features.size(), 2 * p);
    size("observation_camera", problem.observation_camera.size(), p);
    size("observation_point", problem.observation_point.size(), p);
    for (std::size_t k = 0; k < p; ++k) {
        const std::int32_t c = problem.observation_camera[k], j = problem.observation_point[k];
        if (c < 0 || static_cast<std::size_t>(c) >= problem.cameras || j < 0 ||
            static_cast<std::size_t>(j) >= problem.points)
            fail("observation " + std::to_string(k) + " sees camera " + std::to_string(c) + " and point " +
                 std::to_string(j) + ", out of range");
    }
}

}  // namespace tapevm::bench::adbench
