// End-to-end regression cases of hostile input (issue "Hardening"): sizes that would overflow,
// models too large to generate, an output path that is an input. Each exits 2 with a message
// naming the file and the element, and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

using testing::DataPath;
using testing::RunRoam;
namespace fs = std::filesystem;

const std::string kMax = "1125899906842624 bytes (2^50, 1 PiB)";

class Hardening : public testing::TempDirTest {
 protected:
  // Runs roam, expecting exit 2, stderr "roam: error: <message>\n", and no file at `output`.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& message,
                     const std::string& output) {
    auto r = RunRoam(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err, "roam: error: " + message + "\n");
    EXPECT_EQ(r.out, "");
    if (!output.empty()) {
      EXPECT_FALSE(fs::exists(output)) << output;
    }
    // Nor any temporary file beside it.
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << name;
    }
  }

  // n tensors of the given size, each produced by its own op and kept to the end.
  std::string Graph(int n, const std::string& size) {
    std::ostringstream g;
    g << R"({"format":"roam-graph-v1","name":"big","ops":[)";
    for (int i = 0; i < n; ++i) g << (i ? "," : "") << R"({"id":)" << i << "}";
    g << R"(],"tensors":[)";
    for (int i = 0; i < n; ++i)
      g << (i ? "," : "") << R"({"id":)" << i << R"(,"size":)" << size << R"(,"producer":)" << i
        << R"(,"output":true})";
    g << "]}";
    return Write("big.graph.json", g.str());
  }

  std::string Config(const std::string& text) { return Write("model.yaml", text); }
};

TEST_F(Hardening, AGraphTensorOfSize2To63Minus1IsRefusedNamingIt) {
  const std::string graph = Graph(1, "9223372036854775807");
  ExpectRefused({"evaluate", graph, "-o", Path("plan.json")},
                graph +
                    ": tensors[0] (id 0): field \"size\" is 9223372036854775807, more than "
                    "roam's maximum of " +
                    kMax,
                Path("plan.json"));
}

TEST_F(Hardening, FiftyTensorsOf2To62AreRefusedNamingTheFirst) {
  const std::string graph = Graph(50, "4611686018427387904");
  ExpectRefused({"evaluate", graph, "-o", Path("plan.json")},
                graph +
                    ": tensors[0] (id 0): field \"size\" is 4611686018427387904, more than "
                    "roam's maximum of " +
                    kMax,
                Path("plan.json"));
}

TEST_F(Hardening, TensorsWhoseTotalExceedsTheMaximumAreRefusedWhereTheTotalCrossesIt) {
  // 2^45 each: the 33rd brings the total over 2^50.
  const std::string graph = Graph(50, "35184372088832");
  ExpectRefused({"evaluate", graph, "-o", Path("plan.json")},
                graph +
                    ": tensors[32] (id 32): field \"size\": the tensors up to here total more "
                    "than roam's maximum of " +
                    kMax,
                Path("plan.json"));
}

TEST_F(Hardening, AlignedSizesOverTheMaximumAreRefusedNamingTheTensor) {
  // Both sizes fit and so does their total (2^50 - 2^30 + 2), but rounded up to 2^30 they
  // total 2^50 + 2^30.
  const std::string graph = Write("big.graph.json", R"({"format":"roam-graph-v1","name":"big",
    "ops":[{"id":0},{"id":1}],
    "tensors":[{"id":0,"size":1125898833100801,"producer":0,"output":true},
               {"id":1,"size":1,"producer":1,"output":true}]})");
  ExpectRefused({"evaluate", graph, "--alignment", "1073741824", "-o", Path("plan.json")},
                "graph big: tensor 1: its size 1 aligned to 1073741824 brings the storages' "
                "total over roam's maximum of " +
                    kMax,
                Path("plan.json"));
}

