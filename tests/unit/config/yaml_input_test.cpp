#include "stepsim/config/yaml_input.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "stepsim/config/param_table.hpp"
#include "stepsim/topology/topology_loader.hpp"
#include "stepsim/workload/scenario.hpp"

namespace stepsim::config {
namespace {

std::string error_of(const std::string& text) {
  auto r = parse_yaml_document(text, "f.yaml");
  return r ? std::string() : r.error().message;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(YamlInput, ASelfReferencingAliasIsACycleNotAStackOverflow) {
  const std::string e = error_of("model: &m\n  name: x\n  self: *m\n");
  EXPECT_TRUE(has(e, "f.yaml:")) << e;
  EXPECT_TRUE(has(e, "cycle")) << e;
  // An alias used outside its anchor is fine.
  EXPECT_EQ(error_of("a: &x {b: 1}\nc: *x\n"), "");
}

TEST(YamlInput, DuplicateKeysAtAnyDepthNameBothLines) {
  EXPECT_EQ(error_of("model:\n  layers: 2\nmodel:\n  hidden: 4\n"),
            "f.yaml:3: key 'model' given twice in the same map (first at line 1)");
  EXPECT_TRUE(has(error_of("a:\n  b: 1\n  c: 2\n  b: 3\n"), "f.yaml:4: key 'b' given twice"));
  EXPECT_EQ(error_of("a:\n  b: 1\nc:\n  b: 1\n"), "");  // the same key in two maps
}

TEST(YamlInput, ASecondDocumentIsAnError) {
  EXPECT_TRUE(has(error_of("a: 1\n---\nb: 2\n"), "second YAML document"));
  EXPECT_EQ(error_of("---\na: 1\n"), "");  // a leading marker is one document
}

TEST(YamlInput, SyntaxErrorsNameLineAndColumn) {
  const std::string e = error_of("model:\n  name: \"tiny\n  layers: 2\n");
  EXPECT_TRUE(has(e, "f.yaml:")) << e;
  EXPECT_TRUE(has(e, "YAML syntax error")) << e;
}

TEST(YamlInput, NulBytesAreRejectedWithTheirLineNotPrinted) {
  const std::string text = std::string("a: 1\nb: x") + '\0' + "y\n";
  const std::string e = error_of(text);
  EXPECT_EQ(e, "f.yaml:2: contains a NUL byte (not a text file)");
  EXPECT_EQ(e.find('\0'), std::string::npos);
}

TEST(YamlInput, DeepNestingIsBounded) {
  std::string deep;
  for (int i = 0; i < kMaxYamlDepth + 5; ++i) deep += "[";
  for (int i = 0; i < kMaxYamlDepth + 5; ++i) deep += "]";
  EXPECT_TRUE(has(error_of(deep), "nested more than"));
}

TEST(YamlInput, ReadInputFileNamesDirectoriesMissingFilesAndEndlessDevices) {
  const auto dir = std::filesystem::temp_directory_path();
  auto d = read_input_file(dir.string(), "scenario file");
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(has(d.error().message, "is a directory")) << d.error().message;
  EXPECT_TRUE(has(d.error().message, "scenario file")) << d.error().message;
  auto m = read_input_file((dir / "no-such-stepsim-file.yaml").string(), "topology file");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(has(m.error().message, "no such file")) << m.error().message;
  if (std::filesystem::exists("/dev/zero")) {
    auto z = read_input_file("/dev/zero", "scenario file");
    ASSERT_FALSE(z.ok());
    EXPECT_TRUE(has(z.error().message, "NUL byte")) << z.error().message;
  }
  EXPECT_FALSE(read_input_file("", "scenario file").ok());
}

TEST(YamlInput, ScenarioAndTopologyLoadersUseTheChecks) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto path = dir / "stepsim-yaml-input-dup.yaml";
  {
    std::ofstream out(path);
    out << "model:\n  layers: 2\nmodel:\n  layers: 3\ntopology: x.yaml\n";
  }
  auto s = workload::load_scenario(path.string(), {});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(has(s.error().message, "given twice")) << s.error().message;
  auto t = topology::parse_topology(
      "topology:\n  kind: fat_tree\n  k: 4\ntopology:\n  kind: fat_tree\n  k: 8\n", "t.yaml");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(has(t.error().message, "t.yaml:4: key 'topology' given twice")) << t.error().message;
  auto t2 = topology::parse_topology("topology: {kind: fat_tree, k: 4}\n---\n", "t.yaml");
  ASSERT_FALSE(t2.ok());
  std::filesystem::remove(path);
}

// Generated inputs: mutations of a real scenario (bytes replaced, inserted, deleted, lines
// duplicated, YAML punctuation sprinkled). Whatever the text, loading returns a value or one
// clean error naming the source; it never throws, aborts or overflows the stack.
std::string mutate(std::string text, std::mt19937_64& rng) {
  static const std::string kPieces[] = {"&a ",
                                        "*a",
                                        "---\n",
                                        "\"",
                                        "'",
                                        ": ",
                                        "\n  ",
                                        "[",
                                        "]",
                                        "{",
                                        "}",
                                        "- ",
                                        "#",
                                        "\t",
                                        "\0",
                                        "1e999",
                                        "nan",
                                        "-1",
                                        "99999999999999999999999",
                                        "!!binary ",
                                        "? ",
                                        "|\n",
                                        ">"};
  const int edits = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    const std::size_t at = rng() % text.size();
    switch (rng() % 4) {
      case 0:
        text[at] = static_cast<char>(rng() % 256);
        break;
      case 1: {
        const std::string& p = kPieces[rng() % std::size(kPieces)];
        text.insert(at, p.empty() ? std::string(1, '\0') : p);
        break;
      }
      case 2:
        text.erase(at, 1 + rng() % 8);
        break;
      default: {
        const std::size_t bol = text.rfind('\n', at);
        const std::size_t start = bol == std::string::npos ? 0 : bol + 1;
        const std::size_t eol = text.find('\n', at);
        const std::string line =
            text.substr(start, (eol == std::string::npos ? text.size() : eol + 1) - start);
        text.insert(start, line);
      }
    }
  }
  return text;
}

TEST(YamlInput, GeneratedScenarioTextNeverCrashesTheLoader) {
  const std::string base =
      "model:\n  name: tiny\n  layers: 4\n  hidden: 512\n  heads: 8\n  ffn: 2048\n"
      "parallel:\n  tp: 4\n  pp: 2\n  dp: 2\n  global_batch: 8\ngpu:\n  model: h100\n"
      "topology: ../topologies/toy-2server.yaml\nfidelity: packet\nend: 1s\n";
  std::mt19937_64 rng(20261201);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string text = mutate(base, rng);
    workload::Scenario s;
    const ParamTable t = workload::scenario_param_table(s);
    Result<bool> r = Error{""};
    EXPECT_NO_THROW(r = t.load_yaml_text(text, "gen.yaml")) << text;
    if (!r) {
      ++rejected;
      EXPECT_EQ(r.error().message.rfind("gen.yaml", 0), 0u) << r.error().message;
      EXPECT_EQ(r.error().message.find('\0'), std::string::npos);
    }
  }
  EXPECT_GT(rejected, 100);  // the mutations do reach the error paths
}

TEST(YamlInput, GeneratedTopologyTextNeverCrashesTheLoader) {
  const std::string base =
      "topology:\n  name: gen\n  kind: fat_tree\n  k: 4\n  tiers: 2\n  port: 400G\n"
      "  cables:\n    server_leaf: {kind: dac, length: 3m}\n    leaf_spine: {kind: aoc, "
      "length: 30m}\n";
  std::mt19937_64 rng(7);
  int rejected = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text = mutate(base, rng);
    Result<topology::Topology> r = Error{""};
    EXPECT_NO_THROW(r = topology::parse_topology(text, "gen.yaml")) << text;
    if (!r) {
      ++rejected;
      EXPECT_EQ(r.error().message.rfind("gen.yaml", 0), 0u) << r.error().message;
    }
  }
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace stepsim::config
