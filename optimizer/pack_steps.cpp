#include "optimizer/pack_steps.h"

#include <algorithm>

#include "core/types.h"

namespace roam::opt {

Plan PackSteps(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
               const Plan& plan, int max_concurrency) {
  const int n = static_cast<int>(plan.order.size());
  if (n == 0) return plan;
  const auto lifetimes = ComputeLifetimes(graph, model, plan.order);
  const auto profile = MemoryProfile(model, lifetimes, n);
  const Bytes peak = *std::max_element(profile.begin(), profile.end());
  // Per position: the planned storages its op creates and those whose last step it is.
  std::vector<std::vector<int>> created(U(n)), dying(U(n));
  std::vector<Bytes> created_bytes(U(n), 0);
  for (size_t i = 0; i < model.planned.size(); ++i) {
    const Lifetime& l = lifetimes[U(model.planned[i])];
    created[U(l.start)].push_back(static_cast<int>(i));
    created_bytes[U(l.start)] += model.storages[U(model.planned[i])].size;
    dying[U(l.end)].push_back(static_cast<int>(i));
  }
  // Offsets in model.planned order, whatever order the plan lists its buffers in.
  std::vector<int> planned_index(model.storages.size(), -1);
  for (size_t i = 0; i < model.planned.size(); ++i)
    planned_index[U(model.planned[i])] = static_cast<int>(i);
  std::vector<Bytes> offset(model.planned.size());
  for (const Buffer& b : plan.buffers)
    offset[U(planned_index[U(model.storage_of[U(b.tensor)])])] = b.offset;
  auto size = [&](int i) { return model.storages[U(model.planned[U(i)])].size; };
  auto overlap = [&](int a, int b) {
    return offset[U(a)] < offset[U(b)] + size(b) && offset[U(b)] < offset[U(a)] + size(a);
  };

  // A step's resident set is the union of its positions' (a storage resident at a later
  // position of the step was either resident at its first or created since), so its bytes are
  // the first position's plus everything created after it.
  std::vector<Step> step_of(U(graph.num_ops()), kNoStep);
  std::vector<Step> steps(U(n));
  std::vector<int> died;  // storages whose serial lifetime ended earlier in the current step
  Step step = 0;
  Bytes resident = profile[0];
  int ops_in_step = 1;
  step_of[U(plan.order[0])] = 0;
  for (int p = 1; p < n; ++p) {
    const OpId op = plan.order[U(p)];
    for (int i : dying[U(p - 1)]) died.push_back(i);
    bool join = (max_concurrency <= 0 || ops_in_step < max_concurrency) &&
                resident + created_bytes[U(p)] <= peak;
    // Every op between a step's first and this one is in the step: a path from one of them
    // to this op ends in a direct predecessor in the step.
    for (OpId pred : deps.Preds(op))
      if (join && step_of[U(pred)] == step) join = false;
    for (int b : created[U(p)]) {
      if (!join) break;
      for (int d : died)
        if (size(b) > 0 && size(d) > 0 && overlap(b, d)) {
          join = false;
          break;
        }
    }
    if (join) {
      resident += created_bytes[U(p)];
      ++ops_in_step;
    } else {
      ++step;
      resident = profile[U(p)];
      ops_in_step = 1;
      died.clear();
    }
    step_of[U(op)] = step;
    steps[U(p)] = step;
  }
  return AssemblePlan(graph, model, plan.order, offset, plan.summary.seconds, std::move(steps));
}

}  // namespace roam::opt
