// Rematerialization figures (perf/RESULTS.md, section "Rematerialization"): compute overhead,
// peak reached and wall time of every remat method at budgets relative to the no-remat peak,
// on generated training graphs and on MOCCASIN-style random layered graphs. Prints Markdown.
//
// Usage: roam_perf_remat [--rng-state-kept] [--random-only] [--greedy-only] [--only METHOD]
//        [--nodes N]
//        roam_perf_remat --lowest [--only METHOD]
//        roam_perf_remat --bound [--random-only] [--no-plan]
//        roam_perf_remat --write-layered DIR
//        roam_perf_remat --moccasin [SEEDS]
//        roam_perf_remat --cnn
//        roam_perf_remat --order-bound
// (--random-only: the random layered graphs and the training chains, not ResNet-50 / GPT-2;
// --greedy-only: only the greedy rows and the sweep, to compare greedy changes quickly;
// --only M: the rows of method M alone; --lowest: the lowest ratio each method fits on the
// random layered graphs, and their peak lower bound; --bound: the compute lower bound at one
// cut and at a chain of cuts, with best's plan; --write-layered DIR: the random layered graphs
// as roam-graph-v1 files in DIR; --moccasin: MOCCASIN's protocol, budgets of a random input
// order's peak, that order kept and not, for SEEDS random orders per graph, default 3; --cnn:
// best on Checkmate's CNNs from roam's generator at 90% to 50%, with the proven-optimal count;
// --order-bound: the in-order lower bound of the base order on the presets, median seconds of
// three, with the copies' inputs and without, and with no nonzero allowance.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/io.h"
#include "core/lower_bound.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "gen/generate.h"
#include "perf/median.h"
#include "remat/bound.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/support/layered_graph.h"

namespace roam {
namespace {

// A training step of a chain network in the style of Checkmate's linear graphs: `layers`
// forward ops a_i = f(a_{i-1}), a loss, and a backward op per layer reading the incoming
// gradient and the layer's input and output; output sizes in [10, 100], costs in [1, 100]
// (backward twice the forward). One output per op, no views: the exact method's model is exact.
Graph TrainingChain(int layers, unsigned seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Graph g;
  g.name = "chain-" + std::to_string(layers);
  auto op = [&](const char* name, Phase phase, double cost) {
    g.ops.push_back(Op{static_cast<ExternalId>(g.ops.size()), name, phase, {}, {}});
    g.op_costs.push_back(cost);
    return static_cast<OpId>(g.ops.size() - 1);
  };
  auto tensor = [&](Bytes size, OpId producer) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    g.tensors.push_back(t);
    return static_cast<TensorId>(g.tensors.size() - 1);
  };
  auto read = [&](OpId o, TensorId t) { g.tensors[U(t)].consumers.push_back(o); };
  std::vector<TensorId> acts;
  std::vector<double> costs;
  for (int i = 0; i < layers; ++i) {
    costs.push_back(uni(1, 100));
    OpId f = op("f", Phase::kForward, costs.back());
    if (!acts.empty()) read(f, acts.back());
    acts.push_back(tensor(uni(10, 100), f));
  }
  OpId loss = op("loss", Phase::kForward, 1);
  read(loss, acts.back());
  TensorId grad = tensor(10, loss);
  for (int i = layers - 1; i >= 0; --i) {
    OpId b = op("b", Phase::kBackward, 2 * costs[U(i)]);
    read(b, grad);
    read(b, acts[U(i)]);
    if (i > 0) read(b, acts[U(i - 1)]);
    grad = tensor(g.tensors[U(acts[U(i)])].size, b);
  }
  g.tensors[U(grad)].output = true;
  Finalize(g, g.name);
  return g;
}

Graph FromConfig(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return gen::GenerateGraph(
      config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + name, overrides));
}

std::string only;  // --only M: the rows of method M alone

// Cells planned, and of those the feasible and the proven optimal (status optimal: the plan
// meets the compute lower bound, which holds for every order).
struct Tally {
  int cells = 0, feasible = 0, optimal = 0;
};

