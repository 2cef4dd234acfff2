// Scenario loading: where a relative topology path points (the scenario's directory, or the
// current directory for a `--set topology=` that exists there).
#include "stepsim/workload/scenario.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::workload {
namespace {

namespace fs = std::filesystem;

// A scenario <root>/workloads/s.yaml naming t.yaml; the test runs from <root>/run, which holds a
// t.yaml and a mine.yaml, and restores the working directory afterwards.
class ScenarioTopologyPath : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test: ctest runs the cases in parallel processes.
    root_ = fs::path(::testing::TempDir()) /
            (std::string("scenario_topology_path.") +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "workloads");
    fs::create_directories(root_ / "run");
    scenario_ = (root_ / "workloads" / "s.yaml").string();
    std::ofstream(scenario_) << "topology: t.yaml\n";
    std::ofstream(root_ / "run" / "t.yaml") << "topology: {}\n";
    std::ofstream(root_ / "run" / "mine.yaml") << "topology: {}\n";
    saved_ = fs::current_path();
    fs::current_path(root_ / "run");
  }
  void TearDown() override {
    fs::current_path(saved_);
    fs::remove_all(root_);
  }
  std::string topology_with(const std::vector<std::string>& sets) {
    auto s = load_scenario(scenario_, sets);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? s.value().topology : std::string();
  }
  fs::path root_;
  std::string scenario_;
  fs::path saved_;
};

TEST_F(ScenarioTopologyPath, TheScenariosOwnIsRelativeToTheScenarioFile) {
  // Even with a t.yaml in the current directory, and with other keys set.
  EXPECT_EQ(topology_with({}), (root_ / "workloads" / "t.yaml").string());
  EXPECT_EQ(topology_with({"fidelity=ideal"}), (root_ / "workloads" / "t.yaml").string());
}

TEST_F(ScenarioTopologyPath, SetNamingAFileHereIsTakenFromTheCurrentDirectory) {
  EXPECT_EQ(topology_with({"topology=mine.yaml"}), "mine.yaml");
}

TEST_F(ScenarioTopologyPath, SetNamingNoFileHereIsRelativeToTheScenarioFile) {
  EXPECT_EQ(topology_with({"topology=../topologies/other.yaml"}),
            (root_ / "topologies" / "other.yaml").string());
}

TEST_F(ScenarioTopologyPath, AbsolutePathsStayAsGiven) {
  const std::string abs = (root_ / "elsewhere.yaml").string();
  EXPECT_EQ(topology_with({"topology=" + abs}), abs);
}

// Bounds of the parallel sizes and the schedule (issue 15).
const std::string kTiny = std::string(STEPSIM_SOURCE_DIR) + "/workloads/tiny.yaml";

std::string validate_error(const std::vector<std::string>& sets) {
  auto s = load_scenario(kTiny, sets);
  if (!s) return s.error().message;
  auto topo = topology::load_topology(s->topology);
  EXPECT_TRUE(topo.ok());
  auto ok = validate(*s, *topo);
  return ok ? std::string() : ok.error().message;
}

TEST(Scenario, TheTinyScenarioIsValid) {
  EXPECT_EQ(validate_error({}), "");
}

// Issue 15: tp x pp = 2^32 wrapped int to 0 (a divide-by-zero signal).
TEST(Scenario, ParallelSizesWhoseProductOverflowsAreAUserError) {
  const std::string e = validate_error({"parallel.tp=65536", "parallel.pp=65536"});
  EXPECT_NE(e.find("tp x pp x cp x dp = 8589934592 GPUs, more than 16777216"), std::string::npos)
      << e;
  const std::string g = validate_error(
      {"parallel.tp=65536", "parallel.pp=65536", "parallel.dp=0", "parallel.gpus=16777216"});
  EXPECT_NE(g.find("more than 16777216"), std::string::npos) << g;
  const std::string c = validate_error({"parallel.cp=65536", "parallel.pp=65536"});
  EXPECT_NE(c.find("GPUs, more than"), std::string::npos) << c;
}

// Issue 15: global_batch 2^31 threw std::length_error, 2^40 reported MFU 2e13 %.
TEST(Scenario, MicroBatchesBeyondTheScheduleBoundAreAUserError) {
  for (const char* gb : {"2147483648", "1099511627776", "8388608"}) {
    const std::string e = validate_error({std::string("parallel.global_batch=") + gb});
    EXPECT_NE(e.find("parallel.global_batch (" + std::string(gb) + ") gives"), std::string::npos)
        << e;
    EXPECT_NE(e.find("pipeline passes"), std::string::npos) << e;
  }
  // Up to the bound it is fine: 2 x 2097152 passes with pp 2 and micro_batch x dp = 2.
  EXPECT_EQ(validate_error({"parallel.global_batch=4194304"}), "");
}

