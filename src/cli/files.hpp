// Reading the files a command names, with errors that name the file and the reason.
#pragma once

#include <string>
#include <string_view>

#include "tapevm/tape.hpp"

namespace tapevm::cli {

/// The whole contents of the file at `path`. Throws tapevm::Error ("cannot read 'PATH': why")
/// when it does not exist, is a directory or cannot be read.
std::string read_whole_file(std::string_view path);

/// The tape stored in the .tape file at `path`. Throws tapevm::Error for an unreadable file
/// and for a malformed one (the FormatError message, prefixed with the path).
Tape read_tape_file(std::string_view path);

}  // namespace tapevm::cli
