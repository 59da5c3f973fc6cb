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
#include <string>

#include "reel/status.h"

namespace reel {
class FileSystem;
}

// Every file is read and written through a FileSystem (`fs`, not owned; null =
// DefaultFileSystem()); the output needs WritableFile::WriteAt (mp4 box sizes).
namespace reel::internal {

// Where one appended episode lies in the output file.
struct EpisodeSpan {
  double from_s = 0;  // first frame's presentation time
  double to_s = 0;    // from_s + the episode's duration (frames x frame duration)
  int64_t frames = 0;
};

class StreamConcat {
 public:
  // Creates `path` (an .mp4 muxer whatever the name) with the stream
  // parameters (codec, size, pixel format, extradata) of `first_input`.
  static Result<std::unique_ptr<StreamConcat>> Open(const std::string& path,
                                                    const std::string& first_input,
                                                    FileSystem* fs = nullptr);
  ~StreamConcat();

  // Whether `input`'s stream has the same parameters, so it can be appended.
  Result<bool> Accepts(const std::string& input) const;
  // Appends every packet of `input`'s video stream after what is there.
  Result<EpisodeSpan> Append(const std::string& input);
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
Status CopySegment(const std::string& input, double from_s, int64_t frames, const std::string& output,
                   FileSystem* fs = nullptr);

// Whether a stream can go into .mp4 as it is (H.264, HEVC, AV1 in .mp4 / .mov).
Result<bool> CopyableToMp4(const std::string& input, FileSystem* fs = nullptr);

// Decodes `input` and encodes it again as .mp4 at `fps`: RGB as H.264 (CRF 18,
// GOP 2), depth as 12-bit log-code HEVC. Frame count and order are kept.
Status ReencodeToMp4(const std::string& input, const std::string& output, double fps,
                     FileSystem* fs = nullptr);

}  // namespace reel::internal
