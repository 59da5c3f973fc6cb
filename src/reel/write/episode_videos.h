// EpisodeVideos: every video slot of one episode being recorded, and what the
// episode declares about them (info.json cameras / video_extensions, the episodes
// row's video_codec and drop_stats).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/json_util.h"
#include "reel/layout.h"
#include "reel/metadata.h"
#include "reel/recorder.h"
#include "write/video_streams.h"

namespace reel::internal {

// Checks TaskWriterOptions::video: slot names (lower-case ASCII segments, unique,
// listed in a device's slots when devices are declared), sizes, depth masters.
Status ValidateVideoOptions(const TaskWriterOptions& options);

class EpisodeVideos {
 public:
  struct File {
    std::string temp;       // absolute
    std::string final_rel;  // relative to the task
  };

  // Opens one encoder per declared slot, writing dotfile temps beside the final
  // paths rendered from info.json's video_path template for episode `n`.
  static Result<std::unique_ptr<EpisodeVideos>> Open(FileSystem* fs, const std::string& root,
                                                     const TaskWriterOptions& options,
                                                     const InfoJson& info, int64_t n);
  ~EpisodeVideos();  // stops the encoder threads (temps stay until Discard)

  bool empty() const { return slots_.empty(); }
  Result<VideoStream*> Stream(const std::string& slot);
  // Data row `row` (0-based, in order): every slot at the task's rate writes one frame, a
  // slot with its own rate one when SlotFramesForRows(row + 1) grows (reel/metadata.h).
  Status Tick(int64_t row);
  // Finishes every encoder, checks each file holds SlotFramesForRows(rows) frames.
  Status Finish(int64_t rows);
  // Stops the encoders and removes the temps.
  void Discard();

  const std::vector<File>& files() const { return files_; }
  // video, cameras and video_extensions of this episode.
  void Declare(InfoJson& decl) const;
  // The episodes row's video_codec ("{}" without video).
  std::string VideoCodecJson() const;
  // Adds this episode's frame repeats and drops to `drop_stats`.
  void AddDropStats(Json& drop_stats) const;

 private:
  EpisodeVideos() = default;
  struct Slot {
    VideoSlotOptions options;
    double fps = 0;     // the rate its frames are taken at (SlotRate)
    int64_t ticks = 0;  // frames handed to the stream (its encoder writes them later)
    std::unique_ptr<SlotStream> stream;
  };
  FileSystem* fs_ = nullptr;
  const TaskWriterOptions* task_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<File> files_;
  std::map<std::string, std::string> depth_selected_by_;  // depth slot -> why its codec
};

}  // namespace reel::internal
