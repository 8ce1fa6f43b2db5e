#include "core/io.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

std::string Normalized(const std::string& json_text) {
  return nlohmann::json::parse(json_text).dump();
}

TEST(GraphFormat, GoldenFileRoundTripsExactly) {
  std::string text = ReadFile(testing::DataPath("tiny.graph.json"));
  Graph g = ParseGraph(text, "tiny.graph.json");
  EXPECT_EQ(g.name, "tiny");
  EXPECT_EQ(g.num_ops(), 5);
  EXPECT_EQ(g.num_tensors(), 8);
  EXPECT_EQ(Normalized(GraphToJson(g)), Normalized(text));
}

TEST(GraphFormat, RandomGraphsSurviveWriteAndRead) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    Graph g = testing::RandomGraph(rng, {.ops = 20});
    std::string once = GraphToJson(g);
    Graph back = ParseGraph(once, "mem");
    EXPECT_EQ(GraphToJson(back), once);
  }
}

TEST(GraphFormat, OptionalFieldsTakeTheirDefaults) {
  Graph g = ParseGraph(R"({"format":"roam-graph-v1","ops":[{"id":4},{"id":2}],
      "tensors":[{"id":0,"size":8,"producer":4,"consumers":[2]}]})",
                       "min.json");
  EXPECT_EQ(g.ops[0].phase, Phase::kUnknown);
  EXPECT_EQ(g.tensors[0].alias_of, kNoTensor);
  EXPECT_FALSE(g.tensors[0].output);
  EXPECT_EQ(g.program_order, (std::vector<OpId>{0, 1}));
}

struct BadGraph {
  const char* what;
  const char* json;
  std::vector<const char*> mentions;  // every one must appear in the message
};

void PrintTo(const BadGraph& bad, std::ostream* os) { *os << bad.what; }

class GraphFormatRejects : public ::testing::TestWithParam<BadGraph> {};

TEST_P(GraphFormatRejects, WithAMessageNamingFileElementAndProblem) {
  const BadGraph& bad = GetParam();
  try {
    ParseGraph(bad.json, "bad.json");
    FAIL() << bad.what << ": accepted";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.json", 0), 0u) << msg;
    for (const char* m : bad.mentions) EXPECT_NE(msg.find(m), std::string::npos) << msg;
  }
}

#define OPS R"("ops":[{"id":1},{"id":2}])"
INSTANTIATE_TEST_SUITE_P(
    BadInput, GraphFormatRejects,
    ::testing::Values(
        BadGraph{
            "malformed", R"({"format": "roam-graph-v1", "ops": [)", {"malformed JSON", "line 1"}},
        BadGraph{"wrong format",
                 R"({"format":"roam-graph-v0","ops":[],"tensors":[]})",
                 {"format", "roam-graph-v1"}},
        BadGraph{
            "missing ops", R"({"format":"roam-graph-v1","tensors":[]})", {"\"ops\"", "missing"}},
        BadGraph{"missing size",
                 R"({"format":"roam-graph-v1",)" OPS R"(,"tensors":[{"id":5,"producer":1}]})",
                 {"tensors[0]", "id 5", "\"size\"", "missing"}},
        BadGraph{"mistyped size",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":"big","producer":1}]})",
                 {"tensors[0]", "\"size\"", "integer"}},
        BadGraph{"negative size",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":-4,"producer":1}]})",
                 {"tensors[0]", "-4", ">= 0"}},
        BadGraph{"dangling producer",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":9}]})",
                 {"tensors[0]", "producer", "op 9", "does not exist"}},
        BadGraph{"dangling consumer",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1,"consumers":[3]}]})",
                 {"consumers", "op 3"}},
        BadGraph{"dangling alias",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1,"alias_of":77}]})",
                 {"alias_of", "tensor 77"}},
        BadGraph{"duplicate op id",
                 R"({"format":"roam-graph-v1","ops":[{"id":1},{"id":1}],"tensors":[]})",
                 {"ops[1]", "duplicates op id 1"}},
        BadGraph{"duplicate tensor id",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1},{"id":5,"size":4,"producer":2}]})",
                 {"tensors[1]", "duplicates tensor id 5"}},
        BadGraph{"alias cycle",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1,"alias_of":6},)"
                 R"({"id":6,"size":4,"producer":2,"alias_of":5}]})",
                 {"alias_of", "cycle", "5", "6"}},
        BadGraph{"dependency cycle",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1,"consumers":[2]},)"
                 R"({"id":6,"size":4,"producer":2,"consumers":[1]}]})",
                 {"cycle through ops", "1", "2"}},
        BadGraph{"order not a permutation",
                 R"({"format":"roam-graph-v1",)" OPS R"(,"tensors":[],"program_order":[1,1]})",
                 {"program_order[1]", "twice", "permutation"}},
        BadGraph{"order missing an op",
                 R"({"format":"roam-graph-v1",)" OPS R"(,"tensors":[],"program_order":[2]})",
                 {"program_order", "op 1 is missing"}},
        BadGraph{"bad phase",
                 R"({"format":"roam-graph-v1","ops":[{"id":1,"phase":"sideways"}],"tensors":[]})",
                 {"ops[0]", "phase", "sideways"}},
        BadGraph{"bad kind",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":4,"producer":1,"kind":"blob"}]})",
                 {"tensors[0]", "kind", "blob"}},
        BadGraph{"not an object", R"([1,2,3])", {"JSON object"}},
        // Found by fuzz/graph_fuzz: nlohmann throws out_of_range, not parse_error, for it.
        BadGraph{"number beyond a double",
                 R"({"format":"roam-graph-v1","ops":[],"tensors":[],"x":351843E72088832})",
                 {"malformed JSON: number overflow parsing '351843E72088832'"}},
        BadGraph{"size beyond int64",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":18446744073709551615,"producer":1}]})",
                 {"tensors[0] (id 5): field \"size\" must be a 64-bit integer, got "
                  "18446744073709551615"}},
        BadGraph{"id beyond int64",
                 R"({"format":"roam-graph-v1","ops":[{"id":9223372036854775808}],"tensors":[]})",
                 {"ops[0]: field \"id\" must be a 64-bit integer, got 9223372036854775808"}},
        BadGraph{"size over the maximum",
                 R"({"format":"roam-graph-v1",)" OPS
                 R"(,"tensors":[{"id":5,"size":1125899906842625,"producer":1}]})",
                 {"tensors[0] (id 5): field \"size\" is 1125899906842625, more than roam's "
                  "maximum of 1125899906842624 bytes (2^50, 1 PiB)"}}),
    [](const ::testing::TestParamInfo<BadGraph>& param_info) {
      std::string name = param_info.param.what;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });
