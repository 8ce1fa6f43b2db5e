// A thin layer over GLPK (docs/ilp.md): owns the problem object, builds rows sparsely, runs
// the branch-and-cut with a time limit and a warm-start incumbent, and maps GLPK's return
// codes onto our own statuses in one place.
//
// In: columns (kind, bounds, objective coefficient) and rows (sparse terms, bounds), the
// objective is always minimised. Out: a SolveResult with the best solution found, its
// objective, the best proven bound and the relative gap.
//
// Threading: GLPK on Debian keeps its environment in thread-local storage, so independent
// problems may be solved concurrently on different threads. A Problem must be created, solved
// and destroyed on one thread; when the last Problem of a thread is destroyed the thread's
// GLPK environment is released with glp_free_env() (otherwise every worker thread that ever
// solved something would keep its environment, and all memory GLPK allocated in it, until
// the process exits).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

struct glp_prob;

namespace roam::ilp {

// Whether the call into GLPK itself went through; kept apart from what it says about the model.
enum class CallOutcome { kOk, kError };

enum class ModelStatus {
  kOptimal,              // proven optimal (within SolveParams::mip_gap)
  kFeasibleTimeLimit,    // a solution, not proven optimal when the time limit struck
  kInfeasible,           // proven to have no solution
  kNoSolutionTimeLimit,  // neither a solution nor a proof of infeasibility in time
  kError,                // GLPK failed; values hold the incumbent when one was given
};
std::string_view ToString(ModelStatus status);
std::string_view ToString(CallOutcome outcome);
// GLPK stopped at its time or work limit, with or without a solution, before a proof.
constexpr bool StoppedAtALimit(ModelStatus status) {
  return status == ModelStatus::kFeasibleTimeLimit || status == ModelStatus::kNoSolutionTimeLimit;
}

// An integrality tolerance for a model whose rows weigh integer columns by coefficients adding up
// to at most `row_weight`: binaries left that close to 0 or 1 shift such a row by at most a
// quarter, so what a caller decodes cannot differ from GLPK's answer by a unit. Never looser than
// `requested`, never under 1e-9, where the simplex's own noise would be branched on.
double IntegralityToleranceFor(double row_weight, double requested);

enum class ColumnKind { kContinuous, kInteger, kBinary };

struct SolveParams {
  double time_limit_s = 10.0;  // wall time for the whole solve (root LP and branch-and-cut)
  // Work limits (0: none). Where they bind before the time limit, the answer does not depend
  // on the machine's speed or load: GLPK's simplex and branch-and-cut are deterministic for a
  // given model, so the same model stopped after the same work gives the same solution and
  // bound. Simplex iterations count the root LP only; nodes count every branch-and-bound
  // subproblem created. Stopping at either reads as stopping at the time limit.
  std::int64_t max_lp_iterations = 0;
  std::int64_t max_nodes = 0;
  // Simplex iterations over the whole solve, the root LP's and every node's (0: none). Unlike
  // nodes, they grow with the LPs' size and the search's effort alike: on the optimizer's leaf
  // order ILPs GLPK did 4,600-18,000 iterations a second, but from 247 to 4,147 nodes in 2 s
  // (perf/RESULTS.md, "Leaf order ILPs bounded by work").
  std::int64_t max_total_lp_iterations = 0;
  // Simplex work over the whole solve, in iterations times the nonzeros of the model as built
  // (0: none); it becomes an iteration limit for this model, the tighter of the two. An
  // iteration's cost grows with the LP: on leaf order ILPs of 2,100-9,200 nonzeros GLPK took
  // 2.7-3.9e-8 s per iteration and nonzero, so 20,000 iterations were 1.4 s on the smallest and
  // 7 s on the largest (perf/RESULTS.md, "Leaf order ILPs bounded by work"). Bounded in these
  // units, a solve's time depends little on its size, so the time limit stays an outer cap.
  std::int64_t max_lp_work = 0;
  double mip_gap = 0.0;  // stop once (incumbent - bound) / |incumbent| is at most this
  // How far from an integer a value may be and still count as one (GLPK's tol_int). In a big-M
  // row with M in the millions, z = 1 - 1/M is a true vertex of the relaxation, not noise:
  // GLPK's default, 1e-5, accepted it as integral, and the "solution" let two buffers overlap
  // (perf/RESULTS.md, "Leaf layout ILPs bounded by work"); such models ask for less than 1/M.
  double integrality_tolerance = 1e-5;
  bool presolve = true;  // GLPK's LP presolver for the root relaxation
  bool cuts = true;      // Gomory, MIR, cover and clique cuts
  // glp_scale_prob(GLP_SF_AUTO) before the root LP, as glpsol does. Unscaled, GLPK failed an
  // internal check on 4 of 34 measured order windows; scaled, none did, and a layout it could
  // not improve in 20 s was solved in 0.06 s (perf/RESULTS.md). Scaled solutions can violate
  // rows by more than GLPK's tolerance in original units, so callers check what they decode.
  // Where GLPK still fails an internal check, the solve is run once more from scratch scaled by
  // powers of two (GLP_SF_GM | GLP_SF_EQ | GLP_SF_2N), which never skips and rounds nothing.
  bool scale = true;
  int log_level = 0;  // 0 off, 1 errors, 2 normal, 3 all (GLPK's msg_lev)
  // Receives GLPK's terminal output line by line; empty = discard it. GLPK never writes to
  // the terminal through this layer.
  std::function<void(std::string_view)> log;
  // Stop as soon as an incumbent with objective <= this is known (e.g. "fits the capacity").
  std::optional<double> stop_at_objective;
  // When another thread sets it (an interrupt), the search ends as at the time limit, with the
  // best solution found so far. GLPK looks at it between branch-and-bound nodes.
  const std::atomic<bool>* stop = nullptr;
};

struct SolveResult {
  CallOutcome call = CallOutcome::kOk;
  ModelStatus status = ModelStatus::kError;
  std::vector<double> values;  // one per column when has_solution
  bool has_solution = false;
  bool from_incumbent = false;  // values are the warm start: GLPK found nothing better
  double objective = std::numeric_limits<double>::infinity();
  double best_bound = -std::numeric_limits<double>::infinity();
  double gap = std::numeric_limits<double>::infinity();  // relative, 0 when proven optimal
  double seconds = 0.0;
  bool work_limited = false;  // a work limit (not the clock) ended the search early
  // The work spent: simplex iterations (the root LP's and every node's) and branch-and-bound
  // nodes created, for reports and for choosing work limits.
  std::int64_t lp_iterations = 0;
  std::int64_t nodes = 0;
  // The root LP's row duals, one per row, where it was solved to optimality (else empty):
  // Problem::DualBound turns them into a bound that holds whatever GLPK's numerics, where
  // GLPK's own objective and bound may not be trusted.
  std::vector<double> row_duals;
  int glpk_return = 0;  // glp_intopt's (or glp_simplex's) return code, for messages
  std::string message;  // what happened, in words
};

// The one place GLPK's codes become ours. ret is glp_intopt's return value, mip_status
// glp_mip_status's; stopped_by_us says the callback terminated the search on purpose
// (deadline, target objective or an integral bound meeting the incumbent), with
// proven_optimal telling which.
struct MappedStatus {
  CallOutcome call;
  ModelStatus status;
};
MappedStatus MapGlpkStatus(int ret, int mip_status, bool stopped_by_us, bool proven_optimal);

class Problem {
 public:
  Problem();
  ~Problem();
  Problem(Problem&& other) noexcept;
  Problem& operator=(Problem&& other) noexcept;
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  // Returns the 0-based column index. Bounds may be infinite.
  int AddColumn(ColumnKind kind, double lower, double upper, double objective = 0.0);
  // lower <= sum(coef * x[col]) <= upper; either bound may be infinite. Repeated columns are
  // summed and zero coefficients dropped. Returns the 0-based row index.
  int AddRow(std::span<const std::pair<int, double>> terms, double lower, double upper);
  void SetObjectiveConstant(double constant) { objective_constant_ = constant; }

