// roam remat: recompute activations so a training step fits a memory budget (docs/remat.md);
// roam import-nodelink: read Checkmate's and MOCCASIN's graph files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "core/bytes.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/io.h"
#include "remat/model.h"
#include "remat/remat.h"
#include "report/svg.h"

namespace roam::cli {
namespace {

struct RematOptions {
  InputOptions input;
  PlanOutputOptions output;
  Bytes budget = 0;
  double budget_ratio = 0;
  bool sweep = false;
  double sweep_step = 0.05;
  double time_limit = 60;
  std::string method = "best";
  std::string graph_out;
  std::string svg;
  bool rng_state_kept = false;
  std::string fit_by = "arena";
  Bytes alignment = kDefaultAlignment;
  // Unset flags leave the input's remat section in force (FlagOr).
  const CLI::Option* alignment_flag = nullptr;
  const CLI::Option* method_flag = nullptr;
  const CLI::Option* time_limit_flag = nullptr;
  const CLI::Option* fit_flag = nullptr;
  const CLI::Option* budget_flag = nullptr;
  const CLI::Option* ratio_flag = nullptr;
};

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

std::string Points(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f points", fraction * 100);
  return buffer;
}

// The recomputed ops, most recomputations first: "name (op id) xN".
struct Recomputed {
  ExternalId op;
  std::string name;
  int count;
};
std::vector<Recomputed> ListRecomputed(const Graph& graph, const remat::RematResult& r) {
  std::vector<Recomputed> list;
  for (OpId op = 0; op < graph.num_ops(); ++op)
    if (int c = r.rewritten.recompute_count[static_cast<size_t>(op)]; c > 0)
      list.push_back(
          {graph.ops[static_cast<size_t>(op)].ext_id, graph.ops[static_cast<size_t>(op)].name, c});
  std::stable_sort(list.begin(), list.end(),
                   [](const Recomputed& a, const Recomputed& b) { return a.count > b.count; });
  return list;
}

// The trade-off curve: one category per budget, the added compute where the budget was met
// and the peak reached at every budget (the smallest found where it was not); with bounded,
// also the compute lower bound where the budget was met.
std::string SweepSvg(const Graph& graph, const std::vector<remat::SweepPoint>& points,
                     Bytes no_remat_peak, bool bounded) {
  report::LineChart chart;
  chart.title = "Memory/compute trade-off of " + (graph.name.empty() ? "the graph" : graph.name) +
                " (no-remat peak " + report::HumanBytes(static_cast<double>(no_remat_peak)) + ")";
  chart.x_label = "budget (% of the no-remat peak)";
  chart.y_label = "%";
  report::ChartSeries overhead{"added compute (%)", {}};
  report::ChartSeries peak{"peak reached (% of no-remat)", {}};
  report::ChartSeries bound{"compute lower bound (%)", {}};
  for (const auto& p : points) {
    char label[32];
    std::snprintf(label, sizeof label, "%.0f%%", 100 * p.ratio);
    chart.categories.emplace_back(label);
    overhead.values.push_back(p.feasible ? 100 * p.compute_overhead : std::nan(""));
    bound.values.push_back(p.feasible ? 100 * p.lower_bound : std::nan(""));
    peak.values.push_back(100.0 * static_cast<double>(p.peak) /
                          static_cast<double>(std::max<Bytes>(no_remat_peak, 1)));
  }
  chart.series = {overhead, peak};
  if (bounded) chart.series.push_back(bound);
  return report::LineChartSvg(chart);
}

int RunSweep(const RematOptions& options, const Graph& graph, const remat::RematParams& params,
             const Deadline& deadline) {
  std::vector<double> ratios;
  // By multiplication, not repeated subtraction, so that the points are the ratios they print.
  for (int i = 0; 1.0 - i * options.sweep_step > 1e-9; ++i)
    ratios.push_back(1.0 - i * options.sweep_step);
  auto points = remat::Sweep(graph, ratios, params, deadline);
  const bool bounded = params.overhead_bound.in_sweep && params.overhead_bound.cuts > 0;
  if (!options.svg.empty())
    WriteFileAtomically(options.svg,
                        SweepSvg(graph, points, remat::NoRematPeak(graph, params), bounded));
  if (options.output.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::array();
    for (const auto& p : points) {
      nlohmann::ordered_json point = {{"ratio", p.ratio},
                                      {"budget", p.budget},
                                      {"peak", p.peak},
                                      {"compute_overhead", p.compute_overhead},
                                      {"feasible", p.feasible},
                                      {"method", p.method},
                                      {"plan_ratio", p.plan_ratio},
                                      {"seconds", p.seconds}};
      if (bounded) point["compute_lower_bound"] = p.lower_bound;
      doc.push_back(point);
    }
    std::cout << doc.dump() << "\n";
    return kOk;
  }
  std::printf("%-7s %-14s %-14s %-10s %-10s %-11s %s\n", "ratio", "budget", "peak", "overhead",
              "bound", "method", "seconds");
  for (const auto& p : points) {
    // A lower budget's plan that costs less (it fits this one too) names its ratio.
    char from[48] = "";
    if (p.plan_ratio != p.ratio)
      std::snprintf(from, sizeof from, "  (the %.2f plan)", p.plan_ratio);
    std::printf("%-7.2f %-14lld %-14lld %-10s %-10s %-11s %.2f%s%s\n", p.ratio,
                static_cast<long long>(p.budget), static_cast<long long>(p.peak),
                Percent(p.compute_overhead).c_str(), bounded ? Percent(p.lower_bound).c_str() : "-",
                p.method.c_str(), p.seconds, from,
                p.feasible ? "" : "  (infeasible: smallest peak found)");
  }
  return kOk;
}

std::string FormatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

// How the report names what the budget bounded, and the arena where the theoretical peak did.
std::string DescribeFit(const remat::RematResult& r) {
  if (r.fit_by != "theoretical") return "arena (offsets included)";
  const Bytes over = r.plan.summary.actual_peak - r.budget;
  return "theoretical peak (MOCCASIN's and Checkmate's accounting; the arena is " +
         FormatBytes(r.plan.summary.actual_peak) +
         (over > 0 ? ", " + FormatBytes(over) + " over the budget)" : ", within the budget)");
}

// Which default roam took for ops that draw random numbers, and why (docs/remat.md).
std::string DescribeRng(const Graph& graph, const remat::RematParams& params) {
  int random = 0;
  for (const Op& op : graph.ops) random += remat::IsRandom(op.name) ? 1 : 0;
  if (random == 0) return "";
  if (params.rule.rng_state_kept)
    return std::to_string(random) +
           " random ops recomputable: the runtime restores their RNG state for a copy "
           "(--rng-state-kept, as torch.utils.checkpoint's preserve_rng_state)";
  return std::to_string(random) +
         " random ops never recomputed: roam does not assume the runtime restores their RNG "
         "state (a copy would draw other numbers); --rng-state-kept allows it";
}

int RunRemat(const RematOptions& options) {
  // The time limit counts from here, loading the input included.
  const auto started = Deadline::Clock::now();
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  remat::RematParams params = input.remat;
  params.method = FlagOr(options.method_flag, options.method, params.method);
  params.alignment = FlagOr(options.alignment_flag, options.alignment, input.planner.alignment);
  params.time_limit_s = FlagOr(options.time_limit_flag, options.time_limit, params.time_limit_s);
  // 0 means no limit; 1e8 s is "never" without overflowing a deadline.
  if (params.time_limit_s <= 0) params.time_limit_s = 1e8;
  if (options.rng_state_kept) params.rule.rng_state_kept = true;
  params.fit.by = FlagOr(options.fit_flag, options.fit_by, params.fit.by);
  const Deadline deadline(params.time_limit_s, nullptr, {}, started);
  if (options.sweep) return RunSweep(options, graph, params, deadline);
  if (!options.svg.empty())
    throw InputError("remat: --svg draws the curve of --sweep; add --sweep");

  const bool by_ratio = options.ratio_flag != nullptr && options.ratio_flag->count() > 0;
  const bool by_bytes = options.budget_flag != nullptr && options.budget_flag->count() > 0;
  if (by_ratio == by_bytes)
    throw InputError("remat: give exactly one of --budget, --budget-ratio or --sweep");
  Bytes budget = options.budget;
  if (by_ratio) {
    const Bytes peak = remat::NoRematPeak(graph, params);
    const std::optional<Bytes> b = remat::BudgetOfRatio(peak, options.budget_ratio);
    if (!b)
      throw InputError("remat: --budget-ratio " + std::to_string(options.budget_ratio) +
                       " times the no-remat peak of " + std::to_string(peak) +
                       " B is more than roam's maximum of " + DescribeMaxBytes());
    budget = *b;
  }
  remat::RematResult r = remat::PlanRemat(graph, budget, params, deadline);
  const Graph& rewritten = r.rewritten.graph;
  auto recomputed = ListRecomputed(graph, r);
  int computations = 0;
  for (const auto& x : recomputed) computations += x.count;

  std::ostringstream text;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < recomputed.size(); ++i) {
    list.push_back(
        {{"op", recomputed[i].op}, {"name", recomputed[i].name}, {"count", recomputed[i].count}});
    if (i < 8)
      text << (i ? ", " : "") << recomputed[i].name << " (op " << recomputed[i].op << ") x"
           << recomputed[i].count;
  }
  if (recomputed.size() > 8) text << ", ...";
  std::vector<SummaryExtra> extra = {
      {"budget", FormatBytes(r.budget), std::to_string(r.budget)},
      {"peak", FormatBytes(r.plan.summary.actual_peak), std::to_string(r.plan.summary.actual_peak)},
      {"no-remat peak", FormatBytes(r.no_remat_peak), std::to_string(r.no_remat_peak)},
      {"peak_lower_bound", FormatBytes(r.peak_lower_bound), std::to_string(r.peak_lower_bound)},
      {"compute_overhead", Percent(r.compute_overhead), nlohmann::json(r.compute_overhead).dump()},
      {"recomputed",
       std::to_string(recomputed.size()) + " ops, " + std::to_string(computations) +
           " recomputations" + (recomputed.empty() ? "" : ": " + text.str()),
       list.dump()},
      {"method", r.method, nlohmann::json(r.method).dump()},
      {"start_order",
       r.start_order + (r.start_order != params.base_order
                            ? " (the order its original computations follow; the base order, " +
                                  params.base_order + ", sets the reference peak)"
                            : ""),
       nlohmann::json(r.start_order).dump()},
      {"status", std::string(remat::ToString(r.status)),
       nlohmann::json(remat::ToString(r.status)).dump()},
      !remat::HasComputeBound(r)
          ? SummaryExtra{"compute_lower_bound", "none: no schedule fits the budget", "null"}
          : SummaryExtra{
                "compute_lower_bound",
                Percent(r.lower_bound) + " overhead" +
                    (r.feasible ? " (the plan is " + Points(r.compute_overhead - r.lower_bound) +
                                      " above it)"
                                : ""),
                nlohmann::json(r.lower_bound).dump()}};
  // The in-order bound holds only for schedules that keep the plan's start order: said apart
  // from the compute lower bound, which holds for every order.
  if (r.order_lower_bound > 0)
    extra.push_back(
        {"order_lower_bound",
         Percent(r.order_lower_bound) + " overhead, among schedules that keep the " +
             r.start_order + " order" +
             (r.feasible ? " (the plan is " + Points(r.compute_overhead - r.order_lower_bound) +
                               " above it)"
                         : ""),
         nlohmann::json(r.order_lower_bound).dump()});
  extra.push_back({"fit", DescribeFit(r), nlohmann::json(r.fit_by).dump()});
  if (r.repacked)
    extra.push_back({"repacked",
                     "yes: the layout was repacked window by window to fit (remat.fit.repack)",
                     "true"});
  // Windows spent against the allowance: where they reach it, a larger one may fit cheaper.
  if (r.repack_subproblems > 0)
    extra.push_back({"repack_windows",
                     std::to_string(r.repack_subproblems) + " of " +
                         std::to_string(params.fit.repack_plan_subproblems) +
                         " (remat.fit.repack_plan_subproblems), over every layout repacked",
                     std::to_string(r.repack_subproblems)});
  if (r.timed_out)
    extra.push_back({"time_limit",
                     "reached (" + FormatSeconds(params.time_limit_s) +
                         "): the searches stopped with the best plan so far",
                     "true"});
  if (std::string rng = DescribeRng(graph, params); !rng.empty())
    extra.push_back({"random_ops", rng, nlohmann::json(rng).dump()});
  for (auto& e : extra)
    if (e.key == "no-remat peak") e.key = "no_remat_peak";
  PlanOutputOptions output = options.output;
  if (!r.feasible) output.plan_path.clear();  // never write a plan over budget
  int code = EmitPlan(rewritten, r.plan, output, extra);
  if (code != kOk) return code;
  if (!r.feasible) {
    std::cerr << "roam: remat: the budget " << r.budget
              << " B is out of reach: the smallest peak found is " << r.plan.summary.actual_peak
              << " B; nothing written\n";
    return kFailure;
  }
  if (!options.graph_out.empty()) WriteFileAtomically(options.graph_out, GraphToJson(rewritten));
  return kOk;
}

}  // namespace

void AddRematCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<RematOptions>();
  CLI::App* cmd = app.add_subcommand(
      "remat", "Recompute activations so the arena fits a budget at the least added compute");
  AddInputOptions(*cmd, options->input);
  options->budget_flag = cmd->add_option("--budget", options->budget, "Arena budget in bytes")
                             ->check(CLI::Range(Bytes{0}, kMaxBytes));
  options->ratio_flag = cmd->add_option("--budget-ratio", options->budget_ratio,
                                        "Budget as a fraction of the no-remat peak, e.g. 0.5")
                            ->check(FiniteNumber(0.0, 1e6));
  cmd->add_flag("--sweep", options->sweep,
                "Print the memory/compute trade-off from 100% of the no-remat peak down");
  AddOutputFile(*cmd, "--svg", options->svg,
                "With --sweep: also write the trade-off curve as SVG here");
  cmd->add_option("--sweep-step", options->sweep_step, "Ratio step of --sweep")
      ->check(FiniteNumber(0.001, 1.0))
      ->capture_default_str();
  options->time_limit_flag =
      cmd->add_option("--time-limit", options->time_limit,
                      "Wall-clock cap in seconds on the whole run, an outer bound: searches are "
                      "bounded by work, so a plan does not depend on the machine; 0 = none "
                      "(default: the config's remat.time_limit_s)")
          ->check(FiniteNumber(0, kMaxSeconds))
          ->capture_default_str();
  std::vector<std::string> methods(remat::MethodNames().begin(), remat::MethodNames().end());
  options->fit_flag =
      cmd->add_option("--fit", options->fit_by,
                      "What the budget bounds: arena (default: the laid-out arena) or theoretical "
                      "(the sum of live bytes, for comparisons with MOCCASIN and Checkmate; "
                      "default: the config's remat.fit.by)")
          ->check(CLI::IsMember({"arena", "theoretical"}))
          ->capture_default_str();
  options->method_flag = cmd->add_option("--method", options->method,
                                         "Remat method (default: the config's remat.method)")
                             ->check(CLI::IsMember(methods))
                             ->capture_default_str();
  cmd->add_flag("--rng-state-kept", options->rng_state_kept,
                "Allow recomputing random ops (dropout): the runtime restores their RNG state "
                "(also remat.rule.rng_state_kept)");
  AddOutputFile(*cmd, "--graph-out", options->graph_out,
                "Write the rewritten graph (roam-graph-v1, copies marked) here");
  options->alignment_flag = AddAlignmentOption(*cmd, options->alignment);
  AddPlanOutputOptions(*cmd, options->output);
  cmd->callback([options, &action] { action = [options] { return RunRemat(*options); }; });
}

void AddImportNodeLinkCommand(CLI::App& app, Action& action) {
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "import-nodelink",
      "Convert a networkx node-link graph (Checkmate, MOCCASIN) to roam-graph-v1");
  cmd->add_option("file", *input, "node-link JSON file")->required();
  AddOutputFile(*cmd, "-o,--output", *output, "Write the graph (roam-graph-v1 JSON) here")
      ->required();
  cmd->callback([=, &action] {
    action = [=] {
      Graph graph = ParseNodeLink(ReadFile(*input), *input);
      WriteFileAtomically(*output, GraphToJson(graph));
      std::cout << "wrote " << *output << ": " << graph.num_ops() << " ops, " << graph.num_tensors()
                << " tensors\n";
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace roam::cli
