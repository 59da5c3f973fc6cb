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

// The largest depth frame reel takes from a PNG: 2^23 pixels (4096 x 2048; depth cameras
// give at most ~5 Mpx). Its cost is set by FFV1, which migrate encodes it into: FFmpeg's
// FFV1 encoder reserves a packet of 148 bytes a pixel, so a frame at this limit costs about
// 1.3 GB while it is encoded (2^26 pixels cost 2.5 GB: issue 27).
inline constexpr int64_t kMaxPngPixels = int64_t{1} << 23;

// One 16-bit gray PNG (e.g. depth millimetres) from bytes the caller read through its
// FileSystem; `where` names the file in errors. Refused, naming the value: anything but one
// 16-bit gray image (8-bit gray, RGB, palette, alpha: the decoded pixel format is named),
// an image of more than `max_pixels`, a file whose structure is damaged (a chunk's length
// past the end or its CRC-32 wrong, no IHDR first or no IEND, image data that does not
// inflate to exactly the lines the header declares: png.chunk, png.crc, png.data), bytes the
// PNG decoder rejects. FFmpeg's decoder alone returns a truncated image with the missing
// lines left as they were.
Result<GrayImage16> DecodePngGray16(std::string_view png, const std::string& where,
                                    int64_t max_pixels = kMaxPngPixels);

}  // namespace reel::video
