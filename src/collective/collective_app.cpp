// One collective as an RDMA application (see collective_app.hpp): the registry's algorithm over
// the shared machinery, the checks of a collective's spec, and a complete run.
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/collective/nic_share.hpp"

#include <array>

#include "src/collective/collective_core.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

double CollectiveResult::algbw_gbs(std::int64_t bytes) const {
  return time_ps > 0 ? static_cast<double>(bytes) / (static_cast<double>(time_ps) * 1e-12) / 1e9
                     : 0.0;
}

CollectiveApp::CollectiveApp(const Communicator& comm, CollectiveSpec spec,
                             const CollectiveParams& params)
    : algorithm_(find_algorithm(params.algorithm, spec.kind)),
      core_(std::make_unique<CollectiveCore>(comm, std::move(spec), params)) {
  STEPSIM_CHECK(algorithm_ != nullptr, "collective: no algorithm '" + params.algorithm + "' for " +
                                           kind_name(core_->spec().kind));
  run_ = algorithm_->make_run(*core_);
}

CollectiveApp::~CollectiveApp() = default;

const std::vector<nic::Connection>& CollectiveApp::connections() const {
  return core_->connections();
}

void CollectiveApp::on_start(nic::Verbs& v) {
  // The protocol's base latency (launch and set-up) comes before the first piece moves.
  v.schedule(core_->params().base_latency(), kStartTag);
}

void CollectiveApp::on_timer(nic::Verbs& v, const nic::AppTimer& timer) {
  if (timer.tag == kStartTag) {
    run_->start(v);
  } else {
    run_->on_timer(v, timer.data.as<TimerPayload>());
  }
}

void CollectiveApp::on_cq(nic::Verbs& v, std::uint32_t endpoint) {
  std::array<nic::Completion, 16> wc;
  std::size_t k;
  while ((k = v.poll_cq(endpoint, wc)) > 0) {
    for (std::size_t i = 0; i < k; ++i) on_completion(v, endpoint, wc[i]);
  }
}

void CollectiveApp::on_completion(nic::Verbs& v, std::uint32_t endpoint, const nic::Completion& c) {
  STEPSIM_CHECK(c.status == nic::WcStatus::kSuccess,
                "collective: a transfer failed on endpoint " + std::to_string(endpoint));
  if (c.recv) {
    core_->record_recv(c);
  } else {
    core_->record_send(v, c);
  }
  run_->on_completion(v, endpoint, c);
}

bool CollectiveApp::gpu_done(std::uint32_t rank) const {
  return core_->gpu_done(rank);
}

void CollectiveApp::share_nvlink(std::uint32_t rank, SimTime* free) {
  core_->share_nvlink(rank, free);
}

void CollectiveApp::on_in_network(nic::Verbs& v, topology::PortId nic, const fabric::Packet& pkt) {
  run_->on_in_network(v, nic, pkt);
}

CollectiveResult CollectiveApp::result(pdes::Sync& sync) const {
  return core_->result(sync);
}

namespace {

// The spec's own errors: an AllToAllv matrix that does not fit, a root that is not a rank.
Result<bool> check_spec(const Communicator& comm, const CollectiveSpec& spec) {
  if (spec.kind == Kind::kAllToAllv) {
    const auto n = static_cast<std::size_t>(comm.size());
    if (spec.matrix.size() != n * n) {
      return Error{"alltoallv needs a " + std::to_string(n) + " x " + std::to_string(n) +
                   " byte matrix (got " + std::to_string(spec.matrix.size()) + " entries)"};
    }
    for (std::int64_t b : spec.matrix) {
      if (b < 0) return Error{"alltoallv: a negative size in the byte matrix"};
    }
  }
  if (spec.root < 0 || spec.root >= comm.size()) {
    return Error{"root " + std::to_string(spec.root) + " is not a rank (0.." +
                 std::to_string(comm.size() - 1) + ")"};
  }
  return true;
}

}  // namespace

