// Go-Back-N (IB RC's recovery): the responder drops every packet past a hole and NAKs the hole;
// the requester sends again from the NAKed PSN, or from the oldest unacknowledged one after a
// timeout. Simple and memory-free at the receiver, but one loss costs a window of packets.
#include "src/nic/retransmission_strategy.hpp"

namespace stepsim::nic {
namespace {

class GoBackN final : public RetransmissionStrategy {
 public:
  void init(Responder& /*rs*/) const override {}
  void on_nak(Requester& rq, std::uint32_t psn) const override { rq.go_back(psn); }
  void on_timeout(QueuePair& qp) const override { go_back_to_una(qp); }
  OutOfOrderAction on_out_of_order(Responder& /*rs*/, std::uint32_t /*psn*/, bool /*completes*/,
                                   std::uint32_t /*imm*/) const override {
    return OutOfOrderAction{false, true};  // dropped; NAK the hole
  }
};

const RetransmissionRegistration kGoBackN{
    "gbn", [](const RetransmissionConfig&) { return std::make_unique<GoBackN>(); }};

}  // namespace
}  // namespace stepsim::nic
