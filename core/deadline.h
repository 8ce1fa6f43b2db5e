// One budget for a whole run (docs/optimizer.md, "Anytime, deadlines and interrupts"): a wall
// clock deadline and a stop flag (a first Ctrl-C), shared by every stage of a run. A stage asks
// Expired() between units of its work and, when it is, returns its best so far; a solver gets
// its share as Remaining() seconds and the flag.
//
// The clock can be injected, so that a test can make the deadline pass at a chosen point of a
// run (Optimizer.EveryStageObservesTheDeadline) without sleeping.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <optional>

namespace roam {

// Seconds since a point of the steady clock: what a stage or solver reports as its time.
inline double SecondsSince(std::chrono::steady_clock::time_point started) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// Seconds since it was made, for a call that times itself.
class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;
  Stopwatch() : started_(Clock::now()) {}
  double Seconds() const { return SecondsSince(started_); }
  Clock::time_point started() const { return started_; }

 private:
  Clock::time_point started_;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  // No time limit and no stop flag: never expires.
  Deadline() : Deadline(0.0) {}
  // `seconds` from `started` (default: now; 0 or less: no time limit); `stop` may be null.
  explicit Deadline(double seconds, const std::atomic<bool>* stop = nullptr, Now now = {},
                    std::optional<Clock::time_point> started = {})
      : now_(std::make_shared<Now>(now ? std::move(now) : Now([] { return Clock::now(); }))),
        stop_(stop),
        started_(started ? *started : (*now_)()),
        at_(seconds > 0 ? started_ + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(seconds))
                        : Clock::time_point::max()) {}

  Clock::time_point Time() const { return (*now_)(); }
  bool Stopped() const { return stop_ != nullptr && stop_->load(std::memory_order_relaxed); }
  bool Limited() const { return at_ != Clock::time_point::max(); }
  bool Expired() const { return Stopped() || (Limited() && Time() >= at_); }
  // Seconds left: +infinity without a limit, 0 once stopped or past the deadline.
  double Remaining() const {
    if (Stopped()) return 0.0;
    if (!Limited()) return std::numeric_limits<double>::infinity();
    const double left = std::chrono::duration<double>(at_ - Time()).count();
    return left > 0 ? left : 0.0;
  }
  double Elapsed() const { return std::chrono::duration<double>(Time() - started_).count(); }
  // The same deadline `seconds` sooner, sharing the clock and the stop flag: a stage runs to
  // it where what follows the stage must still have time before the deadline (0 or less, or
  // no time limit: the same deadline).
  Deadline Sooner(double seconds) const {
    Deadline sooner = *this;
    if (Limited() && seconds > 0)
      sooner.at_ -= std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::min(seconds, 1e8)));
    return sooner;
  }
  const std::atomic<bool>* stop() const { return stop_; }
  // The deadline as a point of the real steady clock, for solvers that compare against
  // Clock::now() themselves (max() without a limit).
  Clock::time_point At() const {
    if (!Limited()) return Clock::time_point::max();
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(Remaining()));
  }

 private:
  std::shared_ptr<const Now> now_;  // shared: a Deadline is copied into every stage
  const std::atomic<bool>* stop_ = nullptr;
  Clock::time_point started_, at_;
};

}  // namespace roam
