#pragma once
/// An application that moves bulk data over RC connections: each transfer posts `messages` work
/// requests of `message_bytes` on side A of its connection, keeping `depth` outstanding, from
/// `start`. It records when each transfer completes and, every `sample_every`, how many payload
/// bytes each has completed (for rates, fairness and convergence). For experiments and tests.

#include <cstdint>
#include <vector>

#include "stepsim/nic/verbs.hpp"
#include "stepsim/pdes/sync.hpp"
#include "stepsim/topology/topology.hpp"

namespace stepsim::nic {

struct Transfer {
  std::uint32_t connection = 0;
  std::int64_t message_bytes = 65536;
  int messages = 1;
  int depth = 16;
  SimTime start;
  Opcode opcode = Opcode::kWrite;
};

struct BulkResult {
  std::vector<std::int64_t> done_ps;  ///< by transfer: last completion (-1: incomplete)
  std::vector<std::int64_t> bytes;    ///< by transfer: payload completed
  std::vector<std::int64_t> errors;   ///< by transfer: completions with an error status
  /// samples[k][t]: payload transfer t had completed at (k + 1) x sample_every.
  std::vector<std::vector<std::int64_t>> samples;
  /// Rate of transfer t between samples k0 and k1 (Gb/s).
  [[nodiscard]] double gbps(std::size_t t, std::size_t k0, std::size_t k1, SimTime every) const;
};

/// Jain's fairness index of `x` (1 = all equal, 1/n = one takes all).
double jain_index(const std::vector<double>& x);

class BulkApp final : public RdmaApp {
 public:
  /// Connection c's side A must be a NIC port of `topo`; `sample_every` 0: no samples.
  BulkApp(std::vector<Transfer> transfers, const std::vector<Connection>& connections,
          const topology::Topology& topo, SimTime sample_every, int max_samples = 10'000);

  void on_start(Verbs& verbs) override;
  void on_cq(Verbs& verbs, std::uint32_t endpoint) override;
  void on_timer(Verbs& verbs, const AppTimer& timer) override;
  /// Gathers every rank's records (collective over `sync`).
  [[nodiscard]] BulkResult result(pdes::Sync& sync) const;

 private:
  static constexpr std::uint32_t kSampleTag = 0xffffffffu;
  struct State {
    int posted = 0;
    int done = 0;
    std::int64_t bytes = 0;
    std::int64_t last_ps = -1;
    std::int64_t errors = 0;
    std::vector<std::int64_t> samples;
  };
  void post(Verbs& verbs, std::uint32_t t);

  std::vector<Transfer> transfers_;
  std::vector<topology::NodeId> server_of_;          // by transfer: side A's server
  std::vector<std::uint32_t> transfer_of_endpoint_;  // by endpoint (side A): transfer
  std::vector<State> state_;
  SimTime every_;
  int max_samples_;
};

}  // namespace stepsim::nic
