#include "ilp/glpk.h"

#include <glpk.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "core/deadline.h"
#include "core/types.h"

namespace roam::ilp {
namespace {

using Clock = std::chrono::steady_clock;

// Problems alive on this thread; the thread's GLPK environment is freed when it drops to 0.
thread_local int live_problems = 0;

constexpr double kInf = std::numeric_limits<double>::infinity();

// GLPK reacts to a failed internal check (e.g. "basis matrix is singular" followed by an
// assertion in the simplex) by calling abort() unless an error hook is set, and the hook must
// not return. RunTrapped catches such a failure with longjmp: only GLPK's C frames, this
// function's thunk and `body` (whose locals must be trivially destructible) are skipped. GLPK
// leaves its environment inconsistent, so the thread's environment is freed, which frees every
// glp_prob of this thread; Problem creates its glp_prob only inside Solve, so that is only the
// one being solved.
struct ErrorTrap {
  std::jmp_buf buf;
};
extern "C" void OnGlpkError(void* info) { std::longjmp(static_cast<ErrorTrap*>(info)->buf, 1); }

}  // namespace

namespace detail {
bool RunTrapped(const std::function<void()>& body) {
  ErrorTrap trap;
  glp_error_hook(OnGlpkError, &trap);
  if (setjmp(trap.buf) != 0) {
    glp_free_env();
    live_problems = 0;
    return false;
  }
  body();
  glp_error_hook(nullptr, nullptr);
  return true;
}

int BoundType(double lower, double upper) {
  const bool has_lower = std::isfinite(lower), has_upper = std::isfinite(upper);
  if (has_lower && has_upper) return lower == upper ? GLP_FX : GLP_DB;
  if (has_lower) return GLP_LO;
  if (has_upper) return GLP_UP;
  return GLP_FR;
}

void DeleteGlpProb(glp_prob* prob) {
  glp_delete_prob(prob);
  if (--live_problems == 0) glp_free_env();
}
}  // namespace detail

namespace {

int MsgLevel(int level) {
  switch (level) {
    case 0:
      return GLP_MSG_OFF;
    case 1:
      return GLP_MSG_ERR;
    case 2:
      return GLP_MSG_ON;
    default:
      return GLP_MSG_ALL;
  }
}

// GLPK prints in fragments; the sink gets whole lines.
struct TermSink {
  const std::function<void(std::string_view)>* log = nullptr;
  std::string pending;
  void Flush() {
    if (!pending.empty() && log != nullptr && *log) (*log)(pending);
    pending.clear();
  }
};

int TermHook(void* info, const char* text) {
  auto* sink = static_cast<TermSink*>(info);
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '\n')
      sink->Flush();
    else
      sink->pending.push_back(*c);
  }
  return 1;  // non-zero: GLPK must not write to the terminal itself
}

struct CallbackState {
  const std::vector<double>* incumbent = nullptr;  // 1-based, as glp_ios_heur_sol wants it
  bool injected = false;
  Clock::time_point deadline;
  std::optional<double> stop_at;
  const std::atomic<bool>* stop = nullptr;
  bool integral_objective = false;
  double bound = -kInf;                   // best bound seen in the tree
  std::int64_t max_nodes = 0;             // 0: no limit
  std::int64_t max_total_iterations = 0;  // 0: no limit
  bool stopped_by_us = false;
  bool proven_optimal = false;
  bool work_limited = false;
  std::int64_t nodes = 0;  // created, as of the last callback
};

double RoundBound(double bound, bool integral) {
  return integral && std::isfinite(bound) ? std::ceil(bound - 1e-6) : bound;
}

