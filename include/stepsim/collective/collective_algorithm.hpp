#pragma once
/// A collective algorithm (ring, chain, pairwise, tree, nvls, sharp): what it supports, what it
/// costs for the tuner and the analytical bound, and the runtime that moves its pieces. The
/// registry (src/collective/algorithm_registry.cpp) lists them; every eligibility question
/// (prepare_collective, the tuner, the step's comm models, concurrent collectives) asks it.
/// See docs/collectives.md, "Adding a collective algorithm".

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/collective/collective.hpp"
#include "stepsim/core/result.hpp"

namespace stepsim::collective {

class AlgorithmRun;
class CollectiveCore;

/// Which servers an algorithm can run over.
enum class Servers : std::uint8_t {
  kAny,      ///< one server or whole servers
  kOne,      ///< one server (one NVLink domain)
  kSeveral,  ///< whole servers, at least two
};

/// What an algorithm supports: collective kinds, GPU shapes, hardware and protocols.
struct AlgorithmSupport {
  std::vector<Kind> kinds;
  Servers servers = Servers::kAny;
  bool needs_nvls = false;   ///< NVLink SHARP in the GPUs (gpu.nvls_efficiency > 0)
  bool needs_sharp = false;  ///< switches that aggregate in the network (a SHARP fabric)
  std::vector<Protocol> protocols = {Protocol::kSimple, Protocol::kLl, Protocol::kLl128};
  bool tuned = false;                 ///< `--algo auto` considers it
  int tuned_min_gpus = 1;             ///< ... from this many GPUs on
  int min_gpus_per_server = 1;        ///< refused below this many GPUs per server
  int tuned_min_gpus_per_server = 1;  ///< `--algo auto` considers it from this many per server
  bool concurrent = true;             ///< may run next to other collectives (run_collectives)

  [[nodiscard]] bool has_kind(Kind k) const;
  [[nodiscard]] bool has_protocol(Protocol p) const;
  /// NVLS or SHARP hardware.
  [[nodiscard]] bool needs_hardware() const { return needs_nvls || needs_sharp; }
};

/// The shape of one collective: what eligibility and costs depend on.
struct CollectiveShape {
  Kind kind = Kind::kAllReduce;
  std::int64_t bytes = 0;
  int gpus = 1;
  int gpus_per_server = 1;  ///< min(GPUs per server, gpus)
  int servers = 1;
  /// The communicator's shape (`bytes` as given).
  static CollectiveShape of(Kind kind, std::int64_t bytes, int gpus, std::uint32_t gpus_per_server);
};

/// Rates the tuner prices with (bytes per second).
struct TunerRates {
  double nvlink = 0;           ///< NVLink payload rate per GPU
  double nic = 0;              ///< one NIC's RDMA goodput
  double nvls_efficiency = 0;  ///< NVLS traffic's rate relative to copies (gpu.nvls_efficiency)
  double p2p_proxy_s = 0;      ///< point to point: proxy busy seconds per network message, each end
  double p2p_net_chunk = 1;    ///< point to point: bytes per network message
  double nvls_overhead_s = 0;  ///< NVLS-tree: the NVLS round's overhead (coll.overhead.nvls)
  double nvls_tree_net_s = 0;  ///< NVLS-tree: per network hop (coll.overhead.nvls_tree_net)
};

/// The tuner's terms: time = base + steps_intra x (NVLink + overhead) + steps_inter x (network +
/// overhead) + busbw factor x S / (bandwidth / wire factor).
struct TunerCost {
  double steps_intra = 0;
  double steps_inter = 0;
  double bandwidth = 0;  ///< bytes per second
  double latency = 0;    ///< seconds on top: an algorithm's own step latencies (NVLS-tree's)
};

/// The chain of hops a piece crosses one after another (the analytical bound's latency term).
struct BoundChain {
  double network_hops = 0;
  double nvlink_hops = 0;
  bool network_overhead = true;  ///< network hops pay the protocol's per-hop overhead
};

class CollectiveAlgorithm {
 public:
  virtual ~CollectiveAlgorithm() = default;
  /// Registry name ("ring", "chain", ...).
  [[nodiscard]] virtual std::string name() const = 0;
  /// The coll.algorithm value that selects it (ring, chain and pairwise: "ring").
  [[nodiscard]] virtual std::string selected_by() const { return name(); }
  /// One line: what it models.
  [[nodiscard]] virtual std::string description() const = 0;
  [[nodiscard]] virtual AlgorithmSupport support() const = 0;
  /// Its cost terms for the tuner (choose()).
  [[nodiscard]] virtual TunerCost tuner_cost(const CollectiveShape& s,
                                             const TunerRates& r) const = 0;
  /// Its chain for analytical_bound; none when it moves less than the chain of the tuner's
  /// candidates says (NVLS, SHARP), whose chains the bound takes instead.
  [[nodiscard]] virtual std::optional<BoundChain> bound_chain(const CollectiveShape& s) const = 0;
  /// The runtime on the GPUs; `core` outlives it.
  [[nodiscard]] virtual std::unique_ptr<AlgorithmRun> make_run(CollectiveCore& core) const = 0;
};

/// Every registered algorithm, in the registry's order (also the tuner's order on ties).
const std::vector<const CollectiveAlgorithm*>& collective_algorithms();
/// The coll.algorithm values, in registry order, without "auto".
std::vector<std::string> selectable_algorithms();
/// What each coll.algorithm value runs, from the registry: "ring (allreduce, ...; chain:
/// broadcast, reduce; ...), tree (allreduce), nvls (allreduce, one server), ..." (no "auto").
std::string selectable_algorithms_help();
/// The algorithm `selected` (a coll.algorithm value) runs for `kind`, or null.
const CollectiveAlgorithm* find_algorithm(const std::string& selected, Kind kind);
/// Whether `a` can run this shape (kinds, servers and GPUs per server; not hardware nor
/// protocol).
bool shape_allows(const CollectiveAlgorithm& a, const CollectiveShape& s);
/// The algorithm `selected` runs for this shape, with the user error that says why it cannot
/// (a kind, a server count, NVLS hardware). Not "auto".
Result<const CollectiveAlgorithm*> check_algorithm(const std::string& selected,
                                                   const CollectiveShape& s,
                                                   const CollectiveParams& p);
/// The user error when `protocol` is not one `a` runs with.
Result<bool> check_protocol(const CollectiveAlgorithm& a, const std::string& protocol);
/// What `--algo auto` chooses from for this shape, in registry order (shape only).
std::vector<const CollectiveAlgorithm*> tuner_candidates(const CollectiveShape& s);
/// ... and the hardware: NVLS algorithms only with gpu.nvls_efficiency > 0, SHARP ones only
/// with coll.sharp.enable (NCCL_COLLNET_ENABLE).
std::vector<const CollectiveAlgorithm*> tuner_candidates(const CollectiveShape& s,
                                                         const CollectiveParams& p);
/// Whether `p`'s algorithm for `kind` may run next to other collectives ("auto": the tuner's
/// candidates all may).
bool runs_concurrently(const CollectiveParams& p, Kind kind);
/// The parameters with which `p` applies to this shape inside a step: an algorithm the shape
/// does not allow becomes the ring (its family for `kind`), and a protocol the algorithm does
/// not run becomes its first.
CollectiveParams applicable_params(const CollectiveParams& p, const CollectiveShape& s);

}  // namespace stepsim::collective