// Several jobs (`jobs:`): each starts from the top-level keys (after --set), its own keys
// override them, its GPU count sets parallel.gpus and the data-parallel size.
TEST(ScenarioJobs, JobsInheritTheTopLevelKeysAndTakeTheirSizeFromTheirGpus) {
  const std::string path = ::testing::TempDir() + "scenario_jobs_inherit.yaml";
  std::ofstream(path) << "model: {name: m, layers: 4, hidden: 512, heads: 8, ffn: 2048, "
                         "vocab: 1000, seq_len: 128}\n"
                         "parallel: {tp: 1, pp: 2, dp: 3, global_batch: 8}\n"
                         "topology: t.yaml\n"
                         "jobs:\n"
                         "  - gpus: 0-3\n"
                         "  - name: big\n"
                         "    gpus: 8-11,4-7\n"
                         "    model: {hidden: 1024}\n"
                         "    parallel: {pp: 1}\n";
  auto s = load_scenario(path, {"parallel.tp=2"});
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->jobs.size(), 2u);
  const JobSpec& a = s->jobs[0];
  const JobSpec& b = s->jobs[1];
  EXPECT_EQ(a.name, "job0");
  EXPECT_EQ(a.gpus, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(a.model.hidden, 512);
  EXPECT_EQ(a.par.tp, 2);  // --set applies before the jobs inherit
  EXPECT_EQ(a.par.pp, 2);
  EXPECT_EQ(a.par.data_parallel(), 1);  // 4 GPUs / (tp 2 x pp 2): the top-level dp 3 is not a job's
  EXPECT_EQ(b.name, "big");
  EXPECT_EQ(b.gpus, (std::vector<std::uint32_t>{8, 9, 10, 11, 4, 5, 6, 7}));
  EXPECT_EQ(b.model.hidden, 1024);
  EXPECT_EQ(b.model.layers, 4);
  EXPECT_EQ(b.par.data_parallel(), 4);
  const Scenario jb = job_scenario(*s, 1);
  EXPECT_EQ(jb.model.hidden, 1024);
  EXPECT_EQ(jb.par.world(), 8);
  EXPECT_TRUE(jb.jobs.empty());
}

TEST(ScenarioJobs, BadJobsAreUserErrorsNamingTheKey) {
  auto error = [](const std::string& name, const std::string& jobs) {
    const std::string path = ::testing::TempDir() + "scenario_jobs_" + name + ".yaml";
    std::ofstream(path) << "topology: t.yaml\njobs:\n" << jobs;
    auto s = load_scenario(path, {});
    return s ? std::string() : s.error().message;
  };
  EXPECT_NE(error("dup", "  - {name: x, gpus: 0-1}\n  - {name: x, gpus: 2-3}\n")
                .find("jobs[1].name: 'x' is taken"),
            std::string::npos);
  EXPECT_NE(error("overlap", "  - {gpus: 0-3}\n  - {gpus: 3}\n")
                .find("jobs[1].gpus (3) overlaps jobs[0].gpus at GPU 3"),
            std::string::npos);
  EXPECT_NE(error("range", "  - {gpus: 3-1}\n").find("is not a list of GPU ranges"),
            std::string::npos);
  EXPECT_NE(error("key", "  - {gpus: 0, nic: {x: 1}}\n").find("jobs[0].nic: not a job key"),
            std::string::npos);
  EXPECT_NE(
      error("deep", "  - {gpus: 0, parallel: {tq: 1}}\n").find("jobs[0].parallel.tq: unknown key"),
      std::string::npos);
  EXPECT_NE(error("list", "  gpus: 0\n").find("jobs: expected a list of jobs"), std::string::npos);
  EXPECT_NE(error("count", "  - {gpus: 0-3, parallel: {gpus: 8}}\n")
                .find("jobs[0].parallel.gpus (8) must equal the 4 GPUs of jobs[0].gpus"),
            std::string::npos);
}