void Callback(glp_tree* tree, void* info) {
  auto* state = static_cast<CallbackState*>(info);
  if (glp_ios_reason(tree) == GLP_IHEUR && state->incumbent != nullptr && !state->injected) {
    // The first heuristic request comes right after the root LP. GLPK accepts the solution
    // only if it beats its own incumbent; either way we never ask again.
    state->injected = true;
    glp_ios_heur_sol(tree, state->incumbent->data());
  }
  if (int best = glp_ios_best_node(tree); best != 0)
    state->bound = std::max(state->bound, glp_ios_node_bound(tree, best));
  glp_prob* prob = glp_ios_get_prob(tree);
  if (glp_mip_status(prob) == GLP_FEAS) {
    const double objective = glp_mip_obj_val(prob);
    if (RoundBound(state->bound, state->integral_objective) >= objective - 1e-6) {
      state->stopped_by_us = state->proven_optimal = true;
      glp_ios_terminate(tree);
      return;
    }
    if (state->stop_at && objective <= *state->stop_at + 1e-9) {
      state->stopped_by_us = true;
      glp_ios_terminate(tree);
      return;
    }
  }
  int active = 0, current = 0, total = 0;
  glp_ios_tree_size(tree, &active, &current, &total);
  state->nodes = total;
  const bool out_of_nodes = state->max_nodes > 0 && total >= state->max_nodes;
  const bool out_of_iterations =
      state->max_total_iterations > 0 && glp_get_it_cnt(prob) >= state->max_total_iterations;
  if (out_of_nodes || out_of_iterations) {
    state->stopped_by_us = state->work_limited = true;
    glp_ios_terminate(tree);
    return;
  }
  if (Clock::now() >= state->deadline || (state->stop != nullptr && state->stop->load())) {
    state->stopped_by_us = true;
    glp_ios_terminate(tree);
  }
}

// Simplex iterations of the root LP between two looks at the stop flag and the deadline. In
// iterations, not milliseconds: where a slice ends changes the simplex's path (each slice
// resumes from the basis the last one left, the first one's presolved work is lost), and slices
// of 200 ms made GPT-2 XL's compute lower bound, and so its plan, depend on the machine's load
// (perf/RESULTS.md, "The root LP in slices of work").
constexpr int kLpSliceIterations = 5000;

int RemainingMs(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms, 1, INT_MAX));
}

// The root LP, then branch-and-cut, on a loaded problem; run inside detail::RunTrapped. `ret`
// and `mip_status` are GLPK's answers; the root LP's duals and the whole solve's iterations go
// into `result`.
void SolveLoaded(glp_prob* prob, size_t num_rows, const SolveParams& params, int scaling,
                 Clock::time_point deadline, CallbackState& state, SolveResult& result, int& ret,
                 int& mip_status) {
  glp_smcp smcp;
  glp_init_smcp(&smcp);
  smcp.msg_lev = MsgLevel(params.log_level);
  smcp.presolve = params.presolve ? GLP_ON : GLP_OFF;
  if (params.scale) glp_scale_prob(prob, scaling);
  // The root LP in slices: GLPK's simplex has no callback, so an interrupt or the run's
  // deadline would otherwise wait for the whole LP (seconds on a whole training graph).
  // Each slice resumes from the basis the last one left, without the presolver, which keeps
  // none; where no valid basis was left, from the standard one.
  // The iteration limit is over all slices: GLPK's it_lim counts from the problem's own
  // iteration counter, which the slices keep adding to.
  std::int64_t it_cap = INT_MAX;
  for (const std::int64_t cap : {params.max_lp_iterations, state.max_total_iterations})
    if (cap > 0) it_cap = std::min(it_cap, cap);
  auto spent = [&] { return static_cast<std::int64_t>(glp_get_it_cnt(prob)); };
  auto slice_limits = [&] {
    smcp.tm_lim = RemainingMs(deadline);
    smcp.it_lim = static_cast<int>(
        std::clamp<std::int64_t>(it_cap - spent(), 1, std::int64_t{kLpSliceIterations}));
  };
  glp_set_it_cnt(prob, 0);
  slice_limits();
  ret = glp_simplex(prob, &smcp);
  while (ret == GLP_EITLIM && spent() < it_cap && Clock::now() < deadline &&
         !(params.stop != nullptr && params.stop->load())) {
    smcp.presolve = GLP_OFF;
    slice_limits();
    ret = glp_simplex(prob, &smcp);
    if (ret == GLP_EBADB) {
      glp_std_basis(prob);
      ret = glp_simplex(prob, &smcp);
    }
  }
  if (ret == GLP_EITLIM) {  // out of work (or of time between slices): no bound
    state.work_limited = spent() >= it_cap;
    ret = GLP_ETMLIM;
  }
  if (ret == 0 && glp_get_status(prob) == GLP_NOFEAS) ret = GLP_ENOPFS;
  if (ret == 0 && glp_get_status(prob) != GLP_OPT) ret = GLP_EFAIL;
  if (ret == 0) {
    state.bound = glp_get_obj_val(prob);
    result.row_duals.resize(num_rows);
    for (size_t i = 0; i < num_rows; ++i)
      result.row_duals[i] = glp_get_row_dual(prob, static_cast<int>(i) + 1);
    glp_iocp iocp;
    glp_init_iocp(&iocp);
    iocp.msg_lev = MsgLevel(params.log_level);
    iocp.tm_lim = RemainingMs(deadline);
    iocp.mip_gap = params.mip_gap;
    iocp.tol_int = params.integrality_tolerance;
    iocp.presolve = GLP_OFF;
    const int cuts = params.cuts ? GLP_ON : GLP_OFF;
    iocp.gmi_cuts = iocp.mir_cuts = iocp.cov_cuts = iocp.clq_cuts = cuts;
    iocp.cb_func = Callback;
    iocp.cb_info = &state;
    ret = glp_intopt(prob, &iocp);
    mip_status = glp_mip_status(prob);
  }
  // glp_intopt solves every node's LP on prob itself, so its counter holds them all.
  result.lp_iterations = glp_get_it_cnt(prob);
}

}  // namespace

