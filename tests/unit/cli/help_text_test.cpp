// Every help text that lists an option's choices lists every registered one: a plug-in added to
// a registry must appear in `--help` without anyone editing a string (the texts are built from
// the registries; this fails when one is written by hand again and falls behind).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "src/cli/bench_fabric.hpp"
#include "src/cli/bench_nccl.hpp"
#include "src/cli/bench_nccl_types.hpp"
#include "src/cli/bench_perftest.hpp"
#include "src/cli/bench_phold.hpp"
#include "src/cli/check_command.hpp"
#include "src/cli/choices.hpp"
#include "src/cli/list_command.hpp"
#include "src/cli/run_command.hpp"
#include "stepsim/cc/congestion_control.hpp"
#include "stepsim/collective/collective.hpp"
#include "stepsim/collective/collective_algorithm.hpp"
#include "stepsim/fabric/fabric_params.hpp"
#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/fabric/traffic.hpp"
#include "stepsim/nic/nic_params.hpp"
#include "stepsim/pdes/partition.hpp"
#include "stepsim/topology/generator.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::cli {
namespace {

// The stepsim command tree as cli::run builds it (help texts only; nothing runs).
class Commands {
 public:
  Commands()
      : bench_(app_.add_subcommand("bench")),
        phold_(*bench_),
        fabric_(*bench_),
        perftest_(*bench_),
        nccl_(*bench_),
        check_(app_),
        run_(app_) {}

  // Whether the command line `args` (without "stepsim") parses: its options' checks accept it.
  bool accepts(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    try {
      app_.parse(args);
    } catch (const CLI::ParseError&) {
      return false;
    }
    return true;
  }

  // The help text of `option` of `path` ("bench nccl", "run").
  std::string help(const std::string& path, const std::string& option) const {
    const CLI::App* cmd = &app_;
    std::size_t from = 0;
    while (from < path.size()) {
      const std::size_t to = std::min(path.find(' ', from), path.size());
      cmd = cmd->get_subcommand(path.substr(from, to - from));
      from = to + 1;
    }
    return cmd->get_option(option)->get_description();
  }

 private:
  CLI::App app_;
  CLI::App* bench_;
  BenchPholdCommand phold_;
  BenchFabricCommand fabric_;
  BenchPerftestCommand perftest_;
  BenchNcclCommand nccl_;
  CheckCommand check_;
  RunCommand run_;
};

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether `text` contains `word` as a word ("ll" is not found in "ll128" nor in "all").
bool has_word(const std::string& text, const std::string& word) {
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool starts = at == 0 || !word_char(text[at - 1]);
    const std::size_t end = at + word.size();
    if (starts && (end == text.size() || !word_char(text[end]))) return true;
  }
  return false;
}

// Names of `names` that `text` does not contain as a word.
std::vector<std::string> missing(const std::string& text, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (!has_word(text, n)) out.push_back(n);
  }
  return out;
}

void expect_lists(const Commands& c, const std::string& path, const std::string& option,
                  const std::vector<std::string>& names) {
  ASSERT_FALSE(names.empty()) << "empty registry for " << path << " " << option;
  const std::string text = c.help(path, option);
  EXPECT_EQ(missing(text, names), std::vector<std::string>{})
      << "stepsim " << path << " " << option << ": '" << text << "'";
}

TEST(HelpText, EveryRegisteredNameIsInTheHelpOfEveryOptionThatTakesIt) {
  const Commands c;
  for (const char* path : {"bench fabric", "bench perftest", "bench nccl"}) {
    expect_lists(c, path, "--cc", cc_choices());
    expect_lists(c, path, "--lb", lb_choices());
  }
  for (const char* path : {"bench fabric", "bench perftest"})
    expect_lists(c, path, "--retransmission", retransmission_choices());
  expect_lists(c, "bench fabric", "--pattern", fabric::traffic_patterns());
  expect_lists(c, "run", "--background", background_choices());
  for (const std::string& p : background_choices()) {
    EXPECT_TRUE(has_word(list_words(fabric::traffic_patterns()), p)) << p;
  }
  expect_lists(c, "bench nccl", "--algo", algorithm_choices());
  expect_lists(c, "bench nccl", "--proto", protocol_choices());
  expect_lists(c, "bench nccl", "--gpu", gpu_choices());
  // nccl-tests' data types (with fp8) and ops, and "all" for a sweep of each.
  expect_lists(c, "bench nccl", "--datatype", nccl_datatype_names());
  expect_lists(c, "bench nccl", "--op", nccl_op_names());
  for (const char* option : {"--datatype", "--op"}) expect_lists(c, "bench nccl", option, {"all"});
  for (const char* path : {"bench phold", "bench fabric", "bench nccl", "check", "run"})
    expect_lists(c, path, "--partition", partition_choices());
}

TEST(HelpText, RunFidelityAndGpuModelListTheScenarioTablesChoices) {
  const Commands c;
  workload::Scenario s;
  const config::ParamTable table = workload::scenario_param_table(s);
  const std::vector<std::string> fidelities = table.choices("fidelity");
  ASSERT_GE(fidelities.size(), 4u);
  expect_lists(c, "run", "--fidelity", fidelities);
  const config::Param* gpu = table.find("gpu.model");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(missing(gpu->help, gpu_choices()), std::vector<std::string>{}) << gpu->help;
}

