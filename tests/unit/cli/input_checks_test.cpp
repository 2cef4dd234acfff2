#include "src/cli/input_checks.hpp"

#include "src/cli/bench_output.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "stepsim/fabric/fabric_model.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/routing.hpp"
#include "stepsim/topology/topology_loader.hpp"

namespace stepsim::cli {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

topology::Topology load(const std::string& name) {
  return topology::load_topology(std::string(STEPSIM_SOURCE_DIR) + "/topologies/" + name).value();
}

TEST(InputChecks, FiniteRangeRejectsNanInfinityAndOutOfRange) {
  const CLI::Validator v = finite_range(0.0, 1.0);
  for (std::string bad : {"nan", "NaN", "inf", "-inf", "-1", "1.5", "x"}) {
    EXPECT_NE(v(bad), "") << bad;
  }
  for (std::string good : {"0", "0.5", "1", "1e-9"}) EXPECT_EQ(v(good), "") << good;
}

TEST(InputChecks, RangedOptionsNameTheOptionAndRange) {
  const auto t = time_option("--switch-delay", "5000000s", SimTime::zero(), SimTime::ms(1));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "--switch-delay: '5000000s' is out of range (0ps..1ms)");
  const auto b = bytes_option("--mtu", "40000TB", 1, 1 << 20);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, "--mtu: '40000TB' is out of range (1..1048576 bytes)");
  EXPECT_EQ(bytes_option("--mtu", "4KiB", 1, 1 << 20).value().count(), 4096);
}

// Issue 15: `bench nccl -e 9999999999G` wrapped to a negative size.
TEST(InputChecks, NcclSizesOverflowCleanly) {
  EXPECT_EQ(parse_binary_size("8G").value(), 8LL << 30);
  EXPECT_EQ(parse_binary_size("1K").value(), 1024);
  EXPECT_EQ(parse_binary_size("8GiB").value(), 8LL << 30);
  EXPECT_EQ(parse_binary_size("4294967296G").value(), 4294967296LL << 30);
  for (const char* text : {"9999999999G", "4294967297G", "99999999999999999999K"}) {
    const auto r = parse_binary_size(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(has(r.error().message, "out of range")) << r.error().message;
  }
}

// Generated size strings: nccl-tests suffixes and stepsim units, digits of any length. Never a
// crash, never a negative size, and an accepted value equals its digits times the unit.
TEST(InputChecks, GeneratedSizeSuffixesNeverWrap) {
  const char* suffixes[] = {"K", "M", "G", "k", "m", "g", "", "B", "KiB", "GiB", "TB", "X", "GG"};
  std::mt19937_64 rng(42);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string digits;
    const int n = 1 + static_cast<int>(rng() % 22);
    for (int d = 0; d < n; ++d) digits += static_cast<char>('0' + rng() % 10);
    const std::string suffix = suffixes[rng() % std::size(suffixes)];
    const std::string text = digits + suffix;
    Result<std::int64_t> r = Error{""};
    ASSERT_NO_THROW(r = parse_binary_size(text)) << text;
    if (!r) {
      EXPECT_FALSE(r.error().message.empty());
      continue;
    }
    ++accepted;
    ASSERT_GE(*r, 0) << text;
    const long double mult = suffix == "K" || suffix == "k"   ? 1024.0L
                             : suffix == "M" || suffix == "m" ? 1048576.0L
                             : suffix == "G" || suffix == "g" ? 1073741824.0L
                             : suffix == "KiB"                ? 1024.0L
                             : suffix == "GiB"                ? 1073741824.0L
                             : suffix == "TB"                 ? 1e12L
                                                              : 1.0L;
    const long double want = std::stold(digits) * mult;
    EXPECT_NEAR(static_cast<double>(static_cast<long double>(*r) / std::max(want, 1.0L)),
                want == 0 ? 0.0 : 1.0, 1e-12)
        << text;
  }
  EXPECT_GT(accepted, 3000);
}

