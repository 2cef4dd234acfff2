// NCCL's environment variables as `bench nccl` reads them: every name NCCL_ALGO / NCCL_PROTO can
// give is one the collective registry runs, NVLS depends on the server count, and an unknown name
// is refused with the list NCCL accepts.
#include "src/cli/nccl_env.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "src/cli/choices.hpp"

namespace stepsim::cli {
namespace {

// read_nccl_env over a fixed environment.
Result<NcclEnv> read_env(int servers, const std::map<std::string, std::string>& vars) {
  return read_nccl_env(servers, [&](const char* var) -> const char* {
    const auto it = vars.find(var);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

bool contains(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

TEST(NcclEnvNames, EveryNcclNameIsARegisteredChoice) {
  const std::vector<std::string> algorithms = algorithm_choices();
  ASSERT_FALSE(nccl_algorithms().empty());
  for (const std::string& a : nccl_algorithms()) EXPECT_TRUE(contains(algorithms, a)) << a;
  const std::vector<std::string> protocols = protocol_choices();
  ASSERT_EQ(nccl_protocols().size(), 3u);
  for (const std::string& p : nccl_protocols()) EXPECT_TRUE(contains(protocols, p)) << p;
}

TEST(NcclEnvNames, NvlsDependsOnTheServersAndCollNetIsSharp) {
  auto one = read_env(1, {{"NCCL_ALGO", "nvls"}});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->algo, "nvls");
  auto two = read_env(2, {{"NCCL_ALGO", "NVLS"}});
  ASSERT_TRUE(two);
  EXPECT_EQ(two->algo, "nvls_sharp");
  for (const char* name : {"CollNet", "collnetdirect", "CollNetChain"}) {
    auto c = read_env(4, {{"NCCL_ALGO", name}});
    ASSERT_TRUE(c) << name;
    EXPECT_EQ(c->algo, "sharp") << name;
  }
  // An exclusion of NVLS takes both of its algorithms away, whatever the server count.
  auto ex = read_env(1, {{"NCCL_ALGO", "^NVLS"}});
  ASSERT_TRUE(ex);
  EXPECT_FALSE(ex->algo.has_value());
  EXPECT_EQ(ex->algo_excluded, (std::vector<std::string>{"nvls", "nvls_sharp"}));
  auto only = read_env(1, {{"NCCL_PROTO", "LL,LL128"}});
  ASSERT_TRUE(only);
  EXPECT_EQ(only->proto_excluded, std::vector<std::string>{"simple"});
}

TEST(NcclEnvNames, AnUnknownNameListsWhatNcclAccepts) {
  auto bad = read_env(1, {{"NCCL_ALGO", "Hypercube"}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "NCCL_ALGO: 'Hypercube' is not allowed (allowed: Ring, Tree, NVLS, NVLSTree, "
            "CollNetDirect or CollNetChain)");
  auto proto = read_env(1, {{"NCCL_PROTO", "LL64"}});
  ASSERT_FALSE(proto);
  EXPECT_NE(proto.error().message.find("(allowed: Simple, LL or LL128"), std::string::npos)
      << proto.error().message;
}

}  // namespace
}  // namespace stepsim::cli
