// Test support: the smallest graph with an op that also updates persistent state through an
// alias (as the PyTorch exporter records native_batch_norm's running statistics), shared by
// the remat tests of recomputability, Rewrite and the greedy's incremental state.
#pragma once

#include <string>

#include "core/graph.h"

namespace roam::testing {

// A graph input x, running statistics `mean`, a weight w; `writer` stands for the op under
// test: a fresh output y plus an output `update` on the statistics' storage. relu(y) is read
// twice, late (by `use`, with y).
struct StateWriterGraph {
  Graph g;
  OpId writer = kNoOp, t = kNoOp, relu = kNoOp, use = kNoOp;
  TensorId update = kNoTensor;
};
StateWriterGraph MakeStateWriterGraph(const std::string& writer_name);

}  // namespace roam::testing
