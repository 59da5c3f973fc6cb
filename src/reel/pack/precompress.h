// Internal: upload pre-compression (contract §8 "上传预压缩"): an RGB .mp4 that is
// not already HEVC is re-encoded to HEVC (hvc1, yuv420p) before it is packed.
#pragma once

#include <string>

#include "reel/status.h"

namespace reel {
class FileSystem;
}

namespace reel::internal {

struct PrecompressOptions {
  int crf = 30;
  std::string preset = "fast";
  int threads = 0;  // 0 = the encoder's choice
  // Where `in_path` (a task file) is read from, and where the copy `out_path` (in a
  // scratch directory) is written. Not owned; null = DefaultFileSystem().
  FileSystem* input_fs = nullptr;
  FileSystem* output_fs = nullptr;
};

enum class PrecompressOutcome {
  kRecompressed,  // `out_path` holds the HEVC copy
  kKept,          // already HEVC, or a depth stream: pack the original untouched
};

// Decodes every frame of `in_path` and re-encodes it to `out_path` at the same
// size, frame count and fps. Depth streams (gray12le HEVC, FFV1) and HEVC RGB are
// never touched (kKept, nothing written). Errors: those of the decoder and
// encoder, each naming its file; Corruption when the copy's frame count differs.
Result<PrecompressOutcome> PrecompressRgbVideo(const std::string& in_path,
                                               const std::string& out_path,
                                               const PrecompressOptions& options);

}  // namespace reel::internal
