#include "src/nic/queue_pair.hpp"

#include <algorithm>

#include "src/nic/rc_wire.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/packet.hpp"

namespace stepsim::nic {

// --- Wqe ---------------------------------------------------------------------------------------

// --- Requester ---------------------------------------------------------------------------------

void Requester::number(Wqe& w, std::int64_t mtu) {
  w.npkts = static_cast<std::uint32_t>(std::max<std::int64_t>(1, (w.wr.bytes + mtu - 1) / mtu));
  w.first_psn = next_wqe_psn;
  next_wqe_psn += w.npkts;
}

void Requester::queue_resend(std::uint32_t psn) {
  if (std::find(resend.begin(), resend.end(), psn) == resend.end()) resend.push_back(psn);
}

void Requester::after_acknowledge() {
  if (next_psn < una) go_back(una);
  std::erase_if(resend, [this](std::uint32_t q) { return q < una; });
  retries = 0;
}

// --- Responder ---------------------------------------------------------------------------------

void Responder::hold_window(std::uint32_t window) {
  ooo.assign(window, 0);
  ooo_imm.assign(window, 0);
  tails.reserve(16);
}

bool Responder::hold(std::uint32_t psn, bool completes_message, std::uint32_t imm) {
  const std::uint32_t i = psn & (window() - 1);
  if (ooo[i] != 0) return false;
  ooo[i] = completes_message ? 2 : 1;
  ooo_imm[i] = imm;
  ++held;
  return true;
}

void Responder::start_read(std::uint32_t psn, std::uint32_t packets, std::int64_t bytes) {
  bool resumed = false;
  for (ReadJob& j : reads) {
    if (psn >= j.first && psn < j.end) {
      j.next = psn;
      resumed = true;
    }
  }
  if (!resumed) reads.push_back(ReadJob{psn, psn, psn + packets, bytes});
  epsn = std::max(epsn, psn + packets);
}

void Responder::erase_finished_reads() {
  std::erase_if(reads, [](const ReadJob& j) { return j.next >= j.end; });
}

// --- CompletionQueue ---------------------------------------------------------------------------

std::size_t CompletionQueue::poll(std::span<Completion> out) {
  std::size_t k = 0;
  while (k < out.size() && !q_.empty()) out[k++] = q_.pop();
  return k;
}

std::uint32_t CompletionQueue::stage(const Completion& c) {
  if (free_.empty()) {
    staged_.push_back(c);
    return static_cast<std::uint32_t>(staged_.size() - 1);
  }
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  staged_[slot] = c;
  return slot;
}

Completion CompletionQueue::unstage(std::uint32_t slot) {
  STEPSIM_CHECK(slot < staged_.size(), "a completion from a slot that was never used");
  free_.push_back(slot);
  return staged_[slot];
}

// --- QueuePair ---------------------------------------------------------------------------------

bool transition_allowed(QpState from, QpState to) {
  if (to == QpState::kError) return true;
  if (to == QpState::kReset) return true;  // modify_qp to RESET is always allowed
  switch (from) {
    case QpState::kReset:
      return to == QpState::kInit;
    case QpState::kInit:
      return to == QpState::kInit || to == QpState::kRtr;
    case QpState::kRtr:
      return to == QpState::kRts;
    case QpState::kRts:
      return to == QpState::kRts;
    case QpState::kError:
      return false;
  }
  return false;
}

void QueuePair::bring_up() {
  for (QpState st : {QpState::kInit, QpState::kRtr, QpState::kRts}) {
    STEPSIM_CHECK(transition_allowed(state, st), "QP bring-up");
    state = st;
  }
}

}  // namespace stepsim::nic
