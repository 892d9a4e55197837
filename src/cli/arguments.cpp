#include "arguments.hpp"

#include <algorithm>
#include <charconv>

namespace tapevm::cli {

bool Arguments::has(std::string_view name) const { return options_.find(name) != options_.end(); }

std::optional<std::string_view> Arguments::value(std::string_view name) const {
    const auto found = options_.find(name);
    if (found == options_.end()) return std::nullopt;
    return std::string_view(found->second);
}

std::string_view Arguments::required(std::string_view name, std::string_view what) const {
    const auto given = value(name);
    if (!given) {
        throw UsageError(command_ + " needs " + std::string(name) + " " + std::string(what));
    }
    return *given;
}

void Arguments::expect_positional(std::size_t minimum, std::size_t maximum, std::string_view what) const {
    if (positional_.size() < minimum) {
        throw UsageError(command_ + " needs " + std::string(what) + " (see 'tapevm help " + command_ + "')");
    }
    if (positional_.size() > maximum) {
        throw UsageError(command_ + ": unexpected argument '" + std::string(positional_[maximum]) + "'");
    }
}

Arguments parse_arguments(std::string_view command, std::span<const std::string_view> args,
                          std::span<const OptionSpec> options) {
    Arguments result;
    result.command_ = std::string(command);
    for (std::size_t k = 0; k < args.size(); ++k) {
        const std::string_view argument = args[k];
        if (argument.size() < 2 || argument.front() != '-') {
            result.positional_.push_back(argument);
            continue;
        }
        const std::size_t equals = argument.find('=');
        const std::string_view name = argument.substr(0, equals);
        const auto spec = std::find_if(options.begin(), options.end(),
                                       [&](const OptionSpec& option) { return option.name == name; });
        if (spec == options.end()) {
            throw UsageError("unknown option '" + std::string(name) + "' for " + result.command_ +
                             " (see 'tapevm help " + result.command_ + "')");
        }
        if (result.has(name)) throw UsageError("option " + std::string(name) + " given twice");
        std::string value;
        if (!spec->takes_value) {
            if (equals != std::string_view::npos) {
                throw UsageError("option " + std::string(name) + " takes no value");
            }
        } else if (equals != std::string_view::npos) {
            value = std::string(argument.substr(equals + 1));
        } else if (k + 1 < args.size() && !args[k + 1].starts_with("--")) {
            value = std::string(args[++k]);
        } else {
            throw UsageError("option " + std::string(name) + " needs a value");
        }
        if (spec->takes_value && value.empty()) {
            throw UsageError("option " + std::string(name) + " needs a value");
        }
        result.options_.emplace(std::string(name), std::move(value));
    }
    return result;
}

std::size_t parse_count(std::string_view name, std::string_view text, std::size_t minimum,
                        std::size_t maximum) {
    std::size_t count = 0;
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (status != std::errc() || end != text.data() + text.size() || count < minimum || count > maximum) {
        throw UsageError("option " + std::string(name) + ": '" + std::string(text) +
                         "' is not a whole number from " + std::to_string(minimum) + " to " +
                         std::to_string(maximum));
    }
    return count;
}

std::vector<std::size_t> parse_counts(std::string_view name, std::string_view text, std::size_t how_many,
                                      std::size_t minimum, std::size_t maximum) {
    std::vector<std::size_t> counts;
    std::string_view rest = text;
    while (true) {
        const std::size_t comma = rest.find(',');
        counts.push_back(parse_count(name, rest.substr(0, comma), minimum, maximum));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    if (counts.size() != how_many)
        throw UsageError("option " + std::string(name) + ": '" + std::string(text) + "' has " +
                         std::to_string(counts.size()) + " comma-separated numbers, expected " +
                         std::to_string(how_many));
    return counts;
}

bool Arguments::answered_help(std::string_view help, std::ostream& out) const {
    if (!has("--help")) return false;
    out << help;
    return true;
}

}  // namespace tapevm::cli
