#include "layout/search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "core/types.h"

namespace roam::layout::detail {
namespace {

constexpr Bytes kNever = std::numeric_limits<Bytes>::max();

}  // namespace

Instance MakeInstance(std::span<const Interval> intervals, std::span<const Bytes> align,
                      std::span<const Bytes> fixed) {
  Instance in;
  const size_t n = intervals.size();
  in.size.resize(n);
  in.align.assign(align.begin(), align.end());
  in.fixed.assign(fixed.begin(), fixed.end());
  std::vector<std::int64_t> times;
  times.reserve(2 * n);
  for (const Interval& i : intervals) {
    times.push_back(i.start);
    times.push_back(std::int64_t{i.end} + 1);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](std::int64_t t) {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  in.first.resize(n);
  in.last.resize(n);
  in.duration.resize(n);
  in.num_sections = times.empty() ? 0 : static_cast<int>(times.size()) - 1;
  std::vector<Bytes> delta(times.size() + 1, 0);
  for (size_t b = 0; b < n; ++b) {
    in.size[b] = intervals[b].size;
    in.duration[b] = std::int64_t{intervals[b].end} + 1 - intervals[b].start;
    in.first[b] = rank(intervals[b].start);
    in.last[b] = rank(std::int64_t{intervals[b].end} + 1);
    delta[U(in.first[b])] += in.size[b];
    delta[U(in.last[b])] -= in.size[b];
  }
  in.load.resize(U(in.num_sections));
  Bytes running = 0;
  for (int s = 0; s < in.num_sections; ++s) in.load[U(s)] = running += delta[U(s)];
  in.twin.assign(n, -1);
  std::map<std::tuple<Bytes, Bytes, int, int>, int> last_of_class;
  for (size_t b = 0; b < n; ++b) {
    if (in.size[b] == 0 || in.fixed[b] >= 0) continue;
    auto [it, added] = last_of_class.try_emplace(
        std::make_tuple(in.size[b], in.align[b], in.first[b], in.last[b]), static_cast<int>(b));
    if (!added) in.twin[b] = std::exchange(it->second, static_cast<int>(b));
  }
  return in;
}

std::vector<std::vector<int>> SplitByTime(const Instance& in, std::span<const int> buffers) {
  std::vector<std::vector<int>> groups;
  int reach = -1;  // one past the last section of the current group
  for (int b : buffers) {
    if (groups.empty() || in.first[U(b)] >= reach) groups.emplace_back();
    groups.back().push_back(b);
    reach = std::max(reach, in.last[U(b)]);
  }
  return groups;
}

std::vector<std::vector<int>> Preorders(const Instance& in, bool minimalloc) {
  const int n = static_cast<int>(in.size.size());
  // Section total of a buffer: the largest load among its sections (a prefix maximum would
  // need a sparse table; a direct scan is fine at these sizes since it runs once).
  std::vector<Bytes> total(U(n), 0), width(U(n)), area(U(n));
  for (int b = 0; b < n; ++b) {
    for (int s = in.first[U(b)]; s < in.last[U(b)]; ++s)
      total[U(b)] = std::max(total[U(b)], in.load[U(s)]);
    width[U(b)] = in.last[U(b)] - in.first[U(b)];
    area[U(b)] = in.size[U(b)] * width[U(b)];
  }
  auto ranks = [&](auto key) {
    std::vector<int> order(U(n));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    std::vector<int> rank(U(n));
    for (int k = 0; k < n; ++k) rank[U(order[U(k)])] = k;
    return rank;
  };
  // Larger first: keys are negated.
  if (minimalloc) {
    // In double: a size times a duration in the caller's time units can pass 2^63.
    std::vector<double> time_area(U(n));
    for (int b = 0; b < n; ++b)
      time_area[U(b)] = static_cast<double>(in.size[U(b)]) * static_cast<double>(in.duration[U(b)]);
    auto w = [&](int b) { return -in.duration[U(b)]; };
    auto a = [&](int b) { return -time_area[U(b)]; };
    auto t = [&](int b) { return -total[U(b)]; };
    return {
        ranks([&](int b) { return std::make_tuple(w(b), a(b), t(b), b); }),
        ranks([&](int b) { return std::make_tuple(t(b), a(b), w(b), b); }),
        ranks([&](int b) { return std::make_tuple(t(b), w(b), a(b), b); }),
    };
  }
  return {
      ranks([&](int b) { return std::make_tuple(-total[U(b)], -width[U(b)], -area[U(b)], b); }),
      ranks([&](int b) { return std::make_tuple(-width[U(b)], -total[U(b)], -area[U(b)], b); }),
      ranks([&](int b) { return std::make_tuple(-area[U(b)], -total[U(b)], -width[U(b)], b); }),
      // On perfect packings every section total is the capacity, so the first two tie into
      // one order; tallest first gives the round-robin a different one.
      ranks([&](int b) { return std::make_tuple(-in.size[U(b)], -width[U(b)], -total[U(b)], b); }),
  };
}

Searcher::Searcher(const Instance& instance, const SearchParams& params)
    : in_(instance),
      params_(params),
      base_(instance.size.size(), 0),
      start_(instance.size.size(), 0),
      remaining_(U(instance.num_sections), 0),
      floor_(U(instance.num_sections), 0),
      placed_(instance.size.size(), 0),
      offset_(instance.size.size(), 0),
      queued_(U(instance.num_sections), 0),
      count_(U(instance.num_sections) + 1, 0) {
  for (size_t b = 0; b < 2 * instance.size.size(); ++b) zobrist_.push_back(Mix(b + 1));
  for (size_t s = 0; s < 2 * U(instance.num_sections); ++s)
    section_salt_.push_back(Mix(~s * 0xd1b54a32d192ed03ULL));
  if (params.failure_cache) floor_key_.resize(U(instance.num_sections));
  std::int64_t entries = 0;
  for (size_t b = 0; b < instance.size.size(); ++b) entries += instance.last[b] - instance.first[b];
  if (params.unallocated_floor && entries <= Instance::kMaxSectionEntries) {
    // Counted, then filled in buffer order: each section's buffers by index.
    has_section_lists_ = true;
    const size_t sections = U(instance.num_sections);
    section_start_.assign(sections + 1, 0);
    for (size_t b = 0; b < instance.size.size(); ++b)
      if (instance.size[b] > 0)
        for (int s = instance.first[b]; s < instance.last[b]; ++s) ++section_start_[U(s) + 1];
    for (size_t s = 0; s < sections; ++s) section_start_[s + 1] += section_start_[s];
    const size_t listed = U(section_start_[sections]);
    section_buffers_.resize(listed);
    slot_.resize(static_cast<size_t>(entries));
    slot_start_.assign(instance.size.size(), 0);
    std::vector<int> fill(section_start_.begin(), section_start_.end() - 1);
    int next = 0;
    for (size_t b = 0; b < instance.size.size(); ++b) {
      slot_start_[b] = next;
      next += instance.last[b] - instance.first[b];
      if (instance.size[b] == 0) continue;
      for (int s = instance.first[b]; s < instance.last[b]; ++s) {
        const int k = fill[U(s)]++;
        section_buffers_[U(k)] = static_cast<int>(b);
        Slot(static_cast<int>(b), s) = k;
      }
    }
    unplaced_at_ = section_buffers_;
    unplaced_count_.assign(sections, 0);
  }
}

SearchOutcome Searcher::Run(std::span<const int> buffers, std::span<const int> rank, Bytes capacity,
                            std::int64_t node_limit, std::int64_t work_limit,
                            std::optional<Clock::time_point> deadline, std::vector<Bytes>& offsets,
                            bool candidate_branching) {
  rank_ = rank;
  capacity_ = capacity;
  node_limit_ = node_limit;
  work_limit_ = work_limit;
  deadline_ = deadline;
  nodes_ = 0;
  work_ = 0;
  aborted_ = false;
  base_trail_.clear();
  floor_trail_.clear();
  placed_trail_.clear();
  use_unallocated_floor_ = has_section_lists_ && static_cast<std::int64_t>(buffers.size()) <=
                                                     params_.unallocated_floor_max_buffers;
  use_bottom_left_ = params_.bottom_left && !candidate_branching &&
                     static_cast<std::int64_t>(buffers.size()) <= params_.bottom_left_max_buffers;
  use_backjumping_ = use_bottom_left_ && params_.backjumping;
  if (use_backjumping_ && params_.conflict_ordering && capacity != activity_capacity_) {
    // What fails at one capacity says little about another: counts are kept per capacity.
    if (activity_capacity_ >= 0) activities_[activity_capacity_].swap(activity_);
    activity_.swap(activities_[capacity]);
    activity_capacity_ = capacity;
  }
  column_trail_.clear();
  reason_trail_.clear();
  depth_ = 0;
  if (buffers.empty()) return SearchOutcome::kFound;
  int lo = in_.first[U(buffers.front())], hi = lo;
  for (int b : buffers) {
    SetBase(b, 0);
    placed_[U(b)] = 0;
    hi = std::max(hi, in_.last[U(b)]);
  }
  // The group owns its sections (no other group touches them), so its load is the section's.
  std::fill(remaining_.begin() + lo, remaining_.begin() + hi, 0);
  for (int s = lo; s < hi; ++s) SetFloor(s, 0);
  if (use_backjumping_) {
    // A level per placement and per empty-space decision: twice the buffers covers most
    // paths; deeper levels share the last bit (conservative).
    const int words = static_cast<int>(
        std::clamp<std::int64_t>((2 * static_cast<std::int64_t>(buffers.size()) + 63) / 64, 1, 32));
    if (words > words_) {
      words_ = words;
      column_.assign(U(in_.num_sections) * U(words_), 0);
      reason_.assign(in_.size.size(), -1);
      explained_in_.assign(U(in_.num_sections), 0);
      conflict_.assign(U(words_), 0);
      explain_.assign(U(words_), 0);
    }
    std::fill(column_.begin() + lo * words_, column_.begin() + hi * words_, 0);
    for (int b : buffers) reason_[U(b)] = -1;
  }
  for (int b : buffers)
    for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) remaining_[U(s)] += in_.size[U(b)];
  if (use_unallocated_floor_) SortUnplacedFirst(lo, hi);
  std::vector<int> unplaced(buffers.begin(), buffers.end());
  if (Solve(unplaced, -1, -1)) {
    for (int b : buffers) offsets[U(b)] = offset_[U(b)];
    return SearchOutcome::kFound;
  }
  return aborted_ ? SearchOutcome::kAborted : SearchOutcome::kInfeasible;
}

void Searcher::Place(int b, Bytes offset) {
  offset_[U(b)] = offset;
  placed_[U(b)] = 1;
  placed_trail_.push_back(b);
  for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) remaining_[U(s)] -= in_.size[U(b)];
  if (use_unallocated_floor_ && in_.size[U(b)] > 0) Unplace(b);
}

