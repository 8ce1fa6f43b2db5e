// The greedy's incremental state. Reset() walks a schedule as Rewrite's walker does (same
// reads, same storages, same in-place checks); Insert() applies the same rules to the copies
// it adds and to the readers it rewires, touching only the storages involved.
#include "remat/greedy_state.h"

#include <algorithm>
#include <limits>

namespace roam::remat::detail {

GreedyState::GreedyState(const Graph& graph, const MemoryModel& model,
                         const std::vector<double>& costs, const RecomputeRule& rule)
    : graph_(&graph), model_(&model), costs_(&costs), rule_(rule) {
  auto per_op = std::make_shared<PerGraph>();
  per_op->in_place.resize(graph.ops.size());
  per_op->recomputable.resize(graph.ops.size());
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    per_op->in_place[Index(op)] = IsInPlaceWrite(graph, op);
    per_op->recomputable[Index(op)] = IsRecomputable(graph, op, rule);
  }
  per_op->alias_children.resize(graph.tensors.size());
  for (TensorId t = 0; t < graph.num_tensors(); ++t)
    if (TensorId base = graph.tensors[Index(t)].alias_of; base != kNoTensor)
      per_op->alias_children[Index(base)].push_back(t);
  per_graph_ = std::move(per_op);
}

Step GreedyState::ProducerStep(int value) const { return PosOf(values_[Index(value)].producer); }

OpId GreedyState::ProducerOrigin(int value) const {
  const int p = values_[Index(value)].producer;
  return p < 0 ? kNoOp : op_of_[Index(p)];
}

Step GreedyState::End(int storage) const {
  return stores_[Index(storage)].output ? NumSteps() - 1 : stores_[Index(storage)].end;
}

int GreedyState::Latest(TensorId t, Step step, bool inclusive) const {
  const auto& list = computations_[Index(t)];
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    const Step p = PosOf(values_[Index(*it)].producer);
    if (p < step || (inclusive && p == step)) return *it;
  }
  return -1;
}

void GreedyState::AddValue(int value) {
  auto& list = computations_[Index(values_[Index(value)].tensor)];
  const Step p = PosOf(values_[Index(value)].producer);
  auto it = list.end();
  while (it != list.begin() && PosOf(values_[Index(*(it - 1))].producer) > p) --it;
  list.insert(it, value);
}

template <class T>
T& GreedyState::Slot(std::vector<T>& list, size_t i) {
  if (list.size() <= i) list.resize(i + 1);
  return list[i];
}

int GreedyState::NewCopyStore(TensorId t) {
  const auto id = num_stores_++;
  Store& s = Slot(stores_, Index(id));
  s.size = model_->storages[Index(model_->storage_of[Index(t)])].size;
  s.planned = s.size > 0;
  s.output = false;
  s.original = false;
  s.members.clear();
  s.writers.clear();
  s.start = s.end = kNoStep;
  return id;
}

int GreedyState::NewCopyValue(TensorId t, int storage) {
  const auto id = num_values_++;
  Value& v = Slot(values_, Index(id));
  v.tensor = t;
  v.producer = -1;
  v.storage = storage;
  v.readers.clear();
  stores_[Index(storage)].members.push_back(id);
  return id;
}

int GreedyState::NewInstance(OpId op, Step pos, bool copy) {
  const auto id = static_cast<int>(op_of_.size());
  op_of_.push_back(op);
  pos_.push_back(pos);
  copy_.push_back(copy);
  Slot(in_values_, Index(id)).clear();
  Slot(out_values_, Index(id)).clear();
  return id;
}

void GreedyState::MoveValue(int value, int to) {
  auto& members = stores_[Index(values_[Index(value)].storage)].members;
  members.erase(std::find(members.begin(), members.end(), value));
  stores_[Index(to)].members.push_back(value);
  values_[Index(value)].storage = to;
}

void GreedyState::Account(int storage, int sign) {
  const Store& s = stores_[Index(storage)];
  if (!s.planned || s.start == kNoStep) return;
  start_delta_[Index(s.start)] += sign * s.size;
  if (!s.output) end_delta_[Index(s.end)] += sign * s.size;
  profile_dirty_ = true;
}

