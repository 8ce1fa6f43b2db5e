// End-to-end regression tests of the second hardening pass (issue 27), one per class of defect
// rather than per case: every field nested too deep, every output path, every float flag,
// every conversion of a number from input, every resource an input can ask for, every YAML
// mapping. Each case exits 2 (bad input) with a message naming the file or flag and the field,
// never a crash, and writes nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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

class HardeningClasses : public testing::TempDirTest {
 protected:
  // Runs roam expecting exit 2, a message on stderr holding `needle`, and no temporary left.
  void ExpectBadInput(const std::vector<std::string>& args, const std::string& needle) {
    auto r = RunRoam(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << (args.size() > 1 ? args[1] : "") << "\n"
                              << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in:\n"
                                                     << r.err;
    EXPECT_LT(r.err.size(), 2000u) << "the message quotes too much";
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }

  static std::string Nested(int depth) {
    return std::string(static_cast<size_t>(depth), '[') +
           std::string(static_cast<size_t>(depth), ']');
  }

  std::string TinyGraph() const {
    std::string path = Path("tiny.graph.json");
    if (!fs::exists(path)) fs::copy_file(DataPath("tiny.graph.json"), path);
    return path;
  }
};

// Class: a value nested deeply inside any field (read late, quoted in the message) is refused
// where the JSON is read, before any field is, in every JSON reader.
TEST_F(HardeningClasses, AValueNestedTooDeeplyInAnyFieldIsRefusedWithItsLine) {
  const std::string deep = Nested(100000);
  std::string graph = ReadFile(DataPath("tiny.graph.json"));
  graph.replace(graph.find("\"tiny\""), 6, deep);
  ExpectBadInput({"evaluate", Write("name.graph.json", graph)},
                 "name.graph.json: JSON nested more than 64 levels deep at line 1");
  graph = ReadFile(DataPath("tiny.graph.json"));
  graph.replace(graph.find("3000000.0"), 9, deep);
  ExpectBadInput({"evaluate", Write("cost.graph.json", graph)}, "nested more than 64 levels");
  std::string plan = ReadFile(DataPath("tiny.plan.json"));
  const size_t at = plan.find("\"alignment\": ") + 13;
  plan.replace(at, plan.find(',', at) - at, deep);
  ExpectBadInput({"validate", TinyGraph(), Write("plan.json", plan)},
                 "plan.json: JSON nested more than 64 levels deep");
  ExpectBadInput({"import-nodelink",
                  Write("nl.json", R"({"nodes":[{"id":0,"cost_ram":)" + deep + R"(}],"links":[]})"),
                  "-o", Path("out.json")},
                 "nl.json: JSON nested more than 64 levels deep");
  // Shallow nesting in a field is still an ordinary type error.
  graph = ReadFile(DataPath("tiny.graph.json"));
  graph.replace(graph.find("\"tiny\""), 6, Nested(10));
  ExpectBadInput({"evaluate", Write("shallow.graph.json", graph)},
                 "field \"name\" must be a string");
}

// Class: every thread or job count is bounded before oneTBB sees it.
TEST_F(HardeningClasses, ThreadCountsAboveTheLimitAreRefused) {
  ExpectBadInput({"optimize", TinyGraph(), "--threads", "65537"},
                 "--threads: expected a count in [0, 1024], got '65537'");
  ExpectBadInput({"batch", TinyGraph(), "--threads-per-job", "100000", "-o", Path("b")},
                 "--threads-per-job: expected a count in [0, 1024]");
  ExpectBadInput({"batch", TinyGraph(), "--jobs", "4294967297", "-o", Path("b")},
                 "--jobs: expected a count in [0, 1024]");
  ExpectBadInput({"optimize", TinyGraph(), "--set", "planner.threads=100000"},
                 "planner.threads (from --set planner.threads=100000): must be at most 1024");
}

// Class: a graph without ops is planned (an empty plan) or refused, never a crash.
TEST_F(HardeningClasses, AGraphWithNoOpsIsHandledByEveryPlanner) {
  const std::string empty = Write(
      "empty.graph.json", R"({"format":"roam-graph-v1","name":"empty","ops":[],"tensors":[]})");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"remat", empty, "--budget", "0", "--json"},
        {"remat", empty, "--budget-ratio", "0.5", "--json"},
        {"remat", empty, "--sweep", "--json"},
        {"evaluate", empty, "--json"},
        {"optimize", empty, "--json"},
        {"partition", empty, "--json"}}) {
    auto r = RunRoam(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << args[0] << ": " << r.exit_code << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }
}

