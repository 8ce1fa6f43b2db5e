// One run: load, plan the baselines and the mode, validate, summarise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "baseline/best.h"
#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "batch/batch.h"
#include "config/config.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/io.h"
#include "core/lower_bound.h"
#include "core/steps.h"
#include "optimizer/optimizer.h"

namespace roam::batch {
namespace {

using Clock = std::chrono::steady_clock;

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A baseline order as the scenario runs it: alone per step, or multi-stream with
// as-soon-as-possible steps (core/steps.h), as the optimizer's baselines are.
SteppedOrder Stepped(const Graph& graph, std::vector<OpId> order, const OptimizerParams& planner) {
  if (planner.streams == Streams::kSingle) return {std::move(order), {}};
  return AsapSteps(graph, BuildDependencies(graph), order, planner.max_concurrency);
}

Plan PlanWith(const Graph& graph, const MemoryModel& model, std::string_view order_name,
              std::string_view layout_name, double seconds, const OptimizerParams& planner) {
  SteppedOrder run = Stepped(graph, ScheduleOrder(order_name, graph, model), planner);
  auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, run.order, run.steps));
  std::vector<Bytes> offsets = PlaceBuffers(layout_name, intervals, model.alignment);
  return AssemblePlan(graph, model, std::move(run.order), offsets, seconds, std::move(run.steps));
}

MethodFigures Figures(std::string method, const Plan& plan) {
  return {std::move(method), plan.summary.theoretical_peak, plan.summary.actual_peak,
          plan.summary.total_peak};
}

struct ModePlan {
  Plan plan;
  std::string outcome;
  std::vector<std::pair<std::string, std::string>> figures;
  // The optimizer's best baseline (modes that run it): batch's best heuristic is that plan.
  std::optional<Plan> best_baseline;
  std::string best_baseline_name;
};

std::string Fixed6(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", v);
  return text;
}

std::string BaselineName(const PlanFigures& b) { return b.order + "+" + b.layout; }

// The optimizer's own account of a run as CSV figures (docs/batch.md).
std::vector<std::pair<std::string, std::string>> OptimizerFigures(const OptimizeResult& r) {
  std::vector<std::pair<std::string, std::string>> f;
  auto add = [&](const char* name, std::string value) { f.emplace_back(name, std::move(value)); };
  auto yes = [](bool b) { return std::string(b ? "yes" : "no"); };
  const LeafCounts& c = r.leaves;
  add("gap [ratio]", Fixed6(r.gap));
  add("order_outcome", std::string(ToString(r.order_outcome)));
  add("layout_outcome", std::string(ToString(r.layout_outcome)));
  add("leaves", std::to_string(c.total));
  add("leaves_sent_to_solver", std::to_string(c.sent_to_solver));
  add("leaves_proved_optimal", std::to_string(c.proved_optimal));
  add("leaves_time_limited", std::to_string(c.time_limited));
  add("leaves_work_limited", std::to_string(c.work_limited));
  add("leaves_skipped_by_bound", std::to_string(c.skipped_by_bound));
  add("leaves_single_op", std::to_string(c.single_op));
  add("leaves_not_started", std::to_string(c.not_started));
  add("leaves_solver_errors", std::to_string(c.solver_errors));
  add("leaf_layouts_solved", std::to_string(c.layouts_solved));
  add("leaf_layouts_proved_optimal", std::to_string(c.layouts_proved_optimal));
  add("leaf_layouts_work_limited", std::to_string(c.layouts_work_limited));
  add("leaf_layouts_time_limited", std::to_string(c.layouts_time_limited));
  add("peak_leaves_optimal", yes(r.peak_leaves_optimal));
  add("pipeline_total_peak [B]", std::to_string(r.pipeline.summary.total_peak));
  add("baseline_won", yes(r.baseline_won));
  add("time_limit_hit", yes(r.time_limit_hit));
  for (const PlanFigures& b : r.baselines)
    if (b.name == "heuristic") {
      add("optimizer_heuristic", BaselineName(b));
      add("optimizer_heuristic_total_peak [B]", std::to_string(b.summary.total_peak));
    }
  std::string notes;
  for (const std::string& n : r.notes) notes += (notes.empty() ? "" : "; ") + n;
  add("notes", notes);
  return f;
}

ModePlan PlanMode(Mode mode, const config::Input& input, const MemoryModel& model) {
  const Graph& graph = input.graph;
  const auto started = Clock::now();
  switch (mode) {
    case Mode::kHeuristic: {
      BestBaseline b = BestBaselinePlan(graph, model, input.planner.streams == Streams::kMulti,
                                        input.planner.max_concurrency);
      b.plan().summary.seconds = SecondsSince(started);
      return {b.plan(), b.name(), {}, b.plan(), b.name()};
    }
    case Mode::kModel:
    case Mode::kRoam: {
      OptimizerParams params = input.planner;
      params.mode = mode == Mode::kModel ? OptimizeMode::kModel : OptimizeMode::kRoam;
      OptimizeResult r = Optimize(graph, params);
      std::string outcome = "order " + std::string(ToString(r.order_outcome)) + ", layout " +
                            std::string(ToString(r.layout_outcome));
      if (r.baseline_won) outcome += ", best baseline kept";
      r.plan.summary.seconds = SecondsSince(started);
      std::string baseline_name;
      for (const PlanFigures& b : r.baselines)
        if (b.name == "heuristic") baseline_name = BaselineName(b);
      return {std::move(r.plan), std::move(outcome), OptimizerFigures(r),
              std::move(r.best_baseline), std::move(baseline_name)};
    }
  }
  throw std::logic_error("unknown mode");
}

