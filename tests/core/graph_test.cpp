#include "core/graph.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/io.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

Graph Chain(std::vector<ExternalId> ids) {
  // ops with the given external ids, each consuming the previous op's output
  Graph g;
  for (ExternalId id : ids) g.ops.push_back(Op{id, "op", Phase::kUnknown, {}, {}});
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(i);
    t.size = 8;
    t.producer = static_cast<OpId>(i);
    t.consumers = {static_cast<OpId>(i + 1)};
    g.tensors.push_back(t);
  }
  return g;
}

TEST(Finalize, DefaultOrderIsTopologicalSmallestIdFirst) {
  Graph g;
  for (ExternalId id : {5, 3, 9, 1}) g.ops.push_back(Op{id, "op", Phase::kUnknown, {}, {}});
  Tensor t;  // op 9 (index 2) feeds op 3 (index 1)
  t.size = 4;
  t.producer = 2;
  t.consumers = {1};
  g.tensors.push_back(t);
  Finalize(g, "test");
  std::vector<ExternalId> ext;
  for (OpId op : g.program_order) ext.push_back(g.ops[static_cast<size_t>(op)].ext_id);
  EXPECT_EQ(ext, (std::vector<ExternalId>{1, 5, 9, 3}));
}

TEST(Finalize, FillsOpInputsAndOutputs) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  // aten.mm_backward (index 3) reads w, x, the relu view and the control tensor.
  EXPECT_EQ(g.ops[3].inputs.size(), 4u);
  EXPECT_EQ(g.ops[3].outputs.size(), 1u);
}

TEST(Finalize, RejectsDependencyCycleNamingItsOps) {
  Graph g = Chain({7, 8, 9});
  Tensor back;
  back.ext_id = 99;
  back.size = 1;
  back.producer = 2;
  back.consumers = {0};
  g.tensors.push_back(back);
  try {
    Finalize(g, "cyc.json");
    FAIL() << "expected a cycle error";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cyc.json"), std::string::npos) << what;
    EXPECT_NE(what.find("cycle"), std::string::npos) << what;
    EXPECT_NE(what.find('7'), std::string::npos) << what;
    EXPECT_NE(what.find('9'), std::string::npos) << what;
  }
}

TEST(Finalize, RejectsProgramOrderThatBreaksADependency) {
  Graph g = Chain({1, 2});
  g.program_order = {1, 0};
  EXPECT_THROW(Finalize(g, "x"), InputError);
}

TEST(Dependencies, ViewProducerDependsOnBaseProducer) {
  // op B makes a view of A's output without consuming it: B must still run after A.
  Graph g;
  g.ops = {Op{0, "a", Phase::kUnknown, {}, {}}, Op{1, "b", Phase::kUnknown, {}, {}}};
  Tensor base;
  base.size = 4;
  base.producer = 0;
  Tensor view;
  view.ext_id = 1;
  view.producer = 1;
  view.alias_of = 0;
  g.tensors = {base, view};
  Dependencies deps = BuildDependencies(g);
  ASSERT_EQ(deps.Preds(1).size(), 1u);
  EXPECT_EQ(deps.Preds(1)[0], 0);
}

TEST(ReachableOps, FindsDescendantsOrAncestorsWithTheStartAndNothingUnrelated) {
  // A diamond 0 -> {1, 2} -> 3, and op 4 on its own.
  Graph g;
  for (ExternalId id = 0; id < 5; ++id) g.ops.push_back(Op{id, "op", Phase::kUnknown, {}, {}});
  for (auto [from, to] : {std::pair<OpId, OpId>{0, 1}, {0, 2}, {1, 3}, {2, 3}}) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = 4;
    t.producer = from;
    t.consumers = {to};
    g.tensors.push_back(t);
  }
  Finalize(g, "x");
  const Dependencies deps = BuildDependencies(g);
  EXPECT_EQ(ReachableOps(deps, 1, /*forward=*/true), (std::vector<char>{0, 1, 0, 1, 0}));
  EXPECT_EQ(ReachableOps(deps, 0, /*forward=*/true), (std::vector<char>{1, 1, 1, 1, 0}));
  EXPECT_EQ(ReachableOps(deps, 3, /*forward=*/false), (std::vector<char>{1, 1, 1, 1, 0}));
  EXPECT_EQ(ReachableOps(deps, 2, /*forward=*/false), (std::vector<char>{1, 0, 1, 0, 0}));
  EXPECT_EQ(ReachableOps(deps, 4, /*forward=*/true), (std::vector<char>{0, 0, 0, 0, 1}));
}

TEST(CheckTopological, NamesMissingDuplicateAndLateOps) {
  Graph g = Chain({1, 2, 3});
  Finalize(g, "x");
  Dependencies deps = BuildDependencies(g);
  EXPECT_EQ(CheckTopological(g, deps, std::vector<OpId>{0, 1, 2}), "");
  EXPECT_NE(CheckTopological(g, deps, std::vector<OpId>{0, 1}).find("2 entries"),
            std::string::npos);
  EXPECT_NE(CheckTopological(g, deps, std::vector<OpId>{0, 1, 1}).find("twice"), std::string::npos);
  EXPECT_NE(CheckTopological(g, deps, std::vector<OpId>{0, 2, 1}).find("depends on"),
            std::string::npos);
}

}  // namespace
}  // namespace roam