void Searcher::Unplace(int b) {
  for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) {
    const int last = section_start_[U(s)] + --unplaced_count_[U(s)];
    const int k = Slot(b, s), other = unplaced_at_[U(last)];
    unplaced_at_[U(k)] = other;
    Slot(other, s) = k;
    unplaced_at_[U(last)] = b;
    Slot(b, s) = last;
  }
}

void Searcher::SortUnplacedFirst(int lo, int hi) {
  for (int s = lo; s < hi; ++s) {
    int count = 0;
    for (int k = section_start_[U(s)]; k < section_start_[U(s) + 1]; ++k) {
      const int b = unplaced_at_[U(k)];
      if (placed_[U(b)]) continue;
      const int to = section_start_[U(s)] + count++, other = unplaced_at_[U(to)];
      std::swap(unplaced_at_[U(k)], unplaced_at_[U(to)]);
      Slot(b, s) = to;
      Slot(other, s) = k;
    }
    unplaced_count_[U(s)] = count;
  }
}

void Searcher::Queue(int b) {
  for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s)
    if (!queued_[U(s)]) queued_[U(s)] = 1, queue_.push_back(s);
}

void Searcher::Lift(int c, Bytes value, int s) {
  base_trail_.emplace_back(c, base_[U(c)]);
  SetBase(c, value);
  if (use_backjumping_) {
    reason_trail_.emplace_back(c, reason_[U(c)]);
    reason_[U(c)] = s;
  }
  if (use_unallocated_floor_) Queue(c);
}

