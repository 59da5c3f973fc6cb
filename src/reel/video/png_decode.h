// Internal: decoding one 16-bit gray PNG through libavcodec (reel migrate reads v1.0 depth
// frame sequences with it: shared/docs/v1.0-layout.md "depth/<slot>/000001.png").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reel/status.h"

namespace reel::video {

struct GrayImage16 {
  int width = 0;
  int height = 0;
  std::vector<uint16_t> values;  // width*height, row-major, native byte order
};

// One 16-bit gray PNG (e.g. depth millimetres) from bytes the caller read through its
// FileSystem; `where` names the file in errors. Refused, naming the value: anything but one
// 16-bit gray image (8-bit gray, RGB, palette, alpha: the decoded pixel format is named),
// an image of more than `max_pixels`, bytes the PNG decoder rejects.
Result<GrayImage16> DecodePngGray16(std::string_view png, const std::string& where,
                                    int64_t max_pixels = int64_t{1} << 26);

}  // namespace reel::video