void GreedyState::Relife(int storage) {
  Store& s = stores_[Index(storage)];
  if (!s.planned) return;
  Account(storage, -1);
  s.start = PosOf(values_[Index(s.members.front())].producer);
  Step end = s.start;
  for (int v : s.members) {
    end = std::max(end, PosOf(values_[Index(v)].producer));
    for (int r : values_[Index(v)].readers) end = std::max(end, pos_[Index(r)]);
  }
  s.end = end;
  Account(storage, +1);
}

void GreedyState::ShiftSteps(Step from, Step by) {
  for (Step& p : pos_)
    if (p >= from) p += by;
  for (int sid = 0; sid < num_stores_; ++sid) {
    Store& s = stores_[Index(sid)];
    if (s.start == kNoStep) continue;
    if (s.start >= from) s.start += by;
    if (s.end >= from) s.end += by;
  }
}

bool GreedyState::WrittenBetween(int storage, Step from, Step to) const {
  for (int w : stores_[Index(storage)].writers) {
    const Step p = pos_[Index(w)];
    if (p > from && p < to) return true;
  }
  return false;
}

bool GreedyState::Reset(std::span<const OpId> schedule) {
  const int n = graph_->num_ops();
  schedule_.assign(schedule.begin(), schedule.end());
  const auto steps = schedule.size();
  order_.resize(steps);
  op_of_.clear();
  pos_.clear();
  copy_.clear();
  // The lists below are emptied, never shrunk: a prune trial resets thousands of times, and
  // every value's, storage's and instance's list keeps its buffer for the next.
  for (size_t p = 0; p < steps; ++p) NewInstance(schedule[p], static_cast<Step>(p), false);
  computations_.resize(graph_->tensors.size());
  for (auto& list : computations_) list.clear();
  num_values_ = graph_->num_tensors();
  for (int v = 0; v < num_values_; ++v) {
    Value& value = Slot(values_, Index(v));
    value.producer = -1;
    value.readers.clear();
  }
  num_stores_ = static_cast<int>(model_->storages.size());
  for (size_t sid = 0; sid < model_->storages.size(); ++sid) {
    const Storage& st = model_->storages[sid];
    Store& s = Slot(stores_, sid);
    s.size = st.size;
    s.planned = st.planned();
    s.output = st.output;
    s.original = true;
    s.members.assign(st.members.begin(), st.members.end());
    s.writers.clear();
    s.start = s.end = kNoStep;
  }
  // Walker's write counts: per storage, and per value the count when it was made.
  std::vector<int> writes(Index(num_stores_), 0), version(graph_->tensors.size(), 0);
  std::vector<int> latest(graph_->tensors.size(), -1);
  for (TensorId t = 0; t < graph_->num_tensors(); ++t) {
    values_[Index(t)].tensor = t;
    values_[Index(t)].storage = model_->storage_of[Index(t)];
    if (graph_->tensors[Index(t)].producer == kNoOp) {
      latest[Index(t)] = t;
      computations_[Index(t)].push_back(t);
    }
  }
  std::vector<char> seen(Index(n), 0);
  for (size_t p = 0; p < steps; ++p) {
    const OpId o = schedule[p];
    if (o < 0 || o >= n) return false;
    const auto inst = static_cast<int>(p);
    order_[p] = inst;
    const bool copy = seen[Index(o)] != 0;
    copy_[p] = copy;
    if (copy && !per_graph_->recomputable[Index(o)]) return false;
    const Op& op = graph_->ops[Index(o)];
    for (TensorId t : op.inputs) {
      const int x = latest[Index(t)];
      if (x < 0 || version[Index(x)] != writes[Index(values_[Index(x)].storage)]) return false;
      in_values_[p].push_back(x);
      values_[Index(x)].readers.push_back(inst);
    }
    for (TensorId t : op.outputs) {
      const TensorId base = graph_->tensors[Index(t)].alias_of;
      if (base == kNoTensor) continue;
      if (latest[Index(base)] < 0) return false;
      if (copy && per_graph_->in_place[Index(o)] &&
          stores_[Index(values_[Index(latest[Index(base)])].storage)].original)
        return false;
    }
    seen[Index(o)] = 1;
    for (TensorId t : op.outputs) {
      // As in Rewrite: readers of the statistics keep reading the original's update.
      if (copy && IsSkippedStateUpdate(*graph_, o, t, rule_)) continue;
      const Tensor& orig = graph_->tensors[Index(t)];
      int made = t;
      if (copy) {
        int storage = 0;
        if (orig.alias_of == kNoTensor) {
          storage = NewCopyStore(t);
          writes.push_back(0);
        } else {
          storage = values_[Index(latest[Index(orig.alias_of)])].storage;
        }
        made = NewCopyValue(t, storage);
        version.push_back(0);
      } else if (orig.alias_of != kNoTensor && !orig.output) {
        // As in Rewrite: an original view or in-place write of a copy aliases the copy.
        const int to = values_[Index(latest[Index(orig.alias_of)])].storage;
        if (to != values_[Index(t)].storage) MoveValue(t, to);
      }
      values_[Index(made)].producer = inst;
      const int sid = values_[Index(made)].storage;
      if (per_graph_->in_place[Index(o)] && orig.alias_of != kNoTensor) {
        ++writes[Index(sid)];
        stores_[Index(sid)].writers.push_back(inst);
      }
      version[Index(made)] = writes[Index(sid)];
      latest[Index(t)] = made;
      computations_[Index(t)].push_back(made);
      out_values_[p].push_back(made);
    }
  }
  for (OpId op = 0; op < n; ++op)
    if (!seen[Index(op)]) return false;
  start_delta_.assign(steps + 1, 0);
  end_delta_.assign(steps + 1, 0);
  for (int sid = 0; sid < num_stores_; ++sid) {
    stores_[Index(sid)].start = kNoStep;
    Relife(sid);
  }
  profile_dirty_ = true;
  return true;
}

