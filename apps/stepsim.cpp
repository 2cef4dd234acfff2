// The stepsim executable: MPI session around the command line.
#include "src/cli/cli.hpp"
#include "stepsim/pdes/mpi_sync.hpp"

int main(int argc, char** argv) {
  stepsim::pdes::MpiSession mpi(&argc, &argv);
  return stepsim::cli::run(argc, argv, mpi.rank(), mpi.size());
}