Result<CollectiveParams> prepare_collective(const topology::Topology& topo,
                                            const Communicator& comm, const CollectiveSpec& spec,
                                            const CollectiveParams& params,
                                            const fabric::FabricParams& fabric, Choice& choice) {
  if (auto ok = params.validate(); !ok) return ok.error();
  if (spec.bytes < 0) return Error{"collective size must be >= 0 bytes"};
  const CollectiveShape shape =
      CollectiveShape::of(spec.kind, spec.bytes, comm.size(), comm.gpus_per_server);
  if (params.algorithm != "auto") {
    if (auto a = check_algorithm(params.algorithm, shape, params); !a) return a.error();
  }
  if (auto ok = check_spec(comm, spec); !ok) return ok.error();
  // The tuner: a GPU's share of its NIC's RDMA goodput (MTU payloads in frames with headers
  // and gap; GPUs that share a NIC share its goodput).
  const topology::PortId nic_port = comm.gpus[0].nic;
  if (topo.ports[nic_port].link == topology::kNone) return Error{"GPU 0's NIC is not cabled"};
  const DataRate nic_goodput =
      fabric::rdma_goodput(topo.link_rate(topo.ports[nic_port].link), fabric.mtu);
  const DataRate goodput = DataRate::bps(static_cast<std::int64_t>(
      static_cast<double>(nic_goodput.bits_per_second()) * nic_share(comm)));
  choice = choose(spec.kind, spec.bytes, comm.size(), comm.gpus_per_server, params, goodput);
  if (choice.algorithm.empty()) {
    return Error{"the tuner has no algorithm and protocol left for " + kind_name(spec.kind) +
                 " on " + std::to_string(comm.size()) + " GPUs after the exclusions (NCCL_ALGO, " +
                 "NCCL_PROTO)"};
  }
  // coll.p2p's `auto` values, NCCL's for this communicator (its NIC's line rate).
  CollectiveParams chosen =
      resolve_p2p(params, spec.kind, comm.size(),
                  static_cast<int>((comm.gpus.size() + comm.gpus_per_server - 1) /
                                   std::max<std::uint32_t>(comm.gpus_per_server, 1)),
                  topo.link_rate(topo.ports[nic_port].link));
  chosen.algorithm = choice.algorithm;
  chosen.protocol = choice.protocol;
  const CollectiveAlgorithm* a = find_algorithm(chosen.algorithm, spec.kind);
  STEPSIM_CHECK(a != nullptr, "the tuner chose an algorithm that does not run the kind");
  if (auto ok = check_protocol(*a, chosen.protocol); !ok) return ok.error();
  return chosen;
}

Result<CollectiveRun> run_collective(const topology::Topology& topo, const Communicator& comm,
                                     const CollectiveSpec& spec, const CollectiveParams& params,
                                     const nic::NicParams& nic, const fabric::FabricParams& fabric,
                                     pdes::Sync& sync, pdes::EngineOptions engine_options) {
  Choice choice;
  auto prepared = prepare_collective(topo, comm, spec, params, fabric, choice);
  if (!prepared) return prepared.error();
  CollectiveParams chosen = std::move(prepared).value();
  std::unique_ptr<SharpAgent> sharp;
  if (find_algorithm(chosen.algorithm, spec.kind)->support().needs_sharp) {
    auto agent = make_sharp_agent(topo, comm, chosen, fabric);
    if (!agent) return agent.error();
    sharp = std::move(agent).value();
  }
  CollectiveApp app(comm, spec, chosen);
  auto r = nic::run_rdma(topo, app.connections(), nic, fabric, &app, sync,
                         std::move(engine_options), sharp.get());
  if (!r) return r.error();
  CollectiveRun out{app.result(sync), std::move(r).value(), choice, {}, app.connections()};
  if (sharp) out.sharp = sharp->collect(sync);
  return out;
}

}  // namespace stepsim::collective
