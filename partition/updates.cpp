// Where the weight-update branches run (docs/partition.md, ROAM IV-A): ROAM eqs 4-6 at
// segment granularity, or each branch split into the head its gradient feeds and a late tail.
#include <algorithm>

#include "partition/partitioner.h"

namespace roam::partition_detail {

double Partitioner::InferAlpha() const {
  for (OpId op = 0; op < n_; ++op) {
    if (PhaseOf(op) != Phase::kOptimizer) continue;
    const std::string& name = graph_.ops[U(op)].name;
    if (ContainsNoCase(name, "sqrt") || ContainsNoCase(name, "addcdiv")) return 3;
  }
  return 1;
}

void Partitioner::ScheduleBranches() {
  tree_.alpha = params_.alpha > 0 ? params_.alpha : InferAlpha();
  const int m = num_segments_;
  Bytes esti_pm = 0;
  std::vector<Bytes> delta(U(m) + 1, 0);
  for (const Activation& a : activations_) {
    esti_pm += a.size;
    delta[U(a.created)] += a.size;
    delta[U(a.freed) + 1] -= a.size;
  }
  tree_.estimated_peak = esti_pm;
  std::vector<Bytes> mem_atvs(U(m));
  Bytes live = 0;
  for (int s = 0; s < m; ++s) mem_atvs[U(s)] = live += delta[U(s)];
  Bytes total = 0;
  for (StorageId sid : model_.planned) total += model_.storages[U(sid)].size;
  const double average = model_.planned.empty() ? 0.0
                                                : static_cast<double>(total) /
                                                      static_cast<double>(model_.planned.size());

  for (int b = 0; b < static_cast<int>(tree_.branches.size()); ++b) {
    WeightUpdateBranch& branch = tree_.branches[U(b)];
    int earliest = 0;
    Bytes grad = 0;
    for (OpId op : branch.ops) {
      // Sources are bound later, at or before their successors.
      for (OpId p : deps_.Preds(op))
        if (!InBranch(p) && RoleOf(p) != OpRole::kFloatingSource)
          earliest = std::max(earliest, tree_.segment_of_op[U(p)]);
      // The gradient and the optimizer's temporaries: what its optimizer ops touch (not the
      // activation gradient an extended weight-gradient matmul reads).
      if (PhaseOf(op) != Phase::kOptimizer) continue;
      for (StorageId sid : model_.Touches(op))
        if (PhaseOf(Creator(sid)) != Phase::kForward)
          grad = std::max(grad, model_.storages[U(sid)].size);
    }
    branch.earliest_segment = earliest;
    branch.grad_bytes = grad;
    int segment = earliest;
    const bool large = average > 0 && static_cast<double>(grad) > params_.delay_radius * average;
    if (params_.update_placement == UpdatePlacement::kAtEnd) segment = m - 1;
    if (params_.update_placement == UpdatePlacement::kScheduled && esti_pm > 0 && large) {
      auto mem_used = [&](int s) {
        return static_cast<double>(mem_atvs[U(s)]) + tree_.alpha * static_cast<double>(grad);
      };
      while (segment < m - 1 && mem_used(segment) > static_cast<double>(esti_pm)) ++segment;
    }
    branch.segment = segment;
    for (OpId op : branch.ops) tree_.segment_of_op[U(op)] = segment;
  }
  if (params_.update_placement == UpdatePlacement::kSplit) SplitBranches();
}

void Partitioner::SplitBranches() {
  const int m = num_segments_;
  const int nb = static_cast<int>(tree_.branches.size());
  std::vector<char> head(U(n_), 0);
  for (int b = 0; b < nb; ++b) {
    const std::vector<OpId> ops = tree_.branches[U(b)].ops;  // in order: preds first
    std::vector<char> owned(model_.storages.size(), 0);      // created by head ops
    bool grew = true;
    while (grew) {
      grew = false;
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
        const OpId op = *it;
        bool in = head[U(op)] != 0;
        for (StorageId sid : model_.Touches(op)) {
          const OpId creator = Creator(sid);
          const bool handed = creator == kNoOp || branch_of_[U(creator)] != b ||
                              extended_[U(creator)] || owned[U(sid)];
          in = in || handed;
        }
        for (OpId s : deps_.Succs(op)) in = in || (branch_of_[U(s)] == b && head[U(s)]);
        if (in && !head[U(op)]) {
          head[U(op)] = 1;
          grew = true;
          for (TensorId t : graph_.ops[U(op)].outputs)
            if (model_.storages[U(model_.storage_of[U(t)])].planned())
              owned[U(model_.storage_of[U(t)])] = 1;
        }
      }
    }
    WeightUpdateBranch tail;
    for (OpId op : ops)
      if (!head[U(op)]) tail.ops.push_back(op);
    if (tail.ops.empty() || tail.ops.size() == ops.size()) continue;
    WeightUpdateBranch& branch = tree_.branches[U(b)];
    std::erase_if(branch.ops, [&](OpId op) { return !head[U(op)]; });
    branch.segment = branch.earliest_segment;
    for (OpId op : branch.ops) tree_.segment_of_op[U(op)] = branch.segment;
    tail.earliest_segment = branch.earliest_segment;
    tail.segment = m - 1;
    tail.tail = true;
    const int t = static_cast<int>(tree_.branches.size());
    for (OpId op : tail.ops) {
      branch_of_[U(op)] = t;
      tree_.segment_of_op[U(op)] = m - 1;
    }
    tree_.branches.push_back(std::move(tail));
  }
}

}  // namespace roam::partition_detail
