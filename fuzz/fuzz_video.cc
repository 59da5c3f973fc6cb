// A video file as reel reads it (VideoReader over FFmpeg): open (demuxer, stream
// choice, packet index), decode frames by index as RGB or depth, frame times, and the
// nearest-frame-by-timestamp read. FFmpeg takes a path: the input is written to the
// harness's temp directory. Byte 0 picks the extension (.mp4 / .mkv), the rest is the file.
#include <cstdio>
#include <vector>

#include "harness_util.h"
#include "reel/video.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  if (size < 1) return 0;
  auto& tmp = fuzz::TempDir::Get();
  const std::string path = tmp.Write((data[0] & 1) ? "v.mkv" : "v.mp4",
                                     std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  VideoReaderOptions options;
  options.threads = 1;  // deterministic
  auto reader = VideoReader::Open(path, options);
  if (fuzz::Debug()) fprintf(stderr, "video: open %s\n", reader.status().ToString().c_str());
  if (!reader.ok()) return 0;
  const VideoInfo info = (*reader)->info();
  const int64_t pixels = int64_t{info.width} * info.height;
  // The harness bounds what it asks for (a caller sizes `out` from info()).
  if (info.width <= 0 || info.height <= 0 || pixels > (1 << 22)) return 0;
  const int64_t last = info.frames - 1;
  std::vector<int64_t> indices = {0, 1, last, 0, last / 2, -1, info.frames};
  if (info.depth) {
    std::vector<uint16_t> out(static_cast<size_t>(pixels));
    for (int64_t i : indices) (void)(*reader)->ReadDepth(std::span<const int64_t>(&i, 1), out);
  } else {
    std::vector<uint8_t> out(static_cast<size_t>(pixels) * 3);
    for (int64_t i : indices) (void)(*reader)->ReadRgb(std::span<const int64_t>(&i, 1), out);
    const double fps = info.fps > 0 ? info.fps : 30;
    std::vector<double> targets = {0.0, 1.0 / fps, last / fps};
    std::vector<uint8_t> many(static_cast<size_t>(pixels) * 3 * targets.size());
    (void)(*reader)->ReadRgbAt(targets, 0.5 / fps, many);
  }
  for (int64_t i : indices) (void)(*reader)->FrameTime(i);
  return 0;
}
