// Per-episode video rules that look inside the files: each opens and indexes
// (demuxer and packet index only, no decoding) and has one frame per data row.
#include "check/context.h"
#include "reel/video.h"

namespace reel::internal {

void CheckVideoFiles(const Task& task, const EpisodeEntry& e, std::optional<int64_t> data_rows,
                     FindingSink& sink) {
  for (const auto& [slot, path] : e.videos) {
    auto reader = VideoReader::Open(task.Path(path));
    if (!reader.ok()) {
      // FFmpeg reads the local disk; a task served by another FileSystem may hold
      // files that the local disk does not: those are not this rule's to judge.
      if (reader.status().code() == StatusCode::kNotFound && task.fs() != DefaultFileSystem())
        continue;
      sink.Add("video.unreadable", path,
               "slot \"" + slot + "\": " + reader.status().message());
      continue;
    }
    const VideoInfo& info = (*reader)->info();
    if (data_rows && info.frames != *data_rows)
      sink.Add("video.frame_count", path,
               "slot \"" + slot + "\" has " + std::to_string(info.frames) + " frames (" + info.codec +
                   " " + info.pix_fmt + ") but the data parquet has " + std::to_string(*data_rows) +
                   " rows; row i must be frame i");
  }
}

}  // namespace reel::internal
