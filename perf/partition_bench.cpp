// Partition time on large training-like graphs (perf/RESULTS.md, section "partition").
#include <benchmark/benchmark.h>

#include <random>

#include "partition/partition.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

struct Input {
  Graph graph;
  MemoryModel model;
};

// 850 layers of the training-like generator, seed 7: 25,988 ops (Adam).
const Input& TrainingLike25k() {
  static const Input input = [] {
    std::mt19937_64 rng(7);
    Input in;
    in.graph = testing::TrainingLikeGraph(rng, {.layers = 850});
    in.model = BuildMemoryModel(in.graph);
    return in;
  }();
  return input;
}

void BM_PartitionTrainingLike25k(benchmark::State& state) {
  const Input& in = TrainingLike25k();
  PartitionParams params;
  params.node_limit = static_cast<int>(state.range(0));
  size_t leaves = 0;
  for (auto _ : state) {
    SubgraphTree tree = PartitionGraph(in.graph, in.model, in.graph.program_order, params);
    leaves = tree.leaves.size();
    benchmark::DoNotOptimize(tree);
  }
  state.counters["ops"] = in.graph.num_ops();
  state.counters["leaves"] = static_cast<double>(leaves);
}
BENCHMARK(BM_PartitionTrainingLike25k)->Arg(40)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_MemoryInsensitiveTrainingLike25k(benchmark::State& state) {
  const Input& in = TrainingLike25k();
  Dependencies deps = BuildDependencies(in.graph);
  for (auto _ : state) {
    auto mi = MemoryInsensitivePositions(deps, in.graph.program_order, in.graph.num_ops());
    benchmark::DoNotOptimize(mi);
  }
  state.counters["ops"] = in.graph.num_ops();
}
BENCHMARK(BM_MemoryInsensitiveTrainingLike25k)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace roam

BENCHMARK_MAIN();
