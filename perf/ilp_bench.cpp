// ILP solve time and gap against problem size (perf/RESULTS.md, section "ILP").
//
// Order ILP: program-order windows of 20/50/100/200 ops of a synthetic transformer-like
// training graph (forward, backward, Adam), generated here (written before gen/ landed;
// perf/ilp_leaves.cpp measures windows of the generated GPT-2 and ResNet graphs). Layout ILP: 50..500 consecutive buffers (by start)
// of the same graph's lifetimes under program order. Every solve is one iteration with the
// time limit ROAM_ILP_BENCH_LIMIT seconds (default 20).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "core/graph.h"
#include "core/memory_model.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"

namespace roam {
namespace {

// A GPT-like training step: `layers` blocks of attention + MLP, backward by reverse-mode over
// the forward ops (views pass gradients through as views), then one Adam op per weight that
// updates weight and states in place.
class Builder {
 public:
  Graph graph;
  TensorId Input(Bytes size, TensorKind kind) { return NewTensor(size, kNoOp, kNoTensor, kind); }
  // Returns the outputs; alias >= 0 makes the first output a view of that tensor.
  std::vector<TensorId> Run(const std::string& name, Phase phase, std::vector<TensorId> inputs,
                            std::vector<Bytes> sizes, TensorId alias = kNoTensor,
                            TensorKind kind = TensorKind::kActivation) {
    const OpId op = static_cast<OpId>(graph.ops.size());
    graph.ops.push_back(Op{op, name, phase, {}, {}});
    for (TensorId t : inputs) graph.tensors[size_t(t)].consumers.push_back(op);
    std::vector<TensorId> out;
    for (size_t k = 0; k < sizes.size(); ++k)
      out.push_back(NewTensor(sizes[k], op, k == 0 ? alias : kNoTensor, kind));
    forward_.push_back({op, inputs, out, alias});
    return out;
  }
  struct Record {
    OpId op;
    std::vector<TensorId> inputs, outputs;
    TensorId alias;
  };
  std::vector<Record> forward_;
  std::vector<TensorId> weights;

