// A v1.0 depth frame (depth/<slot>/000001.png, 16-bit gray millimetres) through
// DecodePngGray16 (src/reel/video/png.cc), as reel migrate reads it: the bytes are the
// PNG, decoded under a limit of 2^22 pixels (migrate's is 2^23, kMaxPngPixels: the same
// code, at a size a fuzzing process can afford to decode thousands of times) and under a
// small one (4096 pixels).
// Checked: a decoded image has width*height values; re-encoded with EncodePngGray16 and
// decoded again it gives the same values (the decoder's byte order is right).
#include <cstdio>
#include <cstdlib>

#include "harness_util.h"
#include "reel/video.h"
#include "video/png_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  const std::string_view png(reinterpret_cast<const char*>(data), size);
  auto small = video::DecodePngGray16(png, "depth/d/000001.png", 4096);
  auto image = video::DecodePngGray16(png, "depth/d/000001.png", int64_t{1} << 22);
  if (fuzz::Debug()) fprintf(stderr, "png16: %s; small %s\n", image.status().ToString().c_str(), small.status().ToString().c_str());
  if (small.ok() && !image.ok()) {
    fprintf(stderr, "png16: decoded under 4096 pixels but refused under 2^22: %s\n", image.status().ToString().c_str());
    std::abort();
  }
  if (!image.ok()) return 0;
  if (image->width <= 0 || image->height <= 0 ||
      image->values.size() != static_cast<size_t>(image->width) * static_cast<size_t>(image->height)) {
    fprintf(stderr, "png16: %dx%d with %zu values\n", image->width, image->height, image->values.size());
    std::abort();
  }
  if (image->values.size() > 4096) return 0;  // the round trip of small images only
  auto again = EncodePngGray16(image->width, image->height, image->values);
  if (!again.ok()) {
    fprintf(stderr, "png16: EncodePngGray16 refused a decoded image: %s\n", again.status().ToString().c_str());
    std::abort();
  }
  auto back = video::DecodePngGray16(*again, "re-encoded");
  if (!back.ok() || back->width != image->width || back->height != image->height || back->values != image->values) {
    fprintf(stderr, "png16: re-encoding a %dx%d image does not give it back\n", image->width, image->height);
    std::abort();
  }
  return 0;
}
