#include "baseline/orders.h"

#include <array>
#include <string>

#include "core/error.h"

namespace roam {

namespace {
constexpr std::array<std::string_view, 5> kNames = {"program", "lescea", "xla-list", "xla-dfs",
                                                    "heuristic"};
}  // namespace

std::span<const std::string_view> OrderNames() { return kNames; }

std::vector<OpId> ScheduleOrder(std::string_view name, const Graph& graph,
                                const MemoryModel& model) {
  (void)model;
  if (name == "program") return graph.program_order;
  throw InputError("unknown order \"" + std::string(name) + "\"");
}

}  // namespace roam
