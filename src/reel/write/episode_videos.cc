// EpisodeVideos (see episode_videos.h).
#include "write/episode_videos.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "layout/confined.h"
#include "layout/journal.h"
#include "reel/layout.h"

namespace reel::internal {

namespace {

// The depth codec of `slot`: FFV1 when asked; else the family the task already records
// the slot with (so one task does not mix .mp4 and .mkv episodes by accident); else
// 12-bit HEVC when this FFmpeg has the encoder. `selected_by` says which rule decided,
// for the episodes row's video_codec.
VideoKind DepthKind(const std::string& slot, const VideoOptions& video, const InfoJson& task,
                    std::string* selected_by) {
  if (video.depth_ffv1) {
    *selected_by = "options (depth_ffv1)";
    return VideoKind::kDepthFfv1;
  }
  const std::string* declared = video.keep_task_depth_codec ? Lookup(task.video_extensions, slot) : nullptr;
  if (declared && *declared == "mkv") {
    *selected_by = "task (video_extensions[\"" + slot + "\"] = \"mkv\"; keep_task_depth_codec)";
    return VideoKind::kDepthFfv1;
  }
  if (!HaveHevc12Encoder()) {
    *selected_by = "fallback: this FFmpeg has no 12-bit HEVC encoder";
    return VideoKind::kDepthFfv1;
  }
  *selected_by = declared ? "task (video_extensions[\"" + slot + "\"] = \"mp4\")" : "default";
  return VideoKind::kDepthHevc;
}

// A depth slot is not in cameras, so readers take its rate from the first RGB slot of its
// device (InfoJson::SlotFps). When its master has a rate of its own, that slot must be the
// master, or a reader would map the depth frames at another rate.
Status CheckDepthRateFindable(const TaskWriterOptions& options, const VideoSlotOptions& depth,
                              const std::map<std::string, const VideoSlotOptions*>& by_name) {
  const double master_fps = by_name.at(depth.master_slot)->fps;
  if (master_fps == 0 || master_fps == options.fps) return Status::OK();
  for (const DeviceOptions& d : options.devices) {
    if (std::find(d.slots.begin(), d.slots.end(), depth.slot) == d.slots.end()) continue;
    for (const std::string& slot : d.slots) {
      auto it = by_name.find(slot);
      if (it == by_name.end() || it->second->depth) continue;
      if (slot == depth.master_slot) return Status::OK();
      break;
    }
  }
  return Status::Invalid("video slot \"" + depth.slot + "\": its master_slot \"" + depth.master_slot +
                         "\" runs at its own fps, so it must be the first RGB slot of the device that lists \"" +
                         depth.slot + "\" (readers find a depth slot's rate there: multi-device §6.3 keeps depth "
                         "slots out of cameras)");
}

}  // namespace

Status ValidateVideoOptions(const TaskWriterOptions& options) {
  const VideoOptions& v = options.video;
  std::map<std::string, const VideoSlotOptions*> by_name;
  std::set<std::string> device_slots;
  for (const DeviceOptions& d : options.devices) device_slots.insert(d.slots.begin(), d.slots.end());
  for (const VideoSlotOptions& s : v.slots) {
    const std::string where = "video slot \"" + s.slot + "\"";
    if (!IsSlotName(s.slot))
      return Status::Invalid(where + ": not a slot name (multi-device §2.4: slot_base() keeps ASCII letters and digits, '_' "
                             "and CJK ideographs, no '_' at either end; this one cleans to \"" + SlotBase(s.slot, "") + "\")");
    if (!by_name.emplace(s.slot, &s).second) return Status::Invalid(where + ": declared twice");
    if (!options.devices.empty() && !device_slots.contains(s.slot))
      return Status::Invalid(where + ": not in any device's slots (devices[].slots lists every slot)");
    if (s.width <= 0 || s.height <= 0)
      return Status::Invalid(where + ": size must be positive, got " + std::to_string(s.width) + "x" +
                             std::to_string(s.height));
    if (!s.depth && !s.master_slot.empty())
      return Status::Invalid(where + ": only depth slots follow a master_slot");
    if (!(s.fps >= 0) || s.fps > options.fps)
      return Status::Invalid(where + ": fps must be 0 (the task's) up to the task's " + std::to_string(options.fps) +
                             " (rows are the ticks a frame is taken at), got " + std::to_string(s.fps));
    if (s.depth && s.fps != 0)
      return Status::Invalid(where + ": a depth slot runs at its master_slot's rate; set fps on the master");
  }
  for (const VideoSlotOptions& s : v.slots) {
    if (!s.depth) continue;
    const std::string where = "video slot \"" + s.slot + "\"";
    auto master = by_name.find(s.master_slot);
    if (s.master_slot.empty() || master == by_name.end())
      return Status::Invalid(where + ": a depth slot needs the master_slot (an RGB slot) it follows; got \"" +
                             s.master_slot + "\"");
    if (master->second->depth)
      return Status::Invalid(where + ": master_slot \"" + s.master_slot + "\" is a depth slot");
    REEL_RETURN_IF_ERROR(CheckDepthRateFindable(options, s, by_name));
  }
  if (v.queue_frames < 1)
    return Status::Invalid("video.queue_frames must be >= 1, got " + std::to_string(v.queue_frames));
  return Status::OK();
}

namespace {

// The rate a slot's frames are taken at: its own, its master's for a depth slot, else the task's.
double SlotRate(const TaskWriterOptions& options, const VideoSlotOptions& slot) {
  const VideoSlotOptions* rate_of = &slot;
  if (slot.depth)
    for (const VideoSlotOptions& s : options.video.slots)
      if (s.slot == slot.master_slot) rate_of = &s;
  return rate_of->fps > 0 ? rate_of->fps : options.fps;
}

}  // namespace

Result<std::unique_ptr<EpisodeVideos>> EpisodeVideos::Open(FileSystem* fs, const std::string& root,
                                                           const TaskWriterOptions& options,
                                                           const InfoJson& info, int64_t n) {
  std::unique_ptr<EpisodeVideos> v(new EpisodeVideos());
  v->fs_ = fs;
  v->task_ = &options;
  if (options.video.slots.empty()) return v;
  REEL_ASSIGN_OR_RETURN(PathTemplate tpl, PathTemplate::Parse(info.video_path));
  const EpisodeLocation loc = LocateEpisode(n, info.chunks_size);
  for (const VideoSlotOptions& s : options.video.slots) {
    SlotStreamOptions o;
    o.slot = s.slot;
    o.encoder = options.video.rgb;
    o.encoder.kind = VideoKind::kRgb;
    if (s.depth) o.encoder.kind = DepthKind(s.slot, options.video, info, &v->depth_selected_by_[s.slot]);
    if (s.depth) o.encoder.preset = options.video.depth_preset;
    o.encoder.width = s.width;
    o.encoder.height = s.height;
    const double fps = SlotRate(options, s);
    o.encoder.fps = fps;
    o.encoder.fs = fs;  // every byte of the temp through the task's FileSystem
    o.encoder.sync_on_finish = true;
    o.queue_full = options.video.queue_full;
    o.queue_frames = options.video.queue_frames;
    PathVars vars{loc.chunk, loc.file, n, s.slot, std::string(VideoExtension(o.encoder.kind))};
    auto rel = tpl.Render(vars);
    if (!rel.ok()) {
      v->Discard();
      return rel.status();
    }
    const std::string final_abs = JoinPath(root, *rel);
    o.temp_path = TempPathFor(final_abs, "commit");
    v->files_.push_back({o.temp_path, *rel});  // registered first: Discard removes it
    // No folder on the way may be a link out of the task (layout/confined.h).
    Status st = CheckBeneath(fs, root, *rel, root + ": recording episode " + std::to_string(n) + " to " + *rel);
    if (st.ok()) st = fs->CreateDirs(DirName(final_abs));
    auto stream = st.ok() ? SlotStream::Open(std::move(o)) : Result<std::unique_ptr<SlotStream>>(st);
    if (!stream.ok()) {
      v->Discard();
      return stream.status().WithContext("episode " + std::to_string(n));
    }
    v->slots_.push_back({s, fps, 0, std::move(*stream)});
  }
  return v;
}

EpisodeVideos::~EpisodeVideos() = default;

Result<VideoStream*> EpisodeVideos::Stream(const std::string& slot) {
  for (Slot& s : slots_)
    if (s.options.slot == slot) return static_cast<VideoStream*>(s.stream.get());
  return Status::NotFound("video slot \"" + slot + "\" is not declared in TaskWriterOptions::video");
}

Status EpisodeVideos::Tick(int64_t row) {
  for (Slot& s : slots_) {
    // A slot with its own rate takes frame k at the first row whose time reaches k / fps.
    if (s.ticks < SlotFramesForRows(row + 1, task_->fps, s.fps)) {
      REEL_RETURN_IF_ERROR(s.stream->Tick());
      ++s.ticks;
    }
  }
  return Status::OK();
}

Status EpisodeVideos::Finish(int64_t rows) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    REEL_RETURN_IF_ERROR(slots_[i].stream->Finish());
    const int64_t frames = slots_[i].stream->frames_written();
    const int64_t want = SlotFramesForRows(rows, task_->fps, slots_[i].fps);
    if (frames != want)
      return Status::Corruption(files_[i].temp + ": video slot \"" + slots_[i].options.slot + "\" has " +
                                std::to_string(frames) + " frames for " + std::to_string(rows) + " rows (" +
                                std::to_string(want) + " expected)");
    // The encoder's Finish synced the temp (sync_on_finish) through its WritableFile.
  }
  return Status::OK();
}