 private:
  TensorId NewTensor(Bytes size, OpId producer, TensorId alias, TensorKind kind) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(graph.tensors.size());
    t.size = size;
    t.producer = producer;
    t.alias_of = alias;
    t.kind = kind;
    graph.tensors.push_back(t);
    return static_cast<TensorId>(graph.tensors.size() - 1);
  }
};

Graph TransformerTraining(int layers) {
  const Bytes batch = 4, seq = 256, hidden = 768, heads = 12, half = 2;
  const Bytes act = batch * seq * hidden * half, scores = batch * heads * seq * seq * half;
  const Bytes stats = batch * seq * 4 * 2;
  Builder b;
  auto weight = [&](Bytes size) {
    TensorId w = b.Input(size, TensorKind::kWeight);
    b.weights.push_back(w);
    return w;
  };
  const Phase F = Phase::kForward;
  TensorId x = b.Run("aten.embedding", F,
                     {weight(50257 * hidden * half), b.Input(batch * seq * 8, TensorKind::kInput)},
                     {act})[0];
  for (int l = 0; l < layers; ++l) {
    auto ln1 = b.Run("aten.native_layer_norm", F, {x, weight(2 * hidden * half)}, {act, stats});
    auto qkv = b.Run("aten.addmm", F, {ln1[0], weight(3 * hidden * hidden * half)}, {3 * act});
    auto q = b.Run("aten.view", F, {qkv[0]}, {act}, qkv[0]);
    auto k = b.Run("aten.view", F, {qkv[0]}, {act}, qkv[0]);
    auto v = b.Run("aten.view", F, {qkv[0]}, {act}, qkv[0]);
    auto s = b.Run("aten.bmm", F, {q[0], k[0]}, {scores});
    auto p = b.Run("aten._softmax", F, {s[0]}, {scores});
    auto d = b.Run("aten.native_dropout", F, {p[0]}, {scores, scores / 2});
    auto o = b.Run("aten.bmm", F, {d[0], v[0]}, {act});
    auto o2 = b.Run("aten.view", F, {o[0]}, {act}, o[0]);
    auto proj = b.Run("aten.addmm", F, {o2[0], weight(hidden * hidden * half)}, {act});
    auto r1 = b.Run("aten.add", F, {x, proj[0]}, {act});
    auto ln2 = b.Run("aten.native_layer_norm", F, {r1[0], weight(2 * hidden * half)}, {act, stats});
    auto h = b.Run("aten.addmm", F, {ln2[0], weight(4 * hidden * hidden * half)}, {4 * act});
    auto g = b.Run("aten.gelu", F, {h[0]}, {4 * act});
    auto f = b.Run("aten.addmm", F, {g[0], weight(4 * hidden * hidden * half)}, {act});
    x = b.Run("aten.add", F, {r1[0], f[0]}, {act})[0];
  }
  auto loss = b.Run("aten.nll_loss", F, {x}, {4});
  const size_t num_forward = b.forward_.size();
  std::map<TensorId, TensorId> grad;  // forward tensor -> its gradient so far
  grad[loss[0]] = b.Run("aten.ones_like", Phase::kBackward, {loss[0]}, {4}, kNoTensor,
                        TensorKind::kGradient)[0];
  std::vector<Builder::Record> fwd(b.forward_.begin(), b.forward_.begin() + long(num_forward));
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    std::vector<TensorId> in;
    for (TensorId y : it->outputs)
      if (grad.count(y)) in.push_back(grad[y]);
    if (in.empty()) continue;
    const std::string name = b.graph.ops[size_t(it->op)].name + "_backward";
    if (it->alias != kNoTensor) {  // a view: its gradient is a view of the output's gradient
      TensorId gy = in[0];
      TensorId base = it->inputs[0];
      auto gx = b.Run("aten.view", Phase::kBackward, {gy}, {b.graph.tensors[size_t(gy)].size}, gy,
                      TensorKind::kGradient);
      if (grad.count(base))
        grad[base] =
            b.Run("aten.add", Phase::kBackward, {grad[base], gx[0]},
                  {b.graph.tensors[size_t(base)].size}, kNoTensor, TensorKind::kGradient)[0];
      else
        grad[base] = gx[0];
      continue;
    }
    // As aten does: one op for the gradients of the activation inputs (needs the weights and
    // the saved activations) and one per weight (needs the saved activations), so weight
    // gradients and their Adam updates are free to move.
    std::vector<TensorId> acts, params;
    for (TensorId t : it->inputs) {
      const Tensor& input = b.graph.tensors[size_t(t)];
      if (input.kind == TensorKind::kWeight)
        params.push_back(t);
      else if (input.producer != kNoOp)
        acts.push_back(t);
    }
    auto accumulate = [&](TensorId t, TensorId partial) {
      grad[t] = grad.count(t)
                    ? b.Run("aten.add", Phase::kBackward, {grad[t], partial},
                            {b.graph.tensors[size_t(t)].size}, kNoTensor, TensorKind::kGradient)[0]
                    : partial;
    };
    if (!acts.empty()) {
      std::vector<TensorId> needs = in;
      needs.insert(needs.end(), it->inputs.begin(), it->inputs.end());
      std::vector<Bytes> sizes;
      for (TensorId t : acts) sizes.push_back(b.graph.tensors[size_t(t)].size);
      auto outs = b.Run(name, Phase::kBackward, needs, sizes, kNoTensor, TensorKind::kGradient);
      for (size_t k = 0; k < acts.size(); ++k) accumulate(acts[k], outs[k]);
    }
    for (TensorId w : params) {
      std::vector<TensorId> needs = in;
      needs.insert(needs.end(), acts.begin(), acts.end());
      auto gw = b.Run(name + "_weight", Phase::kBackward, needs, {b.graph.tensors[size_t(w)].size},
                      kNoTensor, TensorKind::kGradient);
      accumulate(w, gw[0]);
    }
  }
  for (TensorId w : b.weights) {
    const Bytes size = b.graph.tensors[size_t(w)].size;
    TensorId m = b.Input(size, TensorKind::kOptimizerState);
    TensorId v = b.Input(size, TensorKind::kOptimizerState);
    auto upd = b.Run("aten._fused_adam", Phase::kOptimizer, {w, grad[w], m, v}, {size}, w,
                     TensorKind::kWeight);
    (void)upd;
  }
  b.graph.name = "transformer" + std::to_string(layers);
  Finalize(b.graph, b.graph.name);
  return b.graph;
}

double Limit() {
  const char* env = std::getenv("ROAM_ILP_BENCH_LIMIT");
  return env != nullptr ? std::atof(env) : 20.0;
}

struct Setup {
  Graph graph = TransformerTraining(12);  // GPT-2 small depth
  MemoryModel model = BuildMemoryModel(graph);
  Dependencies deps = BuildDependencies(graph);
  int backward_start = 0;
  Setup() {
    for (OpId op : graph.program_order) {
      if (graph.ops[size_t(op)].phase == Phase::kBackward) break;
      ++backward_start;
    }
  }
};

