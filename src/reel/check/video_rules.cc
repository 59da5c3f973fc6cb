// Per-episode video rules that look inside the files: each opens and indexes
// (demuxer and packet index only, no decoding) and has one frame per data row.
#include "check/context.h"
#include "reel/video.h"

namespace reel::internal {

bool IsDepthSlot(const std::string& slot) {
  size_t end = slot.size();
  size_t digits = slot.find_last_not_of("0123456789");
  if (digits != std::string::npos && digits + 1 < end && slot[digits] == '_') end = digits;
  const std::string base = slot.substr(0, end);
  return base == "depth" || base.ends_with("_depth");
}

namespace {

// What the stream is against what its slot and its cameras entry say it is.
void CheckStreamShape(const Task& task, const std::string& slot, const std::string& path,
                      const VideoInfo& info, FindingSink& sink) {
  const std::string stream = info.codec + " " + info.pix_fmt + " " + std::to_string(info.width) + "x" +
                             std::to_string(info.height);
  if (IsDepthSlot(slot) != info.depth)
    sink.Add("video.stream_kind", path,
             "slot \"" + slot + "\" is " + (info.depth ? "an RGB slot but holds a depth stream (" :
                                                       "a depth slot but holds an RGB stream (") +
                 stream + ")");
  const CameraSpec* cam = Lookup(task.info().cameras, slot);
  if (cam && cam->width > 0 && cam->height > 0 && (cam->width != info.width || cam->height != info.height))
    sink.Add("video.resolution", path,
             "slot \"" + slot + "\" is " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                 " but cameras declares " + std::to_string(cam->width) + "x" + std::to_string(cam->height));
}

}  // namespace

void CheckVideoFiles(const Task& task, const EpisodeEntry& e, std::optional<int64_t> data_rows,
                     FindingSink& sink) {
  for (const auto& [slot, path] : e.videos) {
    VideoReaderOptions read_options;
    read_options.fs = task.fs();  // FFmpeg reads through the task's FileSystem
    auto reader = VideoReader::Open(task.Path(path), read_options);
    if (!reader.ok()) {
      // A file missing from a task on another FileSystem (a partial mirror) is the
      // layout rules' to report, not this one's (kept as when FFmpeg read the local disk).
      if (reader.status().code() == StatusCode::kNotFound && task.fs() != DefaultFileSystem())
        continue;
      sink.Add("video.unreadable", path,
               "slot \"" + slot + "\": " + reader.status().message());
      continue;
    }
    const VideoInfo& info = (*reader)->info();
    CheckStreamShape(task, slot, path, info, sink);
    if (data_rows && info.frames != *data_rows)
      sink.Add("video.frame_count", path,
               "slot \"" + slot + "\" has " + std::to_string(info.frames) + " frames (" + info.codec +
                   " " + info.pix_fmt + ") but the data parquet has " + std::to_string(*data_rows) +
                   " rows; row i must be frame i");
  }
}

}  // namespace reel::internal