// The header of Row's table.
void PrintRowHeader() {
  std::printf(
      "| graph | ops | budget | method | fits | peak / no-remat | overhead | seconds | status | "
      "bound |\n|---|---|---|---|---|---|---|---|---|---|\n");
}

void Row(const Graph& graph, double ratio, const std::string& method, bool rng_kept,
         Bytes alignment, Tally* tally = nullptr) {
  if (!only.empty() && method != only) return;
  remat::RematParams params;
  params.method = method;
  // "greedy-lifetime": the greedy under its first ranking rule, the baseline of the current.
  if (method == "greedy-lifetime") {
    params.method = "greedy";
    params.greedy.score = "lifetime";
    params.greedy.count_siblings = false;
  }
  // "checkpoint-ops" / "checkpoint-insensitive": the checkpoint with one cut rule only (the
  // first, by op count, is the baseline of the cuts at the memory-insensitive ops).
  if (method == "checkpoint-ops" || method == "checkpoint-insensitive") {
    params.method = "checkpoint";
    params.checkpoint.cuts = method.substr(11);
  }
  // "best-no-blocks" / "best-checkpoint": best without its block pass, or with the checkpoint
  // among its builders (which left best, measured without gain), for comparisons.
  if (method == "best-no-blocks") {
    params.method = "best";
    std::erase(params.best.improve, "blocks");
  }
  if (method == "best-no-lns") {  // best without ruin and recreate
    params.method = "best";
    std::erase(params.best.improve, "lns");
  }
  if (method == "best-theoretical") {  // fitting the theoretical peak alone (MOCCASIN's measure)
    params.method = "best";
    params.fit.by = "theoretical";
  }
  if (method == "best-no-budget-search") {  // best without the layout search at the budget
    params.method = "best";
    params.fit.search_at_budget = false;
  }
  if (method == "best-base-order") {  // best from the base order alone (no start orders)
    params.method = "best";
    params.start_orders.clear();
  }
  if (method == "best-checkpoint") {
    params.method = "best";
    params.best.build.push_back("checkpoint");
  }

  params.alignment = alignment;
  params.rule.rng_state_kept = rng_kept;
  const Bytes reference = remat::NoRematPeak(graph, params);
  const Bytes budget = *remat::BudgetOfRatio(reference, ratio);
  remat::RematResult r = remat::PlanRemat(graph, budget, params);
  char bound[32] = "none";
  if (remat::HasComputeBound(r)) std::snprintf(bound, sizeof bound, "%.2f%%", 100 * r.lower_bound);
  std::printf(
      "| %s | %d | %.0f%% | %s | %s | %.1f%% | %.2f%% | %.2f | %s | %s |\n", graph.name.c_str(),
      graph.num_ops(), 100 * ratio, method.c_str(), r.feasible ? "yes" : "no",
      100.0 * static_cast<double>(r.plan.summary.actual_peak) / static_cast<double>(reference),
      100 * r.compute_overhead, r.seconds, std::string(remat::ToString(r.status)).c_str(), bound);
  std::fflush(stdout);
  if (tally != nullptr) {
    ++tally->cells;
    tally->feasible += r.feasible ? 1 : 0;
    tally->optimal += r.status == remat::Status::kOptimal ? 1 : 0;
  }
}

