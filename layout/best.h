// The best layout of a set of intervals (docs/layout.md, "Best of"): the one place that keeps
// the lowest of several layouts, whether they come from the caller (a merge), the greedy
// placements of core/placement.h, or the search engine warm-started from the lowest so far.
// The optimizer's leaf merge and final pass and remat's fit use it.
//
// In: intervals (aligned sizes), the alignment, candidate layouts. Out: the lowest layout
// offered (the first on ties), its height and the name it was offered under.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/memory_model.h"
#include "layout/layout.h"

namespace roam::layout {

class BestLayout {
 public:
  BestLayout(std::span<const Interval> intervals, Bytes alignment)
      : intervals_(intervals), alignment_(alignment) {}

  // Keeps `offsets` when it is the first layout or strictly lower than the best so far.
  // Returns whether it was kept.
  bool Offer(std::string name, std::vector<Bytes> offsets);
  // Offers best-fit, or llfb (core/placement.h).
  bool OfferBestFit();
  bool OfferLlfb();
  // Runs the search engine warm-started from the best so far (which must exist) and keeps its
  // layout when the call worked and the height is strictly lower. Returns the search's result.
  LayoutResult Search(const LayoutParams& params, std::string name = "search");

  bool empty() const { return offsets_.empty() && name_.empty(); }
  Bytes height() const { return height_; }
  const std::vector<Bytes>& offsets() const { return offsets_; }
  std::vector<Bytes> TakeOffsets() { return std::move(offsets_); }
  const std::string& name() const { return name_; }

 private:
  std::span<const Interval> intervals_;
  Bytes alignment_;
  std::vector<Bytes> offsets_;
  Bytes height_ = 0;
  std::string name_;
};

}  // namespace roam::layout