void EpisodeVideos::Discard() {
  slots_.clear();  // joins the encoder threads before their files go
  for (const File& f : files_) {
    auto st = fs_->Stat(f.temp);
    if (st.ok() && st->type != FileType::kNotFound) (void)fs_->RemoveFile(f.temp);
  }
  files_.clear();
}

void EpisodeVideos::Declare(InfoJson& decl) const {
  decl.video = !slots_.empty();
  for (const Slot& s : slots_) {
    if (!s.options.depth)  // depth slots are never cameras (multi-device §6.3)
      decl.cameras.emplace_back(s.options.slot, CameraSpec{s.options.height, s.options.width,
                                                           s.fps != task_->fps ? std::optional(s.fps) : std::nullopt});
    decl.video_extensions.emplace_back(s.options.slot,
                                       VideoExtension(s.stream->options().encoder.kind));
  }
}

std::string EpisodeVideos::VideoCodecJson() const {
  Json out = Json::object(), depth = Json::object();
  for (const Slot& s : slots_) {
    Json d = Json::parse(s.stream->DescribeJson());
    if (s.options.depth) {
      d["master_slot"] = s.options.master_slot;
      d["selected_by"] = depth_selected_by_.at(s.options.slot);
      depth[s.options.slot] = std::move(d);
    } else if (!out.contains("encoder")) {  // one RGB encoder setting for the episode
      for (auto& [k, val] : d.items()) out[k] = val;
      out["selected_by"] = "options";
    }
  }
  if (!depth.empty()) out["depth"] = std::move(depth);
  return Dump(out, -1);
}

void EpisodeVideos::AddDropStats(Json& drop_stats) const {
  for (const Slot& s : slots_) {
    const double period_ms = 1000.0 / s.fps;  // a gap is counted in the slot's own frames
    const SlotDrops d = s.stream->drops();
    const std::string& k = s.options.slot;
    if (d.repeated) drop_stats["ext:" + k] = d.repeated;
    if (d.longest_gap_rows)
      drop_stats[k + "_gap_ms"] = std::llround(static_cast<double>(d.longest_gap_rows + 1) * period_ms);
    if (d.superseded) drop_stats["superseded:" + k] = d.superseded;
    if (d.queue_dropped) drop_stats["queue:" + k] = d.queue_dropped;
  }
}

}  // namespace reel::internal
