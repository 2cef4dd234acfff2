// The stepsim executable: MPI session around the command line, started by the commands that
// need it.
#include "src/cli/cli.hpp"
#include "stepsim/pdes/mpi_sync.hpp"

int main(int argc, char** argv) {
  stepsim::pdes::MpiSession mpi(&argc, &argv, stepsim::pdes::MpiSession::Start::lazy);
  return stepsim::cli::run(argc, argv, mpi);
}
