// Reading and writing roam's file formats (docs/formats.md): roam-graph-v1 and roam-plan-v1.
// Every reader throws InputError naming the file, the element and the problem.
#pragma once

#include <string>
#include <string_view>

#include "core/graph.h"
#include "core/plan.h"

namespace roam {

inline constexpr std::string_view kGraphFormat = "roam-graph-v1";
inline constexpr std::string_view kPlanFormat = "roam-plan-v1";

std::string ReadFile(const std::string& path);

// Writes to a temporary file beside path and renames it into place, so a reader never sees a
// half-written file and a failure leaves no output behind.
void WriteFileAtomically(const std::string& path, std::string_view content);

// source names the input in messages (usually the file path).
Graph ParseGraph(std::string_view text, std::string_view source);
Graph LoadGraph(const std::string& path);
std::string GraphToJson(const Graph& graph);

Plan ParsePlan(std::string_view text, std::string_view source, const Graph& graph);
Plan LoadPlan(const std::string& path, const Graph& graph);
std::string PlanToJson(const Graph& graph, const Plan& plan);

// The summary as one JSON object with the keys of roam-plan-v1's "summary".
std::string SummaryToJson(const PlanSummary& summary);

// Reads networkx node-link JSON as Checkmate and MOCCASIN publish their graphs (docs/remat.md,
// "Interop"): one op per node with one output tensor (cost_ram / out_cost bytes, consumed by
// the node's successors), cost from cost_cpu / duration, param_cost as a persistent input of
// the node; a node's id under "id" or, as MOCCASIN spells it, "name"; links (or edges) as
// source/target or, as MOCCASIN spells them, "0"/"1"; graph.order, when present, as
// program_order. Throws InputError naming source, the element and the field.
Graph ParseNodeLink(std::string_view text, std::string_view source);

}  // namespace roam
