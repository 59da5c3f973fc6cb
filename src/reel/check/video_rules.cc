// Per-episode video rules that look inside the files: each opens and indexes
// (demuxer and packet index only, no decoding) and has one frame per data row.
#include <cstdlib>

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

// A slot at the task's rate has one frame per row. A slot with its own rate (cameras[slot].fps)
// has SlotFramesForRows(rows) frames, one either way allowed: the collector takes a frame at a
// tick only when one has arrived, and readers clamp to the last frame.
void CheckFrameCount(const InfoJson& task_info, const std::string& slot, const std::string& path,
                     const VideoInfo& info, int64_t rows, FindingSink& sink) {
  const std::string stream = " frames (" + info.codec + " " + info.pix_fmt + ")";
  const double fps = task_info.SlotFps(slot);
  if (fps == task_info.fps) {
    if (info.frames != rows)
      sink.Add("video.frame_count", path,
               "slot \"" + slot + "\" has " + std::to_string(info.frames) + stream + " but the data parquet has " +
                   std::to_string(rows) + " rows; row i must be frame i");
    return;
  }
  const int64_t want = SlotFramesForRows(rows, task_info.fps, fps);
  if (std::abs(info.frames - want) > 1)
    sink.Add("video.frame_count", path,
             "slot \"" + slot + "\" runs at " + FormatDouble(fps) + " fps in a " + FormatDouble(task_info.fps) +
                 " fps task, so its " + std::to_string(rows) + " rows span " + std::to_string(want) +
                 " frames (floor((rows - 1) * " + FormatDouble(fps) + " / " + FormatDouble(task_info.fps) +
                 ") + 1, one either way allowed), but it has " + std::to_string(info.frames) + stream);
}

}  // namespace

void CheckVideoFiles(const Task& task, const EpisodeEntry& e, std::optional<int64_t> data_rows,
                     FindingSink& sink) {
  for (const auto& [slot, path] : e.videos) {
    VideoReaderOptions options;
    options.fs = task.fs();  // FFmpeg reads through the task's FileSystem (object stores too)
    auto reader = VideoReader::Open(task.Path(path), options);
    if (!reader.ok()) {
      sink.Add("video.unreadable", path,
               "slot \"" + slot + "\": " + reader.status().message());
      continue;
    }
    const VideoInfo& info = (*reader)->info();
    CheckStreamShape(task, slot, path, info, sink);
    if (data_rows) CheckFrameCount(task.info(), slot, path, info, *data_rows, sink);
  }
}

}  // namespace reel::internal
