// What a part of a plan is known to be, in words that must be true (docs/optimizer.md,
// "Labels"), and the one rule that turns a solver's status into such a word.
//
// In: a solver's status (any vocabulary with a kOptimal: ilp::ModelStatus, layout::LayoutStatus,
// remat::Status), the value it returned and the value it started from. Out: an Outcome; two
// parts' outcomes combine with Worse.
#pragma once

#include <string_view>

#include "core/types.h"

namespace roam {

enum class Outcome {
  kOptimal,      // a proof: a solver proved it, or a bound is met
  kHeuristic,    // no solver improved the part, or none ran
  kTimeLimited,  // a solver ran out of time after lowering the value below its start
};

constexpr std::string_view ToString(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOptimal:
      return "optimal";
    case Outcome::kTimeLimited:
      return "time-limited";
    case Outcome::kHeuristic:
      return "heuristic";
  }
  return "?";
}

// The label of a whole made of two parts: optimal only when both are; time-limited when a
// solver improved either part without a proof, since that is true of the whole; heuristic
// otherwise. Folding parts from kHeuristic drops their proofs: what is proved of each part
// (a leaf within its partition) is not proved of the whole.
constexpr Outcome Worse(Outcome a, Outcome b) { return a > b ? a : b; }

// The one rule from a solve to a label: optimal when the solver proved its answer, time-limited
// when it stopped without a proof after lowering the value (peak, height) strictly below its
// start (an equal value found another way improves nothing), heuristic otherwise.
template <typename Status>
constexpr Outcome OutcomeOf(Status status, Bytes value, Bytes start) {
  if (status == Status::kOptimal) return Outcome::kOptimal;
  return value < start ? Outcome::kTimeLimited : Outcome::kHeuristic;
}

}  // namespace roam
