// The 12-bit log depth code (reference-behaviour.md "Depth"): 100-5000 mm onto
// codes 0..4095, STEP = 4095 / ln(50). Double arithmetic and std::nearbyint
// (round half to even under the default rounding mode), as the reference's rint.
#include <algorithm>
#include <cmath>

#include "reel/video.h"

namespace reel {
namespace {

const double kLogMin = std::log(static_cast<double>(kDepthMinMm));
const double kStep = kDepthMaxCode / std::log(static_cast<double>(kDepthMaxMm) / kDepthMinMm);

}  // namespace

uint16_t DepthMmToCode(uint16_t mm) {
  if (mm == 0) return 0;  // no depth
  const double code = std::nearbyint((std::log(static_cast<double>(mm)) - kLogMin) * kStep);
  return static_cast<uint16_t>(std::clamp(code, 0.0, static_cast<double>(kDepthMaxCode)));
}

uint16_t DepthCodeToMm(uint16_t code) {
  const double c = std::min<double>(code, kDepthMaxCode);
  return static_cast<uint16_t>(std::nearbyint(std::exp(kLogMin + c / kStep)));
}

}  // namespace reel