bool GreedyState::CanInsert(Step at, std::span<const OpId> ops) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] < 0 || ops[i] >= graph_->num_ops() || !per_graph_->recomputable[Index(ops[i])])
      return false;
    for (TensorId t : graph_->ops[Index(ops[i])].inputs) {
      const OpId producer = graph_->tensors[Index(t)].producer;
      if (producer != kNoOp && std::find(ops.begin(), ops.begin() + static_cast<std::ptrdiff_t>(i),
                                         producer) != ops.begin() + static_cast<std::ptrdiff_t>(i))
        continue;  // read from a copy made before it
      const int x = Latest(t, at, false);
      if (x < 0 || WrittenBetween(values_[Index(x)].storage, ProducerStep(x), at)) return false;
    }
  }
  return true;
}

bool GreedyState::Rehome(std::vector<int> queue, std::vector<int>& affected) {
  while (!queue.empty()) {
    const int v = queue.back();
    queue.pop_back();
    const TensorId t = values_[Index(v)].tensor;
    const Step q = ProducerStep(v);
    Step until = std::numeric_limits<Step>::max();
    for (int w : computations_[Index(t)])
      if (ProducerStep(w) > q) {
        until = ProducerStep(w);
        break;
      }
    const int to = values_[Index(v)].storage;
    for (TensorId c : per_graph_->alias_children[Index(t)])
      for (int y : computations_[Index(c)]) {
        const int p = values_[Index(y)].producer;
        if (p < 0 || pos_[Index(p)] <= q || pos_[Index(p)] >= until) continue;
        if (!copy_[Index(p)] && graph_->tensors[Index(c)].output) continue;
        const int from = values_[Index(y)].storage;
        if (from == to) continue;
        MoveValue(y, to);
        if (per_graph_->in_place[Index(op_of_[Index(p)])]) {
          if (copy_[Index(p)] && stores_[Index(to)].original) return false;
          auto& ow = stores_[Index(from)].writers;
          ow.erase(std::find(ow.begin(), ow.end(), p));
          auto& nw = stores_[Index(to)].writers;
          auto it = nw.begin();
          while (it != nw.end() && pos_[Index(*it)] < pos_[Index(p)]) ++it;
          nw.insert(it, p);
        }
        affected.push_back(from);
        affected.push_back(to);
        queue.push_back(y);
      }
  }
  return true;
}

