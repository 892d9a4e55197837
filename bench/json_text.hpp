// JSON text for the bench's records: strings quoted and escaped, numbers at full precision.
#pragma once

#include <string>

namespace tapevm::bench {

/// `text` as a JSON string literal.
std::string json_string(const std::string& text);
/// A finite number with full precision, or null.
std::string json_number(double value);

}  // namespace tapevm::bench