  int num_columns() const { return static_cast<int>(columns_.size()); }
  int num_rows() const { return static_cast<int>(row_lower_.size()); }
  int num_nonzeros() const { return static_cast<int>(entry_col_.size()); }

  // Objective of an assignment, and the first violated row or bound (empty when feasible).
  double Objective(std::span<const double> values) const;
  std::string CheckFeasible(std::span<const double> values, double tolerance = 1e-6) const;
  // A lower bound on the LP relaxation's optimum, so on every feasible point's objective,
  // proven by weak duality from any row duals (SolveResult::row_duals): each dual is clipped to
  // the sign its row's finite bounds allow, and the bound is computed here from the model, so
  // GLPK's numerics cannot make it claim too much; what rounding in its sums could add is
  // subtracted. -infinity where a column's infinite bound leaves the Lagrangian unbounded.
  double DualBound(std::span<const double> row_duals) const;
  // The same where the columns' bounds are narrowed to [column_lower, column_upper] (a node of
  // a branch and bound, ilp/proven_bound.h): a bound on every feasible point within them.
  double DualBound(std::span<const double> row_duals, std::span<const double> column_lower,
                   std::span<const double> column_upper) const;

  // The model as added, for solvers of roam's own (ilp/proven_bound.h).
  struct Column {
    ColumnKind kind;
    double lower, upper, objective;
  };
  const Column& column(int j) const { return columns_[static_cast<size_t>(j)]; }
  double row_lower(int i) const { return row_lower_[static_cast<size_t>(i)]; }
  double row_upper(int i) const { return row_upper_[static_cast<size_t>(i)]; }
  std::span<const int> row_columns(int i) const {
    return std::span<const int>(entry_col_).subspan(RowBegin(i), RowSize(i));
  }
  std::span<const double> row_values(int i) const {
    return std::span<const double>(entry_val_).subspan(RowBegin(i), RowSize(i));
  }
  double objective_constant() const { return objective_constant_; }
  // A new glp_prob holding the model, counted among this thread's live problems (release it
  // with detail::DeleteGlpProb); Solve loads its own through it, and so do solvers beside it.
  glp_prob* LoadIntoGlpk() const;