void Searcher::SetColumnBit(int s, int level) {
  const int k = Bit(level);
  const size_t w = U(s) * U(words_) + U(k / 64);
  const std::uint64_t bit = std::uint64_t{1} << (k % 64);
  if (column_[w] & bit) return;
  column_trail_.emplace_back(w, column_[w]);
  column_[w] |= bit;
}

void Searcher::OrIntoColumn(int s, const std::uint64_t* bits) {
  std::uint64_t* col = Column(s);
  for (int k = 0; k < words_; ++k) {
    if ((col[k] | bits[k]) == col[k]) continue;
    column_trail_.emplace_back(U(s) * U(words_) + U(k), col[k]);
    col[k] |= bits[k];
  }
}

void Searcher::OrColumn(std::vector<std::uint64_t>& into, int s) const {
  const std::uint64_t* col = column_.data() + U(s) * U(words_);
  for (int k = 0; k < words_; ++k) into[U(k)] |= col[k];
}

void Searcher::OrReason(std::vector<std::uint64_t>& into, int b) const {
  if (reason_[U(b)] >= 0) OrColumn(into, reason_[U(b)]);
}

void Searcher::AllBelow(std::vector<std::uint64_t>& bits, int level) const {
  const int k = std::min(level, 64 * words_);
  for (int w = 0; w < k / 64; ++w) bits[U(w)] = ~std::uint64_t{0};
  if (k % 64) bits[U(k / 64)] |= (std::uint64_t{1} << (k % 64)) - 1;
}

