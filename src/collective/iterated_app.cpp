// One collective repeated back to back in one simulation (see iterations.hpp): an RDMA
// application that holds a CollectiveApp per iteration over one set of connections, tags every
// message with its iteration (immediate data on the receiver's side, wr_id on the sender's),
// routes completions and timers to their iteration, and starts a server's next iteration when its
// GPUs have finished the previous one.
#include "stepsim/collective/iterations.hpp"

#include <array>
#include <memory>

#include "stepsim/collective/algorithm_run.hpp"
#include "stepsim/core/fatal.hpp"
#include "stepsim/pdes/stat_reduce.hpp"

namespace stepsim::collective {

namespace {

// The verbs one iteration sees: its posts tagged, its timers coming back to it, and (poll_cq)
// the completions the application routed to it.
class IterationVerbs final : public nic::Verbs {
 public:
  IterationVerbs(nic::Verbs& v, std::uint32_t k) : v_(v), k_(k) {}
  [[nodiscard]] SimTime now() const override { return v_.now(); }
  [[nodiscard]] topology::NodeId server() const override { return v_.server(); }
  bool post(std::uint32_t endpoint, const nic::WorkRequest& wr) override {
    nic::WorkRequest tagged = wr;
    tagged.imm = k_;
    tagged.wr_id = k_;
    return v_.post(endpoint, tagged);
  }
  std::size_t poll_cq(std::uint32_t /*endpoint*/, std::span<nic::Completion> out) override {
    std::size_t k = 0;
    for (; k < out.size() && next_ < pending_.size(); ++k) {
      out[k] = pending_[next_++];
      // What the iteration posted: no immediate, wr_id 0 (the receiver's wr_id is the NIC's).
      out[k].imm = 0;
      if (!out[k].recv) out[k].wr_id = 0;
    }
    return k;
  }
  [[nodiscard]] nic::QpState state(std::uint32_t endpoint) const override {
    return v_.state(endpoint);
  }
  void schedule(SimTime delay, const nic::AppTimer& timer) override;
  void send_in_network(topology::PortId nic, const fabric::Packet& pkt) override {
    v_.send_in_network(nic, pkt);
  }
  /// The completions the next on_cq polls.
  void deliver(std::span<const nic::Completion> c) {
    pending_ = c;
    next_ = 0;
  }

 private:
  nic::Verbs& v_;
  std::uint32_t k_;
  std::span<const nic::Completion> pending_;
  std::size_t next_ = 0;
};

// The iteration a completion belongs to.
std::uint32_t iteration_of(const nic::Completion& c) {
  return c.recv ? c.imm : static_cast<std::uint32_t>(c.wr_id);
}

class IteratedApp final : public nic::RdmaApp {
 public:
  IteratedApp(const Communicator& comm, const CollectiveSpec& spec, const CollectiveParams& params,
              int iterations, std::size_t nodes)
      : comm_(comm) {
    for (int k = 0; k < iterations; ++k) {
      apps_.push_back(std::make_unique<CollectiveApp>(comm, spec, params));
      const auto& c = apps_.back()->connections();
      const auto& first = apps_.front()->connections();
      STEPSIM_CHECK(c.size() == first.size(), "iterations: different connections");
      for (std::size_t i = 0; i < c.size(); ++i) {
        STEPSIM_CHECK(
            c[i].a == first[i].a && c[i].b == first[i].b && c[i].entropy == first[i].entropy,
            "iterations: different connections");
      }
    }
    servers_.resize(nodes);
    for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(comm.size()); ++g) {
      servers_[comm.gpus[g].server].members.push_back(g);
    }
    for (Server& s : servers_) s.start_ps.assign(apps_.size(), -1);
  }
  [[nodiscard]] const std::vector<nic::Connection>& connections() const {
    return apps_.front()->connections();
  }
  [[nodiscard]] const CollectiveApp& app(std::size_t k) const { return *apps_[k]; }

  void on_start(nic::Verbs& v) override {
    launch(v, 0);
    advance(v);
  }

  void on_cq(nic::Verbs& v, std::uint32_t endpoint) override {
    Server& s = servers_[v.server()];
    s.polled.clear();
    std::array<nic::Completion, 16> wc;
    std::size_t n;
    while ((n = v.poll_cq(endpoint, wc)) > 0)
      s.polled.insert(s.polled.end(), wc.begin(), wc.begin() + n);
    // Runs of one iteration's completions, in order; those of an iteration this server has not
    // started wait for it.
    std::size_t i = 0;
    while (i < s.polled.size()) {
      const std::uint32_t k = iteration_of(s.polled[i]);
      STEPSIM_CHECK(k < apps_.size(), "iterations: a completion of no iteration");
      std::size_t j = i + 1;
      while (j < s.polled.size() && iteration_of(s.polled[j]) == k) ++j;
      if (k < s.begun) {
        IterationVerbs iv(v, k);
        iv.deliver({s.polled.data() + i, j - i});
        apps_[k]->on_cq(iv, endpoint);
      } else {
        s.held.insert(s.held.end(), s.polled.begin() + static_cast<std::ptrdiff_t>(i),
                      s.polled.begin() + static_cast<std::ptrdiff_t>(j));
      }
      i = j;
    }
    advance(v);
  }