  // Minimises. incumbent, when given, must be feasible (else std::invalid_argument); it is
  // handed to GLPK as a heuristic solution and the result is never worse than it. Can be
  // called once per Problem.
  SolveResult Solve(const SolveParams& params,
                    std::optional<std::span<const double>> incumbent = std::nullopt);

 private:
  size_t RowBegin(int i) const { return static_cast<size_t>(row_begin_[static_cast<size_t>(i)]); }
  size_t RowSize(int i) const {
    return static_cast<size_t>(row_begin_[static_cast<size_t>(i) + 1]) - RowBegin(i);
  }
  void CheckThread() const;

  glp_prob* prob_ = nullptr;
  std::thread::id owner_;
  bool solved_ = false;
  std::vector<Column> columns_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<int> row_begin_{0};  // CSR of the rows, then loaded once with glp_load_matrix
  std::vector<int> entry_col_;
  std::vector<double> entry_val_;
  double objective_constant_ = 0.0;
};

namespace detail {
// Runs GLPK calls. A failed internal check inside `body`, on which GLPK would call abort(),
// makes it return false instead; the thread's GLPK environment is then freed (docs/ilp.md,
// "GLPK failures"), so `body` must own nothing but GLPK objects and trivially destructible
// locals. Problem::Solve runs GLPK through it; exposed for tests.
bool RunTrapped(const std::function<void()>& body);
// Releases a glp_prob from Problem::LoadIntoGlpk; the thread's GLPK environment is freed when
// its last live problem goes.
void DeleteGlpProb(glp_prob* prob);
// GLPK's bound type (GLP_FX, GLP_DB, GLP_LO, GLP_UP or GLP_FR) for bounds that may be infinite.
int BoundType(double lower, double upper);
}  // namespace detail

}  // namespace roam::ilp