std::string_view ToString(ModelStatus status) {
  switch (status) {
    case ModelStatus::kOptimal:
      return "optimal";
    case ModelStatus::kFeasibleTimeLimit:
      return "feasible at time limit";
    case ModelStatus::kInfeasible:
      return "infeasible";
    case ModelStatus::kNoSolutionTimeLimit:
      return "no solution at time limit";
    case ModelStatus::kError:
      return "error";
  }
  return "?";
}

std::string_view ToString(CallOutcome outcome) {
  return outcome == CallOutcome::kOk ? "ok" : "error";
}

double IntegralityToleranceFor(double row_weight, double requested) {
  return std::min(requested, std::max(1e-9, 0.25 / std::max(1.0, row_weight)));
}

MappedStatus MapGlpkStatus(int ret, int mip_status, bool stopped_by_us, bool proven_optimal) {
  const bool feasible = mip_status == GLP_FEAS || mip_status == GLP_OPT;
  switch (ret) {
    case 0:
      if (mip_status == GLP_OPT) return {CallOutcome::kOk, ModelStatus::kOptimal};
      if (mip_status == GLP_NOFEAS) return {CallOutcome::kOk, ModelStatus::kInfeasible};
      if (mip_status == GLP_FEAS) return {CallOutcome::kOk, ModelStatus::kFeasibleTimeLimit};
      return {CallOutcome::kError, ModelStatus::kError};
    case GLP_EMIPGAP:  // the requested relative gap was reached: optimal by our definition
      return {CallOutcome::kOk, feasible ? ModelStatus::kOptimal : ModelStatus::kError};
    case GLP_ETMLIM:
      return {CallOutcome::kOk,
              feasible ? ModelStatus::kFeasibleTimeLimit : ModelStatus::kNoSolutionTimeLimit};
    case GLP_ESTOP:
      if (!stopped_by_us) return {CallOutcome::kError, ModelStatus::kError};
      if (feasible && proven_optimal) return {CallOutcome::kOk, ModelStatus::kOptimal};
      return {CallOutcome::kOk,
              feasible ? ModelStatus::kFeasibleTimeLimit : ModelStatus::kNoSolutionTimeLimit};
    case GLP_ENOPFS:  // the LP relaxation (hence the MIP) has no primal feasible point
      return {CallOutcome::kOk, ModelStatus::kInfeasible};
    default:  // GLP_EBOUND, GLP_EROOT, GLP_EFAIL, GLP_ENODFS (unbounded), ...
      return {CallOutcome::kError, ModelStatus::kError};
  }
}

