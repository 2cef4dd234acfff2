#pragma once
// The stepsim command line: subcommands, user-error reporting (exit 2, printed once) and
// progress output. Private to the executable and its tests.

#include <string>

namespace stepsim::pdes {
class MpiSession;
}

namespace stepsim::cli {

/// Exit codes meaningful to a scheduler.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;    ///< the run finished but a check failed
inline constexpr int kExitUserError = 2;  ///< bad command line or input file

/// Runs the stepsim command line on this rank; returns the exit code. MPI starts (mpi.start())
/// only for the commands that simulate (run, bench ...) and only when a launcher started this
/// process: `--version`, `--help`, `list`, `check`, `headroom` and a process started on its own
/// never initialise MPI (a singleton MPI_Init costs Open MPI about 0.35 s); a lone process runs
/// the one-rank path (SerialSync, HDF5 through the POSIX driver).
int run(int argc, char** argv, pdes::MpiSession& mpi);

}  // namespace stepsim::cli

namespace stepsim::cli {

/// Prints "stepsim: error: <message>" once (on rank 0) and returns kExitUserError.
int user_error(int rank, const std::string& message);

/// Warns (rank 0) when this rank's CPU affinity has fewer CPUs than OpenMP threads requested.
void warn_if_threads_exceed_cpus(int threads, int rank);

/// Installs SIGINT/SIGTERM handlers that ask the engine to stop at the next window boundary.
void install_stop_handlers();
/// Exit code for a run stopped by a signal (128 + signal number), or kExitFailure.
int interrupted_exit_code();

}  // namespace stepsim::cli
