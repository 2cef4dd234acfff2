// GoogleTest main for tests that run under mpiexec: MPI set up once, output from rank 0 only.
// Tests reduce their checks over ranks before asserting, so every rank passes or fails together.
#include <gtest/gtest.h>

#include "stepsim/pdes/mpi_sync.hpp"

int main(int argc, char** argv) {
  stepsim::pdes::MpiSession mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}