const Setup& Shared() {
  static const Setup setup;
  return setup;
}

// where: 0 forward (from the second op), 1 backward start, 2 the last ops (backward + Adam).
void BM_OrderIlp(benchmark::State& state) {
  const Setup& s = Shared();
  const int size = static_cast<int>(state.range(0));
  const int n = s.graph.num_ops();
  const int where = static_cast<int>(state.range(1));
  const int begin = where == 0 ? 1 : where == 1 ? s.backward_start : n - size;
  ilp::Subgraph sub =
      ilp::OrderWindow(s.graph, s.model, s.graph.program_order, begin, begin + size);
  ilp::OrderIlpParams params;
  params.solve.time_limit_s = Limit();
  params.contract = params.symmetry_breaking = state.range(2) != 0;
  std::vector<OpId> warm(sub.ops);
  ilp::OrderIlpResult r;
  for (auto _ : state) r = ilp::SolveOrderIlp(s.graph, s.model, s.deps, sub, warm, params);
  state.counters["optimal"] = r.status == ilp::ModelStatus::kOptimal;
  state.counters["gap_pct"] = 100.0 * r.gap;
  state.counters["peak_vs_warm"] =
      static_cast<double>(r.peak) / static_cast<double>(std::max<Bytes>(1, r.warm_start_peak));
  state.counters["improved"] = r.peak < r.warm_start_peak;
  state.counters["nodes"] = r.nodes;
  state.counters["columns"] = r.columns;
  state.counters["rows"] = r.rows;
  state.counters["seconds"] = r.seconds;
}

// Random sets in the style of allocation benchmarks: lifetimes of 1..40 steps over 4n/3 steps,
// sizes 512 B times a power of two up to 64, so big and small buffers mix.
std::vector<Interval> RandomIntervals(int count) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(count));
  std::uniform_int_distribution<int> start(0, count * 4 / 3), length(0, 39), power(0, 6);
  std::vector<Interval> out;
  for (int i = 0; i < count; ++i) {
    Step s = start(rng);
    out.push_back({Bytes{512} << power(rng), s, s + length(rng)});
  }
  return out;
}

void Report(benchmark::State& state, const ilp::LayoutIlpResult& r) {
  state.counters["optimal"] = r.status == ilp::ModelStatus::kOptimal;
  state.counters["gap_pct"] = 100.0 * r.gap;
  state.counters["height_vs_greedy"] =
      static_cast<double>(r.height) / static_cast<double>(std::max<Bytes>(1, r.warm_start_height));
  state.counters["pairs"] = static_cast<double>(r.pairs);
  state.counters["built"] = r.model_built;
  state.counters["seconds"] = r.seconds;
}

void BM_LayoutIlpRandom(benchmark::State& state) {
  auto intervals = RandomIntervals(static_cast<int>(state.range(0)));
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = Limit();
  ilp::LayoutIlpResult r;
  for (auto _ : state) r = ilp::SolveLayoutIlp(intervals, 512, params);
  Report(state, r);
}

void BM_LayoutIlp(benchmark::State& state) {
  const Setup& s = Shared();
  auto intervals =
      PlannedIntervals(s.model, ComputeLifetimes(s.graph, s.model, s.graph.program_order));
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::make_pair(a.start, a.end) < std::make_pair(b.start, b.end);
  });
  const size_t count = std::min(intervals.size(), static_cast<size_t>(state.range(0)));
  // Buffers around the turn from forward to backward, where most lifetimes overlap.
  const size_t first = std::min(intervals.size() - count, intervals.size() / 2 - count / 2);
  std::vector<Interval> window(intervals.begin() + long(first),
                               intervals.begin() + long(first + count));
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = Limit();
  ilp::LayoutIlpResult r;
  for (auto _ : state) r = ilp::SolveLayoutIlp(window, s.model.alignment, params);
  Report(state, r);
}

BENCHMARK(BM_OrderIlp)
    ->ArgsProduct({{20, 50, 100, 200}, {0, 1, 2}, {1}})
    ->Args({50, 1, 0})
    ->Args({50, 2, 0})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_LayoutIlpRandom)
    ->Arg(10)
    ->Arg(20)
    ->Arg(30)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(500)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_LayoutIlp)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(500)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace roam

BENCHMARK_MAIN();
