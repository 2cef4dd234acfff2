#include "src/nic/queue_pair.hpp"

#include <algorithm>

#include "src/nic/rc_wire.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/fabric/packet.hpp"

namespace stepsim::nic {

// --- Wqe ---------------------------------------------------------------------------------------

std::int64_t Wqe::payload_of(std::uint32_t psn, std::int64_t mtu) const {
  const std::int64_t k = psn - first_psn;
  return std::clamp<std::int64_t>(wr.bytes - k * mtu, 0, mtu);
}

std::int64_t Wqe::frame_of(std::uint32_t psn, std::int64_t mtu) const {
  if (wr.opcode == Opcode::kRead) {
    return psn == first_psn ? fabric::kRoceHeaderBytes + kReadReqHeader : 0;
  }
  return payload_of(psn, mtu) + fabric::kRoceHeaderBytes;
}

// --- Requester ---------------------------------------------------------------------------------

void Requester::number(Wqe& w, std::int64_t mtu) {
  w.npkts = static_cast<std::uint32_t>(std::max<std::int64_t>(1, (w.wr.bytes + mtu - 1) / mtu));
  w.first_psn = next_wqe_psn;
  next_wqe_psn += w.npkts;
}

std::uint32_t Requester::seek(std::uint32_t psn) const {
  std::uint32_t i = 0;
  while (i < sq.size() && psn >= sq[i].end_psn()) ++i;
  return i;
}

void Requester::queue_resend(std::uint32_t psn) {
  if (std::find(resend.begin(), resend.end(), psn) == resend.end()) resend.push_back(psn);
}

bool Requester::pop_resend(std::uint32_t& psn, std::uint32_t& wqe) {
  while (!resend.empty()) {
    psn = resend.front();
    resend.erase(resend.begin());
    wqe = seek(psn);
    if (psn >= una && wqe < sq.size()) return true;  // else acknowledged meanwhile
  }
  return false;
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
}

bool Responder::hold(std::uint32_t psn, bool completes_message, std::uint32_t imm) {
  const std::uint32_t i = psn & (window() - 1);
  if (ooo[i] != 0) return false;
  ooo[i] = completes_message ? 2 : 1;
  ooo_imm[i] = imm;
  ++held;
  return true;
}

bool Responder::take_held(bool& completes_message, std::uint32_t& imm) {
  if (held == 0) return false;
  const std::uint32_t i = epsn & (window() - 1);
  if (ooo[i] == 0) return false;
  completes_message = ooo[i] == 2;
  imm = ooo_imm[i];
  ooo[i] = 0;
  --held;
  return true;
}

ReadJob* Responder::next_read() {
  for (ReadJob& j : reads) {
    if (j.next < j.end) return &j;
  }
  return nullptr;
}

bool Responder::has_reads() const {
  return std::any_of(reads.begin(), reads.end(), [](const ReadJob& j) { return j.next < j.end; });
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