// Each --fidelity help names exactly the fidelities its option accepts, from the scenario
// table's list (a fidelity added there and accepted by a command shows in that command's help).
TEST(HelpText, FidelityHelpNamesExactlyTheAcceptedFidelities) {
  const std::vector<std::string> all = fidelity_choices();
  ASSERT_GE(all.size(), 4u);
  const std::vector<std::vector<std::string>> commands = {{"bench", "fabric", "--topology", "t"},
                                                          {"bench", "perftest", "write_bw"},
                                                          {"bench", "nccl", "allreduce"},
                                                          {"run", "s.yaml"}};
  for (const std::vector<std::string>& args : commands) {
    const std::string path = args[0] == "run" ? "run" : args[0] + " " + args[1];
    const std::string text = Commands().help(path, "--fidelity");
    int accepted = 0;
    for (const std::string& f : all) {
      std::vector<std::string> line = args;
      line.insert(line.end(), {"--fidelity", f});
      const bool ok = Commands().accepts(line);
      accepted += ok ? 1 : 0;
      EXPECT_EQ(has_word(text, f), ok) << "stepsim " << path << " --fidelity " << f << ": " << text;
    }
    EXPECT_GE(accepted, 2) << path;
  }
}

// The output of `stepsim list WHAT` (rank 0's).
std::string help_listing(const std::string& what) {
  CLI::App app;
  ListCommand list(app);
  app.parse(std::vector<std::string>{what, "list"});
  ::testing::internal::CaptureStdout();
  list.execute(0);
  return ::testing::internal::GetCapturedStdout();
}

// `stepsim list` shows every registered part of every registry.
TEST(HelpText, EveryRegisteredPartIsListed) {
  const auto expect_listed = [](const std::string& what, const std::vector<std::string>& names) {
    ASSERT_FALSE(names.empty()) << what;
    EXPECT_EQ(missing(help_listing(what), names), std::vector<std::string>{})
        << "stepsim list " << what;
  };
  expect_listed("topologies", topology_choices());
  expect_listed("partitioners", partition_choices());
  expect_listed("lb", lb_choices());
  expect_listed("cc", cc_choices());
  std::vector<std::string> algorithms;
  for (const collective::CollectiveAlgorithm* a : collective::collective_algorithms()) {
    algorithms.push_back(a->name());
  }
  expect_listed("algorithms", algorithms);
  // And the error for an unknown topology kind names every generator.
  const auto bad = topology::find_generator("torus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(missing(bad.error().message, topology_choices()), std::vector<std::string>{});
}

// A parameter's help (`stepsim list`, --set errors) names every registered choice.
void expect_param_lists(const config::ParamTable& table, const std::string& key,
                        const std::vector<std::string>& names) {
  ASSERT_FALSE(names.empty()) << "empty registry for " << key;
  const config::Param* p = table.find(key);
  ASSERT_NE(p, nullptr) << key;
  EXPECT_EQ(missing(p->help, names), std::vector<std::string>{}) << key << ": '" << p->help << "'";
}

TEST(HelpText, ParameterHelpListsTheRegisteredChoices) {
  nic::NicParams nic;
  const config::ParamTable nics = nic::nic_param_table(nic);
  expect_param_lists(nics, "transport.retransmission", retransmission_choices());
  expect_param_lists(nics, "cc.algorithm", cc_choices());
  fabric::FabricParams fab;
  expect_param_lists(fabric::fabric_param_table(fab), "fabric.lb", lb_choices());
  // The policies that make `auto` selective are those whose registration declares that they
  // reorder, and no other.
  const config::Param* retx = nics.find("transport.retransmission");
  ASSERT_NE(retx, nullptr);
  for (const std::string& lb : lb_choices()) {
    EXPECT_EQ(has_word(retx->help, lb), fabric::lb_reorders(lb)) << lb << ": " << retx->help;
  }
  collective::CollectiveParams coll;
  const config::ParamTable colls = collective::collective_param_table(coll);
  expect_param_lists(colls, "coll.algorithm", algorithm_choices());
  expect_param_lists(colls, "coll.protocol", protocol_choices());
  workload::Scenario scenario;
  const config::ParamTable scenarios = workload::scenario_param_table(scenario);
  expect_param_lists(scenarios, "fidelity", fidelity_choices());
}

TEST(HelpText, AWordIsFoundOnlyWhole) {
  EXPECT_TRUE(has_word("simple, ll or ll128", "ll"));
  EXPECT_FALSE(has_word("simple or ll128 (all)", "ll"));
  EXPECT_TRUE(has_word("ll128", "ll128"));
  EXPECT_FALSE(has_word("nvls_tree", "nvls"));
}

TEST(HelpText, ListWordsJoinsWithCommasAndTheLastWord) {
  EXPECT_EQ(list_words({}), "");
  EXPECT_EQ(list_words({"a"}), "a");
  EXPECT_EQ(list_words({"a", "b"}), "a or b");
  EXPECT_EQ(list_words({"a", "b", "c"}, "and"), "a, b and c");
}

}  // namespace
}  // namespace stepsim::cli
