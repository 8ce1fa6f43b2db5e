#include "tests/support/state_writer_graph.h"

#include <utility>

#include "core/types.h"

namespace roam::testing {
StateWriterGraph MakeStateWriterGraph(const std::string& writer_name) {
  StateWriterGraph s;
  Graph& g = s.g;
  g.name = "bn";
  auto op = [&](std::string name) {
    g.ops.push_back(
        Op{static_cast<ExternalId>(g.ops.size()), std::move(name), Phase::kForward, {}, {}});
    return static_cast<OpId>(g.ops.size() - 1);
  };
  auto tensor = [&](Bytes size, OpId producer, TensorKind kind, TensorId alias = kNoTensor) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    t.kind = kind;
    t.alias_of = alias;
    g.tensors.push_back(t);
    return static_cast<TensorId>(g.tensors.size() - 1);
  };
  const TensorId x = tensor(64, kNoOp, TensorKind::kInput);
  const TensorId mean = tensor(16, kNoOp, TensorKind::kInput);
  const TensorId w = tensor(16, kNoOp, TensorKind::kWeight);
  s.writer = op(writer_name);
  s.t = op("aten.t");
  s.relu = op("aten.relu");
  s.use = op("aten.mul");
  g.tensors[U(x)].consumers = {s.writer};
  g.tensors[U(mean)].consumers = {s.writer};
  g.tensors[U(w)].consumers = {s.t};
  const TensorId y = tensor(64, s.writer, TensorKind::kActivation);
  s.update = tensor(16, s.writer, TensorKind::kInput, mean);
  g.tensors[U(y)].consumers = {s.relu, s.use};
  const TensorId wt = tensor(16, s.t, TensorKind::kWeight, w);
  g.tensors[U(wt)].output = true;
  const TensorId r = tensor(64, s.relu, TensorKind::kActivation);
  g.tensors[U(r)].consumers = {s.use};
  g.tensors[U(tensor(64, s.use, TensorKind::kActivation))].output = true;
  Finalize(g, "<test>");
  return s;
}

}  // namespace roam::testing
