// Fidelity: roam's generated graphs against PyTorch 1.13's own eager training step, recorded
// op by op at the dispatcher (tests/gen/data/torch_reference.py wrote the .ops files).
//
// The recorder is a Python dispatch mode, which sees two kinds of op that a plain eager step
// does not dispatch on the device, and that roam therefore does not generate
// (docs/generators.md, "Conventions"); EagerDeviceOps removes them from the recording:
// - aten.detach artifacts: autograd's shallow copies of saved outputs (one in forward when
//   saved, one in backward when unpacked, just before the op that reads it) and a second
//   detach in each AccumulateGrad. Eager's autograd profiler records only AccumulateGrad's
//   one new_grad.detach() per parameter.
// - Adam's step counter: add_ on the 0-dim counter and item()'s _local_scalar_dense, host ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "gen/config.h"
#include "gen/generate.h"

namespace roam::gen {
namespace {

using config::LoadConfig;
using config::ParseConfig;

namespace fs = std::filesystem;

// Compiled in (not read from the environment) because test discovery lists the cases too.
std::string DataDir() { return ROAM_GEN_DATA_DIR; }

struct Step {
  std::string phase, name, sizes;
  bool operator==(const Step&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Step& s) {
  return os << s.phase << " " << s.name << " [" << s.sizes << "]";
}

std::vector<Step> ReadOps(const std::string& path) {
  std::vector<Step> steps;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    Step s;
    fields >> s.phase >> s.name >> s.sizes;
    steps.push_back(s);
  }
  return steps;
}

// The recording without the dispatch-mode artifacts and host ops described at the top. In the
// backward phase AccumulateGrad's detaches come in equal-sized pairs, and an unpacked saved
// output's detach is always last in a run of detaches (its reader follows it): so each run
// keeps one detach per leading pair and drops the rest.
std::vector<Step> EagerDeviceOps(const std::vector<Step>& recorded) {
  std::vector<Step> kept;
  for (size_t i = 0; i < recorded.size();) {
    const Step& s = recorded[i];
    if (s.name == "detach") {
      size_t end = i;
      while (end < recorded.size() && recorded[end].name == "detach" &&
             recorded[end].phase == s.phase)
        ++end;
      if (s.phase == "backward") {
        for (size_t p = i; p + 1 < end; p += 2) {
          EXPECT_EQ(recorded[p], recorded[p + 1]) << "unpaired AccumulateGrad detach at " << p;
          kept.push_back(recorded[p]);
        }
      }
      i = end;
      continue;
    }
    const bool step_counter =
        s.phase == "optimizer" &&
        (s.name == "_local_scalar_dense" || (s.name == "add_" && s.sizes == "4"));  // 0-dim float32
    if (!step_counter) kept.push_back(s);
    ++i;
  }
  return kept;
}

// The same view of a generated graph: ordering tensors (kind control) are roam's own.
std::vector<Step> Steps(const Graph& g) {
  std::vector<Step> steps;
  for (OpId op : g.program_order) {
    Step s;
    s.phase = std::string(ToString(g.ops[static_cast<size_t>(op)].phase));
    s.name = g.ops[static_cast<size_t>(op)].name.substr(5);  // drop "aten."
    for (TensorId t : g.ops[static_cast<size_t>(op)].outputs) {
      if (g.tensors[static_cast<size_t>(t)].kind == TensorKind::kControl) continue;
      s.sizes +=
          (s.sizes.empty() ? "" : ",") + std::to_string(g.tensors[static_cast<size_t>(t)].size);
    }
    steps.push_back(s);
  }
  return steps;
}

std::vector<std::string> GoldenCases() {
  std::vector<std::string> cases;
  for (const auto& entry : fs::directory_iterator(DataDir()))
    if (entry.path().extension() == ".yaml") cases.push_back(entry.path().stem().string());
  std::sort(cases.begin(), cases.end());
  return cases;
}

TEST(TorchGolden, EveryCaseHasARecordedTrace) {
  const auto cases = GoldenCases();
  EXPECT_GE(cases.size(), 10u);
  for (const std::string& c : cases) EXPECT_TRUE(fs::exists(DataDir() + "/" + c + ".ops")) << c;
}

class TorchGoldenCase : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchGoldenCase, GeneratedOpsMatchPyTorchsOpForOpWithOutputSizes) {
  const std::string base = DataDir() + "/" + GetParam();
  const std::vector<Step> expected = EagerDeviceOps(ReadOps(base + ".ops"));
  const std::vector<Step> actual = Steps(GenerateGraph(LoadConfig(base + ".yaml")));
  ASSERT_FALSE(expected.empty());
  for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i)
    ASSERT_EQ(actual[i], expected[i]) << "first difference at op " << i;
  EXPECT_EQ(actual.size(), expected.size());
}

INSTANTIATE_TEST_SUITE_P(Cases, TorchGoldenCase, ::testing::ValuesIn(GoldenCases()),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace roam::gen
