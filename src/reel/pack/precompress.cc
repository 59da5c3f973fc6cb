#include "pack/precompress.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reel/video.h"

namespace reel::internal {

Result<PrecompressOutcome> PrecompressRgbVideo(const std::string& in_path,
                                               const std::string& out_path,
                                               const PrecompressOptions& options) {
  VideoReaderOptions read_options;
  read_options.fs = options.input_fs;
  REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(in_path, read_options));
  const VideoInfo info = reader->info();
  // Decided by the stream itself, not only by the slot name: a depth stream must
  // never be re-encoded (its 12-bit code or FFV1 millimetres would be destroyed).
  if (info.depth || info.codec == "hevc") return PrecompressOutcome::kKept;

  VideoEncoderOptions eo;
  eo.kind = VideoKind::kRgb;
  eo.width = info.width;
  eo.height = info.height;
  eo.fps = info.fps > 0 ? info.fps : 30.0;
  eo.codec = "hevc";
  eo.preset = options.preset;
  eo.crf = options.crf;
  eo.threads = options.threads;
  eo.fs = options.output_fs;
  REEL_ASSIGN_OR_RETURN(auto encoder, VideoEncoder::Open(out_path, eo));

  // Decode in small batches: bounded memory whatever the episode length.
  constexpr int64_t kBatch = 16;
  const size_t frame_bytes = static_cast<size_t>(info.width) * info.height * 3;
  std::vector<uint8_t> rgb;
  std::vector<int64_t> indices;
  for (int64_t start = 0; start < info.frames; start += kBatch) {
    const int64_t n = std::min(kBatch, info.frames - start);
    indices.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) indices[static_cast<size_t>(k)] = start + k;
    rgb.resize(static_cast<size_t>(n) * frame_bytes);
    REEL_RETURN_IF_ERROR(reader->ReadRgb(indices, rgb));
    for (int64_t k = 0; k < n; ++k)
      REEL_RETURN_IF_ERROR(encoder->AddRgb(
          std::span<const uint8_t>(rgb.data() + static_cast<size_t>(k) * frame_bytes, frame_bytes)));
  }
  REEL_RETURN_IF_ERROR(encoder->Finish());
  // Row i of the data parquet is frame i of every video (contract §8): a copy with
  // another frame count would break that promise on the server.
  if (encoder->frames() != info.frames)
    return Status::Corruption(out_path + ": re-encoded " + std::to_string(encoder->frames()) +
                              " frames of " + in_path + ", which has " +
                              std::to_string(info.frames));
  return PrecompressOutcome::kRecompressed;
}

}  // namespace reel::internal
