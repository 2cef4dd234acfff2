// parallel.layout (see pipeline_layout.hpp). The grammar is Megatron-Core's
// (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list): commas are
// cosmetic, `(...)*N` unrolls a group (no nesting), then `x*N` a single character, then the
// string splits on `|`. Parsed here by recursive descent so that an error can say where; the
// checks follow its validate_layer_layout plus two of stepsim's (E opens the first virtual
// stage, L closes the last: the schedule reads the batch there and turns around there).
#include "stepsim/workload/pipeline_layout.hpp"

#include <cctype>
#include <cstdint>

namespace stepsim::workload {

namespace {

constexpr std::int64_t kMaxExpanded = std::int64_t{1} << 24;

class LayoutParser {
 public:
  explicit LayoutParser(const std::string& text) : t_(text) {}

  Result<std::string> run() {
    std::string out;
    while (skip_commas(), i_ < t_.size()) {
      if (t_[i_] == '(') {
        if (auto ok = group(out); !ok) return ok.error();
      } else if (auto ok = letter(out); !ok) {
        return ok.error();
      }
    }
    return out;
  }

 private:
  Error bad(std::size_t at, const std::string& what) const {
    return Error{"at position " + std::to_string(at + 1) + " of '" + t_ + "': " + what};
  }

  void skip_commas() {
    while (i_ < t_.size() && t_[i_] == ',') ++i_;
  }

  static bool is_letter(char c) { return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|'; }

  // `*N` after an item, if there is one: N (1 without).
  Result<std::int64_t> count() {
    skip_commas();
    if (i_ >= t_.size() || t_[i_] != '*') return std::int64_t{1};
    ++i_;
    const std::size_t at = i_;
    std::int64_t n = 0;
    while (i_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[i_])) != 0) {
      n = n * 10 + (t_[i_] - '0');
      if (n > kMaxExpanded) return bad(at, "count above " + std::to_string(kMaxExpanded));
      ++i_;
    }
    if (i_ == at) return bad(at, "expected a count (digits) after '*'");
    return n;
  }

  Result<bool> append(std::string& out, const std::string& item, std::int64_t n,
                      std::size_t at) const {
    if (static_cast<std::int64_t>(out.size()) + static_cast<std::int64_t>(item.size()) * n >
        kMaxExpanded) {
      return bad(at,
                 "the layout unrolls to more than " + std::to_string(kMaxExpanded) + " characters");
    }
    for (std::int64_t k = 0; k < n; ++k) out += item;
    return true;
  }

  Result<bool> letter(std::string& out) {
    const std::size_t at = i_;
    const char c = t_[i_];
    if (c == ')') return bad(at, "')' without its '('");
    if (c == '*') return bad(at, "expected a layer letter (E, t, m, L) or '|' before '*'");
    if (!is_letter(c)) {
      return bad(at, std::string("unknown character '") + c +
                         "' (allowed: E embedding, t transformer layer, m MTP module, L loss, "
                         "'|' between virtual stages, x*N, (...)*N, commas)");
    }
    ++i_;
    auto n = count();
    if (!n) return n.error();
    return append(out, std::string(1, c), *n, at);
  }

  Result<bool> group(std::string& out) {
    const std::size_t open = i_++;
    std::string body;
    while (skip_commas(), i_ < t_.size() && t_[i_] != ')') {
      if (t_[i_] == '(') {
        return bad(i_, "nested parentheses (Megatron-Core does not unroll them)");
      }
      if (auto ok = letter(body); !ok) return ok;
    }
    if (i_ >= t_.size()) return bad(open, "'(' without its ')'");
    if (body.empty()) return bad(open, "an empty group '()'");
    ++i_;
    skip_commas();
    if (i_ >= t_.size() || t_[i_] != '*') return bad(i_, "expected '*N' after ')'");
    auto n = count();
    if (!n) return n.error();
    return append(out, body, *n, open);
  }

  const std::string& t_;
  std::size_t i_ = 0;
};

std::string stage_name(int vi, int pp) {
  return "virtual stage " + std::to_string(vi) + " (stage " + std::to_string(vi % pp) + ", chunk " +
         std::to_string(vi / pp) + ")";
}

}  // namespace

Result<std::vector<LayoutStage>> parse_pipeline_layout(const std::string& text) {
  auto flat = LayoutParser(text).run();
  if (!flat) return flat.error();
  std::vector<LayoutStage> v(1);
  for (const char c : *flat) {
    if (c == '|') {
      v.emplace_back();
      continue;
    }
    LayoutStage& st = v.back();
    if (c == 't') ++st.layers;
    if (c == 'm') ++st.mtp;
    if (c == 'E') st.embedding = true;
    if (c == 'L') st.loss = true;
  }
  return v;
}

Result<bool> check_pipeline_layout(const std::string& text, const std::vector<LayoutStage>& v,
                                   int pp, int vpp, int layers, int mtp_layers) {
  const auto n = static_cast<int>(v.size());
  const std::string q = "'" + text + "' ";
  if (n != pp * vpp) {
    std::string hint;
    if (n % pp == 0) hint = "; set parallel.vpp " + std::to_string(n / pp);
    return Error{q + "has " + std::to_string(n) + " virtual stages, parallel.pp x parallel.vpp " +
                 std::to_string(pp) + " x " + std::to_string(vpp) + " needs " +
                 std::to_string(pp * vpp) + hint};
  }
  // The flattened letters, to check the order rules (E first, L last, no t after an m).
  const std::string flat = LayoutParser(text).run().value();
  int t = 0, m = 0, e = 0, l = 0, mtp_stage = -1;
  for (int vi = 0; vi < n; ++vi) {
    const LayoutStage& st = v[static_cast<std::size_t>(vi)];
    t += st.layers;
    m += st.mtp;
    e += st.embedding ? 1 : 0;
    l += st.loss ? 1 : 0;
    if (st.mtp > 0) {
      if (mtp_stage >= 0) {
        return Error{q + "puts MTP modules on " + stage_name(mtp_stage, pp) + " and " +
                     stage_name(vi, pp) + ": all of them must be on one virtual stage"};
      }
      mtp_stage = vi;
    }
  }
  if (e != 1 || flat.empty() || flat.front() != 'E' || !v.front().embedding) {
    return Error{q + "must hold one E (the embedding), first, on virtual stage 0"};
  }
  if (l != 1 || flat.back() != 'L' || !v.back().loss) {
    return Error{q + "must hold one L (the loss), last, on the last virtual stage"};
  }
  if (t != layers) {
    return Error{q + "has " + std::to_string(t) + " transformer layers (t), model.layers is " +
                 std::to_string(layers)};
  }
  if (m != mtp_layers) {
    return Error{q + "has " + std::to_string(m) + " MTP modules (m), model.mtp_layers is " +
                 std::to_string(mtp_layers)};
  }
  if (mtp_stage >= 0) {
    if (flat.find('t', flat.find('m')) != std::string::npos) {
      return Error{q + "has transformer layers (t) after an MTP module (m): they come first"};
    }
    if (mtp_stage / pp != vpp - 1) {
      return Error{q + "puts the MTP modules on " + stage_name(mtp_stage, pp) +
                   ": they must be in the last model chunk of a stage (Megatron-Core's rule)"};
    }
  }
  return true;
}

}  // namespace stepsim::workload
