// The run's one deadline (core/deadline.h): its clock can be injected, and a stage that must
// leave time for what follows it runs to a sooner copy sharing that clock and the stop flag.
#include "core/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>

namespace roam {
namespace {

using Clock = Deadline::Clock;

// A clock the test moves by hand.
struct ManualClock {
  std::shared_ptr<Clock::time_point> at = std::make_shared<Clock::time_point>(Clock::now());
  Deadline::Now Now() const {
    return [at = at] { return *at; };
  }
  void Advance(double seconds) {
    *at += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
};

TEST(Deadline, ASoonerDeadlineExpiresThatMuchEarlierOnTheSameClock) {
  ManualClock clock;
  const Deadline run(10, nullptr, clock.Now());
  const Deadline stage = run.Sooner(2);
  EXPECT_NEAR(stage.Remaining(), 8, 1e-6);
  clock.Advance(7.5);
  EXPECT_FALSE(stage.Expired());
  EXPECT_NEAR(stage.Remaining(), 0.5, 1e-6);
  clock.Advance(1);  // 8.5 s: the stage's time is up, the run's is not
  EXPECT_TRUE(stage.Expired());
  EXPECT_EQ(stage.Remaining(), 0.0);
  EXPECT_FALSE(run.Expired());
  EXPECT_NEAR(run.Remaining(), 1.5, 1e-6);
  EXPECT_NEAR(stage.Elapsed(), 8.5, 1e-6);  // counted from the run's start
  clock.Advance(2);
  EXPECT_TRUE(run.Expired());
}

TEST(Deadline, SoonerThanTheWholeRunHasExpiredAtOnce) {
  ManualClock clock;
  const Deadline run(1, nullptr, clock.Now());
  EXPECT_TRUE(run.Sooner(5).Expired());
  EXPECT_TRUE(run.Sooner(1e300).Expired());  // no overflow
  EXPECT_FALSE(run.Expired());
}

TEST(Deadline, WithoutATimeLimitOrWithNothingToLeaveItIsTheSameDeadline) {
  ManualClock clock;
  const Deadline unlimited(0, nullptr, clock.Now());
  EXPECT_FALSE(unlimited.Sooner(5).Limited());
  EXPECT_FALSE(unlimited.Sooner(5).Expired());
  const Deadline run(10, nullptr, clock.Now());
  EXPECT_NEAR(run.Sooner(0).Remaining(), 10, 1e-6);
  EXPECT_NEAR(run.Sooner(-3).Remaining(), 10, 1e-6);
}

TEST(Deadline, TheStopFlagStopsTheSoonerCopyToo) {
  std::atomic<bool> stop = false;
  const Deadline run(0, &stop);
  const Deadline stage = run.Sooner(1);
  EXPECT_FALSE(stage.Expired());
  stop = true;  // a first Ctrl-C
  EXPECT_TRUE(stage.Expired());
  EXPECT_EQ(stage.Remaining(), 0.0);
}

}  // namespace
}  // namespace roam
