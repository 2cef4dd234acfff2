#include "src/cli/bench_nccl.hpp"

#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/cli/cli.hpp"
#include "src/cli/data_dir.hpp"
#include "src/cli/input_checks.hpp"
#include "src/cli/progress.hpp"
#include "src/cli/report.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/core/hash.hpp"
#include "stepsim/kernels/alpha_beta.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {

BenchNcclCommand::BenchNcclCommand(CLI::App& parent) {
  cmd_ = parent.add_subcommand(
      "nccl",
      "nccl-tests on the simulated GPUs, NVLink, NICs and fabric: one collective per size, "
      "printing size, count, type, time, algbw and busbw as nccl-tests does.");
  cmd_->add_option("collective", kind_,
                   "allreduce, allgather, reducescatter, alltoall, broadcast, reduce or sendrecv")
      ->required()
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast",
                             "reduce", "sendrecv"}));
  cmd_->add_option("--topology", topology_,
                   "Topology file (default: topologies/rail-128gpu-800g.yaml of the data files)");
  cmd_->add_option("-b,--minbytes", min_bytes_,
                   "Smallest size (8, 64K, 1M, 8G as nccl-tests: powers of 1024; or 4KiB, 1GB)")
      ->capture_default_str();
  cmd_->add_option("-e,--maxbytes", max_bytes_, "Largest size")->capture_default_str();
  cmd_->add_option("-f,--stepfactor", factor_, "Size multiplier between sizes")
      ->capture_default_str()
      ->check(finite_range(1.01, 1024.0));
  cmd_->add_option("--gpus", gpus_, "GPUs in the communicator (the first servers' GPUs)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  cmd_->add_option("-r,--root", root_, "Root rank (broadcast, reduce)")->capture_default_str();
  cmd_->add_option(
          "--algo", algo_,
          "Algorithm: ring, tree, nvls, sharp (allreduce) or auto (the tuner: ring or tree; "
          "AllToAll is pairwise)")
      ->capture_default_str();
  cmd_->add_option("--gpu", gpu_, "GPU: a100, h100, h200, b200 (NVLink rate and efficiency)")
      ->capture_default_str();
  cmd_->add_option("--proto", proto_, "Protocol: simple, ll, ll128 or auto (the tuner)")
      ->capture_default_str();
  cmd_->add_option("--channels", channels_, "Channels (rings)")->capture_default_str();
  cmd_->add_option("--cc", cc_, "Congestion control of the NICs: none, dcqcn, hpcc")
      ->capture_default_str();
  cmd_->add_option("--lb", lb_, "Load balancing: ecmp, flowlet, adaptive, spray")
      ->capture_default_str();
  fidelity_.add(cmd_, {"packet", "cell", "analytical"});
  cmd_->add_option("--nic-config", nic_config_, "YAML file of NIC/transport/CC parameters");
  cmd_->add_option("--set", sets_,
                   "Override a parameter, key=value (coll.*, gpu.*, nic.*, transport.*, cc.*; "
                   "repeatable)");
  cmd_->add_option("--end", end_, "Simulated time limit per size")->capture_default_str();
  cmd_->add_option("--threads", threads_, "OpenMP threads per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd_->add_option("--partition", partition_,
                   "Partitioner of LPs onto ranks: metis (weighted by the collective's traffic) "
                   "or block")
      ->capture_default_str();
  cmd_->add_option("--json", json_path_, "Also write the results as JSON to this file");
  cmd_->add_flag("--quiet", quiet_, "No progress output");
  for (CLI::Option* opt : cmd_->get_options()) {
    if (opt->get_name() != "--set") opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

int BenchNcclCommand::execute(int rank, int ranks) {
  std::vector<OutputFile> outputs;
  add_output(outputs, *cmd_, "--json", json_path_);
  if (auto ok = check_outputs_once(outputs, {topology_, nic_config_}, rank); !ok)
    return user_error(rank, ok.error().message);
  auto kind = collective::parse_kind(kind_);
  if (!kind) return user_error(rank, kind.error().message);
  auto lo = parse_nccl_size(min_bytes_);
  if (!lo) return user_error(rank, "--minbytes: " + lo.error().message);
  auto hi = parse_nccl_size(max_bytes_);
  if (!hi) return user_error(rank, "--maxbytes: " + hi.error().message);
  if (lo->count() < 0 || hi->count() < lo->count()) {
    return user_error(rank, "--minbytes/--maxbytes: need 0 <= minbytes <= maxbytes");
  }
  auto end = parse_time(end_);
  if (!end) return user_error(rank, "--end: " + end.error().message);
  collective::CollectiveParams cp;
  nic::NicParams nic;
  const config::ParamTable coll_table = collective::collective_param_table(cp);
  const config::ParamTable nic_table = nic::nic_param_table(nic);
  if (!nic_config_.empty()) {
    if (auto ok = nic_table.load_yaml_file(nic_config_); !ok) {
      return user_error(rank, ok.error().message);
    }
  }
  const std::pair<const char*, const char*> shorthands[] = {{"--gpu", "gpu.model"},
                                                            {"--algo", "coll.algorithm"},
                                                            {"--proto", "coll.protocol"},
                                                            {"--channels", "coll.channels"}};
  for (const auto& [option, key] : shorthands) {
    if (auto ok = coll_table.set(key, cmd_->get_option(option)->as<std::string>()); !ok) {
      return user_error(rank, std::string(option) + ": " + ok.error().message);
    }
  }
  if (cmd_->count("--cc") > 0 || nic_config_.empty()) {
    if (auto ok = nic_table.set("cc.algorithm", cc_); !ok) {
      return user_error(rank, "--cc: " + ok.error().message);
    }
  }
  for (const std::string& kv : sets_) {
    const bool coll = kv.rfind("coll.", 0) == 0 || kv.rfind("gpu.", 0) == 0;
    auto ok = coll ? coll_table.apply(kv) : nic_table.apply(kv);
    if (!ok) return user_error(rank, "--set " + ok.error().message);
  }
  if (auto ok = cp.validate(); !ok) return user_error(rank, ok.error().message);
  if (auto ok = nic.validate(); !ok) return user_error(rank, ok.error().message);
  fabric::FabricParams fp;
  fp.lb.policy = lb_;
  if (auto ok = fidelity_.apply(fp); !ok) return user_error(rank, ok.error().message);
  if (topology_.empty()) topology_ = data_dir() + "/topologies/rail-128gpu-800g.yaml";
  auto topo = topology::load_topology(topology_);
  if (!topo) return user_error(rank, topo.error().message);
  if (auto ok = check_fabric_memory(*topo, ranks); !ok) return user_error(rank, ok.error().message);
  auto comm = collective::make_communicator(*topo, gpus_);
  if (!comm) return user_error(rank, comm.error().message);
  if (root_ < 0 || root_ >= gpus_) {
    return user_error(rank, "--root " + std::to_string(root_) + " is not a rank (0.." +
                                std::to_string(gpus_ - 1) + ")");
  }

  std::vector<std::int64_t> sizes;
  for (double s = static_cast<double>(lo->count());
       s <= static_cast<double>(hi->count()) * 1.0000001; s *= factor_) {
    // nccl-tests rounds sizes to whole elements of 4 bytes (float) and, for rank-split
    // collectives, to a multiple of the ranks.
    std::int64_t b = static_cast<std::int64_t>(s) / 4 * 4;
    const bool split = *kind != collective::Kind::kAllReduce &&
                       *kind != collective::Kind::kBroadcast &&
                       *kind != collective::Kind::kReduce && *kind != collective::Kind::kSendRecv;
    if (split) b = b / (4 * gpus_) * 4 * gpus_;
    if (sizes.empty() || b != sizes.back()) sizes.push_back(b);
    if (s <= 0) break;
  }
  if (auto p = pdes::make_partitioner(partition_); !p) {
    return user_error(rank, "--partition: " + p.error().message);
  }
  pdes::MpiSync sync;
  pdes::EngineOptions opts =
      bench_engine_options(threads_, *end, !quiet_ && sizes.size() == 1, rank);
  opts.partitioner = partition_;
  const bool rooted = *kind == collective::Kind::kBroadcast || *kind == collective::Kind::kReduce;
  const bool tuned = cp.algorithm == "auto" || cp.protocol == "auto";
  const std::string fidelity_text = fidelity_.describe(fp);
  // Analytical: every size's alpha-beta bound at once (kernels::alpha_beta), no engine run.
  std::vector<double> bound_s;
  if (fidelity_.fidelity == "analytical") {
    const fabric::Routing routing(*topo);
    std::vector<kernels::AlphaBeta> in;
    for (std::int64_t b : sizes) {
      in.push_back(collective::analytical_bound(*topo, routing, *comm, *kind, b, cp, fp));
    }
    bound_s.resize(in.size());
    kernels::alpha_beta(in, bound_s);
  }
  if (rank == 0) {
    std::printf(
        "# stepsim bench nccl %s: %d GPUs %s (%u per server) on %s, algo %s, proto %s, "
        "channels %d, cc %s, lb %s, fidelity %s\n",
        kind_.c_str(), gpus_, cp.gpu.c_str(), comm->gpus_per_server, topo->name.c_str(),
        *kind == collective::Kind::kAllToAll || *kind == collective::Kind::kSendRecv
            ? "pairwise"
            : cp.algorithm.c_str(),
        cp.protocol.c_str(), cp.channels, nic.cc.algorithm.c_str(), lb_.c_str(),
        fidelity_text.c_str());
    std::printf("#\n# %10s %12s %8s %6s %6s %10s %8s %8s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw");
    std::printf("# %10s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)");
  }
  std::uint64_t digest = 0;
  double busbw_sum = 0;
  bool completed = true;
  int stalled = 0;  // sizes whose collective never finished on every GPU
  double wall = 0;
  std::uint64_t events = 0;
  nic::EngineTally engine;  // summed over the sizes
  nlohmann::json rows = nlohmann::json::array();
  // nccl-tests' columns of one size (the line is left open for extras).
  auto print_row = [&](std::int64_t bytes, double t_us, double algbw, double busbw) {
    std::printf("  %10lld %12lld %8s %6s %6d %10.2f %8.2f %8.2f", static_cast<long long>(bytes),
                static_cast<long long>(bytes / 4), "float",
                *kind == collective::Kind::kAllGather || *kind == collective::Kind::kAllToAll ||
                        *kind == collective::Kind::kBroadcast ||
                        *kind == collective::Kind::kSendRecv
                    ? "none"
                    : "sum",
                rooted ? root_ : -1, t_us, algbw, busbw);
  };
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::int64_t bytes = sizes[i];
    if (!bound_s.empty()) {
      const double algbw = static_cast<double>(bytes) / bound_s[i] / 1e9;
      const double busbw = algbw * collective::busbw_factor(*kind, gpus_);
      busbw_sum += busbw;
      digest = hash_combine(digest, static_cast<std::uint64_t>(std::llround(bound_s[i] * 1e12)));
      if (rank == 0) {
        print_row(bytes, bound_s[i] * 1e6, algbw, busbw);
        std::printf("\n");
        rows.push_back({{"bytes", bytes},
                        {"time_us", bound_s[i] * 1e6},
                        {"algbw_gbs", algbw},
                        {"busbw_gbs", busbw},
                        {"complete", true}});
      }
      continue;
    }
    collective::CollectiveSpec spec;
    spec.kind = *kind;
    spec.bytes = bytes;
    spec.root = root_;
    auto r = collective::run_collective(*topo, *comm, spec, cp, nic, fp, sync, opts);
    if (!r) return user_error(rank, r.error().message);
    digest = hash_combine(digest, r->rdma.stats.digest);
    for (std::int64_t t : r->result.gpu_done_ps)
      digest = hash_combine(digest, static_cast<std::uint64_t>(t));
    wall += r->rdma.stats.wall_s;
    events += r->rdma.stats.events;
    engine.add(nic::EngineTally::of(r->rdma));
    completed = completed && r->rdma.stats.completed;
    // The engine ran dry but a GPU never finished: packets were lost where nothing resends them
    // (SHARP's in-network packets) or a QP failed.
    stalled += r->rdma.stats.completed && !r->result.complete() ? 1 : 0;
    const double t_us = static_cast<double>(r->result.time_ps) * 1e-6;
    const double algbw = r->result.algbw_gbs(bytes);
    const double busbw = algbw * collective::busbw_factor(*kind, gpus_);
    busbw_sum += busbw;
    if (rank == 0) {
      print_row(bytes, t_us, algbw, busbw);
      // With the tuner, which algorithm and protocol ran (beyond nccl-tests' columns).
      if (tuned) {
        std::printf("  %s/%s", r->choice.algorithm.c_str(), r->choice.protocol.c_str());
      }
      std::printf("\n");
      rows.push_back({{"bytes", bytes},
                      {"time_us", t_us},
                      {"algbw_gbs", algbw},
                      {"busbw_gbs", busbw},
                      {"network_bytes", r->result.network_bytes},
                      {"nvlink_bytes", r->result.nvlink_bytes},
                      {"drops", r->rdma.summary.drops()},
                      {"complete", r->result.complete()},
                      {"algorithm", r->choice.algorithm},
                      {"protocol", r->choice.protocol}});
    }
    if (!r->rdma.stats.completed) break;
  }
  finish_progress();
  if (rank != 0) return !completed ? interrupted_exit_code() : stalled > 0 ? kExitFailure : kExitOk;
  if (!completed) std::printf("# status: INTERRUPTED\n");
  if (stalled > 0) {
    std::printf(
        "# status: INCOMPLETE (%d of %zu sizes: a collective never finished on every GPU; see the "
        "drop counters of --json)\n",
        stalled, sizes.size());
  }
  std::printf("# Avg bus bandwidth    : %g\n#\n", busbw_sum / static_cast<double>(sizes.size()));
  std::printf("# engine: ranks %d, %" PRIu64 " events in %.3f s (%.2f M/s)\n", ranks, events, wall,
              wall > 0 ? static_cast<double>(events) / wall / 1e6 : 0.0);
  if (events > 0) print_partition("partition " + partition_, engine);
  std::printf("digest           %s\n", digest_hex(digest).c_str());
  if (!json_path_.empty()) {
    nlohmann::json j;
    j["benchmark"] = "nccl";
    j["collective"] = kind_;
    j["gpus"] = gpus_;
    j["topology"] = topo->name;
    j["protocol"] = cp.protocol;
    j["channels"] = cp.channels;
    j["fidelity"] = fidelity_.fidelity;
    j["cell_bytes"] = fp.cell.count();
    j["rows"] = rows;
    j["wall_s"] = wall;
    j["events"] = events;
    j["engine"] = engine_json(partition_, ranks, engine);
    j["digest"] = digest_hex(digest);
    if (const int rc = write_json(rank, json_path_, j); rc != kExitOk) return rc;
  }
  if (!completed) return interrupted_exit_code();
  return stalled > 0 ? kExitFailure : kExitOk;
}

}  // namespace stepsim::cli
