// The branch and bound of proven_bound.h: GLPK solves each node's LP, roam proves its bound.
#include "ilp/proven_bound.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/types.h"

namespace roam::ilp {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// An integer column's LP value this close to an integer counts as that integer.
constexpr double kIntegral = 1e-6;

void SetColumnBounds(glp_prob* prob, int j, double lower, double upper) {
  glp_set_col_bnds(prob, j + 1, detail::BoundType(lower, upper), std::isfinite(lower) ? lower : 0,
                   std::isfinite(upper) ? upper : 0);
}

int Quiet(void*, const char*) { return 1; }  // GLPK must not write to the terminal

// A column's narrowed range at a node.
struct Range {
  int column;
  double lower, upper;
};

struct Node {
  double bound;  // holds for every integer point within the node's ranges
  std::int64_t seq;
  std::vector<Range> ranges;
  int branch;  // the integer column to split, and its LP value
  double value;
};

struct LaterFirst {  // the priority queue's order: least bound first, then the oldest
  bool operator()(const Node& a, const Node& b) const {
    return a.bound != b.bound ? a.bound > b.bound : a.seq > b.seq;
  }
};

class Search {
 public:
  Search(const Problem& problem, const ProvenBoundParams& params)
      : problem_(problem),
        params_(params),
        n_(problem.num_columns()),
        m_(problem.num_rows()),
        deadline_(Clock::now() +
                  std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(std::clamp(params.time_limit_s, 0.0, 1e9)))) {}

  ProvenBound Run();

 private:
  enum class Lp { kSolved, kEmpty, kUnsolved };
  struct NodeLp {
    Lp status = Lp::kUnsolved;
    double bound = -kInf;
    std::vector<double> x;
  };

  void Load();
  NodeLp SolveNode(const std::vector<Range>& ranges);
  // Runs glp_simplex, trapped; false where GLPK failed (the prob is then gone).
  bool Simplex(int method, int* ret);
  bool OutOfWork() const;
  // A node just solved: closed as a leaf, or queued to be split.
  void Place(NodeLp lp, std::vector<Range> ranges, double parent_bound);
  void Offer(std::vector<double> values);
  double Cutoff() const { return std::min(params_.enough, out_.objective); }
  static bool AtLeast(double bound, double target) {
    return bound >= target - 1e-9 * (1 + std::abs(target));
  }

  const Problem& problem_;
  const ProvenBoundParams& params_;
  const int n_, m_;
  const Clock::time_point deadline_;
  glp_prob* prob_ = nullptr;
  std::vector<double> lower_, upper_;  // the columns' bounds at the node being solved
  std::vector<int> slack_;             // the elastic columns, closed outside an infeasible node
  double most_ = kInf;                 // no feasible point's objective exceeds it
  bool failed_ = false;
  bool truncated_ = false;  // a leaf was closed by `enough` or left unsolved
  double closed_floor_ = kInf;
  std::int64_t seq_ = 0;
  std::priority_queue<Node, std::vector<Node>, LaterFirst> open_;
  ProvenBound out_;
};

void Search::Load() {
  prob_ = problem_.LoadIntoGlpk();
  lower_.resize(U(n_));
  upper_.resize(U(n_));
  double least = problem_.objective_constant();
  most_ = least;
  for (int j = 0; j < n_; ++j) {
    const Problem::Column& c = problem_.column(j);
    lower_[U(j)] = c.lower;
    upper_[U(j)] = c.upper;
    if (c.objective != 0) {
      most_ += std::max(c.objective * c.lower, c.objective * c.upper);
      least += std::min(c.objective * c.lower, c.objective * c.upper);
    }
  }
  if (std::isnan(most_) || std::isnan(least)) most_ = least = kInf;
  // An elastic row's slack costs more than any feasible point can, so that the elastic LP of
  // a feasible node keeps its optimum; where the objective is unbounded there is no such cost.
  if (!std::isfinite(most_)) return;
  const double penalty = 1e3 * (1 + most_ - least);
  for (int i = 0; i < m_; ++i)
    for (double sign : {1.0, -1.0}) {
      if (!std::isfinite(sign > 0 ? problem_.row_lower(i) : problem_.row_upper(i))) continue;
      const int slack = glp_add_cols(prob_, 1);
      slack_.push_back(slack - 1);
      glp_set_col_bnds(prob_, slack, GLP_FX, 0, 0);
      glp_set_obj_coef(prob_, slack, penalty);
      const int row[2] = {0, i + 1};
      const double value[2] = {0, sign};
      glp_set_mat_col(prob_, slack, 1, row, value);
    }
}