Problem::Problem() : owner_(std::this_thread::get_id()) {}

Problem::~Problem() {
  if (prob_ == nullptr) return;
  CheckThread();
  glp_delete_prob(prob_);
  if (--live_problems == 0) glp_free_env();
}

Problem::Problem(Problem&& other) noexcept { *this = std::move(other); }

Problem& Problem::operator=(Problem&& other) noexcept {
  if (this == &other) return *this;
  if (prob_ != nullptr) {
    glp_delete_prob(prob_);
    if (--live_problems == 0) glp_free_env();
  }
  prob_ = std::exchange(other.prob_, nullptr);
  owner_ = other.owner_;
  solved_ = other.solved_;
  columns_ = std::move(other.columns_);
  row_lower_ = std::move(other.row_lower_);
  row_upper_ = std::move(other.row_upper_);
  row_begin_ = std::move(other.row_begin_);
  entry_col_ = std::move(other.entry_col_);
  entry_val_ = std::move(other.entry_val_);
  objective_constant_ = other.objective_constant_;
  other.row_begin_ = {0};
  return *this;
}

void Problem::CheckThread() const {
  if (std::this_thread::get_id() != owner_)
    throw std::logic_error("ilp::Problem used on a thread other than the one that created it");
}

int Problem::AddColumn(ColumnKind kind, double lower, double upper, double objective) {
  if (kind == ColumnKind::kBinary) {
    lower = std::max(lower, 0.0);
    upper = std::min(upper, 1.0);
  }
  columns_.push_back({kind, lower, upper, objective});
  return num_columns() - 1;
}

int Problem::AddRow(std::span<const std::pair<int, double>> terms, double lower, double upper) {
  std::vector<std::pair<int, double>> sorted(terms.begin(), terms.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    double sum = 0.0;
    for (; j < sorted.size() && sorted[j].first == sorted[i].first; ++j) sum += sorted[j].second;
    if (sorted[i].first < 0 || sorted[i].first >= num_columns())
      throw std::out_of_range("ilp::Problem::AddRow: no column " + std::to_string(sorted[i].first));
    if (sum != 0.0) {
      entry_col_.push_back(sorted[i].first);
      entry_val_.push_back(sum);
    }
    i = j;
  }
  row_begin_.push_back(static_cast<int>(entry_col_.size()));
  row_lower_.push_back(lower);
  row_upper_.push_back(upper);
  return num_rows() - 1;
}

double Problem::Objective(std::span<const double> values) const {
  double sum = objective_constant_;
  for (size_t j = 0; j < columns_.size(); ++j) sum += columns_[j].objective * values[j];
  return sum;
}

std::string Problem::CheckFeasible(std::span<const double> values, double tolerance) const {
  std::ostringstream msg;
  if (values.size() != columns_.size()) {
    msg << values.size() << " values for " << columns_.size() << " columns";
    return msg.str();
  }
  for (size_t j = 0; j < columns_.size(); ++j) {
    const Column& c = columns_[j];
    if (values[j] < c.lower - tolerance || values[j] > c.upper + tolerance ||
        (c.kind != ColumnKind::kContinuous &&
         std::abs(values[j] - std::round(values[j])) > tolerance)) {
      msg << "column " << j << " = " << values[j] << " violates its bounds [" << c.lower << ", "
          << c.upper << "] or integrality";
      return msg.str();
    }
  }
  for (int i = 0; i < num_rows(); ++i) {
    double sum = 0.0;
    for (int k = row_begin_[U(i)]; k < row_begin_[U(i) + 1]; ++k)
      sum += entry_val_[U(k)] * values[U(entry_col_[U(k)])];
    if (sum < row_lower_[U(i)] - tolerance || sum > row_upper_[U(i)] + tolerance) {
      msg << "row " << i << " = " << sum << " violates [" << row_lower_[U(i)] << ", "
          << row_upper_[U(i)] << "]";
      return msg.str();
    }
  }
  return {};
}

