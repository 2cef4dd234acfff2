#include "stepsim/config/yaml_input.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>
#include <vector>

namespace stepsim::config {
namespace {

std::string at_line(const std::string& source, const YAML::Mark& mark) {
  return mark.line >= 0 ? source + ":" + std::to_string(mark.line + 1) : source;
}

// The maps and lists already checked, by their position in the text (an alias is its anchor's
// node, at the anchor's position): each is walked once, so nested aliases (a "billion laughs")
// cost their text's size, not their expansion's.
using Checked = std::unordered_map<std::size_t, std::vector<YAML::Node>>;

bool checked_before(const YAML::Node& n, const Checked& done) {
  const auto it = done.find(static_cast<std::size_t>(n.Mark().pos));
  if (it == done.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&n](const YAML::Node& d) { return d.is(n); });
}

// Walks the node graph depth first; `path` holds the maps and lists above `n`.
Result<bool> check_node(const YAML::Node& n, const std::string& source,
                        std::vector<YAML::Node>& path, Checked& done) {
  if (!n.IsMap() && !n.IsSequence()) return true;
  if (checked_before(n, done)) return true;
  for (const YAML::Node& above : path) {
    if (above.is(n)) {
      return Error{at_line(source, n.Mark()) +
                   ": an alias refers to a node that contains it (a cycle); YAML anchors may "
                   "only be reused outside themselves"};
    }
  }
  if (static_cast<int>(path.size()) >= kMaxYamlDepth) {
    return Error{at_line(source, n.Mark()) + ": nested more than " + std::to_string(kMaxYamlDepth) +
                 " levels deep"};
  }
  path.push_back(n);
  if (n.IsMap()) {
    std::unordered_map<std::string, int> keys;  // key -> line
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) {
        const auto [it, fresh] = keys.emplace(kv.first.Scalar(), kv.first.Mark().line + 1);
        if (!fresh) {
          return Error{at_line(source, kv.first.Mark()) + ": key '" + it->first +
                       "' given twice in the same map (first at line " +
                       std::to_string(it->second) + ")"};
        }
      } else if (auto r = check_node(kv.first, source, path, done); !r) {
        return r;
      }
      if (auto r = check_node(kv.second, source, path, done); !r) return r;
    }
  } else {
    for (const YAML::Node& item : n) {
      if (auto r = check_node(item, source, path, done); !r) return r;
    }
  }
  path.pop_back();
  done[static_cast<std::size_t>(n.Mark().pos)].push_back(n);
  return true;
}

// yaml-cpp accepts a quoted scalar left open at the end of the text (it swallows every line
// after it). Finds such a quote: the line where a scalar opens with ' or " that no later
// quote closes, or 0. Comments and quotes inside plain scalars ("it's") are skipped.
int unclosed_quote_line(const std::string& text) {
  int line = 1;
  bool at_scalar_start = true;  // after indentation, "- ", ": ", "[", "{" or ","
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      at_scalar_start = true;
      continue;
    }
    if (c == ' ' || c == '\t') {
      at_scalar_start = at_scalar_start || (i > 0 && (text[i - 1] == ':' || text[i - 1] == '-'));
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if ((c == '"' || c == '\'') && at_scalar_start) {
      const int open_line = line;
      std::size_t j = i + 1;
      for (; j < text.size(); ++j) {
        if (text[j] == '\n') ++line;
        if (c == '"' && text[j] == '\\') {
          if (j + 1 < text.size() && text[j + 1] == '\n') ++line;
          ++j;
        } else if (text[j] == c) {
          if (c == '\'' && j + 1 < text.size() && text[j + 1] == '\'') {
            ++j;  // '' is a quote inside a single-quoted scalar
          } else {
            break;
          }
        }
      }
      if (j >= text.size()) return open_line;
      i = j;
      at_scalar_start = false;
      continue;
    }
    at_scalar_start = c == '[' || c == '{' || c == ',';
  }
  return 0;
}