// --set jobs.NAME.KEY=VALUE (or jobs.K.KEY, jobs[K].KEY) sets one job's key after its own keys;
// the other jobs and the top-level keys keep theirs.
TEST(ScenarioJobs, SetAddressesOneJobByNameOrIndex) {
  const std::string path = ::testing::TempDir() + "scenario_jobs_set.yaml";
  std::ofstream(path) << "model: {name: m, layers: 4, hidden: 512, heads: 8, ffn: 2048, "
                         "vocab: 1000, seq_len: 128}\n"
                         "parallel: {tp: 1, pp: 2, global_batch: 8}\n"
                         "topology: t.yaml\n"
                         "jobs:\n"
                         "  - {name: a, gpus: 0-7}\n"
                         "  - {name: b, gpus: 8-15, parallel: {pp: 4}}\n"
                         "  - {name: c.x, gpus: 16-23}\n";
  auto s = load_scenario(path, {"jobs.b.gpus=8-11", "jobs.b.parallel.dp=2", "jobs.b.parallel.pp=2",
                                "jobs.0.model.hidden=1024", "jobs[2].compute.gemm_model=flat",
                                "jobs.c.x.model.name=dotted", "parallel.tp=1"});
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->jobs.size(), 3u);
  const JobSpec& a = s->jobs[0];
  const JobSpec& b = s->jobs[1];
  const JobSpec& c = s->jobs[2];
  EXPECT_EQ(b.gpus, (std::vector<std::uint32_t>{8, 9, 10, 11}));
  EXPECT_EQ(b.gpus_text, "8-11");
  EXPECT_EQ(b.par.pp, 2);  // the --set wins over the job's own pp: 4
  EXPECT_EQ(b.par.data_parallel(), 2);
  EXPECT_EQ(b.model.hidden, 512);
  EXPECT_EQ(a.model.hidden, 1024);  // by index
  EXPECT_EQ(a.par.data_parallel(), 4);
  EXPECT_EQ(a.compute.gemm_model, "tiles");
  EXPECT_EQ(c.compute.gemm_model, "flat");  // jobs[K], as the error messages name it
  EXPECT_EQ(c.model.name, "dotted");        // a name with a dot
  EXPECT_EQ(s->model.hidden, 512);          // the top level keeps its own
}

TEST(ScenarioJobs, BadJobSetsAreUserErrorsNamingSetTheKeyAndWhatIsAllowed) {
  const std::string path = ::testing::TempDir() + "scenario_jobs_badset.yaml";
  std::ofstream(path) << "model: {name: m, layers: 4, hidden: 512, heads: 8, ffn: 2048, "
                         "vocab: 1000, seq_len: 128}\n"
                         "parallel: {tp: 1, pp: 2, global_batch: 8}\n"
                         "topology: t.yaml\n"
                         "jobs:\n"
                         "  - {name: a, gpus: 0-7}\n"
                         "  - {name: b, gpus: 8-15}\n";
  auto error = [&](const std::string& kv) {
    auto s = load_scenario(path, {kv});
    return s ? std::string() : s.error().message;
  };
  EXPECT_EQ(error("jobs.c.parallel.dp=2"),
            "--set jobs.c.parallel.dp: no job 'c' (jobs: a, b; or by index, 0..1)");
  EXPECT_EQ(error("jobs.2.parallel.dp=2"),
            "--set jobs.2.parallel.dp: no job '2' (jobs: a, b; or by index, 0..1)");
  EXPECT_NE(error("jobs.b.parallel.tq=2")
                .find("--set jobs.b.parallel.tq: unknown key (allowed: parallel.tp, parallel.pp"),
            std::string::npos);
  EXPECT_NE(error("jobs.b.fabric.lb=spray")
                .find("--set jobs.b.fabric.lb: not a job key (allowed: name, gpus, model.*, "
                      "parallel.*, compute.*; every other key is the scenario's, shared by all "
                      "jobs: --set fabric.lb=VALUE)"),
            std::string::npos);
  EXPECT_EQ(error("jobs.b.parallel.dp=x"),
            "--set jobs.b.parallel.dp: 'x' is not a number (allowed: 0..16777216)");
  EXPECT_EQ(
      error("jobs.b.parallel.recompute=some"),
      "--set jobs.b.parallel.recompute: 'some' is not allowed (allowed: none, selective, full)");
  EXPECT_EQ(error("jobs.b.gpus=8-x"),
            "--set jobs.b.gpus: '8-x' is not a list of GPU ranges (e.g. 0-63 or 0-7,16-23)");
  EXPECT_NE(error("jobs.b=1").find("--set jobs.b: expected jobs.NAME.KEY=VALUE (jobs: a, b"),
            std::string::npos);
  EXPECT_NE(error("jobs.b.model.layers").find("is not key=value"), std::string::npos);
  // A scenario without jobs:
  const std::string one = ::testing::TempDir() + "scenario_jobs_none.yaml";
  std::ofstream(one) << "topology: t.yaml\n";
  auto s = load_scenario(one, {"jobs.a.parallel.dp=2"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("--set jobs.a.parallel.dp: " + one + " lists no jobs"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace stepsim::workload