bool GreedyState::Insert(Step at, std::span<const OpId> ops) {
  const auto k = static_cast<Step>(ops.size());
  if (k == 0) return true;
  if (at < 0 || at > NumSteps()) return false;
  profile_dirty_ = true;
  ShiftSteps(at, k);
  start_delta_.insert(start_delta_.begin() + at, Index(k), 0);
  end_delta_.insert(end_delta_.begin() + at, Index(k), 0);
  schedule_.insert(schedule_.begin() + at, ops.begin(), ops.end());
  std::vector<int> copies;
  for (Step i = 0; i < k; ++i) {
    copies.push_back(NewInstance(ops[Index(i)], at + i, true));
  }
  order_.insert(order_.begin() + at, copies.begin(), copies.end());

  std::vector<int> affected;
  std::vector<int> made;  // new values in creation order
  for (Step i = 0; i < k; ++i) {
    const int inst = copies[Index(i)];
    const Step q = at + i;
    const OpId o = ops[Index(i)];
    if (o < 0 || o >= graph_->num_ops() || !per_graph_->recomputable[Index(o)]) return false;
    const Op& op = graph_->ops[Index(o)];
    for (TensorId t : op.inputs) {
      const int x = Latest(t, q, false);
      if (x < 0) return false;
      in_values_[Index(inst)].push_back(x);
      values_[Index(x)].readers.push_back(inst);
      affected.push_back(values_[Index(x)].storage);
    }
    // The original must come first: it is the computation the copies repeat.
    if (op.outputs.empty() || Latest(op.outputs.front(), q, false) < 0) return false;
    for (TensorId t : op.outputs) {
      if (IsSkippedStateUpdate(*graph_, o, t, rule_)) continue;
      const Tensor& orig = graph_->tensors[Index(t)];
      int storage = 0;
      if (orig.alias_of == kNoTensor) {
        storage = NewCopyStore(t);
      } else {
        const int base = Latest(orig.alias_of, q, true);
        if (base < 0) return false;
        storage = values_[Index(base)].storage;
        // A recomputed in-place write must write a storage a copy made.
        if (per_graph_->in_place[Index(o)] && stores_[Index(storage)].original) return false;
      }
      const int id = NewCopyValue(t, storage);
      values_[Index(id)].producer = inst;
      Store& s = stores_[Index(storage)];
      if (per_graph_->in_place[Index(o)] && orig.alias_of != kNoTensor) {
        auto it = s.writers.begin();
        while (it != s.writers.end() && pos_[Index(*it)] < q) ++it;
        s.writers.insert(it, inst);
      }
      AddValue(id);
      out_values_[Index(inst)].push_back(id);
      made.push_back(id);
      affected.push_back(values_[Index(id)].storage);
    }
  }
  // Readers after a copy read it instead of the computation before it.
  for (int v : made) {
    const Value& nv = values_[Index(v)];
    const auto& list = computations_[Index(nv.tensor)];
    auto it = std::find(list.begin(), list.end(), v);
    if (it == list.begin()) return false;
    const int prev = *(it - 1);
    const Step q = pos_[Index(nv.producer)];
    auto& readers = values_[Index(prev)].readers;
    auto keep = std::stable_partition(readers.begin(), readers.end(),
                                      [&](int r) { return pos_[Index(r)] < q; });
    for (auto r = keep; r != readers.end(); ++r) {
      for (int& x : in_values_[Index(*r)])
        if (x == prev) x = v;
      values_[Index(v)].readers.push_back(*r);
    }
    if (keep != readers.end()) affected.push_back(values_[Index(prev)].storage);
    readers.erase(keep, readers.end());
  }
  // Computations after a new one that view or write in place the tensor it recomputes now
  // take the new computation's storage.
  if (!Rehome(std::move(made), affected)) return false;
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  if (!ReadsUnwritten(affected)) return false;
  for (int sid : affected) Relife(sid);
  return true;
}

bool GreedyState::ReadsUnwritten(const std::vector<int>& storages) const {
  for (int sid : storages) {
    if (stores_[Index(sid)].writers.empty()) continue;
    for (int x : stores_[Index(sid)].members)
      for (int r : values_[Index(x)].readers)
        if (WrittenBetween(sid, ProducerStep(x), pos_[Index(r)])) return false;
  }
  return true;
}