double Problem::DualBound(std::span<const double> row_duals) const {
  std::vector<double> lower(columns_.size()), upper(columns_.size());
  for (size_t j = 0; j < columns_.size(); ++j) {
    lower[j] = columns_[j].lower;
    upper[j] = columns_[j].upper;
  }
  return DualBound(row_duals, lower, upper);
}

double Problem::DualBound(std::span<const double> row_duals, std::span<const double> column_lower,
                          std::span<const double> column_upper) const {
  if (row_duals.size() != row_lower_.size())
    throw std::invalid_argument("DualBound: one dual per row is needed");
  if (column_lower.size() != columns_.size() || column_upper.size() != columns_.size())
    throw std::invalid_argument("DualBound: two bounds per column are needed");
  std::vector<double> reduced(columns_.size());
  for (size_t j = 0; j < columns_.size(); ++j) reduced[j] = columns_[j].objective;
  double bound = objective_constant_, magnitude = std::abs(objective_constant_);
  for (size_t i = 0; i < row_lower_.size(); ++i) {
    const double lo = row_lower_[i], up = row_upper_[i];
    // A >= row's dual is at least 0, a <= row's at most 0; a free row's is 0.
    double y = row_duals[i];
    if (!std::isfinite(lo)) y = std::min(y, 0.0);
    if (!std::isfinite(up)) y = std::max(y, 0.0);
    if (y == 0.0) continue;
    const double term = y * (y > 0 ? lo : up);
    bound += term;
    magnitude += std::abs(term);
    for (int k = row_begin_[i]; k < row_begin_[i + 1]; ++k)
      reduced[U(entry_col_[U(k)])] -= entry_val_[U(k)] * y;
  }
  for (size_t j = 0; j < columns_.size(); ++j) {
    const double d = reduced[j], lo = column_lower[j], up = column_upper[j];
    // The least d * x over the column's bounds.
    if (d > 0 && !std::isfinite(lo)) return -kInf;
    if (d < 0 && !std::isfinite(up)) return -kInf;
    const double least = d > 0 ? d * lo : d < 0 ? d * up : 0.0;
    bound += least;
    const double range =
        std::max(std::isfinite(lo) ? std::abs(lo) : 0.0, std::isfinite(up) ? std::abs(up) : 0.0);
    magnitude += (std::abs(columns_[j].objective) + std::abs(d)) * range;
  }
  return bound - 1e-9 * magnitude;
}