// Class: every output flag is checked against every input and every other output, after
// resolving links; special files and empty paths are refused; nothing is written.
TEST_F(HardeningClasses, EveryOutputIsCheckedAgainstEveryInputAndOutput) {
  const std::string graph = TinyGraph();
  const std::string before = ReadFile(graph);
  const std::string plan = Path("plan.json");
  ASSERT_EQ(RunRoam({"evaluate", graph, "-o", plan}).exit_code, 0);
  ExpectBadInput({"plot", plan, "--graph", graph, "-o", graph},
                 graph + ": the output path is also the input " + graph);
  ExpectBadInput({"remat", graph, "--budget-ratio", "0.9", "--graph-out", graph},
                 "the output path is also the input");
  ExpectBadInput({"remat", graph, "--sweep", "--svg", graph}, "the output path is also the input");
  ExpectBadInput({"remat", graph, "--budget-ratio", "0.9", "-o", Path("x.json"), "--graph-out",
                  Path("x.json")},
                 "given to both --graph-out and --output");
  // Through a symbolic link, and a link not yet pointing anywhere's directory.
  fs::create_symlink(graph, Path("link.json"));
  ExpectBadInput({"evaluate", graph, "-o", Path("link.json")}, "the output path is also the input");
  fs::create_directory(Path("sub"));
  fs::create_directory_symlink(dir_, Path("sub/up"));
  ExpectBadInput({"remat", graph, "--budget-ratio", "0.9", "-o", Path("y.json"), "--graph-out",
                  Path("sub/up/y.json")},
                 "given to both --graph-out and --output");
  EXPECT_EQ(ReadFile(graph), before);
  // Special files and empty paths.
  ExpectBadInput({"evaluate", graph, "-o", "/dev/null"}, "/dev/null: is not a regular file");
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  ExpectBadInput(
      {"export-graph", testing::SourceDir() + "/configs/alexnet.yaml", "-o", Path("fifo")},
      "fifo: is not a regular file");
  ExpectBadInput({"evaluate", graph, "-o", dir_}, "is a directory");
  ExpectBadInput({"evaluate", graph, "-o", ""}, "the output path is empty");
  ExpectBadInput({"batch", graph, "-o", graph}, "exists and is not a directory");
}