bool Searcher::Raise(int s, Bytes value, const std::vector<int>& unplaced,
                     const std::uint64_t* why) {
  floor_trail_.emplace_back(s, floor_[U(s)]);
  SetFloor(s, value);
  if (use_backjumping_ && why) OrIntoColumn(s, why);
  auto lift = [&](int c) {
    if (placed_[U(c)] || base_[U(c)] >= value) return;
    Lift(c, value, s);
  };
  if (has_section_lists_) {
    const std::span<const int> here = SectionBuffers(s);
    work_ += static_cast<std::int64_t>(here.size());
    for (int c : here) lift(c);
  } else {
    work_ += static_cast<std::int64_t>(unplaced.size());
    for (int c : unplaced)
      if (in_.first[U(c)] <= s && s < in_.last[U(c)]) lift(c);
  }
  if (!params_.section_inference || value + remaining_[U(s)] <= capacity_) return true;
  // Below the floor the section is settled: its buffers cannot fit above.
  if (use_backjumping_) std::copy(Column(s), Column(s) + words_, conflict_.begin());
  return false;
}

bool Searcher::Propagate(const std::vector<int>& unplaced) {
  bool ok = true;
  // Drained even after a failure, so that queued_ is clear for the next node.
  for (size_t k = 0; k < queue_.size(); ++k) {
    const int s = queue_[k];
    queued_[U(s)] = 0;
    if (!ok || remaining_[U(s)] == 0) continue;
    // Every unplaced buffer covering s starts at or above its floor, so one at the floor (or a
    // fixed one below it) settles that the floor stays: the rest need not be looked at.
    const int* first = unplaced_at_.data() + section_start_[U(s)];
    const std::span<const int> unplaced_here(first, first + unplaced_count_[U(s)]);
    Bytes lowest = kNever;
    const Bytes floor = floor_[U(s)];
    for (int c : unplaced_here) {
      ++work_;
      lowest = std::min(lowest, start_[U(c)]);
      if (lowest <= floor) break;
    }
    if (lowest != kNever && lowest > floor) {
      if (use_backjumping_) {
        // No unplaced buffer of the section can start lower: each rests on what settled the
        // section that bounds its base.
        std::fill(explain_.begin(), explain_.end(), 0);
        ++explanation_;
        work_ += static_cast<std::int64_t>(unplaced_here.size());
        for (int c : unplaced_here) {
          const int r = reason_[U(c)];
          if (in_.fixed[U(c)] >= 0 || r < 0 || explained_in_[U(r)] == explanation_) continue;
          explained_in_[U(r)] = explanation_;
          OrColumn(explain_, r);
        }
      }
      ok = Raise(s, lowest, unplaced, explain_.data());
    }
  }
  queue_.clear();
  return ok;
}

bool Searcher::PlaceAndRaise(int b, Bytes offset, const std::vector<int>& unplaced,
                             std::vector<int>& rest, int level) {
  Place(b, offset);
  const Bytes top = offset + in_.size[U(b)];
  for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) {
    floor_trail_.emplace_back(s, floor_[U(s)]);
    SetFloor(s, top);
    if (use_backjumping_) SetColumnBit(s, level);
  }
  if (use_unallocated_floor_) Queue(b);
  rest.clear();
  for (int j : unplaced) {
    if (j == b) continue;
    rest.push_back(j);
    if (base_[U(j)] < top && Overlap(b, j))
      Lift(j, top, std::max(in_.first[U(b)], in_.first[U(j)]));
  }
  return !use_unallocated_floor_ || Propagate(rest);
}

void Searcher::Rollback(const Mark& mark) {
  while (placed_trail_.size() > mark.placed) {
    const int b = placed_trail_.back();
    placed_trail_.pop_back();
    placed_[U(b)] = 0;
    for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) remaining_[U(s)] += in_.size[U(b)];
    if (use_unallocated_floor_ && in_.size[U(b)] > 0)
      for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) ++unplaced_count_[U(s)];
  }
  while (floor_trail_.size() > mark.floors) {
    SetFloor(floor_trail_.back().first, floor_trail_.back().second);
    floor_trail_.pop_back();
  }
  while (base_trail_.size() > mark.bases) {
    SetBase(base_trail_.back().first, base_trail_.back().second);
    base_trail_.pop_back();
  }
  while (reason_trail_.size() > mark.reasons) {
    reason_[U(reason_trail_.back().first)] = reason_trail_.back().second;
    reason_trail_.pop_back();
  }
  while (column_trail_.size() > mark.columns) {
    column_[column_trail_.back().first] = column_trail_.back().second;
    column_trail_.pop_back();
  }
}