// Nesting of `text` in flow collections ([ and { outside quotes and comments) and in block
// indentation (levels of increasing indent), the larger: what yaml-cpp's parser recurses on.
int nesting_depth(const std::string& text) {
  int flow = 0, deepest = 0;
  std::vector<std::size_t> indents;  // the block levels open at the current line
  bool line_start = true;
  std::size_t col = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true;
      col = 0;
      continue;
    }
    if (line_start && (c == ' ' || c == '-')) {
      ++col;
      continue;
    }
    if (line_start && c != '#') {
      while (!indents.empty() && indents.back() >= col) indents.pop_back();
      indents.push_back(col);
      deepest = std::max(deepest, static_cast<int>(indents.size()) + flow);
    }
    line_start = false;
    if (quote != 0) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, static_cast<int>(indents.size()) + ++flow);
    } else if ((c == ']' || c == '}') && flow > 0) {
      --flow;
    }
  }
  return deepest;
}

}  // namespace

std::size_t invalid_utf8_at(const std::string& text) {
  const auto* b = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = b[i];
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      if ((b[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

Result<std::string> read_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  if (path.empty()) return Error{what + ": the path is empty"};
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return Error{"cannot read " + what + " '" + path + "': no such file"};
  if (fs::is_directory(st)) {
    return Error{"cannot read " + what + " '" + path + "': it is a directory, not a file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{"cannot read " + what + " '" + path + "': " + std::strerror(errno)};
  }
  // Read at most the limit plus one byte: a device such as /dev/zero never ends.
  std::string text;
  constexpr std::int64_t kChunk = 1 << 16;
  std::vector<char> buf(kChunk);
  while (in) {
    in.read(buf.data(), kChunk);
    const auto got = static_cast<std::size_t>(in.gcount());
    if (std::find(buf.data(), buf.data() + got, '\0') != buf.data() + got) {
      return Error{what + " '" + path + "' contains a NUL byte (not a text file)"};
    }
    text.append(buf.data(), got);
    if (static_cast<std::int64_t>(text.size()) > kMaxInputFileBytes) {
      return Error{what + " '" + path + "' is larger than " +
                   std::to_string(kMaxInputFileBytes >> 20) + " MiB (not an input file)"};
    }
  }
  if (in.bad()) return Error{"cannot read " + what + " '" + path + "': read error"};
  return text;
}

Result<YAML::Node> parse_yaml_document(const std::string& text, const std::string& source) {
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    return Error{source + ":" + std::to_string(line) + ": contains a NUL byte (not a text file)"};
  }
  if (const auto bad = invalid_utf8_at(text); bad != std::string::npos) {
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    return Error{source + ":" + std::to_string(line) + ": byte " + std::to_string(bad) +
                 " is not UTF-8 text (save the file as UTF-8, e.g. iconv -f latin1 -t utf-8)"};
  }
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp gives up on deep nesting with a bare "bad file": say the limit instead.
    if (nesting_depth(text) > kMaxYamlDepth) {
      return Error{source + ": nested more than " + std::to_string(kMaxYamlDepth) + " levels deep"};
    }
    return Error{source + ":" + std::to_string(e.mark.line + 1) + ":" +
                 std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg};
  }
  if (const int open = unclosed_quote_line(text); open > 0) {
    return Error{source + ":" + std::to_string(open) +
                 ": YAML syntax error: a quoted string opened on this line is never closed"};
  }
  if (docs.size() > 1) {
    return Error{at_line(source, docs[1].Mark()) + ": a second YAML document ('---'); a file " +
                 "holds one document"};
  }
  if (docs.empty()) return YAML::Node();
  std::vector<YAML::Node> path;
  Checked done;
  if (auto r = check_node(docs[0], source, path, done); !r) return r.error();
  return docs[0];
}

}  // namespace stepsim::config