// What the checks must let through: one input given twice, an output reached through a linked
// directory.
TEST_F(HardeningClasses, InputsMayRepeatAndOutputsInLinkedDirectoriesAreFine) {
  const std::string graph = TinyGraph();
  fs::create_directory(Path("sub"));
  fs::create_directory_symlink(dir_, Path("sub/up"));
  auto r = RunRoam({"evaluate", graph, "-o", Path("sub/up/plan.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(Path("plan.json")));
  r = RunRoam({"validate", graph, Path("plan.json"), "--original", graph});
  EXPECT_NE(r.exit_code, 2) << r.err;
  // An output that is a link to another file is written through: the link stays a link.
  Write("old-plan.json", "an earlier plan");
  fs::create_symlink(Path("old-plan.json"), Path("latest.json"));
  r = RunRoam({"evaluate", graph, "-o", Path("latest.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(Path("latest.json")));
  EXPECT_NE(ReadFile(Path("old-plan.json")).find("roam-plan-v1"), std::string::npos);
}

// Class: outputs get the mode of any new file (0666 less the umask), and temporaries a killed
// writer left are removed by the next write of the same file.
TEST_F(HardeningClasses, OutputsRespectTheUmaskAndStaleTemporariesAreRemoved) {
  const mode_t old = ::umask(027);
  auto r = RunRoam({"evaluate", TinyGraph(), "-o", Path("plan.json")});
  ::umask(old);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(Path("plan.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);

  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  std::string h;
  for (const char* c = host; *c != '\0'; ++c) h += (*c == '.' || *c == '/') ? '_' : *c;
  // A process that has exited: its pid is free (and not reused in this short test).
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string stale = Path(".plan.json.tmp." + h + "." + std::to_string(child) + ".abc123");
  const std::string live =
      Path(".plan.json.tmp." + h + "." + std::to_string(::getpid()) + ".abc123");
  Write(fs::path(stale).filename().string(), "partial");
  Write(fs::path(live).filename().string(), "partial");
  r = RunRoam({"evaluate", TinyGraph(), "-o", Path("plan.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));  // a live writer's is left alone
  fs::remove(live);
}

// Class: every number read from input is converted with a range check and totalled with
// core/bytes.h's checked arithmetic against the same 2^50 limit.
TEST_F(HardeningClasses, NumbersFromEveryInputAreRangeCheckedNeverWrapped) {
  const std::string out = Path("out.json");
  auto nodelink = [&](const std::string& name, const std::string& nodes) {
    return Write(name, R"({"nodes":[)" + nodes + R"(],"links":[]})");
  };
  ExpectBadInput({"import-nodelink",
                  nodelink("a.json", R"({"id":0,"cost_ram":9223372036854775807})"), "-o", out},
                 "a.json: nodes[0]: field \"cost_ram\" is 9.2233720368547758e+18, more than roam's "
                 "maximum of 1125899906842624 bytes");
  ExpectBadInput({"import-nodelink", nodelink("b.json", R"({"id":0,"cost_ram":1e300})"), "-o", out},
                 "field \"cost_ram\" is 1.0000000000000001e+300, more than roam's maximum");
  ExpectBadInput(
      {"import-nodelink",
       nodelink("c.json", R"({"id":0,"cost_ram":1e15},{"id":1,"cost_ram":1e15})"), "-o", out},
      "c.json: nodes[1]: field \"cost_ram\": the sizes up to here total more than");
  ExpectBadInput({"import-nodelink",
                  nodelink("d.json", R"({"id":0,"cost_ram":1,"cost_cpu":1.7e308})"), "-o", out},
                 "d.json: nodes[0]: field \"cost_cpu\" is 1.");
  std::string graph = ReadFile(DataPath("tiny.graph.json"));
  graph.replace(graph.find("3000000.0"), 9, "1.7e308");
  ExpectBadInput({"remat", Write("cost.graph.json", graph), "--budget-ratio", "0.5"},
                 "field \"cost\" must be a number in [0, 1e21], got 1.7e+308");

  auto csv = [&](const std::string& name, const std::string& text) { return Write(name, text); };
  ExpectBadInput(
      {"layout", csv("a.csv", "id,lower,upper,size,offset\na,0,2,512,9223372036854775296\n")},
      "a.csv:2: column 'offset': 9223372036854775296 is more than roam's maximum");
  ExpectBadInput(
      {"layout", csv("b.csv", "id,lower,upper,size,offset\na,0,2,512,1125899906842624\n")},
      "b.csv:2: column 'offset': 1125899906842624 plus the size 512 ends beyond");
  ExpectBadInput(
      {"layout", csv("c.csv", "id,lower,upper,size,alignment\na,0,2,512,4611686018427387904\n")},
      "c.csv:2: column 'alignment': 4611686018427387904 is more than roam's maximum of "
      "1073741824");
  ExpectBadInput({"layout", csv("d.csv", "id,lower,upper,size\na,0,9223372036854775807,512\n")},
                 "d.csv:2: column 'upper': 9223372036854775807 is more than roam's maximum");
  ExpectBadInput({"layout", csv("e.csv", "id,lower,upper,size\na,0,99999999999999999999,512\n")},
                 "e.csv:2: column 'upper': 99999999999999999999 is more than roam's maximum");

  // A budget ratio times a peak of 2^50.
  const std::string big = Write("big.graph.json", R"({"format":"roam-graph-v1","name":"big",
    "ops":[{"id":0},{"id":1}],
    "tensors":[{"id":0,"size":1125899906842624,"producer":0,"consumers":[1]}]})");
  ExpectBadInput({"remat", big, "--budget-ratio", "1000000"},
                 "--budget-ratio 1000000.000000 times the no-remat peak of 1125899906842624 B is "
                 "more than roam's maximum");
  ExpectBadInput({"remat", big, "--budget", "9223372036854775807"}, "--budget");
}

// Class: every float flag refuses NaN and infinities (one parser for flags, one for YAML).
TEST_F(HardeningClasses, EveryFloatFlagRefusesNanAndInfinity) {
  const std::string graph = TinyGraph();
  const std::string csv = Write("p.csv", "id,lower,upper,size\na,0,2,512\n");
  struct Flag {
    std::vector<std::string> args;
    std::string flag;
  };
  const std::vector<Flag> flags = {
      {{"optimize", graph}, "--time-limit"},
      {{"optimize", graph}, "--leaf-time-limit"},
      {{"layout", csv}, "--time-limit"},
      {{"partition", graph}, "--alpha"},
      {{"partition", graph}, "--delay-radius"},
      {{"remat", graph, "--sweep"}, "--time-limit"},
      {{"remat", graph, "--sweep"}, "--sweep-step"},
      {{"remat", graph}, "--budget-ratio"},
  };
  for (const Flag& f : flags)
    for (const std::string value : {"nan", "NaN", "inf", "-inf", "1e999", "0x1p99999"}) {
      std::vector<std::string> args = f.args;
      args.push_back(f.flag);
      args.push_back(value);
      ExpectBadInput(args, f.flag + ": expected a");
    }
  ExpectBadInput({"optimize", graph, "--set", "planner.time_limit_s=.nan"},
                 "planner.time_limit_s (from --set planner.time_limit_s=.nan): must be a number");
  ExpectBadInput({"remat", graph, "--sweep", "--set", "remat.time_limit_s=.inf"},
                 "remat.time_limit_s (from --set remat.time_limit_s=.inf): must be a number");
}

// Class: what an input asks for (runs, repeats, bytes read) is bounded before it is allocated.
TEST_F(HardeningClasses, ResourcesAnInputAsksForAreBoundedUpFront) {
  const std::string config = Write("m.yaml", "model: {family: gpt2, n_layer: 1}\n");
  std::string grid = "inputs: [m.yaml]\ngrid:\n";
  for (int k = 0; k < 10; ++k)
    grid += "  model.k" + std::to_string(k) + ": [0,1,2,3,4,5,6,7,8,9]\n";
  ExpectBadInput({"bench", Write("grid.yaml", grid), "-o", Path("o")},
                 "grid.yaml: grid.model.k5: the grid has more than 100000 runs");
  ExpectBadInput(
      {"bench", Write("rep.yaml", "inputs: [m.yaml]\nrepeats: 1000000000\n"), "-o", Path("o")},
      "rep.yaml: repeats: 1000000000 is more than the limit of 1000");
  ExpectBadInput({"evaluate", "/dev/zero"}, "/dev/zero: is not a regular file");
  ExpectBadInput({"bench", "/dev/zero"}, "/dev/zero: is not a regular file");
  ASSERT_EQ(::mkfifo(Path("in.fifo").c_str(), 0600), 0);
  ExpectBadInput({"evaluate", Path("in.fifo")}, "in.fifo: is not a regular file");
  (void)config;
}

// Class: YAML mappings: every key once, every key a name, in configs, sweeps and --set values.
TEST_F(HardeningClasses, YamlKeysMustBeNamesGivenOnce) {
  ExpectBadInput(
      {"export-graph", Write("dup.yaml", "model:\n  family: gpt2\n  n_layer: 1\n  n_layer: 2\n"),
       "-o", Path("g.json")},
      "dup.yaml: model.n_layer: given twice, at line 3 and at line 4; keep one");
  ExpectBadInput({"export-graph",
                  Write("two.yaml", "model: {family: gpt2, n_layer: 1}\nmodel: {family: bert}\n"),
                  "-o", Path("g.json")},
                 "two.yaml: model: given twice, at line 1 and at line 2");
  Write("m.yaml", "model: {family: gpt2, n_layer: 1}\n");
  ExpectBadInput(
      {"bench", Write("s.yaml", "inputs: [m.yaml]\ngrid:\n  [a, b]: [1]\n"), "-o", Path("o")},
      "s.yaml: grid (line 3): a key must be a name, not a list");
  ExpectBadInput(
      {"bench", Write("t.yaml", "inputs: [m.yaml]\ninputs: [m.yaml]\n"), "-o", Path("o")},
      "t.yaml: inputs: given twice, at line 1 and at line 2");
  ExpectBadInput({"export-graph", Path("m.yaml"), "--set", "model={family: gpt2, family: bert}",
                  "-o", Path("g.json")},
                 "family: given twice");
  // A key whose value reaches a tensor only through a derived dimension (a ViT's patch grid).
  ExpectBadInput({"export-graph",
                  Write("vit.yaml", "model: {family: vit, n_layer: 1, image_size: 1000000000}\n"),
                  "-o", Path("g.json")},
                 "vit.yaml: model.image_size = 1000000000 makes a tensor too large");
}

// Messages: an unknown command is named, and a plan of another graph is said to be one.
TEST_F(HardeningClasses, MessagesNameTheUnknownCommandAndTheOtherGraph) {
  auto r = RunRoam({"optimise", TinyGraph()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'optimise'; the commands are evaluate, validate"),
            std::string::npos)
      << r.err;
  // The plan of another graph (README's old example): its ops are not in this graph.
  std::string other = ReadFile(DataPath("tiny.plan.json"));
  other.replace(other.find("\"graph\": \"tiny\""), 15, "\"graph\": \"gpt2-xl\"");
  other.replace(other.find("10,"), 3, "99,");
  r = RunRoam({"validate", TinyGraph(), Write("other.plan.json", other)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("op 99 is not in the graph (the plan was made for graph \"gpt2-xl\""),
            std::string::npos)
      << r.out << r.err;
}

}  // namespace
}  // namespace roam