// Checkmate's CNNs (its evaluation: VGG-16, VGG-19, MobileNet, ResNet-50, FCN-8, SegNet and a
// U-Net) from roam's generator at batch 32, with ResNet-18 beside them: best at 90% to 50% of
// the no-remat peak, and how many cells are proven optimal.
void Cnn() {
  struct Model {
    const char* name;
    const char* config;
    std::vector<std::string> overrides;
  };
  const Model models[] = {
      {"vgg16", "vgg11.yaml", {"model.depth=16", "model.batch=32"}},
      {"vgg19", "vgg11.yaml", {"model.depth=19", "model.batch=32"}},
      {"mobilenet_v2", "mobilenet_v2.yaml", {"model.batch=32"}},
      {"resnet18", "resnet18.yaml", {"model.batch=32"}},
      {"resnet50", "resnet50.yaml", {"model.batch=32"}},
      {"fcn8", "fcn8.yaml", {"model.batch=32"}},
      {"segnet", "segnet.yaml", {"model.batch=32"}},
      {"unet", "unet.yaml", {"model.batch=32"}},
  };
  PrintRowHeader();
  Tally tally;
  for (const Model& m : models) {
    Graph g = FromConfig(m.config, m.overrides);
    g.name = m.name;
    for (double ratio : {0.9, 0.8, 0.7, 0.6, 0.5}) Row(g, ratio, "best", false, 512, &tally);
  }
  std::printf("\n%d cells, %d feasible, %d of them proven optimal\n", tally.cells, tally.feasible,
              tally.optimal);
}

void Curve(const Graph& graph, bool rng_kept, Bytes alignment) {
  remat::RematParams params;
  params.method = "greedy";
  params.alignment = alignment;
  params.rule.rng_state_kept = rng_kept;
  std::vector<double> ratios;
  for (int i = 20; i >= 1; --i) ratios.push_back(i / 20.0);
  const auto start = std::chrono::steady_clock::now();
  auto points = remat::Sweep(graph, ratios, params);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\nSweep of %s (%d ops), greedy: %zu points in %.1f s\n\n| ratio | peak / no-remat | "
      "overhead | "
      "method |\n|---|---|---|---|\n",
      graph.name.c_str(), graph.num_ops(), points.size(), seconds);
  const Bytes reference = remat::NoRematPeak(graph, params);
  for (const auto& p : points)
    std::printf("| %.2f | %.1f%%%s | %.2f%% | %s |\n", p.ratio,
                100.0 * static_cast<double>(p.peak) / static_cast<double>(reference),
                p.feasible ? "" : " (out of reach)", 100 * p.compute_overhead, p.method.c_str());
  std::fflush(stdout);
}

// --lowest: per random layered graph, the peak lower bound (remat::PeakLowerBound) and the
// lowest budget ratio, in steps of 0.01 from 0.90 down to 0.60, at which each method fits
// (fits are not monotone in the ratio: every ratio is tried).
void Lowest() {
  std::printf(
      "| graph | no-remat peak | peak lower bound | method | lowest ratio that fits | overhead "
      "there | seconds |\n|---|---|---|---|---|---|---|\n");
  for (int n : {100, 250, 500, 1000}) {
    Graph g = testing::RandomLayered({.nodes = n}, static_cast<unsigned>(n));
    for (const char* m : {"greedy", "lookahead"}) {
      if (!only.empty() && m != only) continue;
      remat::RematParams params;
      params.method = m;
      params.alignment = 1;
      const Bytes reference = remat::NoRematPeak(g, params);
      const Bytes bound = remat::PeakLowerBound(g, params);
      double lowest = 0, overhead = 0, seconds = 0;
      for (int pct = 90; pct >= 60; --pct) {
        const auto budget = static_cast<Bytes>(static_cast<double>(reference) * pct / 100.0);
        const remat::RematResult r = remat::PlanRemat(g, budget, params);
        seconds += r.seconds;
        if (!r.feasible) continue;
        lowest = pct / 100.0;
        overhead = r.compute_overhead;
      }
      std::printf("| %s | %lld | %lld (%.1f%%) | %s | %.0f%% | %.2f%% | %.1f |\n", g.name.c_str(),
                  static_cast<long long>(reference), static_cast<long long>(bound),
                  100.0 * static_cast<double>(bound) / static_cast<double>(reference), m,
                  100 * lowest, 100 * overhead, seconds);
      std::fflush(stdout);
    }
  }
}

