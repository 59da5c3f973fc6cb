// ResolveSlamSpec (reel/decode.h): one authority order for a trajectory's frame and time,
// used by the viewer, the loader and the export alike.
#include "reel/decode.h"
#include "util/json_util.h"

namespace reel {

const char* SlamSpecSourceName(SlamSpecSource source) {
  switch (source) {
    case SlamSpecSource::kEpisodeRow: return "episode_row";
    case SlamSpecSource::kInfoFeature: return "info_features";
    case SlamSpecSource::kInfoSlamFrames: return "info_slam_frames";
    case SlamSpecSource::kGripperSlamFrame: return "gripper_slam_frame";
    case SlamSpecSource::kOldFrame: break;
  }
  return "old_frame";
}

namespace {

std::string ObjectText(const internal::Json& spec, const char* key) {
  auto it = spec.find(key);
  return it != spec.end() && it->is_object() ? it->dump() : "{}";
}

}  // namespace

Result<ResolvedSlamSpec> ResolveSlamSpec(const std::string& column, const EpisodeRow& row, const InfoJson& info) {
  ResolvedSlamSpec out;
  if (row.HasColumn("slam_specs") && !row.slam_specs.empty()) {
    const std::string where = "episodes row " + std::to_string(row.episode_index) + " slam_specs";
    REEL_ASSIGN_OR_RETURN(internal::Json specs, internal::ParseJson(row.slam_specs, where));
    if (!specs.is_object())
      return Status::Invalid(where + " must be a JSON object, found " + internal::JsonTypeName(specs));
    if (auto it = specs.find(column); it != specs.end() && it->is_object()) {
      if (auto f = it->find("frame"); f != it->end() && f->is_string() && !f->get<std::string>().empty()) {
        out.frame = f->get<std::string>();
        out.frame_axes_json = ObjectText(*it, "frame_axes");
        out.time_json = ObjectText(*it, "time");
        out.owner_json = ObjectText(*it, "owner");
        out.source = SlamSpecSource::kEpisodeRow;
        return out;
      }
    }
  }
  if (const FeatureSpec* f = info.Feature(column); f && f->frame && !f->frame->empty()) {
    out.frame = *f->frame;
    if (!f->frame_axes_json.empty()) out.frame_axes_json = f->frame_axes_json;
    if (!f->time_json.empty()) out.time_json = f->time_json;
    if (!f->owner_json.empty()) out.owner_json = f->owner_json;
    out.source = SlamSpecSource::kInfoFeature;
    return out;
  }
  if (const std::string* mapped = Lookup(info.slam_frames, column); mapped && !mapped->empty()) {
    out.frame = *mapped;
    out.source = SlamSpecSource::kInfoSlamFrames;
    return out;
  }
  if (column == "observation.slam_trajectory" && info.gripper_slam_frame && !info.gripper_slam_frame->empty()) {
    out.frame = *info.gripper_slam_frame;
    out.source = SlamSpecSource::kGripperSlamFrame;
  }
  return out;
}

}  // namespace reel
