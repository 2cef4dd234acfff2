#pragma once
// What `bench nccl` holds between parsing and printing: the parsed setup, one size's row and the
// totals (src/cli/bench_nccl.cpp runs them, src/cli/bench_nccl_print.cpp prints them), and
// nccl-tests' data types and reduction ops.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cli/bench_nccl.hpp"
#include "src/cli/nccl_env.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/collective_app.hpp"
#include "stepsim/nic/rdma_run.hpp"

namespace stepsim::cli {

/// nccl-tests' data types (-d, its names) and their element sizes.
struct NcclDataType {
  const char* name;
  int bytes;
};
inline constexpr std::array<NcclDataType, 12> kNcclDataTypes{{{"int8", 1},
                                                              {"uint8", 1},
                                                              {"int32", 4},
                                                              {"uint32", 4},
                                                              {"int64", 8},
                                                              {"uint64", 8},
                                                              {"half", 2},
                                                              {"float", 4},
                                                              {"double", 8},
                                                              {"bfloat16", 2},
                                                              {"f8e4m3", 1},
                                                              {"f8e5m2", 1}}};
/// nccl-tests' reduction ops (-o).
inline constexpr std::array<const char*, 6> kNcclOps{
    {"sum", "prod", "max", "min", "avg", "mulsum"}};

std::vector<std::string> nccl_datatype_names();
std::vector<std::string> nccl_op_names();

[[nodiscard]] inline bool reduces(collective::Kind k) {
  using collective::Kind;
  return k == Kind::kAllReduce || k == Kind::kReduceScatter || k == Kind::kReduce;
}
[[nodiscard]] inline bool rooted(collective::Kind k) {
  using collective::Kind;
  return k == Kind::kBroadcast || k == Kind::kReduce;
}
/// The collectives whose buffers are split across the ranks: their sizes are a multiple of the
/// ranks and nccl-tests' count column is the per-rank count.
[[nodiscard]] inline bool split(collective::Kind k) {
  using collective::Kind;
  return k == Kind::kAllGather || k == Kind::kReduceScatter || k == Kind::kAllToAll;
}

/// One size's outcome, printed as nccl-tests' row.
struct BenchNcclCommand::Row {
  std::int64_t bytes = 0;
  double time_us = 0;
  double algbw = 0;
  double busbw = 0;
  int unfinished = 0;      ///< GPUs that never finished the last iteration
  std::int64_t wrong = 0;  ///< elements that never arrived (unfinished GPUs x count)
  std::string choice;      ///< "algorithm/protocol" that ran (the tuner's, or the forced one)
};

/// One sweep of the sizes: nccl-tests runs one per data type and op (-d all, -o all).
struct NcclSweep {
  std::string type;
  int elem = 4;
  std::string op;
  std::vector<std::int64_t> sizes;
};

struct BenchNcclCommand::Setup {
  collective::Kind kind = collective::Kind::kAllReduce;
  collective::CollectiveParams cp;
  nic::NicParams nic;
  fabric::FabricParams fp;
  topology::Topology topo;
  collective::Communicator comm;
  NcclEnv env;
  std::vector<std::string> notes;  ///< "# note: ..." lines of the header (flags not modelled)
  int gpus = 16;
  int procs = 1;  ///< nccl-tests' processes (--np)
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::int64_t step = 0;
  std::vector<NcclSweep> sweeps;
  SimTime end;
  bool iterate = false;  ///< -n, -w or -m given: warm-up and timed iterations in one run
  int warmup = 0;        ///< iterations simulated before the timed ones (-w, when iterating)
  int timed = 1;         ///< timed iterations (-n x -m; 1 without -n/-w/-m)
  [[nodiscard]] std::int64_t count(std::int64_t bytes, int elem) const {
    return split(kind) ? bytes / elem / gpus : bytes / elem;
  }
};

struct BenchNcclCommand::Totals {
  std::uint64_t digest = 0;
  double busbw_sum = 0;
  std::size_t rows = 0;
  int wrong_rows = 0;
  bool completed = true;
  bool stalled = false;
  double wall = 0;
  std::uint64_t events = 0;
  nic::EngineTally engine;
  std::vector<std::string> tuner;  ///< "size algorithm/protocol", one per size simulated
  nlohmann::json rows_json = nlohmann::json::array();
};

}  // namespace stepsim::cli