bool Search::OutOfWork() const {
  if (params_.max_lp_iterations > 0 && out_.lp_iterations >= params_.max_lp_iterations) return true;
  return Clock::now() >= deadline_ || (params_.stop != nullptr && params_.stop->load());
}

bool Search::Simplex(int method, int* ret) {
  glp_smcp smcp;
  glp_init_smcp(&smcp);
  smcp.msg_lev = GLP_MSG_OFF;
  smcp.meth = method;
  smcp.presolve = GLP_OFF;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  smcp.tm_lim = static_cast<int>(std::clamp<long long>(ms.count(), 1, INT_MAX));
  if (params_.max_lp_iterations > 0)
    smcp.it_lim = static_cast<int>(
        std::clamp<std::int64_t>(params_.max_lp_iterations - out_.lp_iterations, 1, INT_MAX));
  glp_prob* prob = prob_;
  const int before = glp_get_it_cnt(prob);
  int code = GLP_EFAIL;
  const bool ok = detail::RunTrapped([prob, &smcp, &code] {
    code = glp_simplex(prob, &smcp);
    if (code == GLP_EBADB) {  // no valid basis to start from
      glp_adv_basis(prob, 0);
      code = glp_simplex(prob, &smcp);
    }
  });
  if (!ok) {  // GLPK freed the thread's environment, and prob_ with it
    prob_ = nullptr;
    failed_ = true;
    return false;
  }
  out_.lp_iterations += std::max(0, glp_get_it_cnt(prob) - before);
  *ret = code;
  return true;
}

Search::NodeLp Search::SolveNode(const std::vector<Range>& ranges) {
  NodeLp lp;
  if (failed_) return lp;
  ++out_.nodes;
  for (int j = 0; j < n_; ++j) {
    const Problem::Column& c = problem_.column(j);
    lower_[U(j)] = c.lower;
    upper_[U(j)] = c.upper;
  }
  for (const Range& r : ranges) {
    lower_[U(r.column)] = r.lower;
    upper_[U(r.column)] = r.upper;
  }
  for (int j = 0; j < n_; ++j)
    if (problem_.column(j).kind != ColumnKind::kContinuous)
      SetColumnBounds(prob_, j, lower_[U(j)], upper_[U(j)]);
  int ret = 0;
  if (!Simplex(GLP_DUALP, &ret) || ret != 0) return lp;
  const int status = glp_get_status(prob_);
  auto duals = [&] {
    std::vector<double> y(U(m_));
    for (int i = 0; i < m_; ++i) y[U(i)] = glp_get_row_dual(prob_, i + 1);
    return problem_.DualBound(y, lower_, upper_);
  };
  if (status == GLP_OPT) {
    lp.status = Lp::kSolved;
    lp.bound = duals();
    lp.x.resize(U(n_));
    for (int j = 0; j < n_; ++j) lp.x[U(j)] = glp_get_col_prim(prob_, j + 1);
    return lp;
  }
  if (status == GLP_UNBND) {  // nothing bounds this node's points from below
    lp.status = Lp::kSolved;
    lp.x.resize(U(n_));
    for (int j = 0; j < n_; ++j) lp.x[U(j)] = glp_get_col_prim(prob_, j + 1);
    return lp;
  }
  if (status != GLP_NOFEAS || slack_.empty()) return lp;
  // GLPK says no point of the node's LP is feasible: its elastic LP's duals prove it (or bound
  // the node where they prove less).
  for (int s : slack_) glp_set_col_bnds(prob_, s + 1, GLP_LO, 0, 0);
  const bool solved = Simplex(GLP_PRIMAL, &ret) && ret == 0 && glp_get_status(prob_) == GLP_OPT;
  if (solved) {
    lp.bound = duals();
    lp.status = lp.bound > most_ ? Lp::kEmpty : Lp::kUnsolved;
  }
  if (prob_ != nullptr)
    for (int s : slack_) glp_set_col_bnds(prob_, s + 1, GLP_FX, 0, 0);
  return lp;
}

void Search::Offer(std::vector<double> values) {
  if (!problem_.CheckFeasible(values).empty()) return;
  const double objective = problem_.Objective(values);
  if (objective < out_.objective) {
    out_.objective = objective;
    out_.values = std::move(values);
    out_.has_solution = true;
  }
}

