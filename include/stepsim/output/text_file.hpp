#pragma once
/// Text outputs (--json, -J, --trace, CSV tables) written through one helper that checks every
/// write and the close, so a full disk or a closed device is one message, never a 0-byte file
/// taken for a result.

#include <string>

#include "stepsim/core/result.hpp"

namespace stepsim::output {

/// Writes `text` to `path` (truncating it). The error names `option` and the path and says why
/// (e.g. "No space left on device").
Result<bool> write_text_file(const std::string& option, const std::string& path,
                             const std::string& text);

}  // namespace stepsim::output