TEST(InputChecks, OutputsAreCheckedBeforeTheRun) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "stepsim-input-checks";
  fs::create_directories(dir);
  const std::string in = (dir / "scenario.yaml").string();
  std::ofstream(in) << "model: {}\n";
  const std::string out = (dir / "out.h5").string();
  EXPECT_TRUE(check_outputs({{"-o", out}, {"--json", (dir / "o.json").string()}}, {in}).ok());
  EXPECT_FALSE(fs::exists(out));  // created and removed again
  auto same = check_outputs({{"-o", out}, {"--json", out}}, {in});
  ASSERT_FALSE(same.ok());
  EXPECT_TRUE(has(same.error().message, "--json and -o name the same file"));
  auto input = check_outputs({{"-o", in}}, {in});
  ASSERT_FALSE(input.ok());
  EXPECT_TRUE(has(input.error().message, "is the input file"));
  EXPECT_EQ(std::ifstream(in).get(), 'm');  // not truncated
  EXPECT_FALSE(check_outputs({{"-o", ""}}, {}).ok());
  auto d = check_outputs({{"--trace", dir.string()}}, {});
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(has(d.error().message, "is a directory"));
  auto missing = check_outputs({{"--json", (dir / "no" / "x.json").string()}}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(has(missing.error().message, "--json: cannot write"));
  fs::remove_all(dir);
}

// The estimate's per-LP figures are those `stepsim check` measures: never below the model's
// own count, and within a factor of two of it, on shipped topologies of each kind.
TEST(InputChecks, MemoryEstimateBoundsTheMeasuredFootprint) {
  for (const char* name : {"fat-tree-k8.yaml", "rail-128gpu-800g.yaml", "dragonfly-small.yaml"}) {
    const topology::Topology topo = load(name);
    const fabric::Routing routing(topo);
    const fabric::FabricParams defaults;
    fabric::FabricModel model(topo, routing, {}, defaults);
    std::vector<pdes::LpId> all(topo.nodes.size());
    for (pdes::LpId v = 0; v < all.size(); ++v) all[v] = v;
    model.setup(all);
    double lp_bytes = 0;
    for (const pdes::LpId v : all) lp_bytes += static_cast<double>(model.lp_memory_bytes(v));
    const MemoryEstimate e = estimate_fabric_memory(topo);
    EXPECT_GE(e.lp_bytes, lp_bytes) << name;
    EXPECT_LE(e.lp_bytes, 2 * lp_bytes) << name;
    EXPECT_GE(e.replicated_bytes, static_cast<double>(routing.memory_bytes())) << name;
  }
}

TEST(InputChecks, MemoryBeyondTheMachineIsRefusedWithTheEstimate) {
  auto r = check_memory(1e18, "a test");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.error().message, "too large: a test needs about")) << r.error().message;
  EXPECT_TRUE(check_memory(1024, "a test").ok());
}

TEST(InputChecks, GpuListsAscendOnceAndNameWhatIsWrong) {
  std::vector<bool> allowed(16, true);
  allowed[10] = false;  // e.g. a GPU of no job
  const auto ok = gpu_list_option("--trace-gpus", "9,0-3,2,15", allowed, "GPUs 0..15");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, (std::vector<std::uint32_t>{0, 1, 2, 3, 9, 15}));
  for (const char* bad : {"", "0-", "-3", "3-1", "0,,1", "a", "1-2-3", "0x1", "1234567890"}) {
    const auto r = gpu_list_option("--trace-gpus", bad, allowed, "GPUs 0..15");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(has(r.error().message, "is not a list of GPUs")) << r.error().message;
  }
  const auto out = gpu_list_option("--trace-gpus", "14-20", allowed, "GPUs 0..15");
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(has(out.error().message, "GPU 16 of '14-20' is not one the step runs (GPUs 0..15)"))
      << out.error().message;
  const auto hole = gpu_list_option("--trace-gpus", "8-11", allowed, "GPUs 0..15");
  ASSERT_FALSE(hole.ok());
  EXPECT_TRUE(has(hole.error().message, "GPU 10 of")) << hole.error().message;
}

}  // namespace
}  // namespace stepsim::cli