bool GreedyState::Remove(Step at, Step k) {
  if (k <= 0) return true;
  if (at < 0 || k > NumSteps() - at) return false;
  const std::vector<int> gone(order_.begin() + at, order_.begin() + at + k);
  for (int inst : gone)
    if (!copy_[Index(inst)]) return false;  // nothing changed yet: the state stays usable
  profile_dirty_ = true;
  std::vector<int> affected, prevs, dropped;
  // Latest first: the readers of a copy's values that are later copies of the run are gone.
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
    const int inst = *it;
    for (int x : in_values_[Index(inst)]) {
      auto& readers = values_[Index(x)].readers;
      readers.erase(std::remove(readers.begin(), readers.end(), inst), readers.end());
      affected.push_back(values_[Index(x)].storage);
    }
    for (int v : out_values_[Index(inst)]) {
      // Its readers read the computation before it again, as before the copy was inserted.
      auto& list = computations_[Index(values_[Index(v)].tensor)];
      const auto at_v = std::find(list.begin(), list.end(), v);
      if (at_v == list.begin() || at_v == list.end()) return false;
      const int prev = *(at_v - 1);
      list.erase(at_v);
      for (int r : values_[Index(v)].readers) {
        for (int& x : in_values_[Index(r)])
          if (x == v) x = prev;
        values_[Index(prev)].readers.push_back(r);
      }
      values_[Index(v)].readers.clear();
      const int sid = values_[Index(v)].storage;
      auto& members = stores_[Index(sid)].members;
      members.erase(std::find(members.begin(), members.end(), v));
      auto& writers = stores_[Index(sid)].writers;
      writers.erase(std::remove(writers.begin(), writers.end(), inst), writers.end());
      affected.push_back(sid);
      affected.push_back(values_[Index(prev)].storage);
      prevs.push_back(prev);
      dropped.push_back(v);
    }
  }
  // A computation before a removed one may have been removed itself (a run copying an op
  // twice): its own previous computation takes its place.
  std::sort(dropped.begin(), dropped.end());
  std::erase_if(prevs,
                [&](int v) { return std::binary_search(dropped.begin(), dropped.end(), v); });
  // What a removed computation's storage held for later views goes back to the storage of
  // the computation before it.
  if (!Rehome(std::move(prevs), affected)) return false;
  std::sort(affected.begin(), affected.end());
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  // Out of the profile while the steps are those it was accounted at; a storage left without
  // members was a removed copy's own and is dead.
  for (int sid : affected) {
    Account(sid, -1);
    Store& s = stores_[Index(sid)];
    s.start = s.end = kNoStep;
    if (s.members.empty()) {
      if (s.original) return false;
      s.planned = false;
    }
  }
  for (int inst : gone) {
    in_values_[Index(inst)].clear();
    out_values_[Index(inst)].clear();
    pos_[Index(inst)] = kNoStep;
  }
  ShiftSteps(at + k, -k);
  start_delta_.erase(start_delta_.begin() + at, start_delta_.begin() + at + k);
  end_delta_.erase(end_delta_.begin() + at, end_delta_.begin() + at + k);
  schedule_.erase(schedule_.begin() + at, schedule_.begin() + at + k);
  order_.erase(order_.begin() + at, order_.begin() + at + k);
  if (!ReadsUnwritten(affected)) return false;
  for (int sid : affected) Relife(sid);
  return true;
}

const std::vector<Bytes>& GreedyState::Profile() {
  if (!profile_dirty_) return profile_;
  profile_.resize(order_.size());
  Bytes live = 0;
  peak_ = 0;
  peak_step_ = 0;
  for (size_t s = 0; s < order_.size(); ++s) {
    live += start_delta_[s];
    profile_[s] = live;
    if (live > peak_) {
      peak_ = live;
      peak_step_ = static_cast<Step>(s);
    }
    live -= end_delta_[s];
  }
  profile_dirty_ = false;
  return profile_;
}

Bytes GreedyState::Peak() {
  Profile();
  return peak_;
}

Step GreedyState::PeakStep() {
  Profile();
  return peak_step_;
}

double GreedyState::RecomputeCost() const {
  std::vector<char> seen(graph_->ops.size(), 0);
  double cost = 0;
  for (OpId op : schedule_) {
    if (seen[Index(op)]) cost += (*costs_)[Index(op)];
    seen[Index(op)] = 1;
  }
  return cost;
}

void RepairAtPeak(GreedyState& state, Bytes budget, double allowance,
                  const std::vector<double>& costs, const OpFlags& flags,
                  const RematParams& params) {
  double spent = 0;
  for (int step = 0; step < params.greedy.swap_repair_steps && state.Peak() > budget; ++step) {
    bool applied = false;
    for (const Candidate& c : CandidatesAt(state, state.PeakStep(), costs, flags, params)) {
      if (spent + c.cost >= allowance || !state.CanInsert(c.at, c.ops)) continue;
      Schedule before = state.schedule();
      if (state.Insert(c.at, c.ops)) {
        spent += c.cost;
        applied = true;
        break;
      }
      state.Reset(before);
    }
    if (!applied) break;
  }
}

}  // namespace roam::remat::detail
