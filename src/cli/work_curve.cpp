#include "src/cli/work_curve.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "stepsim/collective/collective.hpp"

namespace stepsim::cli {

void WorkCurve::add(const Span& s) {
  if (s.bytes > 0) spans_.push_back(s);
}

bool WorkCurve::add_job(const std::vector<workload::CollectiveRecord>& colls,
                        const std::vector<bool>& cross, double copies) {
  if (colls.size() != cross.size()) return false;
  for (std::size_t i = 0; i < colls.size(); ++i) {
    const workload::CollectiveRecord& c = colls[i];
    if (!cross[i]) continue;
    add(Span{c.start_s, std::max(c.start_s, c.end_s),
             collective::busbw_factor(c.kind, static_cast<int>(c.gpus)) *
                 static_cast<double>(c.bytes) * copies});
  }
  return true;
}

void WorkCurve::finish(double step_s) {
  end_ = step_s;
  // The slope of W changes by +b/(e-s) at s and -b/(e-s) at e; a span of zero length jumps by b.
  struct Change {
    double t;
    double slope;
    double jump;
  };
  std::vector<Change> ch;
  ch.reserve(2 * spans_.size());
  total_ = 0;
  for (const Span& s : spans_) {
    total_ += s.bytes;
    end_ = std::max(end_, s.end_s);
    if (s.end_s > s.start_s) {
      const double k = s.bytes / (s.end_s - s.start_s);
      ch.push_back({s.start_s, k, 0});
      ch.push_back({s.end_s, -k, 0});
    } else {
      ch.push_back({s.start_s, 0, s.bytes});
    }
  }
  std::sort(ch.begin(), ch.end(), [](const Change& a, const Change& b) { return a.t < b.t; });
  times_.clear();
  values_.clear();
  double t = 0;
  double w = 0;
  double slope = 0;
  times_.push_back(0);
  values_.push_back(0);
  for (std::size_t i = 0; i < ch.size();) {
    const double at = std::max(t, ch[i].t);
    w += slope * (at - t);
    t = at;
    times_.push_back(t);
    values_.push_back(w);
    double jump = 0;
    for (; i < ch.size() && ch[i].t <= t; ++i) {
      slope += ch[i].slope;
      jump += ch[i].jump;
    }
    if (slope < 0) slope = 0;  // rounding at the last end
    if (jump > 0) {
      w += jump;
      times_.push_back(t);
      values_.push_back(w);
    }
  }
  // Rounding: the curve ends at the total.
  for (double& v : values_) v = std::min(v, total_);
  if (!values_.empty() && slope == 0) values_.back() = total_;
}

double WorkCurve::bytes_at(double t_s) const {
  if (times_.empty() || t_s <= times_.front()) return 0;
  // The last breakpoint at or before t (after any jump there), then linear to the next.
  const auto it = std::upper_bound(times_.begin(), times_.end(), t_s);
  const std::size_t i = static_cast<std::size_t>(std::distance(times_.begin(), it)) - 1;
  if (i + 1 >= times_.size()) return values_.back();
  const double span = times_[i + 1] - times_[i];
  const double w =
      span > 0 ? values_[i] + (values_[i + 1] - values_[i]) * (t_s - times_[i]) / span : values_[i];
  return std::min(w, total_);
}

double WorkCurve::fraction(double t_s) const {
  if (end_ <= 0) return 0;
  const double time = std::max(0.0, t_s) / end_;
  if (total_ <= 0) return time;
  return (1 - kTimeShare) * bytes_at(t_s) / total_ + kTimeShare * time;
}

double WorkCurve::fraction(double t_s, double delivered_bytes) const {
  const double f = fraction(t_s);
  if (end_ <= 0 || total_ <= 0 || delivered_bytes <= 0) return f;
  const double done =
      (1 - kTimeShare) * delivered_bytes / total_ + kTimeShare * std::max(0.0, t_s) / end_;
  return std::max(f, done);
}

Result<workload::CommCost> CrossServerRecorder::cost(const workload::CommOp& op) {
  auto c = inner_.cost(op);
  if (!c) return c;
  auto [it, fresh] = seen_.emplace(op.gpus, false);
  if (fresh && op.gpus.size() >= 2) {
    auto comm = collective::make_communicator(topo_, op.gpus);
    if (comm) {
      for (const collective::Gpu& g : comm->gpus) {
        it->second = it->second || g.server != comm->gpus[0].server;
      }
    }
  }
  cross.push_back(it->second);
  return c;
}

}  // namespace stepsim::cli