void Search::Place(NodeLp lp, std::vector<Range> ranges, double parent_bound) {
  if (lp.status == Lp::kEmpty) return;  // a leaf without points: bounds nothing
  const double bound = std::max(lp.bound, parent_bound);
  if (lp.status == Lp::kUnsolved) {  // out of work or GLPK failed: the parent's bound stands
    truncated_ = true;
    closed_floor_ = std::min(closed_floor_, bound);
    return;
  }
  // The most fractional integer column (of those marked branch_first, if any is fractional),
  // the lowest index among equals; and the two roundings of the LP point, which may be
  // feasible points.
  int branch = -1;
  double worst = kIntegral;
  std::vector<double> down = lp.x, up = lp.x;
  for (int j = 0; j < n_; ++j) {
    if (problem_.column(j).kind == ColumnKind::kContinuous) continue;
    const double v = lp.x[U(j)];
    down[U(j)] = std::max(lower_[U(j)], std::floor(v + kIntegral));
    up[U(j)] = std::min(upper_[U(j)], std::ceil(v - kIntegral));
    double fraction = std::min(v - std::floor(v), std::ceil(v) - v);
    if (fraction > kIntegral && !params_.branch_first.empty() && params_.branch_first[U(j)])
      fraction += 1;  // before every column not marked
    if (fraction > worst) {
      worst = fraction;
      branch = j;
    }
  }
  if (branch < 0) {  // integral: the LP's optimum is the node's
    Offer(std::move(down));
    closed_floor_ = std::min(closed_floor_, bound);
    return;
  }
  Offer(std::move(down));
  Offer(std::move(up));
  if (AtLeast(bound, Cutoff())) {
    if (!AtLeast(bound, out_.objective)) truncated_ = true;  // closed by `enough` alone
    closed_floor_ = std::min(closed_floor_, bound);
    return;
  }
  open_.push(Node{bound, seq_++, std::move(ranges), branch, lp.x[U(branch)]});
}

ProvenBound Search::Run() {
  Load();
  glp_term_hook(Quiet, nullptr);
  if (m_ > 0 || n_ > 0) glp_scale_prob(prob_, GLP_SF_AUTO);
  Place(SolveNode({}), {}, -kInf);
  while (!open_.empty()) {
    const Node& top = open_.top();
    if (AtLeast(std::min(closed_floor_, top.bound), Cutoff())) break;
    if (failed_ || OutOfWork() || (params_.max_nodes > 0 && out_.nodes + 2 > params_.max_nodes))
      break;
    Node node = top;
    open_.pop();
    const Problem::Column& c = problem_.column(node.branch);
    double lo = c.lower, up = c.upper;
    for (const Range& r : node.ranges)
      if (r.column == node.branch) lo = r.lower, up = r.upper;
    for (const Range& split : {Range{node.branch, lo, std::floor(node.value)},
                               Range{node.branch, std::ceil(node.value), up}}) {
      std::vector<Range> ranges = node.ranges;
      auto same = std::find_if(ranges.begin(), ranges.end(),
                               [&](const Range& r) { return r.column == split.column; });
      if (same != ranges.end())
        *same = split;
      else
        ranges.push_back(split);
      NodeLp lp = SolveNode(ranges);
      Place(std::move(lp), std::move(ranges), node.bound);
    }
  }
  out_.bound = closed_floor_;
  if (!open_.empty()) out_.bound = std::min(out_.bound, open_.top().bound);
  out_.complete = open_.empty() && !truncated_ && !failed_;
  out_.infeasible = out_.complete && out_.bound == kInf && !out_.has_solution;
  if (out_.complete && out_.has_solution) out_.bound = std::min(out_.bound, out_.objective);
  if (prob_ != nullptr) {
    glp_term_hook(nullptr, nullptr);
    detail::DeleteGlpProb(prob_);
    prob_ = nullptr;
  }
  out_.message = failed_           ? "GLPK failed an internal check; the bound so far stands"
                 : out_.infeasible ? "infeasible"
                 : out_.complete   ? "complete"
                 // The root's LP unsolved (its bound is the parent's, -inf): nothing proven.
                 : out_.bound == -kInf ? "out of work before the root LP was solved"
                 : open_.empty()       ? "every leaf closed, some by `enough` or out of work"
                                       : "out of work with leaves open";
  return out_;
}

}  // namespace

ProvenBound ProveLowerBound(const Problem& problem, const ProvenBoundParams& params) {
  if (!params.branch_first.empty() &&
      params.branch_first.size() != static_cast<size_t>(problem.num_columns()))
    throw std::invalid_argument("ilp::ProveLowerBound: branch_first has " +
                                std::to_string(params.branch_first.size()) + " entries for " +
                                std::to_string(problem.num_columns()) + " columns");
  if (problem.num_columns() == 0) {
    ProvenBound out;
    out.complete = true;
    if (problem.CheckFeasible({}).empty()) {
      out.bound = out.objective = problem.objective_constant();
      out.has_solution = true;
    } else {
      out.bound = kInf;
      out.infeasible = true;
    }
    return out;
  }
  return Search(problem, params).Run();
}

}  // namespace roam::ilp
