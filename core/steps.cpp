#include "core/steps.h"

#include <algorithm>
#include <queue>
#include <sstream>

#include "core/types.h"

namespace roam {

std::string CheckSteps(const Graph& graph, const Dependencies& deps, std::span<const OpId> order,
                       std::span<const Step> steps) {
  std::ostringstream msg;
  if (steps.size() != order.size()) {
    msg << "steps has " << steps.size() << " entries but order has " << order.size();
    return msg.str();
  }
  auto name = [&](OpId op) {
    return std::to_string(graph.ops[U(op)].ext_id) + " (" + graph.ops[U(op)].name + ")";
  };
  std::vector<Step> step_of(U(graph.num_ops()), kNoStep);
  for (size_t k = 0; k < order.size(); ++k) {
    const Step want_lo = k == 0 ? 0 : steps[k - 1];
    const Step want_hi = k == 0 ? 0 : steps[k - 1] + 1;
    if (steps[k] < want_lo || steps[k] > want_hi) {
      msg << "steps[" << k << "] of op " << name(order[k]) << " is " << steps[k] << ", must be ";
      if (k == 0)
        msg << "0 (steps start at 0)";
      else
        msg << steps[k - 1] << " or " << steps[k - 1] + 1
            << " (steps never decrease along the order and skip none)";
      return msg.str();
    }
    step_of[U(order[k])] = steps[k];
  }
  for (size_t k = 0; k < order.size(); ++k) {
    const OpId op = order[k];
    for (OpId p : deps.Preds(op)) {
      if (step_of[U(p)] >= steps[k]) {
        msg << "op " << name(op) << " at step " << steps[k] << " depends on op " << name(p)
            << " at step " << step_of[U(p)]
            << (step_of[U(p)] == steps[k] ? ": ops of one step must be independent"
                                          : ": a step must come after its inputs' steps");
        return msg.str();
      }
    }
  }
  return {};
}

SteppedOrder AsapSteps(const Graph& graph, const Dependencies& deps, std::span<const OpId> order,
                       int max_concurrency) {
  const int n = graph.num_ops();
  std::vector<int> position(U(n), 0), missing(U(n), 0);
  for (size_t k = 0; k < order.size(); ++k) position[U(order[k])] = static_cast<int>(k);
  using Item = std::pair<int, OpId>;  // (position in order, op): earliest first
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (OpId op : order) {
    missing[U(op)] = static_cast<int>(deps.Preds(op).size());
    if (missing[U(op)] == 0) ready.push({position[U(op)], op});
  }
  SteppedOrder out;
  for (Step s = 0; !ready.empty(); ++s) {
    std::vector<OpId> now;
    while (!ready.empty() &&
           (max_concurrency <= 0 || static_cast<int>(now.size()) < max_concurrency)) {
      now.push_back(ready.top().second);
      ready.pop();
    }
    // Successors become ready at the next step, not this one.
    for (OpId op : now) {
      out.order.push_back(op);
      out.steps.push_back(s);
      for (OpId succ : deps.Succs(op))
        if (--missing[U(succ)] == 0) ready.push({position[U(succ)], succ});
    }
  }
  return out;
}

int MaxConcurrency(std::span<const OpId> order, std::span<const Step> steps) {
  if (steps.empty()) return order.empty() ? 0 : 1;
  int best = 0, run = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    run = k > 0 && steps[k] == steps[k - 1] ? run + 1 : 1;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace roam