void RequireValid(const Graph& graph, const Plan& plan, std::string_view what) {
  if (std::string problem = ValidatePlan(graph, plan); !problem.empty())
    throw std::runtime_error("the " + std::string(what) + " plan failed validation: " + problem);
}

}  // namespace

std::string_view ToString(Mode mode) {
  switch (mode) {
    case Mode::kHeuristic:
      return "heuristic";
    case Mode::kModel:
      return "model";
    case Mode::kRoam:
      return "roam";
  }
  return "?";
}

std::optional<Mode> ParseMode(std::string_view text) {
  for (Mode m : {Mode::kHeuristic, Mode::kModel, Mode::kRoam})
    if (ToString(m) == text) return m;
  return std::nullopt;
}

std::string RunKey(std::string_view input, const std::vector<std::string>& overrides, Mode mode) {
  std::string key(input);
  for (const std::string& o : overrides) {
    key += " --set ";
    key += o;
  }
  key += " --mode ";
  key += ToString(mode);
  return key;
}

std::vector<RunSpec> BatchSpecs(const std::vector<std::string>& inputs,
                                const std::vector<std::string>& overrides, Mode mode) {
  std::vector<RunSpec> specs;
  std::map<std::string, int> stems;
  for (const std::string& input : inputs) ++stems[std::filesystem::path(input).stem().string()];
  for (const std::string& input : inputs) {
    RunSpec s;
    s.input = input;
    s.overrides = overrides;
    s.mode = mode;
    s.key = RunKey(input, overrides, mode);
    s.name = std::filesystem::path(input).stem().string();
    if (EndsWith(s.name, ".graph")) s.name.resize(s.name.size() - 6);
    if (stems[std::filesystem::path(input).stem().string()] > 1) {
      char hash[24];
      std::snprintf(hash, sizeof hash, "-%08llx",
                    static_cast<unsigned long long>(StableHash(s.key) & 0xffffffffULL));
      s.name += hash;
    }
    specs.push_back(std::move(s));
  }
  return specs;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

Baselines PlanBaselines(const Graph& graph, const MemoryModel& model,
                        const OptimizerParams& planner) {
  Baselines b;
  b.pytorch = PlanWith(graph, model, "program", "pytorch", 0.0, planner);
  BestBaseline best =
      BestBaselinePlan(graph, model, planner.streams == Streams::kMulti, planner.max_concurrency);
  b.heuristic = std::move(best.plan());
  b.heuristic_name = best.name();
  return b;
}

Bytes CertifiedLowerBound(const Graph& graph, const MemoryModel& model) {
  return roam::CertifiedLowerBound(graph, model, BuildDependencies(graph)).bound;
}

std::vector<Bytes> MemoryOverTime(const Graph& graph, const Plan& plan) {
  MemoryModel model = BuildMemoryModel(graph, plan.alignment);
  std::vector<Bytes> profile =
      MemoryProfile(model, ComputeLifetimes(graph, model, plan.order, plan.steps),
                    NumSteps(plan.order, plan.steps));
  for (Bytes& b : profile) b += model.persistent_bytes;
  return profile;
}

RunRecord ExecuteRun(const RunSpec& spec, RunPlans* plans, int threads) {
  RunRecord r;
  r.spec = spec;
  r.result.method = std::string(ToString(spec.mode));
  try {
    config::Input input = config::LoadInput(spec.input, spec.overrides);
    if (input.planner.threads == 0) input.planner.threads = threads;
    const Graph& graph = input.graph;
    MemoryModel model = BuildMemoryModel(graph, input.planner.alignment);
    const auto started = Clock::now();
    Baselines b;
    b.pytorch = PlanWith(graph, model, "program", "pytorch", 0.0, input.planner);
    r.baseline_seconds = SecondsSince(started);
    const Bytes bound = CertifiedLowerBound(graph, model);
    ModePlan mode;
    for (int i = 0; i < std::max(1, spec.repeats); ++i) {
      mode = PlanMode(spec.mode, input, model);
      r.seconds.push_back(mode.plan.summary.seconds);
    }
    // The best heuristic is the mode's own best baseline (baseline/best.h), not a second pick.
    b.heuristic = std::move(*mode.best_baseline);
    b.heuristic_name = std::move(mode.best_baseline_name);
    RequireValid(graph, b.pytorch, "pytorch");
    RequireValid(graph, b.heuristic, "best heuristic");
    RequireValid(graph, mode.plan, r.result.method);
    r.graph = graph.name;
    r.ops = mode.plan.summary.ops;
    r.storages = mode.plan.summary.storages;
    r.persistent_bytes = mode.plan.summary.persistent_bytes;
    r.result = Figures(r.result.method, mode.plan);
    r.fragmentation = mode.plan.summary.fragmentation;
    r.pytorch = Figures("pytorch", b.pytorch);
    r.heuristic = Figures(b.heuristic_name, b.heuristic);
    r.lower_bound = bound;
    r.outcome = mode.outcome;
    r.figures = mode.figures;
    r.ok = true;
    if (plans != nullptr) {
      plans->graph = std::move(input.graph);
      plans->plan = std::move(mode.plan);
      plans->pytorch = std::move(b.pytorch);
      plans->heuristic = std::move(b.heuristic);
      plans->lower_bound = bound;
    }
  } catch (const InputError& e) {
    r.ok = false;
    r.exit_code = 2;
    r.error = e.what();
  } catch (const std::exception& e) {
    r.ok = false;
    r.exit_code = 1;
    r.error = e.what();
  }
  return r;
}

}  // namespace roam::batch
