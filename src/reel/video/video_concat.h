// Internal: one .mp4 holding many episodes of one camera, by stream copy
// (LeRobot v3 video files), and the re-encode fallback for streams that cannot
// be copied into .mp4 (FFV1 depth .mkv).
//
// Times are kept as integer ticks of the output stream's time base and turned
// into seconds only at the end, so an episode's from/to timestamps are exact
// multiples of the time base however many episodes precede it (the float drift
// of lerobot#3177 cannot happen).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "reel/status.h"

namespace reel {
class FileSystem;
}

// Every file is read or written through the FileSystem named beside its path: inputs
// through `input_fs` (nothing is written there), outputs through `output_fs` (nothing
// is read there; it must support WritableFile::WriteAt: mp4 box sizes are patched
// after the payload). The two may differ: an export reads a task on an object store and writes a local
// staging directory. Not owned; null = DefaultFileSystem().
namespace reel::internal {

// Where one appended episode lies in the output file.
struct EpisodeSpan {
  double from_s = 0;  // first frame's presentation time
  double to_s = 0;    // from_s + the episode's duration (frames x frame duration)
  int64_t frames = 0;
};

class StreamConcat {
 public:
  // Creates `path` through `output_fs` (an .mp4 muxer whatever the name) with the
  // stream parameters (codec, size, pixel format, extradata) of `first_input`, read
  // through `input_fs`. Nothing of `first_input` is appended yet.
  static Result<std::unique_ptr<StreamConcat>> Open(FileSystem* output_fs, const std::string& path,
                                                    FileSystem* input_fs, const std::string& first_input);
  ~StreamConcat();

  // Whether `input`'s stream (read through `input_fs`) has the same parameters, so it
  // can be appended. Each input names its own file system: one camera's episodes may
  // come from the task or, re-encoded, from a scratch directory.
  Result<bool> Accepts(FileSystem* input_fs, const std::string& input) const;
  // Appends every packet of `input`'s video stream after what is there.
  Result<EpisodeSpan> Append(FileSystem* input_fs, const std::string& input);
  // Writes the trailer and closes the file (no fsync: the caller syncs). After an
  // error the file is incomplete; the caller removes it.
  Status Finish();
  // Bytes written so far (for size-based rollover).
  int64_t bytes() const;

  struct Impl;

 private:
  explicit StreamConcat(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Copies the `frames` frames of `input` that start at `from_s` (within half a
// frame) into `output` (.mp4) by stream copy, presentation times moved to start
// at 0: one episode out of a LeRobot v3 file. NotSupported when the first of
// them (in decode order) is not a keyframe, so a copy could not start there;
// Invalid when fewer than `frames` frames follow `from_s`.
Status CopySegment(FileSystem* input_fs, const std::string& input, double from_s, int64_t frames,
                   FileSystem* output_fs, const std::string& output);

// Whether a stream can go into .mp4 as it is (H.264, HEVC, AV1 in .mp4 / .mov; with
// `h264_yuv420p`, H.264 yuv420p alone, a bundle's encoding). Only reads `input`, through `fs`.
Result<bool> CopyableToMp4(const std::string& input, FileSystem* fs = nullptr, bool h264_yuv420p = false);

// Decodes `input` and encodes it again as .mp4 at `fps`: RGB as H.264 yuv420p (`crf`,
// GOP 2), depth as 12-bit log-code HEVC. Frame count and order are kept, unless
// `frames` is given: output frame k is then input frame frames[k] (clamped to the last),
// which re-times a slot with its own rate to one frame per data row.
Status ReencodeToMp4(FileSystem* input_fs, const std::string& input, FileSystem* output_fs,
                     const std::string& output, double fps, std::span<const int64_t> frames = {},
                     int crf = 18);

}  // namespace reel::internal
