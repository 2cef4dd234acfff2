#pragma once
/// What a simulation model implements to run on the engine, and the context a handler sees.

#include <cstdint>
#include <span>

#include "stepsim/pdes/event.hpp"

namespace stepsim::pdes {

class Worker;

/// The view of the engine from inside an event handler: who am I, what time is it, send.
/// Only valid during the call it is passed to.
class LpContext {
 public:
  /// Global id of the LP being run.
  [[nodiscard]] LpId self() const { return self_; }
  /// Rank-local dense index of the LP (index into Model::setup's list): use it for state arrays.
  [[nodiscard]] std::uint32_t slot() const { return slot_; }
  /// Current simulated time.
  [[nodiscard]] SimTime now() const { return now_; }

  /// Schedules an event at now() + delay on `dst`. A send to another LP needs delay >= the
  /// engine's lookahead (the latency of the channel it travels); a smaller one is a model bug and
  /// stops the run with both LPs, their ranks and the times.
  template <class P>
  void send(LpId dst, SimTime delay, std::uint32_t kind, std::uint32_t aux, const P& payload) {
    Event ev;
    ev.time = now_ + delay;
    ev.dst = dst;
    ev.kind = kind;
    ev.aux = aux;
    ev.set_payload(payload);
    send_event(ev);
  }
  /// Schedules an event without payload (`aux` is a small model-defined field).
  void send(LpId dst, SimTime delay, std::uint32_t kind, std::uint32_t aux = 0) {
    Event ev;
    ev.time = now_ + delay;
    ev.dst = dst;
    ev.kind = kind;
    ev.aux = aux;
    send_event(ev);
  }
  /// Sends a prepared event (time and dst set; src and seq are filled in).
  void send_event(Event& ev);

 private:
  friend class Worker;
  LpContext(Worker* worker, LpId self, std::uint32_t slot, SimTime now)
      : worker_(worker), self_(self), slot_(slot), now_(now) {}
  Worker* worker_;
  LpId self_;
  std::uint32_t slot_;
  SimTime now_;
};

/// A simulation model: plain-data state per LP, and handlers. One virtual call per event.
/// Handlers of different LPs may run concurrently on different threads: a handler touches only
/// the state of its own LP (ctx.slot()) and talks to other LPs through events only.
class Model {
 public:
  virtual ~Model() = default;
  /// The LPs this rank owns (global ids, ascending); slot i is local_lps[i].
  virtual void setup(std::span<const LpId> local_lps) = 0;
  /// Called once per owned LP at time 0, before the first window; may send events.
  virtual void init_lp(LpContext& ctx) = 0;
  /// Handles one event at ctx.now().
  virtual void handle(LpContext& ctx, const Event& ev) = 0;
  /// A hash of the LP's final state, for the run digest (combined order-independently).
  [[nodiscard]] virtual std::uint64_t lp_digest(std::uint32_t slot) const = 0;
};

}  // namespace stepsim::pdes
