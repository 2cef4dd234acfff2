#include "src/cli/list_command.hpp"

#include <cstdio>

#include "src/cli/cli.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/topology/topology_spec.hpp"

namespace stepsim::cli {
namespace {

void list_topologies() {
  std::printf("Topology kinds (YAML `topology.kind`). Every kind also takes: ");
  const auto& common = topology::common_topology_keys();
  for (std::size_t i = 0; i < common.size(); ++i) {
    std::printf("%s%s", i == 0 ? "" : ", ", common[i].c_str());
  }
  std::printf(" (docs/topology.md).\n");
  for (const std::string& kind : topology::generator_names()) {
    const topology::Generator& g = *topology::find_generator(kind).value();
    std::printf("\n%s: %s\n  parameter                default    range           meaning\n",
                kind.c_str(), g.description().c_str());
    for (const topology::ParamSpec& p : g.params()) {
      const std::string def = p.default_value ? std::to_string(*p.default_value)
                              : p.required()  ? "required"
                                              : "derived";
      const std::string range = std::to_string(p.min) + ".." + std::to_string(p.max);
      std::printf("  %-24s %-10s %-15s %s%s%s\n", p.name.c_str(), def.c_str(), range.c_str(),
                  p.description.c_str(), p.derived_default.empty() ? "" : "; default ",
                  p.derived_default.c_str());
    }
    std::printf("  link class (topology.cables.<class>)  default cable\n");
    for (const topology::LinkClassSpec& c : g.link_classes()) {
      std::printf("  %-24s %-6s %-8s %s\n", c.name.c_str(), topology::to_string(c.cable),
                  to_string(c.length).c_str(), c.description.c_str());
    }
  }
}

void list_load_balancers() {
  const fabric::LbParams d;
  std::printf("Load-balancing policies (`stepsim bench fabric --lb`):\n");
  for (const std::string& name : fabric::load_balancer_names()) std::printf("  %s\n", name.c_str());
  std::printf(
      "parameters: flowlet timeout %s (--flowlet-timeout), flowlet table %u entries, "
      "ECMP seed per switch: %s\n",
      to_string(d.flowlet_timeout).c_str(), d.flowlet_table, d.per_switch_seed ? "yes" : "no");
}

void list_fabric() {
  const fabric::FabricParams d;
  std::printf("Fabric parameters and their defaults (docs/fabric.md):\n");
  std::printf("  switch buffer        %s shared per switch, lossy dynamic threshold alpha %g\n",
              to_string(d.sw.buffer).c_str(), d.sw.dt_alpha);
  std::printf("  switch latency       %s, %s\n", to_string(d.sw.latency).c_str(),
              d.sw.cut_through ? "cut-through" : "store-and-forward");
  std::printf("  ECN (RED)            Kmin %s, Kmax %s, Pmax %g\n", to_string(d.ecn.kmin).c_str(),
              to_string(d.ecn.kmax).c_str(), d.ecn.pmax);
  std::printf("  PFC                  priority %u, XOFF %s, XON %s, headroom %s\n",
              static_cast<unsigned>(d.pfc.priority), to_string(d.pfc.xoff).c_str(),
              to_string(d.pfc.xon).c_str(),
              d.pfc.headroom.count() > 0 ? to_string(d.pfc.headroom).c_str() : "computed per port");
  std::printf("  packets              MTU %s payload, FEC %s, routing %s\n",
              to_string(d.mtu).c_str(), d.fec ? "KP4 RS(544,514)" : "off", d.routing.c_str());
}

void list_cc() {
  const cc::CcParams d;
  std::printf("Congestion-control algorithms (`stepsim bench perftest --cc`, docs/nic.md):\n");
  for (const std::string& name : cc::congestion_control_names())
    std::printf("  %s\n", name.c_str());
  const cc::DcqcnParams& q = d.dcqcn;
  std::printf(
      "dcqcn (Zhu et al. 2015): g %g, alpha timer %s, increase timer %s, byte counter %lld B, "
      "fast recovery %d rounds, R_AI %s, R_HAI %s, min rate %s, CNP interval %s\n",
      q.g, to_string(q.alpha_timer).c_str(), to_string(q.increase_timer).c_str(),
      static_cast<long long>(q.byte_counter), q.fast_recovery_rounds, to_string(q.rate_ai).c_str(),
      to_string(q.rate_hai).c_str(), to_string(q.min_rate).c_str(),
      to_string(q.cnp_interval).c_str());
  const cc::HpccParams& h = d.hpcc;
  std::printf(
      "hpcc (Li et al. 2019): eta %g, max stage %d, R_AI %s, base RTT %s (0: per QP from the "
      "path)\n",
      h.eta, h.max_stage,
      h.rate_ai.bits_per_second() > 0 ? to_string(h.rate_ai).c_str() : "line rate / 2000",
      to_string(h.base_rtt).c_str());
  std::printf("none: line rate (PFC alone keeps the fabric lossless)\n");
}

void list_nic() {
  const nic::NicParams d;
  std::printf("NIC parameters and their defaults (docs/nic.md):\n");
  std::printf("  clock                %.2f MHz (%s per cycle)\n", d.clock_mhz,
              to_string(d.cycles(1)).c_str());
  const auto stage = [&](const char* name, const nic::StageParams& s, const char* note) {
    std::printf("  %-20s latency %s, %d cycles on %d unit(s)%s\n", name,
                to_string(s.latency).c_str(), s.cycles, s.units, note);
  };
  stage("doorbell", d.doorbell, " (+ PCIe doorbell)");
  stage("context lookup", d.ctx_lookup, " (+ PCIe read on a miss)");
  stage("WQE fetch", d.wqe_fetch, " (+ PCIe read unless prefetched or inline)");
  stage("packet generation", d.pkt_gen, "");
  stage("payload DMA", d.dma, " (+ memory read latency and PCIe bandwidth)");
  stage("MAC", d.mac_tx, "");
  stage("receive", d.rx, " (+ PCIe write of the payload)");
  std::printf("  post_send            %s\n", to_string(d.post_overhead).c_str());
  std::printf("  PCIe                 %s; doorbell %s, read %s, DMA read %s, write %s\n",
              d.pcie.auto_size ? "auto (Gen5 x16, Gen6 x16 or x32 by port rate)"
                               : nic::describe(d.pcie).c_str(),
              to_string(d.pcie.doorbell).c_str(), to_string(d.pcie.read_latency).c_str(),
              to_string(d.pcie.dma_read_latency).c_str(), to_string(d.pcie.write_latency).c_str());
  std::printf("  caches               QP context %s / %s, translation %d entries of %s\n",
              to_string(d.qp_cache).c_str(), to_string(d.qp_context).c_str(), d.mtt_entries,
              to_string(d.page).c_str());
  std::printf("  queues               %d send pipeline slots, WQE prefetch %d, CQ depth %d\n",
              d.tx_slots, d.wqe_prefetch, d.cq_depth);
  std::printf(
      "  transport            %s, RTO %s, retry count %d, ACK every %d packets, NAK threshold "
      "%d, window %d PSNs\n",
      nic::retransmission_name(d.retransmission).c_str(), to_string(d.rto).c_str(), d.retry_count,
      d.ack_coalesce, d.nak_threshold, d.sr_window);
}

}  // namespace

ListCommand::ListCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand("list",
                               "List a registry: topologies (generators, parameters, "
                               "link classes), partitioners, lb (load-balancing policies), "
                               "fabric (fabric parameters and defaults), cc (congestion "
                               "control) or nic (NIC parameters and defaults)");
  cmd_->add_option("what", what_, "What to list")
      ->required()
      ->check(CLI::IsMember({"topologies", "partitioners", "lb", "fabric", "cc", "nic"}));
}

int ListCommand::execute(int rank) {
  if (rank != 0) return kExitOk;
  if (what_ == "topologies") {
    list_topologies();
  } else if (what_ == "lb") {
    list_load_balancers();
  } else if (what_ == "fabric") {
    list_fabric();
  } else if (what_ == "cc") {
    list_cc();
  } else if (what_ == "nic") {
    list_nic();
  } else {
    for (const std::string& name : pdes::partitioner_names()) std::printf("%s\n", name.c_str());
  }
  return kExitOk;
}

}  // namespace stepsim::cli