#undef OPS

TEST(PlanFormat, GoldenFileRoundTripsAndValidates) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  std::string text = ReadFile(testing::DataPath("tiny.plan.json"));
  Plan plan = ParsePlan(text, "tiny.plan.json", g);
  EXPECT_EQ(ValidatePlan(g, plan), "");
  EXPECT_EQ(PlanToJson(g, plan), text);
}

// A multi-stream plan (docs/formats.md, "Steps"): two independent ops share step 0.
TEST(PlanFormat, MultiStreamGoldenFileRoundTripsAndValidates) {
  Graph g = LoadGraph(testing::DataPath("diamond.graph.json"));
  std::string text = ReadFile(testing::DataPath("diamond.multi.plan.json"));
  Plan plan = ParsePlan(text, "diamond.multi.plan.json", g);
  EXPECT_EQ(plan.steps, (std::vector<Step>{0, 0, 1, 2}));
  EXPECT_EQ(ValidatePlan(g, plan), "");
  EXPECT_EQ(PlanToJson(g, plan), text);
}

TEST(PlanFormat, RejectsUnknownOpsAndTensors) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  EXPECT_THROW(ParsePlan(R"({"format":"roam-plan-v1","alignment":512,"order":[99],
      "buffers":[],"summary":{}})",
                         "p.json", g),
               InputError);
  try {
    ParsePlan(R"({"format":"roam-plan-v1","alignment":512,"order":[10],
      "buffers":[{"tensor":42,"offset":0,"size":512,"start":0,"end":0}],"summary":{}})",
              "p.json", g);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("buffers[0]"), std::string::npos) << e.what();
  }
}

TEST(WriteFileAtomically, ReplacesTheFileAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "roam_atomic_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string path = (dir / "out.json").string();
  WriteFileAtomically(path, "first");
  WriteFileAtomically(path, "second");
  EXPECT_EQ(ReadFile(path), "second");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(WriteFileAtomically((dir / "missing" / "x.json").string(), "x"), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace roam

namespace roam {
namespace {

TEST(GraphFormat, OpCostsAndRecomputesAreOptionalAndChecked) {
  Graph g = ParseGraph(
      R"({"format":"roam-graph-v1","ops":[{"id":1,"cost":2.5},{"id":2,"recomputes":1},{"id":3}],)"
      R"("tensors":[]})",
      "g.json");
  EXPECT_EQ(g.cost(0), 2.5);
  EXPECT_EQ(g.cost(1), std::nullopt);
  EXPECT_EQ(g.recomputes(1), 0);
  EXPECT_EQ(g.recomputes(2), kNoOp);
  Graph none = ParseGraph(R"({"format":"roam-graph-v1","ops":[{"id":1}],"tensors":[]})", "g.json");
  EXPECT_TRUE(none.op_costs.empty());
  EXPECT_EQ(GraphToJson(none).find("cost"), std::string::npos);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"format":"roam-graph-v1","ops":[{"id":1,"cost":-1}],"tensors":[]})", "\"cost\""},
      {R"({"format":"roam-graph-v1","ops":[{"id":1,"cost":"fast"}],"tensors":[]})", "\"cost\""},
      {R"({"format":"roam-graph-v1","ops":[{"id":1,"recomputes":7}],"tensors":[]})",
       "\"recomputes\" refers to op 7"},
      {R"({"format":"roam-graph-v1","ops":[{"id":1,"recomputes":1}],"tensors":[]})",
       "the op itself"},
  };
  for (auto [text, mention] : bad) {
    try {
      ParseGraph(text, "bad.json");
      ADD_FAILURE() << "accepted " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ops[0] (id 1)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace roam
