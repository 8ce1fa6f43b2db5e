// The schedule seeded by the compute bound's witness (docs/remat.md, "The witness schedule"):
// the bound's MILP says which ops a cheapest choice at the cut computes again after it; one copy
// of each goes right before its first use after the cut, and what the cut's view misses
// (working memory, peaks away from the cut) is left to the greedy's descent and polish.
#include <algorithm>

#include "core/types.h"
#include "remat/internal.h"

namespace roam::remat::detail {
MethodResult FollowWitness(const Graph& graph, const Schedule& start, const MethodResult& incumbent,
                           Bytes budget, const RematParams& params, const OverheadBound& bound) {
  if (bound.cut == kNoOp || bound.redone.empty() || bound.infeasible) return incumbent;
  // The base order with one copy of each redone op, right before the first step after the
  // cut that reads one of its outputs, its own or through a later copy: one computation serves
  // every reader after the cut, as in the MILP (the greedy's evictions would copy a chain once
  // per storage they free).
  std::vector<Step> pos(U(graph.num_ops()), kNoStep);
  for (size_t s = 0; s < start.size(); ++s) pos[U(start[s])] = static_cast<Step>(s);
  const Step cut = pos[U(bound.cut)];
  if (cut == kNoStep) return incumbent;
  std::vector<char> redone(U(graph.num_ops()), 0);
  for (OpId o : bound.redone) redone[U(o)] = 1;
  std::vector<OpId> copies(bound.redone.begin(), bound.redone.end());
  std::sort(copies.begin(), copies.end(), [&](OpId a, OpId b) { return pos[U(a)] < pos[U(b)]; });
  std::vector<Step> need(U(graph.num_ops()), kNoStep);
  for (auto it = copies.rbegin(); it != copies.rend(); ++it) {
    const OpId o = *it;
    if (pos[U(o)] == kNoStep || pos[U(o)] >= cut) continue;
    Step first = kNoStep;
    for (TensorId t : graph.ops[U(o)].outputs)
      for (OpId c : graph.tensors[U(t)].consumers) {
        const Step at = pos[U(c)] > cut ? pos[U(c)] : (redone[U(c)] ? need[U(c)] : kNoStep);
        if (at != kNoStep && (first == kNoStep || at < first)) first = at;
      }
    need[U(o)] = first;
  }
  std::vector<std::vector<OpId>> before_step(start.size());
  for (OpId o : copies)
    if (need[U(o)] != kNoStep) before_step[U(need[U(o)])].push_back(o);
  Schedule seeded;
  for (size_t s = 0; s < start.size(); ++s) {
    seeded.insert(seeded.end(), before_step[s].begin(), before_step[s].end());
    seeded.push_back(start[s]);
  }
  // The cut's view leaves out working memory after the cut and the peaks elsewhere (GPT-2 XL's
  // seeded schedule peaks far above the budget): the greedy descends from the seeded schedule
  // and its polish follows, as from the base order.
  if (!CheckSchedule(graph, seeded, params.rule).empty()) return incumbent;
  MethodResult result = Greedy(graph, std::move(seeded), budget, params);
  if (result.peak > budget) return incumbent;
  result = Polish(graph, std::move(result), budget, params);
  if (result.peak > budget ||
      (incumbent.peak <= budget && result.recompute_cost >= incumbent.recompute_cost))
    return incumbent;
  result.method = "witness";
  result.status = Status::kFeasible;
  return result;
}

}  // namespace roam::remat::detail
