#include "src/cli/cli.hpp"

#include <sched.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "src/cli/bench_fabric.hpp"
#include "src/cli/bench_nccl.hpp"
#include "src/cli/bench_perftest.hpp"
#include "src/cli/bench_phold.hpp"
#include "src/cli/check_command.hpp"
#include "src/cli/headroom_command.hpp"
#include "src/cli/list_command.hpp"
#include "src/cli/plan_command.hpp"
#include "src/cli/run_command.hpp"
#include "stepsim/output/step_h5.hpp"
#include "stepsim/pdes/engine.hpp"
#include "stepsim/pdes/mpi_sync.hpp"
#include "stepsim/version.hpp"

namespace stepsim::cli {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  pdes::Engine::request_stop();
}

// After an unknown or missing subcommand (a typo, say): what the innermost command given
// offers, naming the word that is not one of them.
void print_subcommands(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr &&
      dynamic_cast<const CLI::RequiredError*>(&e) == nullptr) {
    return;
  }
  CLI::App* at = &app;
  int word = 1;  // argv index after the innermost command's name
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands()) {
      at = sub;
      deeper = true;
      for (int i = word; i < argc; ++i) {
        if (sub->check_name(argv[i])) {
          word = i + 1;
          break;
        }
      }
      break;
    }
  }
  std::string names;
  for (const CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (names.empty()) return;
  const std::string path = at == &app ? std::string("stepsim") : "stepsim " + at->get_name();
  if (word < argc && argv[word][0] != '-') {
    std::fprintf(stderr, "%s: '%s' is not a subcommand; the subcommands are: %s\n", path.c_str(),
                 argv[word], names.c_str());
  } else {
    std::fprintf(stderr, "%s subcommands: %s\n", path.c_str(), names.c_str());
  }
}

}  // namespace

int user_error(int rank, const std::string& message) {
  if (rank == 0) {
    std::fprintf(stderr, "stepsim: error: %s\n", message.c_str());
    std::fflush(stderr);
  }
  return kExitUserError;
}

void warn_if_threads_exceed_cpus(int threads, int rank) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (threads <= 1 || sched_getaffinity(0, sizeof set, &set) != 0) return;
  const int cpus = CPU_COUNT(&set);
  if (cpus < threads && rank == 0) {
    std::fprintf(stderr,
                 "stepsim: warning: %d threads per rank but rank 0 may only run on %d CPU(s); "
                 "mpirun binds each rank to one core by default: add --bind-to none or "
                 "--map-by slot:PE=%d\n",
                 threads, cpus, threads);
  }
}

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

int interrupted_exit_code() {
  return g_signal != 0 ? 128 + g_signal : kExitFailure;
}

int run(int argc, char** argv, pdes::MpiSession& mpi) {
  const int rank = mpi.rank();  // the launcher's, until MPI starts
  CLI::App app{"stepsim: parallel discrete-event simulator of one training step of an AI cluster",
               "stepsim"};
  app.set_version_flag("--version", std::string("stepsim ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough(false);

  CLI::App* bench = app.add_subcommand("bench", "Micro-benchmarks: phold, fabric, perftest, nccl");
  bench->require_subcommand(1);
  BenchPholdCommand phold(*bench);
  BenchFabricCommand fabric(*bench);
  BenchPerftestCommand perftest(*bench);
  BenchNcclCommand nccl(*bench);
  HeadroomCommand headroom(app);
  CheckCommand check(app);
  ListCommand list(app);
  PlanCommand plan_cmd(app);
  RunCommand run_cmd(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parsed the same arguments; rank 0 alone speaks.
    if (rank == 0) {
      const int code = app.exit(e);
      if (code != 0) print_subcommands(app, e, argc, argv);
      return code == 0 ? kExitOk : kExitUserError;
    }
    return e.get_exit_code() == 0 ? kExitOk : kExitUserError;
  }
  if (headroom.selected()) return headroom.execute(rank);
  if (check.selected()) return check.execute(rank, mpi.size());
  if (list.selected()) return list.execute(rank);
  if (auto transport = pdes::sync_transport_from_environment(); !transport) {
    return user_error(rank, transport.error().message);
  }
  output::init_hdf5();  // before MPI: src/output/step_h5.cpp says why
  if (mpi.launched()) mpi.start();
  const int ranks = mpi.size();
  if (phold.selected()) return phold.execute(mpi.rank(), ranks);
  if (fabric.selected()) return fabric.execute(mpi.rank(), ranks);
  if (perftest.selected()) return perftest.execute(mpi.rank(), ranks);
  if (nccl.selected()) return nccl.execute(mpi.rank(), ranks);
  if (plan_cmd.selected()) return plan_cmd.execute(mpi.rank(), ranks);
  if (run_cmd.selected()) return run_cmd.execute(mpi.rank(), ranks);
  return kExitUserError;
}

}  // namespace stepsim::cli