  void on_timer(nic::Verbs& v, const nic::AppTimer& timer) override {
    Server& s = servers_[v.server()];
    const std::uint32_t k = timer.host;
    IterationVerbs iv(v, k);
    apps_[k]->on_timer(iv, timer);
    if (timer.tag == kStartTag) {
      STEPSIM_CHECK(k == s.begun, "iterations: started out of order");
      s.begun = k + 1;
      release(v, k);
    }
    advance(v);
  }

  void on_in_network(nic::Verbs& /*v*/, topology::PortId /*nic*/,
                     const fabric::Packet& /*pkt*/) override {
    fatal("collective: in-network packets in repeated collectives (SHARP is not supported)");
  }

  /// By iteration and GPU: when the iteration started on the GPU's server, where this rank runs
  /// the server (else -1).
  [[nodiscard]] std::vector<std::int64_t> local_starts(std::size_t k) const {
    std::vector<std::int64_t> out;
    for (const Gpu& g : comm_.gpus) out.push_back(servers_[g.server].start_ps[k]);
    return out;
  }

 private:
  struct Server {
    std::vector<std::uint32_t> members;  // communicator ranks on this server
    std::uint32_t launched = 0;          // iterations whose on_start ran here
    std::uint32_t begun = 0;             // iterations whose run started here (base latency)
    std::vector<std::int64_t> start_ps;  // by iteration
    std::vector<nic::Completion> held;   // of iterations not begun here, in arrival order
    std::vector<nic::Completion> polled;
    std::vector<nic::Completion> batch;
  };

  void launch(nic::Verbs& v, std::uint32_t k) {
    Server& s = servers_[v.server()];
    s.launched = k + 1;
    s.start_ps[k] = v.now().picoseconds();
    IterationVerbs iv(v, k);
    apps_[k]->on_start(iv);
  }

  // The next iteration starts once this server's GPUs have finished the last one.
  void advance(nic::Verbs& v) {
    Server& s = servers_[v.server()];
    while (!s.members.empty() && s.launched < apps_.size()) {
      const CollectiveApp& last = *apps_[s.launched - 1];
      for (std::uint32_t g : s.members) {
        if (!last.gpu_done(g)) return;
      }
      launch(v, s.launched);
    }
  }

  // Hands the completions held for iteration `k` to it, endpoint by endpoint in arrival order.
  void release(nic::Verbs& v, std::uint32_t k) {
    Server& s = servers_[v.server()];
    if (s.held.empty()) return;
    s.batch.clear();
    std::size_t keep = 0;
    for (const nic::Completion& c : s.held) {
      if (iteration_of(c) == k) {
        s.batch.push_back(c);
      } else {
        s.held[keep++] = c;
      }
    }
    s.held.resize(keep);
    std::size_t i = 0;
    while (i < s.batch.size()) {
      std::size_t j = i + 1;
      while (j < s.batch.size() && s.batch[j].endpoint == s.batch[i].endpoint) ++j;
      IterationVerbs iv(v, k);
      iv.deliver({s.batch.data() + i, j - i});
      apps_[k]->on_cq(iv, s.batch[i].endpoint);
      i = j;
    }
  }

  const Communicator& comm_;
  std::vector<std::unique_ptr<CollectiveApp>> apps_;
  std::vector<Server> servers_;  // by node id
};

void IterationVerbs::schedule(SimTime delay, const nic::AppTimer& timer) {
  nic::AppTimer mine = timer;
  mine.host = k_;  // the iteration's timer comes back to it
  v_.schedule(delay, mine);
}

}  // namespace

Result<IteratedRun> run_collective_iterations(
    const topology::Topology& topo, const Communicator& comm, const CollectiveSpec& spec,
    const CollectiveParams& params, const nic::NicParams& nic, const fabric::FabricParams& fabric,
    int iterations, pdes::Sync& sync, pdes::EngineOptions engine_options) {
  STEPSIM_CHECK(iterations >= 1, "run_collective_iterations: at least one iteration");
  IteratedRun out;
  auto prepared = prepare_collective(topo, comm, spec, params, fabric, out.choice);
  if (!prepared) return prepared.error();
  const CollectiveParams chosen = std::move(prepared).value();
  if (find_algorithm(chosen.algorithm, spec.kind)->support().needs_sharp) {
    return Error{"coll.algorithm: " + chosen.algorithm +
                 " runs one iteration only (its switches hold one collective's state): drop "
                 "-n/-w/-m"};
  }
  IteratedApp app(comm, spec, chosen, iterations, topo.nodes.size());
  auto r =
      nic::run_rdma(topo, app.connections(), nic, fabric, &app, sync, std::move(engine_options));
  if (!r) return r.error();
  out.rdma = std::move(r).value();
  for (std::size_t k = 0; k < static_cast<std::size_t>(iterations); ++k) {
    out.results.push_back(app.app(k).result(sync));
    // Each server's start lives on its rank (-1 elsewhere).
    std::vector<std::int64_t> starts = app.local_starts(k);
    stat::gather_earliest(sync, starts);
    out.started_ps.push_back(std::move(starts));
  }
  return out;
}

}  // namespace stepsim::collective
