#include "layout/best.h"

#include <stdexcept>
#include <utility>

#include "core/placement.h"

namespace roam::layout {

bool BestLayout::Offer(std::string name, std::vector<Bytes> offsets) {
  const Bytes h = LayoutHeight(intervals_, offsets);
  if (!empty() && h >= height_) return false;
  height_ = h;
  offsets_ = std::move(offsets);
  name_ = std::move(name);
  return true;
}

bool BestLayout::OfferBestFit() { return Offer("best-fit", BestFitLayout(intervals_, alignment_)); }

bool BestLayout::OfferLlfb() { return Offer("llfb", LongLivedFirstLayout(intervals_, alignment_)); }

LayoutResult BestLayout::Search(const LayoutParams& params, std::string name) {
  if (empty()) throw std::logic_error("BestLayout::Search: no layout to warm-start from");
  LayoutResult r = SolveLayout(intervals_, alignment_, params, std::span<const Bytes>(offsets_));
  if (r.call == LayoutCall::kOk && r.height < height_) {
    height_ = r.height;
    offsets_ = r.offsets;
    name_ = std::move(name);
  }
  return r;
}

}  // namespace roam::layout
