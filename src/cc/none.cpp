// No congestion control: the QP always sends at line rate (the baseline DCQCN and HPCC are
// compared with; PFC alone keeps the fabric lossless).
#include "src/cc/cc_registry.hpp"

namespace stepsim::cc {
namespace {

class NoCc final : public CongestionControl {
 public:
  explicit NoCc(DataRate line) : line_(line) {}
  [[nodiscard]] DataRate rate() const override { return line_; }
  void on_sent(SimTime, std::int64_t) override {}
  void on_cnp(SimTime) override {}
  [[nodiscard]] SimTime next_timer() const override { return SimTime::never(); }
  void on_timer(SimTime) override {}

 private:
  DataRate line_;
};

const CcRegistration kNone{
    {"none",
     "line rate always; PFC alone keeps the fabric lossless",
     [](const CcParams&, const CcPath& path) { return std::make_unique<NoCc>(path.line_rate); },
     {},
     {}}};

}  // namespace
}  // namespace stepsim::cc
