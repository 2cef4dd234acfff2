// Selective repeat (as in NVIDIA's and others' RoCE NICs with out-of-order placement): the
// responder places packets past a hole into memory and holds their PSNs in a reorder window; it
// NAKs the hole once `nak_threshold` packets are held (sprayed paths reorder, so a hole is a loss
// only that many packets later). The requester resends only the NAKed PSN, or the oldest
// unacknowledged one after a timeout. Simplification: one PSN per NAK (no SACK bitmap).
#include "src/nic/retransmission_strategy.hpp"

namespace stepsim::nic {
namespace {

class SelectiveRepeat final : public RetransmissionStrategy {
 public:
  explicit SelectiveRepeat(const RetransmissionConfig& c) : config_(c) {}

  void init(Responder& rs) const override { rs.hold_window(config_.window); }
  void on_nak(Requester& rq, std::uint32_t psn) const override { rq.queue_resend(psn); }
  void on_timeout(QueuePair& qp) const override { qp.rq.queue_resend(qp.rq.una); }
  OutOfOrderAction on_out_of_order(Responder& rs, std::uint32_t psn, bool completes,
                                   std::uint32_t imm) const override {
    OutOfOrderAction a;
    if (psn - rs.epsn >= rs.window()) return a;  // past the window: dropped, no NAK
    a.place = rs.hold(psn, completes, imm);
    a.nak = rs.held >= config_.nak_threshold;
    return a;
  }

 private:
  RetransmissionConfig config_;
};

const RetransmissionRegistration kSelective{"selective", [](const RetransmissionConfig& c) {
                                              return std::make_unique<SelectiveRepeat>(c);
                                            }};

}  // namespace
}  // namespace stepsim::nic
