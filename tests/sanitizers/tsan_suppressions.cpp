// ThreadSanitizer suppressions compiled into every test binary, so that they apply however
// the binary is started (ctest, by hand, under a debugger) without a TSAN_OPTIONS file.
//
// Debian's libtbb.so is not built with -fsanitize=thread, so TSan misses the synchronisation
// inside it and reports oneTBB's own scheduler code (inlined from its headers) as racing:
// - the small-object pool recycles task memory between threads inside the library, so the next
//   task constructed in recycled memory seems to race with the previous owner's last write
//   (new_object on one side, often fold_tree's reference count on the other; the innermost
//   frame is then std::atomic's constructor, not a TBB header);
// - the wait node and context parallel_for keeps on the caller's stack, and the partitioner's
//   steal bookkeeping.
// Only frames that are oneTBB's own task bookkeeping are named: a race in a parallel_for body
// has none of them in either stack and is still reported (tests/sanitizers/tsan_canary.cpp
// checks exactly that).
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() {
  return "race_top:oneapi/tbb/\n"
         "race:tbb::detail::d1::small_object_allocator::new_object\n"
         "race:tbb::detail::d1::fold_tree\n"
         "race:tbb::detail::d1::wait_node\n"
         "race:tbb::detail::d1::task_group_context\n"
         "race:check_being_stolen\n"
         "race:mark_task_stolen\n"
         "called_from_lib:libtbb.so.12\n";
}

// The largest per-thread history (4M accesses instead of the default's 128K-256K), so that the
// stack of an old write is restored and matched against the suppressions above: oneTBB copies
// a parallel_for body into recycled task memory (new_object) long before another thread reads
// it, and with the default history TSan could not restore that stack and reported the read
// alone (once in CI: the body of optimizer.cpp's FanOut in RunnerFilesTest's batch concurrency,
// "[failed to restore the stack]").
extern "C" const char* __tsan_default_options();
extern "C" const char* __tsan_default_options() { return "history_size=7"; }
#endif
