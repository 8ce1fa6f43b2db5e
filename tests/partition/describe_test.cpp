// The figures `roam partition` prints: counts that add up to the tree, JSON that mirrors it.
#include "partition/describe.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "core/memory_model.h"
#include "gen/generate.h"

namespace roam {
namespace {

TEST(DescribeTree, CountsAddUpToTheTreeAndTheJsonMirrorsThem) {
  const Graph graph = gen::GenerateGraph(
      config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/gpt2-small.yaml", {"model.n_layer=2"}));
  const MemoryModel model = BuildMemoryModel(graph, 512);
  PartitionParams params;
  params.node_limit = 40;
  const SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, params);
  const TreeCounts counts = CountTree(graph, model, tree);

  EXPECT_EQ(counts.spine + counts.floating_sources + counts.floating_sinks +
                counts.floating_bridges + counts.weight_update_ops,
            graph.num_ops());
  ASSERT_EQ(counts.leaf_peak.size(), tree.leaves.size());
  Bytes largest = 0;  // ROAM eq 1: the order's peak is the largest leaf peak
  for (Bytes p : counts.leaf_peak) largest = std::max(largest, p);
  EXPECT_EQ(counts.peak, largest);
  EXPECT_EQ(counts.peak, TheoreticalPeak(graph, model, tree.order));

  const nlohmann::ordered_json doc = TreeToJson(graph, tree, counts);
  EXPECT_EQ(doc["update_placement"], "scheduled");
  EXPECT_EQ(doc["peak"], counts.peak);
  ASSERT_EQ(doc["leaves"].size(), tree.leaves.size());
  size_t ops = 0;
  for (const auto& leaf : doc["leaves"]) ops += leaf["ops"].size();
  EXPECT_EQ(ops, static_cast<size_t>(graph.num_ops()));
  EXPECT_EQ(doc["tree"].size(), tree.nodes.size());
  EXPECT_TRUE(doc["tree"][0]["parent"].is_null());

  const SubgraphTree windows = WindowPartition(graph, model, graph.program_order, params);
  EXPECT_TRUE(
      TreeToJson(graph, windows, CountTree(graph, model, windows))["update_placement"].is_null());
}

}  // namespace
}  // namespace roam