// Found by fuzz/layout_csv_fuzz: the buffers fit, but the caching allocator's 2 MiB segment
// rounding, never released, would carry the arena past the maximum.
TEST_F(Hardening, APytorchLayoutWhoseSegmentsWouldEndBeyondTheMaximumIsRefused) {
  const std::string graph = Write("big.graph.json", R"({"format":"roam-graph-v1","name":"big",
    "ops":[{"id":0},{"id":1},{"id":2}],
    "tensors":[{"id":0,"size":562949951436873,"producer":0,"consumers":[1]},
               {"id":1,"size":562949953421313,"producer":2,"output":true}]})");
  ExpectRefused(
      {"evaluate", graph, "--layout", "pytorch", "--alignment", "1", "-o", Path("plan.json")},
      "layout pytorch: a new segment of 562949955518464 bytes at offset "
      "562949953421312 would end beyond roam's maximum of " +
          kMax,
      Path("plan.json"));
  auto r = RunRoam({"evaluate", graph, "--layout", "best-fit", "--alignment", "1", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Hardening, AnAlignmentAbove2To30IsRefused) {
  ExpectRefused({"evaluate", DataPath("tiny.graph.json"), "--alignment", "4611686018427387904"},
                "graph tiny: alignment 4611686018427387904 is not in [1, 1073741824] bytes", "");
}

TEST_F(Hardening, ACsvWithTwoBuffersOfSize2To63Minus1IsRefused) {
  const std::string csv = Write("two.csv",
                                "id,lower,upper,size\n"
                                "a,0,2,9223372036854775807\n"
                                "b,1,3,9223372036854775807\n");
  ExpectRefused(
      {"layout", csv, "-o", Path("solution.csv")},
      csv + ":2: column 'size': 9223372036854775807 is more than roam's maximum of " + kMax,
      Path("solution.csv"));
}

TEST_F(Hardening, ACsvWhoseSizesTotalMoreThanTheMaximumIsRefused) {
  const std::string csv = Write("three.csv",
                                "id,lower,upper,size\n"
                                "a,0,2,562949953421312\n"
                                "b,1,3,562949953421312\n"
                                "c,1,3,562949953421312\n");
  ExpectRefused({"layout", csv, "-o", Path("solution.csv")},
                csv +
                    ":4: column 'size': the sizes up to this row total more than roam's "
                    "maximum of " +
                    kMax,
                Path("solution.csv"));
}

TEST_F(Hardening, ABatchOf10To12NamesTheKeyAndTheTensor) {
  const std::string config = Config("model: {family: gpt2, n_layer: 1, batch: 1000000000000}\n");
  ExpectRefused({"evaluate", config, "-o", Path("plan.json")},
                config +
                    ": model.batch = 1000000000000 makes a tensor too large (its dimensions "
                    "also come from model.seq_len = 1024, model.n_positions = 1024): graph "
                    "input 17 (input), shape [1000000000000, 1024] of int64 would take more "
                    "than " +
                    kMax,
                Path("plan.json"));
}

TEST_F(Hardening, ABatchSetOnTheCommandLineNamesTheKey) {
  const std::string config = testing::SourceDir() + "/configs/gpt2-small.yaml";
  ExpectRefused({"export-graph", config, "--set", "model.batch=10000000", "-o", Path("g.json")},
                config +
                    ": model.batch = 10000000 makes a tensor too large (its dimensions also "
                    "come from model.seq_len = 1024, model.vocab = 50257, model.n_positions "
                    "= 1024): the output of aten.mm (op 680), shape [10240000000, 50257] of "
                    "float32 would take more than " +
                    kMax,
                Path("g.json"));
}

TEST_F(Hardening, AVitWhosePatchGridOverflowsNamesTheImageSize) {
  const std::string config =
      Config("model: {family: vit, n_layer: 1, image_size: 1125899906842624, patch_size: 1}\n");
  ExpectRefused({"export-graph", config, "-o", Path("g.json")},
                config +
                    ": model.image_size = 1125899906842624 makes a tensor too large: a "
                    "tensor with a dimension of 1125899906842624 * 1125899906842624 "
                    "elements would take more than " +
                    kMax,
                Path("g.json"));
}

TEST_F(Hardening, AModelKeyAbove2To50IsRefused) {
  const std::string config = Config("model: {family: gpt2, batch: 9223372036854775807}\n");
  ExpectRefused({"export-graph", config, "-o", Path("g.json")},
                config +
                    ": model.batch (line 1): must be at most 1125899906842624, got "
                    "9223372036854775807",
                Path("g.json"));
}

TEST_F(Hardening, ATransformerOfTooManyLayersIsRefusedUpFrontWithItsOpCount) {
  const std::string config = testing::SourceDir() + "/configs/gpt2-small.yaml";
  ExpectRefused({"evaluate", config, "--set", "model.n_layer=100000", "-o", Path("plan.json")},
                config +
                    ": model.n_layer: 100000 layers would generate 23800069 ops (238 per "
                    "layer), more than roam's limit of 262144 ops (at most 1101 layers here)",
                Path("plan.json"));
}

TEST_F(Hardening, AnOutputPathThatIsTheInputIsRefusedAndTheInputKept) {
  const std::string graph = Path("same.json");
  fs::copy_file(DataPath("tiny.graph.json"), graph);
  const std::string before = ReadFile(graph);
  ExpectRefused({"evaluate", graph, "-o", graph},
                graph + ": the output path is also the input " + graph +
                    "; refusing to overwrite an input, choose another output path",
                "");
  EXPECT_EQ(ReadFile(graph), before);
  // Another spelling of the same file is the same file.
  const std::string other = dir_ + "/./same.json";
  ExpectRefused({"evaluate", graph, "-o", other},
                other + ": the output path is also the input " + graph +
                    "; refusing to overwrite an input, choose another output path",
                "");
  EXPECT_EQ(ReadFile(graph), before);
}

TEST_F(Hardening, LayoutAndExportGraphRefuseToOverwriteTheirInput) {
  const std::string csv = Path("problem.csv");
  fs::copy_file(DataPath("ilp/layout_small.csv"), csv);
  ExpectRefused({"layout", csv, "-o", csv},
                csv + ": the output path is also the input " + csv +
                    "; refusing to overwrite an input, choose another output path",
                "");
  const std::string config = Config("model: {family: gpt2, n_layer: 1}\n");
  ExpectRefused({"export-graph", config, "-o", config},
                config + ": the output path is also the input " + config +
                    "; refusing to overwrite an input, choose another output path",
                "");
}

TEST_F(Hardening, APlanWithAnOffsetBeyondTheMaximumIsBadInput) {
  std::string plan = ReadFile(DataPath("tiny.plan.json"));
  const std::string key = "\"offset\": 0";
  const size_t at = plan.find(key);
  ASSERT_NE(at, std::string::npos) << plan;
  plan.replace(at, key.size(), "\"offset\": 9223372036854775296");
  const std::string path = Write("plan.json", plan);
  auto r = RunRoam({"validate", DataPath("tiny.graph.json"), path});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(path + ": buffers["), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field \"offset\" is 9223372036854775296, must be in [0, " + kMax + "]"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace roam