glp_prob* Problem::LoadIntoGlpk() const {
  const int n = num_columns(), m = num_rows();
  glp_prob* prob = glp_create_prob();
  ++live_problems;
  glp_set_obj_dir(prob, GLP_MIN);
  if (n > 0) glp_add_cols(prob, n);
  if (m > 0) glp_add_rows(prob, m);
  glp_set_obj_coef(prob, 0, objective_constant_);
  for (int j = 0; j < n; ++j) {
    const Column& c = columns_[U(j)];
    glp_set_col_kind(prob, j + 1, c.kind == ColumnKind::kContinuous ? GLP_CV : GLP_IV);
    glp_set_col_bnds(prob, j + 1, detail::BoundType(c.lower, c.upper),
                     std::isfinite(c.lower) ? c.lower : 0, std::isfinite(c.upper) ? c.upper : 0);
    glp_set_obj_coef(prob, j + 1, c.objective);
  }
  for (int i = 0; i < m; ++i) {
    const double lo = row_lower_[U(i)], up = row_upper_[U(i)];
    glp_set_row_bnds(prob, i + 1, detail::BoundType(lo, up), std::isfinite(lo) ? lo : 0,
                     std::isfinite(up) ? up : 0);
  }
  std::vector<int> ia(1, 0), ja(1, 0);
  std::vector<double> ar(1, 0.0);
  ia.reserve(entry_col_.size() + 1);
  ja.reserve(entry_col_.size() + 1);
  ar.reserve(entry_col_.size() + 1);
  for (int i = 0; i < m; ++i) {
    for (int k = row_begin_[U(i)]; k < row_begin_[U(i) + 1]; ++k) {
      ia.push_back(i + 1);
      ja.push_back(entry_col_[U(k)] + 1);
      ar.push_back(entry_val_[U(k)]);
    }
  }
  glp_load_matrix(prob, static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  return prob;
}

SolveResult Problem::Solve(const SolveParams& params,
                           std::optional<std::span<const double>> incumbent) {
  CheckThread();
  if (solved_) throw std::logic_error("ilp::Problem::Solve called twice");
  solved_ = true;
  const auto started = Clock::now();
  const auto deadline =
      started + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(std::max(params.time_limit_s, 0.0)));
  SolveResult result;
  const int n = num_columns();

  std::vector<double> warm;  // 1-based copy of the incumbent
  double warm_objective = kInf;
  if (incumbent) {
    if (std::string problem = CheckFeasible(*incumbent); !problem.empty())
      throw std::invalid_argument("ilp::Problem::Solve: infeasible incumbent: " + problem);
    warm.assign(1, 0.0);
    warm.insert(warm.end(), incumbent->begin(), incumbent->end());
    for (int j = 0; j < n; ++j)
      if (columns_[U(j)].kind != ColumnKind::kContinuous)
        warm[U(j) + 1] = std::round(warm[U(j) + 1]);
    warm_objective = Objective(std::span<const double>(warm).subspan(1));
  }

  bool integral_objective = objective_constant_ == std::round(objective_constant_);
  double static_bound = objective_constant_;
  for (const Column& c : columns_) {
    if (c.objective == 0.0) continue;
    if (c.kind == ColumnKind::kContinuous || c.objective != std::round(c.objective))
      integral_objective = false;
    static_bound += c.objective * (c.objective > 0 ? c.lower : c.upper);
  }
  if (std::isnan(static_bound)) static_bound = -kInf;

  if (n == 0) {  // GLPK refuses empty problems; the answer is the constant
    const std::string problem = CheckFeasible({});
    result.status = problem.empty() ? ModelStatus::kOptimal : ModelStatus::kInfeasible;
    result.has_solution = problem.empty();
    result.objective = result.best_bound = objective_constant_;
    result.gap = 0.0;
    result.message = problem.empty() ? "no columns" : "no columns; " + problem;
    return result;
  }

  TermSink sink;
  sink.log = &params.log;
  CallbackState state;
  int ret = GLP_EFAIL;
  int mip_status = GLP_UNDEF;
  bool glpk_ok = false;
  bool rescaled = false;
  // GLPK's automatic scaling (GLP_SF_AUTO) leaves alone a problem it deems well scaled and
  // rounds its factors; on one order window of FCN-8 at batch 32 that led to a basis GLPK could
  // not factor and a failed internal check. Scaled by powers of two (exact) and always, the same
  // window solves. So a failed check is retried once that way, from scratch, with what is
  // left of the time; the first attempt's answer is lost with GLPK's environment anyway.
  for (const int scaling : {GLP_SF_AUTO, GLP_SF_GM | GLP_SF_EQ | GLP_SF_2N}) {
    rescaled = scaling != GLP_SF_AUTO;
    // Load the model into a glp_prob that lives only during this call (see RunTrapped).
    prob_ = LoadIntoGlpk();
    glp_term_hook(TermHook, &sink);

    state = CallbackState{};
    state.incumbent = incumbent ? &warm : nullptr;
    state.deadline = deadline;
    state.stop_at = params.stop_at_objective;
    state.stop = params.stop;
    state.integral_objective = integral_objective;
    state.max_nodes = params.max_nodes;
    state.max_total_iterations = params.max_total_lp_iterations;
    if (params.max_lp_work > 0) {
      const std::int64_t nonzeros = std::max(1, num_nonzeros());
      const std::int64_t by_work = std::max<std::int64_t>(1, params.max_lp_work / nonzeros);
      state.max_total_iterations =
          state.max_total_iterations > 0 ? std::min(state.max_total_iterations, by_work) : by_work;
    }

    // Root LP first (glp_intopt's own MIP presolver renumbers the columns, which would make
    // the warm start unusable in the callback), then branch-and-cut on the original columns.
    ret = GLP_EFAIL;
    mip_status = GLP_UNDEF;
    result.row_duals.clear();
    glpk_ok = detail::RunTrapped([&] {
      SolveLoaded(prob_, row_lower_.size(), params, scaling, deadline, state, result, ret,
                  mip_status);
    });
    sink.Flush();
    if (glpk_ok) {
      glp_term_hook(nullptr, nullptr);
    } else {  // the environment, and prob_ with it, is gone
      prob_ = nullptr;
      ret = GLP_EFAIL;
      mip_status = GLP_UNDEF;
    }
    if (glpk_ok || !params.scale || Clock::now() >= deadline ||
        (params.stop != nullptr && params.stop->load()))
      break;
  }

  const MappedStatus mapped =
      MapGlpkStatus(ret, mip_status, state.stopped_by_us, state.proven_optimal);
  result.call = mapped.call;
  result.status = mapped.status;
  result.glpk_return = ret;
  result.work_limited = state.work_limited;
  result.nodes = state.nodes;
  const bool glpk_solution = mip_status == GLP_OPT || mip_status == GLP_FEAS;
  if (glpk_solution && result.status != ModelStatus::kError) {
    result.values.resize(U(n));
    for (int j = 0; j < n; ++j) {
      double v = glp_mip_col_val(prob_, j + 1);
      if (columns_[U(j)].kind != ColumnKind::kContinuous) v = std::round(v);
      result.values[U(j)] = v;
    }
    result.objective = Objective(result.values);
    result.has_solution = true;
  }
  if (prob_ != nullptr) {
    glp_delete_prob(prob_);
    prob_ = nullptr;
    if (--live_problems == 0) glp_free_env();
  }
  std::ostringstream msg;
  if (!glpk_ok) {
    result.call = CallOutcome::kError;
    result.status = ModelStatus::kError;
    msg << "GLPK failed an internal check (numerical trouble)"
        << (rescaled ? ", also scaled by powers of two" : "") << "; ";
  } else if (rescaled) {
    msg << "GLPK failed an internal check under its automatic scaling and solved again scaled "
           "by powers of two; ";
  }
  msg << "GLPK returned " << ret << ", " << ToString(result.status);
  if (incumbent) {
    if (result.status == ModelStatus::kInfeasible) {
      // GLPK contradicts a solution we checked ourselves: a numerical failure on its side.
      result.call = CallOutcome::kError;
      result.status = ModelStatus::kError;
      msg << "; GLPK claims infeasibility but the warm start is feasible";
    }
    if (!result.has_solution || result.objective > warm_objective + 1e-9) {
      result.values.assign(warm.begin() + 1, warm.end());
      result.objective = warm_objective;
      result.has_solution = true;
      result.from_incumbent = true;
      if (result.status == ModelStatus::kNoSolutionTimeLimit)
        result.status = ModelStatus::kFeasibleTimeLimit;
      msg << "; kept the warm start";
    }
  }
  if (result.status == ModelStatus::kOptimal) {
    result.best_bound = result.objective;
  } else {
    result.best_bound = RoundBound(std::max(state.bound, static_bound), integral_objective);
    if (result.has_solution) {
      result.best_bound = std::min(result.best_bound, result.objective);
      if (result.best_bound >= result.objective - 1e-9 && result.call == CallOutcome::kOk)
        result.status = ModelStatus::kOptimal;  // e.g. the warm start meets the bound
    }
  }
  if (result.has_solution) {
    const double diff = result.objective - result.best_bound;
    result.gap = diff <= 1e-9 ? 0.0 : diff / std::max(std::abs(result.objective), 1e-9);
  }
  result.seconds = SecondsSince(started);
  result.message = msg.str();
  return result;
}

}  // namespace roam::ilp