// --bound: the compute lower bound at one cut (overhead_bound.chain_cuts = 0) and with the
// chain of cuts (the default), each's seconds, the forced bytes' maximum against the budget
// (where it is below, no cut exists and both are 0), and best's plan (unless --no-plan).
void BoundRow(const Graph& graph, double ratio, bool rng_kept, Bytes alignment, bool plan) {
  remat::RematParams params;
  params.alignment = alignment;
  params.rule.rng_state_kept = rng_kept;
  const Bytes reference = remat::NoRematPeak(graph, params);
  const Bytes budget = *remat::BudgetOfRatio(reference, ratio);
  const MemoryModel model = BuildMemoryModel(graph, alignment);
  const Bytes forced = CertifiedLowerBound(graph, model, BuildDependencies(graph)).bound;
  remat::RematParams single = params;
  single.overhead_bound.chain_cuts = 0;
  auto timed = [&](const remat::RematParams& p) {
    const auto start = std::chrono::steady_clock::now();
    remat::OverheadBound b = remat::OverheadLowerBound(graph, budget, p);
    return std::make_pair(
        b, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  const auto [one, one_s] = timed(single);
  const auto [chain, chain_s] = timed(params);
  std::string planned = "-";
  if (plan) {
    params.method = "best";
    const remat::RematResult r = remat::PlanRemat(graph, budget, params);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%.4f%% (%s)", r.feasible ? "" : "no fit, ",
                  100 * r.compute_overhead, std::string(remat::ToString(r.status)).c_str());
    planned = buf;
  }
  std::printf("| %s | %.0f%% | %.1f%% | %.4f%% / %.2f s | %.4f%% / %.2f s (%zu cuts) | %s |\n",
              graph.name.c_str(), 100 * ratio,
              100.0 * static_cast<double>(forced) / static_cast<double>(budget), 100 * one.overhead,
              one_s, 100 * chain.overhead, chain_s, chain.chain.size(), planned.c_str());
  std::fflush(stdout);
}

// --order-bound: remat::InOrderLowerBound of each preset's base order at its budgets, the median
// seconds of three calls: as configured, without the copies' inputs (input_levels 0), and with
// no nonzero allowance (max_nonzeros 0, the LP alone); where the allowance is passed the seconds
// are those spent finding that out.
void OrderBounds() {
  std::printf("| graph | budget | input_levels 2 | input_levels 0 | no allowance, LP alone |\n");
  std::printf("|---|---:|---|---|---|\n");
  auto cells = [](const Graph& graph, const std::vector<double>& ratios, bool rng_kept) {
    remat::RematParams params;
    params.alignment = 512;
    params.rule.rng_state_kept = rng_kept;
    const Bytes reference = remat::NoRematPeak(graph, params);
    const remat::Schedule order = remat::detail::BaseSchedule(graph, params);
    for (double ratio : ratios) {
      const Bytes budget = *remat::BudgetOfRatio(reference, ratio);
      std::string cell[3];
      for (int v = 0; v < 3; ++v) {
        remat::RematParams p = params;
        if (v == 1) p.order_bound.input_levels = 0;
        if (v == 2) {
          p.order_bound.max_nonzeros = 0;
          p.order_bound.max_nodes = 1;
        }
        std::vector<double> seconds;
        remat::OrderBound b;
        for (int rep = 0; rep < 3; ++rep) {
          const auto start = std::chrono::steady_clock::now();
          b = remat::InOrderLowerBound(graph, order, budget, p, 600);
          seconds.push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        char buf[160];
        std::snprintf(buf, sizeof buf, "%.4f%% / %.2f s / %lld nonzeros (%s)", 100 * b.overhead,
                      perf::Median(seconds), static_cast<long long>(b.nonzeros), b.solver.c_str());
        cell[v] = buf;
      }
      std::printf("| %s | %.0f%% | %s | %s | %s |\n", graph.name.c_str(), 100 * ratio,
                  cell[0].c_str(), cell[1].c_str(), cell[2].c_str());
      std::fflush(stdout);
    }
  };
  cells(FromConfig("resnet50.yaml", {"model.batch=32"}), {0.9, 0.8, 1.0 / 3}, false);
  cells(FromConfig("gpt2-xl.yaml"), {0.9, 0.8, 0.5}, true);
}

// --moccasin: MOCCASIN's protocol (its sections 3 and 5): each random layered graph with a
// randomly generated input order, budgets at 90% and 80% of that order's no-remat peak. Two
// plans per budget: MOCCASIN's problem (the input order kept: base order "program", no start,
// reorder or fallback orders) and roam's default `best`, which may also reorder.
void Moccasin(int seeds) {
  std::printf(
      "| graph | input order (seed) | its peak / heuristic's | budget | kept order: fits / "
      "overhead / s | best: fits / overhead / s / start order |\n|---|---|---|---|---|---|\n");
  for (int n : {100, 250, 500, 1000}) {
    const Graph layered = testing::RandomLayered({.nodes = n}, static_cast<unsigned>(n));
    remat::RematParams best;
    best.alignment = 1;
    const Bytes heuristic = remat::NoRematPeak(layered, best);
    for (int seed = 1; seed <= seeds; ++seed) {
      const Graph g = testing::InRandomOrder(layered, static_cast<unsigned>(seed));
      remat::RematParams kept = best;
      kept.base_order = "program";
      kept.start_orders.clear();
      kept.fit.reorder_orders.clear();
      kept.fit.fallback_base_orders.clear();
      const Bytes input = remat::NoRematPeak(g, kept);
      for (double ratio : {0.9, 0.8}) {
        const Bytes budget = *remat::BudgetOfRatio(input, ratio);
        const remat::RematResult k = remat::PlanRemat(g, budget, kept);
        const remat::RematResult b = remat::PlanRemat(g, budget, best);
        std::printf(
            "| %s | %lld B (%d) | %.1f%% | %.0f%% | %s / %.2f%% / %.2f | %s / %.2f%% / %.2f / %s "
            "|\n",
            g.name.c_str(), static_cast<long long>(input), seed,
            100.0 * static_cast<double>(input) / static_cast<double>(heuristic), 100 * ratio,
            k.feasible ? "yes" : "no", 100 * k.compute_overhead, k.seconds,
            b.feasible ? "yes" : "no", 100 * b.compute_overhead, b.seconds, b.start_order.c_str());
        std::fflush(stdout);
      }
    }
  }
}

void Bounds(bool random_only, bool plan) {
  std::printf(
      "| graph | budget | most forced / budget | one cut: bound / s | chain: bound / s | plan "
      "(best) |\n|---|---|---|---|---|---|\n");
  for (int n : {100, 250, 500}) {
    Graph g = testing::RandomLayered({.nodes = n}, static_cast<unsigned>(n));
    for (double ratio : {0.9, 0.8}) BoundRow(g, ratio, false, 1, plan);
  }
  if (random_only) return;
  Graph resnet = FromConfig("resnet50.yaml", {"model.batch=32"});
  for (double ratio : {0.9, 0.8, 0.5, 1.0 / 3, 0.25}) BoundRow(resnet, ratio, false, 512, plan);
  Graph gpt = FromConfig("gpt2-xl.yaml");
  for (double ratio : {0.9, 0.8, 0.5}) BoundRow(gpt, ratio, true, 512, plan);
}

}  // namespace
}  // namespace roam

