// Command-line arguments of one tapevm command: positional arguments and --options.
//
// Each command declares the options it accepts (OptionSpec); parse_arguments() checks the
// arguments against them and throws UsageError for an unknown option, a missing value or an
// option given twice. Values are taken from the next argument ("--out FILE") or after an
// equals sign ("--out=FILE").
//
// Why not CLI11 (issue 23 asked to decide): this parser is 166 lines shared by tapevm and
// tapevm-bench, and each command's help is a hand-written page with examples and the
// measured figures' commands (command_*.cpp), which CLI11's generated help would replace with
// a flat option list; typing the values (count_option, parse_real) stays in the commands
// either way. CLI11 (Debian's libcli11-dev 2.1) would make neither the CLI smaller nor its
// help better, so tapevm keeps this.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"

namespace tapevm::cli {

/// A mistake on the command line (unknown command or option, missing value, bad value).
/// Reported as "error: <message>" with exit status 2, like every tapevm::Error.
class UsageError : public Error {
public:
    using Error::Error;
};

/// One option a command accepts: its name with the dashes ("--out") and whether it takes a
/// value (else it is a flag).
struct OptionSpec {
    std::string_view name;
    bool takes_value = true;
};

/// The arguments of one command after parsing.
class Arguments {
public:
    /// The positional arguments, in order.
    const std::vector<std::string_view>& positional() const { return positional_; }

    /// True when the flag or option `name` was given.
    bool has(std::string_view name) const;

    /// The value of option `name`, or nothing when it was not given.
    std::optional<std::string_view> value(std::string_view name) const;

    /// The value of option `name`; throws UsageError ("<command> needs <name> <what>") when
    /// it was not given.
    std::string_view required(std::string_view name, std::string_view what) const;

    /// Throws UsageError unless there are between `minimum` and `maximum` positional
    /// arguments; `what` describes them in the message ("a tape file").
    void expect_positional(std::size_t minimum, std::size_t maximum, std::string_view what) const;

    /// Writes `help` to `out` and returns true when --help was given (the command then exits 0).
    bool answered_help(std::string_view help, std::ostream& out) const;

private:
    friend Arguments parse_arguments(std::string_view command, std::span<const std::string_view> args,
                                     std::span<const OptionSpec> options);
    std::string command_;
    std::vector<std::string_view> positional_;
    std::map<std::string, std::string, std::less<>> options_;
};

/// Parses `args` (the arguments after the command name) for `command`. An argument starting
/// with "-" (other than "-" alone) is an option. Throws UsageError on any mistake.
Arguments parse_arguments(std::string_view command, std::span<const std::string_view> args,
                          std::span<const OptionSpec> options);

/// Parses a whole number in [minimum, maximum] given for option `name`; throws UsageError.
std::size_t parse_count(std::string_view name, std::string_view text, std::size_t minimum,
                        std::size_t maximum);

/// Parses `how_many` comma-separated whole numbers in [minimum, maximum] ("10,25,1000").
std::vector<std::size_t> parse_counts(std::string_view name, std::string_view text, std::size_t how_many,
                                      std::size_t minimum, std::size_t maximum);

}  // namespace tapevm::cli
