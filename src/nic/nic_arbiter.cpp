#include "src/nic/nic_arbiter.hpp"

#include <algorithm>

namespace stepsim::nic {

SimTime NicArbiter::next_ready(SimTime now) const {
  SimTime head = SimTime::never();
  for (const RingQueue<TxSlot>* q : {&ctrl, &tx, &innet}) {
    if (!q->empty() && q->front().ready > now) head = std::min(head, q->front().ready);
  }
  return head;
}

SimTime NicArbiter::head() const {
  return std::min(tx.empty() ? SimTime::never() : tx.front().ready,
                  ctrl.empty() ? SimTime::never() : ctrl.front().ready);
}

}  // namespace stepsim::nic
