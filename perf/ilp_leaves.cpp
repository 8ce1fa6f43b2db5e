// Order and layout ILP on leaves of real generated training graphs (perf/RESULTS.md, section
// "ILP"). A driver rather than a Google Benchmark program: each instance is solved once and
// reported with its status, gap and peaks, which is what chooses node_limit and the per-leaf
// time limit; ilp_bench.cpp keeps the synthetic and random-set benchmarks.
//
// Order ILP: windows of 20/50/100/200 consecutive ops of the program order of configs/
// gpt2-small.yaml (a forward block, the mirrored backward block, the optimizer tail) and of
// configs/resnet18.yaml (middle of the forward, middle of the backward), each a Subgraph from
// OrderWindow, warm-started from the "heuristic" baseline order restricted to the window.
// Layout ILP: sets of 50..500 buffers with the lifetimes of real graphs under the heuristic
// order (consecutive buffers by start, scanning positions until the greedy misses the max-live
// bound), and whole small graphs.
//
// Usage: roam_perf_ilp_leaves [order|layout|all]   (default all)
// Environment: ROAM_ILP_BENCH_LIMIT seconds per solve (default 20).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "baseline/orders.h"
#include "config/config.h"
#include "core/graph.h"
#include "core/memory_model.h"
#include "gen/generate.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"

namespace roam {
namespace {

double Limit() {
  const char* env = std::getenv("ROAM_ILP_BENCH_LIMIT");
  return env != nullptr ? std::atof(env) : 20.0;
}

struct Loaded {
  std::string label;
  Graph graph;
  MemoryModel model;
  Dependencies deps;
  std::vector<OpId> heuristic;
  int forward_end = 0, backward_end = 0;  // program-order positions
};

Loaded Load(const std::string& label, const std::string& config,
            const std::vector<std::string>& overrides = {}) {
  Loaded l;
  l.label = label;
  l.graph = gen::GenerateGraph(
      config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + config + ".yaml", overrides));
  l.model = BuildMemoryModel(l.graph);
  l.deps = BuildDependencies(l.graph);
  l.heuristic = ScheduleOrder("heuristic", l.graph, l.model);
  const auto& order = l.graph.program_order;
  for (OpId op : order) {
    const Phase phase = l.graph.ops[size_t(op)].phase;
    if (phase == Phase::kForward) ++l.forward_end;
    if (phase == Phase::kForward || phase == Phase::kBackward) ++l.backward_end;
  }
  std::printf(
      "<!-- %s: %d ops (forward %d, backward %d, optimizer %d), program peak %.1f MiB, "
      "heuristic peak %.1f MiB -->\n",
      label.c_str(), l.graph.num_ops(), l.forward_end, l.backward_end - l.forward_end,
      l.graph.num_ops() - l.backward_end,
      double(TheoreticalPeak(l.graph, l.model, order)) / 1048576.0,
      double(TheoreticalPeak(l.graph, l.model, l.heuristic)) / 1048576.0);
  return l;
}

const char* StatusName(ilp::ModelStatus s) {
  switch (s) {
    case ilp::ModelStatus::kOptimal:
      return "optimal";
    case ilp::ModelStatus::kFeasibleTimeLimit:
      return "feasible";
    case ilp::ModelStatus::kInfeasible:
      return "infeasible";
    default:
      return "error";
  }
}

void OrderRow(const Loaded& l, const char* where, int begin, int size) {
  const auto& program = l.graph.program_order;
  begin = std::clamp(begin, 0, l.graph.num_ops() - size);
  ilp::Subgraph sub = OrderWindow(l.graph, l.model, program, begin, begin + size);
  std::vector<char> in(size_t(l.graph.num_ops()), 0);
  for (OpId op : sub.ops) in[size_t(op)] = 1;
  std::vector<OpId> warm;
  for (OpId op : l.heuristic)
    if (in[size_t(op)]) warm.push_back(op);
  const Bytes program_peak =
      SubgraphPeak(l.graph, l.model, sub, std::span(program).subspan(size_t(begin), size_t(size)));
  ilp::OrderIlpParams params;
  params.solve.time_limit_s = Limit();
  if (std::getenv("ROAM_ILP_BENCH_LOG") != nullptr) {
    params.solve.log_level = 2;
    params.solve.log = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", int(line.size()), line.data());
    };
  }
  const ilp::OrderIlpResult r = ilp::SolveOrderIlp(l.graph, l.model, l.deps, sub, warm, params);
  auto ratio = [](Bytes a, Bytes b) { return double(a) / double(std::max<Bytes>(1, b)); };
  std::printf("| %s %s | %d | %d | %d | %d | %d | %.3g | %s%s | %.2f%% | %.4f | %.4f | %s |\n",
              l.label.c_str(), where, begin, size, r.nodes, r.columns, r.rows, r.seconds,
              StatusName(r.status), r.model_built ? "" : " (not built)", 100.0 * r.gap,
              ratio(r.peak, r.warm_start_peak), ratio(r.peak, program_peak), r.note.c_str());
  std::fflush(stdout);
}

