// Several collectives at once over the same NICs and fabric (see run_collectives in
// collective_app.hpp): one RDMA application that holds a CollectiveApp per collective and
// translates between their endpoint and timer numbers and the NICs' shared ones.
#include <algorithm>
#include <memory>

#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::collective {

namespace {

class MultiApp;

// The verbs one collective sees: its own endpoint numbers, and timers that come back to it.
class AppVerbs final : public nic::Verbs {
 public:
  AppVerbs(nic::Verbs& v, MultiApp& m, std::uint32_t app) : v_(v), m_(m), app_(app) {}
  [[nodiscard]] SimTime now() const override { return v_.now(); }
  [[nodiscard]] topology::NodeId server() const override { return v_.server(); }
  bool post(std::uint32_t endpoint, const nic::WorkRequest& wr) override;
  std::size_t poll_cq(std::uint32_t endpoint, std::span<nic::Completion> out) override;
  [[nodiscard]] nic::QpState state(std::uint32_t endpoint) const override;
  void schedule(SimTime delay, const nic::AppTimer& timer) override;
  void send_in_network(topology::PortId nic, const fabric::Packet& pkt) override {
    v_.send_in_network(nic, pkt);
  }

 private:
  nic::Verbs& v_;
  MultiApp& m_;
  std::uint32_t app_;
};

class MultiApp final : public nic::RdmaApp {
 public:
  MultiApp(const std::vector<Communicator>& comms, const std::vector<CollectiveSpec>& specs,
           const std::vector<CollectiveParams>& params) {
    for (std::size_t a = 0; a < comms.size(); ++a) {
      apps_.push_back(std::make_unique<CollectiveApp>(comms[a], specs[a], params[a]));
      base_.push_back(static_cast<std::uint32_t>(2 * conns_.size()));
      const auto& c = apps_.back()->connections();
      conns_.insert(conns_.end(), c.begin(), c.end());
    }
  }
  [[nodiscard]] const std::vector<nic::Connection>& connections() const { return conns_; }
  [[nodiscard]] const CollectiveApp& app(std::size_t a) const { return *apps_[a]; }
  [[nodiscard]] std::uint32_t base(std::uint32_t app) const { return base_[app]; }

  void on_start(nic::Verbs& v) override {
    for (std::uint32_t a = 0; a < apps_.size(); ++a) {
      AppVerbs av(v, *this, a);
      apps_[a]->on_start(av);
    }
  }
  void on_cq(nic::Verbs& v, std::uint32_t endpoint) override {
    const auto it = std::upper_bound(base_.begin(), base_.end(), endpoint);
    const auto a = static_cast<std::uint32_t>(it - base_.begin() - 1);
    AppVerbs av(v, *this, a);
    apps_[a]->on_cq(av, endpoint - base_[a]);
  }
  void on_timer(nic::Verbs& v, const nic::AppTimer& timer) override {
    AppVerbs av(v, *this, timer.host);
    apps_[timer.host]->on_timer(av, timer);
  }
  void on_in_network(nic::Verbs& /*v*/, topology::PortId /*nic*/,
                     const fabric::Packet& /*pkt*/) override {
    fatal("collective: in-network packets with concurrent collectives (SHARP is not supported)");
  }

 private:
  std::vector<std::unique_ptr<CollectiveApp>> apps_;
  std::vector<std::uint32_t> base_;  // by collective: its first endpoint
  std::vector<nic::Connection> conns_;
};

bool AppVerbs::post(std::uint32_t endpoint, const nic::WorkRequest& wr) {
  return v_.post(endpoint + m_.base(app_), wr);
}
std::size_t AppVerbs::poll_cq(std::uint32_t endpoint, std::span<nic::Completion> out) {
  const std::size_t k = v_.poll_cq(endpoint + m_.base(app_), out);
  for (std::size_t i = 0; i < k; ++i) out[i].endpoint -= m_.base(app_);
  return k;
}
nic::QpState AppVerbs::state(std::uint32_t endpoint) const {
  return v_.state(endpoint + m_.base(app_));
}
void AppVerbs::schedule(SimTime delay, const nic::AppTimer& timer) {
  nic::AppTimer mine = timer;
  mine.host = app_;  // the collective's timer comes back to it
  v_.schedule(delay, mine);
}

}  // namespace

Result<MultiRun> run_collectives(const topology::Topology& topo,
                                 const std::vector<Communicator>& comms,
                                 const std::vector<CollectiveSpec>& specs,
                                 const CollectiveParams& params, const nic::NicParams& nic,
                                 const fabric::FabricParams& fabric, pdes::Sync& sync,
                                 pdes::EngineOptions engine_options) {
  STEPSIM_CHECK(comms.size() == specs.size() && !comms.empty(), "run_collectives: one spec each");
  std::vector<CollectiveParams> chosen;
  for (std::size_t a = 0; a < comms.size(); ++a) {
    Choice choice;
    auto p = prepare_collective(topo, comms[a], specs[a], params, fabric, choice);
    if (!p) return p.error();
    if (!runs_concurrently(*p, specs[a].kind)) {
      return Error{"coll.algorithm: " + p->algorithm +
                   " is not supported with concurrent collectives"};
    }
    chosen.push_back(std::move(p).value());
  }
  MultiApp app(comms, specs, chosen);
  auto r =
      nic::run_rdma(topo, app.connections(), nic, fabric, &app, sync, std::move(engine_options));
  if (!r) return r.error();
  MultiRun out;
  for (std::size_t a = 0; a < comms.size(); ++a) out.results.push_back(app.app(a).result(sync));
  out.rdma = std::move(r).value();
  out.connections = app.connections();
  return out;
}

}  // namespace stepsim::collective
