#pragma once
// How the RC transport recovers a lost packet: an interface, one file per strategy
// (go_back_n.cpp, selective_repeat.cpp) and a registry that selects one by name
// (transport.retransmission). The strategy decides what is sent again after a NAK or a timeout
// and what the responder does with a packet past a hole; the per-QP state it works on is the
// QP's (queue_pair.hpp). It is called only off the common path (a NAK, a timeout, a packet out
// of order), never per in-order data packet. READs recover by going back in both strategies
// (the requester re-requests from the missing PSN), which is the transport's call.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/nic/queue_pair.hpp"
#include "stepsim/core/registry.hpp"
#include "stepsim/core/result.hpp"

namespace stepsim::nic {

/// What a strategy is made with (limits counted in frames; see RcTransport::setup).
struct RetransmissionConfig {
  std::uint32_t window = 4096;       ///< PSNs past a hole a receiver can hold (a power of two)
  std::uint32_t nak_threshold = 16;  ///< held packets past a hole before a NAK
};

/// What the responder does with a data packet past the expected PSN.
struct OutOfOrderAction {
  bool place = false;  ///< write its payload to memory now (it was kept)
  bool nak = false;    ///< NAK the hole (once per hole; the transport checks)
};

class RetransmissionStrategy {
 public:
  virtual ~RetransmissionStrategy() = default;
  /// Prepares a QP's responder at set-up (selective repeat: its reorder buffer).
  virtual void init(Responder& rs) const = 0;
  /// Requester: a NAK names `psn` (below max_sent) of a WRITE or SEND.
  virtual void on_nak(Requester& rq, std::uint32_t psn) const = 0;
  /// Requester: the timer expired with rq.una unacknowledged (not a READ's).
  virtual void on_timeout(QueuePair& qp) const = 0;
  /// Responder: a data packet with `psn` past rs.epsn arrived (`completes`: it ends a SEND or a
  /// WRITE with immediate, whose immediate data is `imm`).
  virtual OutOfOrderAction on_out_of_order(Responder& rs, std::uint32_t psn, bool completes,
                                           std::uint32_t imm) const = 0;

  /// Going back to the oldest unacknowledged PSN after a timeout (Go-Back-N's and every READ's
  /// recovery): resend from there, and the next hole may be NAKed again.
  static void go_back_to_una(QueuePair& qp) {
    qp.rq.go_back(qp.rq.una);
    qp.nak_psn = kNoPsn;
  }
};

using RetransmissionRegistry = Registry<RetransmissionStrategy, const RetransmissionConfig&>;
using RetransmissionRegistration = Registration<RetransmissionRegistry>;

/// Creates the strategy registered as `name`; the error lists the strategies.
Result<std::unique_ptr<RetransmissionStrategy>> make_retransmission(
    const std::string& name, const RetransmissionConfig& config);
/// Registered names, sorted.
std::vector<std::string> retransmission_names();

}  // namespace stepsim::nic
