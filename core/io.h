// Reading and writing roam's file formats (docs/formats.md): roam-graph-v1 and roam-plan-v1.
// Every reader throws InputError naming the file, the element and the problem.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/graph.h"
#include "core/plan.h"

namespace roam {

inline constexpr std::string_view kGraphFormat = "roam-graph-v1";
inline constexpr std::string_view kPlanFormat = "roam-plan-v1";

// The largest input file roam reads (1 GiB): far above the graph of any model roam plans. Checked
// before reading, so a huge file costs no memory.
inline constexpr std::int64_t kMaxInputFileBytes = std::int64_t{1} << 30;
inline std::string DescribeMaxInputFileBytes() {
  return std::to_string(kMaxInputFileBytes) + " bytes (1 GiB)";
}

// The contents of a regular file of at most kMaxInputFileBytes; InputError naming the path
// for anything else (a directory, a device such as /dev/zero, a fifo, a missing file).
std::string ReadFile(const std::string& path);

// Writes to a temporary file beside path and renames it into place, so a reader never sees a
// half-written file and a failure leaves no output behind. The file gets the mode any newly
// created file would (0666 less the umask). Temporaries left by a killed writer of the same
// file on this host are removed.
void WriteFileAtomically(const std::string& path, std::string_view content);

// 0666 less the process's umask.
mode_t FileCreationMode();

// The deepest nesting of arrays and objects any JSON input may have. Every JSON reader checks
// it before parsing, so no value (a field read later, quoted in a message) is too deep to
// print or destroy.
inline constexpr int kMaxJsonDepth = 64;
// InputError naming the source, line and column when text nests deeper than kMaxJsonDepth.
void CheckJsonNesting(std::string_view text, std::string_view source);

// source names the input in messages (usually the file path).
Graph ParseGraph(std::string_view text, std::string_view source);
Graph LoadGraph(const std::string& path);
std::string GraphToJson(const Graph& graph);

Plan ParsePlan(std::string_view text, std::string_view source, const Graph& graph);
Plan LoadPlan(const std::string& path, const Graph& graph);
// The "graph" a roam-plan-v1 text names, or "" when it names none or is not a plan at all
// (ParsePlan reports those).
std::string PlanGraphName(std::string_view text, std::string_view source);
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
