#pragma once
// One collective on one rank with NICs without congestion control: what the collective tests
// run.

#include <gtest/gtest.h>

#include "stepsim/collective/collective_app.hpp"

namespace stepsim::testing {

inline collective::CollectiveRun run_collective_once(const topology::Topology& topo,
                                                     const collective::Communicator& comm,
                                                     const collective::CollectiveSpec& spec,
                                                     const collective::CollectiveParams& p,
                                                     const fabric::FabricParams& fp,
                                                     SimTime end = SimTime::s(1)) {
  nic::NicParams nic;
  nic.cc.algorithm = "none";
  pdes::SerialSync sync;
  pdes::EngineOptions opt;
  opt.end = end;
  auto r = collective::run_collective(topo, comm, spec, p, nic, fp, sync, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return std::move(r).value();
}

}  // namespace stepsim::testing