int main(int argc, char** argv) {
  using namespace roam;
  bool rng_kept = false, random_only = false;  // --random-only: the random layered graphs
  bool greedy_only = false;
  int only_nodes = 0;  // --nodes N: of the random layered graphs, the one of N nodes alone
  for (int i = 1; i < argc; ++i) {
    rng_kept = rng_kept || std::string(argv[i]) == "--rng-state-kept";
    random_only = random_only || std::string(argv[i]) == "--random-only";
    greedy_only = greedy_only || std::string(argv[i]) == "--greedy-only";
    if (std::string(argv[i]) == "--only" && i + 1 < argc) only = argv[++i];
    if (std::string(argv[i]) == "--nodes" && i + 1 < argc) only_nodes = std::atoi(argv[++i]);
  }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--write-layered" && i + 1 < argc) try {
        // Each graph, and from 100 nodes on also in the three random input orders of
        // --moccasin (files ...-orderK), so that the CLI reproduces its cells.
        for (int n : {40, 100, 250, 500, 1000}) {
          const Graph g = testing::RandomLayered({.nodes = n}, static_cast<unsigned>(n));
          const std::string stem =
              std::string(argv[i + 1]) + "/random-layered-" + std::to_string(n);
          WriteFileAtomically(stem + ".graph.json", GraphToJson(g));
          for (unsigned seed = 1; n >= 100 && seed <= 3; ++seed)
            WriteFileAtomically(stem + "-order" + std::to_string(seed) + ".graph.json",
                                GraphToJson(testing::InRandomOrder(g, seed)));
        }
        return 0;
      } catch (const InputError& e) {
        std::fprintf(stderr, "roam_perf_remat: %s\n", e.what());
        return 2;
      }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--bound") {
      bool plan = true;
      for (int j = 1; j < argc; ++j) plan = plan && std::string(argv[j]) != "--no-plan";
      Bounds(random_only, plan);
      return 0;
    }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--moccasin") {
      Moccasin(i + 1 < argc ? std::max(1, std::atoi(argv[i + 1])) : 3);
      return 0;
    }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--order-bound") {
      OrderBounds();
      return 0;
    }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--cnn") {
      Cnn();
      return 0;
    }
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--lowest") {
      Lowest();
      return 0;
    }
  // Rows of the methods other than the greedy's are skipped under --greedy-only.
  auto row = [&](const Graph& g, double ratio, const std::string& m, Bytes alignment) {
    if (!greedy_only || m.rfind("greedy", 0) == 0) Row(g, ratio, m, rng_kept, alignment);
  };
  PrintRowHeader();
  for (int n : {40, 100, 250, 500, 1000}) {
    if (only_nodes > 0 && n != only_nodes) continue;
    // MOCCASIN's random layered graphs: 5 nodes a layer, inputs from the 4 layers before.
    Graph g = testing::RandomLayered({.nodes = n}, static_cast<unsigned>(n));
    for (double ratio : {0.9, 0.8})
      for (const char* m : {"greedy-lifetime", "greedy", "checkpoint", "lookahead", "blocks",
                            "best-no-blocks", "best-checkpoint", "best-no-lns", "best-base-order",
                            "best-theoretical", "best-no-budget-search", "best"})
        row(g, ratio, m, 1);
    if (n <= 120)  // the exact method's default ilp_max_ops
      for (double ratio : {0.9, 0.8}) row(g, ratio, "ilp", 1);
  }
  for (int layers : {12, 30, 50}) {
    Graph g = TrainingChain(layers, static_cast<unsigned>(layers));
    for (double ratio : {0.8, 0.5})
      for (const char* m : {"greedy", "checkpoint", "lookahead", "ilp"}) row(g, ratio, m, 1);
  }
  if (random_only) return 0;
  Graph resnet = FromConfig("resnet50.yaml", {"model.batch=32"});
  for (double ratio : {0.9, 0.8, 1.0 / 3})
    for (const char* m :
         {"greedy-lifetime", "greedy", "checkpoint-ops", "checkpoint-insensitive", "checkpoint",
          "blocks", "blocks-dp", "best-no-blocks", "best-checkpoint", "best", "ilp"})
      row(resnet, ratio, m, 512);
  Graph gpt = FromConfig("gpt2-xl.yaml");
  for (double ratio : {0.9, 0.8, 0.5})
    for (const char* m :
         {"greedy-lifetime", "greedy", "checkpoint-ops", "checkpoint-insensitive", "checkpoint",
          "blocks", "blocks-dp", "best-no-blocks", "best-checkpoint", "best"})
      row(gpt, ratio, m, 512);
  Curve(gpt, rng_kept, 512);
  return 0;
}