void OrderTable() {
  std::printf(
      "\n| window | first op | ops | nodes after contraction | columns | rows | "
      "wall s | status | gap | ILP / warm | ILP / program | note |\n"
      "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|\n");
  std::fflush(stdout);
  const int sizes[] = {20, 50, 100, 200};
  {
    const Loaded g = Load("gpt2-small", "gpt2-small");
    const int fwd_block = g.forward_end * 5 / 12;  // the sixth of 12 blocks
    const int bwd_block = g.forward_end + (g.backward_end - g.forward_end) * 6 / 12;
    for (int n : sizes) OrderRow(g, "fwd", fwd_block, n);
    for (int n : sizes) OrderRow(g, "bwd", bwd_block, n);
    for (int n : sizes) OrderRow(g, "tail", g.graph.num_ops() - n, n);
  }
  {
    const Loaded g = Load("resnet18", "resnet18");
    for (int n : sizes) OrderRow(g, "fwd", g.forward_end / 2, n);
    for (int n : sizes) OrderRow(g, "bwd", g.forward_end + (g.backward_end - g.forward_end) / 2, n);
  }
}

void LayoutRow(const std::string& label, const std::vector<Interval>& set, Bytes alignment,
               int scanned) {
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = Limit();
  const ilp::LayoutIlpResult r = ilp::SolveLayoutIlp(set, alignment, params);
  const Bytes bound = MaxLiveBytes(set);
  std::printf("| %s | %zu | %d | %lld | %s | %.3g | %s | %.2f%% | %.4f | %.4f |\n", label.c_str(),
              set.size(), scanned, static_cast<long long>(r.pairs), r.model_built ? "yes" : "no",
              r.seconds, StatusName(r.status), 100.0 * r.gap,
              double(r.warm_start_height) / double(std::max<Bytes>(1, bound)),
              double(r.height) / double(std::max<Bytes>(1, r.warm_start_height)));
  std::fflush(stdout);
}

std::vector<Interval> SortedIntervals(const Loaded& l) {
  auto intervals = PlannedIntervals(l.model, ComputeLifetimes(l.graph, l.model, l.heuristic));
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::make_pair(a.start, a.end) < std::make_pair(b.start, b.end);
  });
  return intervals;
}

// Windows of `count` consecutive buffers (by start), stepping by count/2 from the first; the
// first window where the greedy warm start misses max-live is solved. `scanned` reports how
// many windows the greedy had already solved exactly.
void LayoutWindows(const Loaded& l) {
  const auto intervals = SortedIntervals(l);
  for (size_t count : {size_t{50}, size_t{100}, size_t{200}, size_t{500}}) {
    if (count > intervals.size()) break;
    int scanned = 0;
    bool found = false;
    for (size_t first = 0; first + count <= intervals.size(); first += count / 2) {
      std::vector<Interval> set(intervals.begin() + long(first),
                                intervals.begin() + long(first + count));
      const auto greedy = ilp::GreedyLayout(set, l.model.alignment);
      // The solver also tries best-fit; the scan uses the cheaper greedy as the filter.
      if (LayoutHeight(set, greedy) > MaxLiveBytes(set)) {
        LayoutRow(l.label + " window @" + std::to_string(first), set, l.model.alignment, scanned);
        found = true;
        break;
      }
      ++scanned;
    }
    if (!found)
      std::printf(
          "| %s windows | %zu | %d | | no window where the greedy misses max-live | | | "
          "| | |\n",
          l.label.c_str(), count, scanned);
  }
}

void LayoutTable() {
  std::printf(
      "\n| set | buffers | windows skipped (greedy = bound) | overlapping pairs | model "
      "built | wall s | status | gap | warm / max-live | ILP / warm |\n"
      "|---|---:|---:|---:|:---:|---:|---|---:|---:|---:|\n");
  std::fflush(stdout);
  for (const auto& [label, config, overrides] :
       std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"gpt2-small", "gpt2-small", {}},
           {"resnet18", "resnet18", {}},
           {"mobilenet_v2", "mobilenet_v2", {}}}) {
    const Loaded l = Load(label, config, overrides);
    LayoutWindows(l);
  }
  // Whole small graphs: every buffer of the training step.
  for (const auto& [label, config, overrides] :
       std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"gpt2 1 layer whole", "gpt2-small", {"model.n_layer=1", "training.optimizer=sgd"}},
           {"gpt2 2 layers whole", "gpt2-small", {"model.n_layer=2", "training.optimizer=sgd"}},
           {"gpt2 1 layer adam whole", "gpt2-small", {"model.n_layer=1"}},
           {"resnet18 whole", "resnet18", {}},
           {"vgg11 whole", "vgg11", {}}}) {
    const Loaded l = Load(label, config, overrides);
    const auto intervals = SortedIntervals(l);
    LayoutRow(label, intervals, l.model.alignment, 0);
  }
}

}  // namespace
}  // namespace roam

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  std::printf("<!-- time limit %.0f s per solve -->\n", roam::Limit());
  if (what == "order" || what == "all") roam::OrderTable();
  if (what == "layout" || what == "all") roam::LayoutTable();
  return 0;
}
