// What a remat plan, or one method's schedule, is known to be (docs/remat.md, "status").
#pragma once

#include <ostream>
#include <string_view>

namespace roam::remat {

enum class Status {
  kFeasible,          // a heuristic's schedule within the budget
  kOptimal,           // proven optimal: the plan meets the compute lower bound, or needs no
                      // recomputation
  kOptimalInOrder,    // the exact method proved it optimal among schedules that keep the base
                      // order (MOCCASIN's and Checkmate's problem); another order may do better
  kTimeLimit,         // the exact method ran out of time (its best, or nothing in time)
  kInfeasible,        // nothing found within the budget
  kInfeasibleProven,  // proven out of reach (the peak or compute lower bound)
  kError,             // the exact method's solver failed; the heuristic's answer stands
};

// The label of the reports and --json: "feasible", "optimal", "optimal-in-order", "time-limit",
// "infeasible", "infeasible-proven", "error".
constexpr std::string_view ToString(Status s) {
  switch (s) {
    case Status::kFeasible:
      return "feasible";
    case Status::kOptimal:
      return "optimal";
    case Status::kOptimalInOrder:
      return "optimal-in-order";
    case Status::kTimeLimit:
      return "time-limit";
    case Status::kInfeasible:
      return "infeasible";
    case Status::kInfeasibleProven:
      return "infeasible-proven";
    case Status::kError:
      return "error";
  }
  return "error";
}

inline std::ostream& operator<<(std::ostream& os, Status s) { return os << ToString(s); }

}  // namespace roam::remat
