#pragma once
/// Reading input files (scenarios, topologies, NIC configs) and parsing them as one YAML
/// document, with the checks yaml-cpp leaves out: a path that is a directory or not a regular
/// file, a file too large to be an input, NUL bytes, several `---` documents, a key given twice
/// in one map, an alias that refers to the node containing it (a cycle: walking it would
/// recurse forever), nesting deeper than kMaxYamlDepth and text that is not UTF-8. Every error
/// names the file and, where there is one, the line.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "stepsim/core/result.hpp"

namespace stepsim::config {

/// Largest input file read (bytes): far above any real scenario or topology, far below memory.
inline constexpr std::int64_t kMaxInputFileBytes = 16 << 20;
/// Deepest nesting of maps and lists accepted in an input document.
inline constexpr int kMaxYamlDepth = 64;

/// Longest text value of a key (a name, a path; bytes): far above any real one, and short
/// enough for the reports and the HDF5 file's attributes.
inline constexpr std::size_t kMaxTextValueBytes = 4096;

/// The byte offset of the first byte of `text` that is not valid UTF-8, or npos.
std::size_t invalid_utf8_at(const std::string& text);

/// Reads the text of an input file; `what` names it in errors ("scenario file", ...).
Result<std::string> read_input_file(const std::string& path, const std::string& what);

/// Parses `text` as at most one YAML document (empty text gives a null node) and checks it
/// as described above; `source` names the text in errors ("file:line: ...").
Result<YAML::Node> parse_yaml_document(const std::string& text, const std::string& source);

}  // namespace stepsim::config
