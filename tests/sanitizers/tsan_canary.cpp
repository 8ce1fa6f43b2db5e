// Deliberately racy: two parallel_for bodies write one plain int. Under the tsan preset CTest
// passes this only if ThreadSanitizer reports the race, which proves the suppressions in
// tsan_suppressions.cpp hide oneTBB's internals and nothing of ours.
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  int unsynchronised = 0;
  // Relaxed atomics give TSan no happens-before edge, so the rendezvous only makes the two
  // writes come from two threads; it does not order them.
  std::atomic<int> arrived{0};
  tbb::task_arena arena(2);
  arena.execute([&] {
    tbb::parallel_for(
        0, 2,
        [&](int) {
          arrived.fetch_add(1, std::memory_order_relaxed);
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (arrived.load(std::memory_order_relaxed) < 2 &&
                 std::chrono::steady_clock::now() < give_up)
            std::this_thread::yield();
          unsynchronised += 1;
        },
        tbb::simple_partitioner());
  });
  // stderr, after TSan's report of the second write, so that CTest's pattern sees both in order.
  std::fprintf(stderr, "bodies ran on %s; value %d\n",
               arrived.load(std::memory_order_relaxed) == 2 ? "two threads" : "one thread",
               unsynchronised);
  return 0;
}
