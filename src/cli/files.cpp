#include "files.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <system_error>

#include "tapevm/error.hpp"
#include "tapevm/tape_file.hpp"

namespace tapevm::cli {

std::string read_whole_file(std::string_view path) {
    const std::string name(path);
    const auto fail = [&](const std::string& why) { return Error("cannot read '" + name + "': " + why); };
    std::error_code status_error;
    const auto status = std::filesystem::status(name, status_error);
    if (status.type() == std::filesystem::file_type::not_found) throw fail("no such file");
    if (status.type() == std::filesystem::file_type::directory) throw fail("it is a directory");
    errno = 0;
    std::ifstream in(name, std::ios::binary);
    if (!in) throw fail(errno != 0 ? std::strerror(errno) : "cannot open it");
    std::ostringstream contents;
    contents << in.rdbuf();
    if (in.bad()) throw fail("read failed");
    return std::move(contents).str();
}

Tape read_tape_file(std::string_view path) {
    const std::string bytes = read_whole_file(path);
    try {
        return from_bytes(std::as_bytes(std::span<const char>(bytes)));
    } catch (const Error& error) {
        throw Error(std::string(path) + ": " + error.what());
    }
}

}  // namespace tapevm::cli