bool Searcher::Aborting() {
  // The clock costs tens of nanoseconds, a node at least a microsecond: check every node.
  if (nodes_ >= node_limit_ || work_ >= work_limit_ || (deadline_ && Clock::now() >= *deadline_) ||
      (stop_ != nullptr && stop_->load(std::memory_order_relaxed)))
    aborted_ = true;
  return aborted_;
}

bool Searcher::Splits(const std::vector<int>& unplaced) const {
  int reach = in_.last[U(unplaced.front())];
  for (int b : unplaced) {
    if (in_.first[U(b)] >= reach) return true;
    reach = std::max(reach, in_.last[U(b)]);
  }
  return false;
}

bool Searcher::Solve(const std::vector<int>& unplaced, Bytes last_offset, int last_rank) {
  if (unplaced.empty()) return true;
  if (params_.dynamic_decomposition && Splits(unplaced)) {
    std::vector<std::vector<int>> groups = SplitByTime(in_, unplaced);
    if (groups.size() > 1) {
      // Independent: a group that fails dooms the node, one that succeeds is never revisited
      // (but is undone with the node).
      const Mark mark = Marks();
      for (const auto& g : groups)
        if (!(use_bottom_left_ ? BottomLeft(g) : Branch(g, last_offset, last_rank))) {
          Rollback(mark);
          return false;
        }
      return true;
    }
  }
  return use_bottom_left_ ? BottomLeft(unplaced) : Branch(unplaced, last_offset, last_rank);
}

bool Searcher::Branch(const std::vector<int>& unplaced, Bytes last_offset, int last_rank) {
  const bool canonical = params_.canonical;
  int lo = in_.num_sections, hi = 0;  // the sections of this group
  for (int b : unplaced) {
    lo = std::min(lo, in_.first[U(b)]);
    hi = std::max(hi, in_.last[U(b)]);
  }
  // The lowest top a free buffer could reach now (dominance), and dead ends: a free buffer that
  // no longer fits under the capacity, a fixed one whose place is taken or already passed.
  Bytes min_top = std::numeric_limits<Bytes>::max();
  std::vector<Candidate> candidates;
  candidates.reserve(unplaced.size());
  for (int b : unplaced) {
    const Bytes fixed = in_.fixed[U(b)];
    const Bytes offset = fixed >= 0 ? fixed : AlignUp(base_[U(b)], in_.align[U(b)]);
    if (offset + in_.size[U(b)] > capacity_) return false;
    const int rank = rank_[U(b)];
    const bool in_order =
        !canonical || offset > last_offset || (offset == last_offset && rank > last_rank);
    if (fixed >= 0) {
      if (base_[U(b)] > fixed || !in_order) return false;
    } else {
      min_top = std::min(min_top, offset + in_.size[U(b)]);
    }
    if (in_order && Free(b)) candidates.push_back({offset, rank, b});
  }
  // A heap, not a sort: a dive that succeeds takes only the first candidate of each node, and
  // on whole training graphs (4,000 buffers) sorting them all at every level doubled its time.
  auto later = [](const Candidate& x, const Candidate& y) {
    return std::tie(x.offset, x.rank) > std::tie(y.offset, y.rank);
  };
  std::make_heap(candidates.begin(), candidates.end(), later);
  const bool monotonic = canonical && params_.monotonic_floor;
  std::vector<int> rest;
  rest.reserve(unplaced.size());
  while (!candidates.empty()) {
    std::pop_heap(candidates.begin(), candidates.end(), later);
    const Candidate c = candidates.back();
    candidates.pop_back();
    if (params_.dominance && c.offset >= min_top) break;
    if (Aborting()) return false;
    CountNode(unplaced);
    const int b = c.buffer;
    const Mark mark = Marks();
    bool ok = PlaceAndRaise(b, c.offset, unplaced, rest);
    if (params_.section_inference) {
      // Everything still to come in a section sits on its floor (and, canonically, at or above
      // this offset).
      work_ += hi - lo;
      for (int s = lo; s < hi && ok; ++s)
        ok = (monotonic ? std::max(floor_[U(s)], c.offset) : floor_[U(s)]) + remaining_[U(s)] <=
             capacity_;
    }
    if (ok && Solve(rest, c.offset, c.rank)) return true;
    Rollback(mark);
    if (aborted_) return false;
  }
  return false;
}

}  // namespace roam::layout::detail
