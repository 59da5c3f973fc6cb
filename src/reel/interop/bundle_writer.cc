// Bundle export (../shared/seeds/004_*): episodes/ep_<32hex>/{data.parquet,
// episode.json, <feature key>.mp4} plus manifest.json. Row i of data.parquet is
// frame i of every video (the pooled layout's own promise, contract §8), so the
// videos are the pooled files, stream-copied into .mp4.
#include <arrow/api.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "interop/export_internal.h"
#include "io/scratch_dir.h"
#include "util/json_util.h"

namespace reel::internal {
namespace {

using OJson = nlohmann::ordered_json;

uint64_t Fnv1a(const std::string& s, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A stable 32-hex id for one pooled episode, so exporting twice names bundles alike.
std::string BundleId(const std::string& task_name, int64_t n, double created_at) {
  const std::string key = task_name + "\x1f" + std::to_string(n) + "\x1f" + std::to_string(created_at);
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64 "%016" PRIx64, Fnv1a(key, 14695981039346656037ull),
                Fnv1a(key, 0x84222325cbf29ce4ull));
  return buf;
}

std::string Iso8601(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Every numeric feature as list<dtype> (the bundle's "one vector per row"),
// strings as they are; `step` and `timestamp` (int64 ns) first.
Result<std::shared_ptr<arrow::Table>> BundleTable(const arrow::Table& features, const arrow::Table& pooled,
                                                  const std::string& path) {
  const int64_t n = features.num_rows();
  arrow::Int64Builder step, ts;
  auto pooled_ts = pooled.GetColumnByName("timestamp");
  if (!pooled_ts || pooled_ts->type()->id() != arrow::Type::FLOAT) {
    return Status::Invalid(path + ": no float32 timestamp column (contract §5)");
  }
  for (int64_t i = 0; i < n; ++i) (void)step.Append(i);
  for (const auto& chunk : pooled_ts->chunks()) {
    const auto& f = static_cast<const arrow::FloatArray&>(*chunk);
    for (int64_t i = 0; i < f.length(); ++i) {
      (void)ts.Append(std::llround(static_cast<double>(f.Value(i)) * 1e9));
    }
  }
  arrow::FieldVector fields;
  std::vector<std::shared_ptr<arrow::Array>> arrays;
  std::shared_ptr<arrow::Array> a;
  (void)step.Finish(&a);
  fields.push_back(arrow::field("step", arrow::int64(), false));
  arrays.push_back(a);
  (void)ts.Finish(&a);
  fields.push_back(arrow::field("timestamp", arrow::int64(), false));
  arrays.push_back(a);
  for (int c = 0; c < features.num_columns(); ++c) {
    auto column = features.column(c)->chunk(0);
    std::shared_ptr<arrow::Array> out;
    if (column->type_id() == arrow::Type::STRING) {
      out = column;
    } else {
      std::shared_ptr<arrow::Array> values = column;
      int32_t width = 1;
      if (column->type_id() == arrow::Type::FIXED_SIZE_LIST) {
        const auto& f = static_cast<const arrow::FixedSizeListArray&>(*column);
        width = f.list_type()->list_size();
        values = f.values()->Slice(f.offset() * width, n * width);
      }
      arrow::Int32Builder offsets;
      for (int64_t i = 0; i <= n; ++i) (void)offsets.Append(static_cast<int32_t>(i * width));
      std::shared_ptr<arrow::Array> off;
      (void)offsets.Finish(&off);
      auto list = arrow::ListArray::FromArrays(*off, *values);
      if (!list.ok()) return Status::IOError(path + ": " + list.status().ToString());
      out = *list;
    }
    fields.push_back(arrow::field(features.field(c)->name(), out->type(), false));
    arrays.push_back(out);
  }
  return arrow::Table::Make(arrow::schema(fields), arrays, n);
}

OJson FeaturesJson(const ExportSource& src) {
  OJson features;
  for (const auto& f : src.plan.features) {
    features[f.key] = {{"dtype", f.dtype}, {"shape", {f.width}}};
  }
  for (size_t k = 0; k < src.plan.cameras.size(); ++k) {
    const VideoInfo& v = src.cameras[k];
    features[src.plan.cameras[k].key] = {{"dtype", "video"}, {"shape", {v.height, v.width, 3}}};
  }
  return features;
}

}  // namespace

Status WriteBundles(const ExportSource& src, const std::string& dir, const ExportOptions& options,
                    ExportReport* report) {
  FileSystem* fs = src.out_fs;
  const double fps = src.task->info().fps;
  const std::string& task_name = src.task->info().task_name;
  // Re-encoded streams, written and read back through the output's file system.
  REEL_ASSIGN_OR_RETURN(auto scratch, ScratchDir::Create("reel-bundle", "", fs));
  const std::string episodes_dir = JoinPath(dir, "episodes");
  REEL_RETURN_IF_ERROR(fs->CreateDirs(episodes_dir));
  const OJson features = FeaturesJson(src);
  OJson manifest_episodes = OJson::array();
  for (size_t i = 0; i < src.episodes.size(); ++i) {
    ReportExported(options, src, i);
    const auto& entry = src.episodes[i];
    const auto& row = src.rows[i];
    const std::string id = "ep_" + BundleId(task_name, entry.episode_index, row.created_at);
    // Built under a dotfile name, then renamed: a bundle is never seen half-written.
    const std::string tmp = JoinPath(episodes_dir, "." + id + ".tmp");
    REEL_RETURN_IF_ERROR(fs->CreateDirs(tmp));

    REEL_ASSIGN_OR_RETURN(auto frames, ReadEpisodeFrames(src, i, &report->warnings));
    const int64_t n = frames.features->num_rows();
    REEL_ASSIGN_OR_RETURN(auto table, BundleTable(*frames.features, *frames.pooled,
                                                  src.task->Path(entry.data_path)));
    REEL_RETURN_IF_ERROR(WriteParquet(fs, JoinPath(tmp, "data.parquet"), *table));
    // Additive: the pooled list columns no feature holds exactly (interop.h).
    REEL_RETURN_IF_ERROR(WriteSidecar(src, *frames.pooled, JoinPath(tmp, "reel.sidecar.parquet")));
    for (const auto& cam : src.plan.cameras) {
      const std::string out = JoinPath(tmp, cam.key + ".mp4");
      const std::vector<int64_t> retime = RetimedFrames(src.task->info(), cam.slot, n);
      REEL_ASSIGN_OR_RETURN(bool reencoded, CopyEpisodeVideo(src.task_fs, src.task->Path(*Lookup(entry.videos, cam.slot)),
                                                             fs, out, fps, scratch->path(),
                                                             {.retime = retime, .bundle = !cam.depth}));
      ++(reencoded ? report->videos_reencoded : report->videos_copied);
      REEL_RETURN_IF_ERROR(fs->SyncFile(out));
    }
    const std::string task = TaskStringOf(src, i);
    OJson sidecar;
    sidecar["schema_version"] = 1;
    sidecar["capture_id"] = id.substr(3);
    sidecar["recorded_at"] = Iso8601(row.created_at);
    sidecar["length"] = n;
    sidecar["fps"] = fps;
    sidecar["record_hz"] = fps;
    sidecar["task"] = task;
    sidecar["task_description"] = task;
    sidecar["collection_mode"] = "teleop";
    sidecar["features"] = features;
    auto codec = ParseJson(row.video_codec, "video_codec");
    sidecar["encoding"] = codec.ok() ? *codec : OJson::object();
    sidecar["source_run_id"] = task_name + "/episode-" + std::to_string(entry.episode_index);
    sidecar["source_checkpoint"] = nullptr;
    sidecar["policy_name"] = nullptr;
    // Additive (evolution rule 1): where the episode came from in the pooled layout.
    sidecar["pooled"] = {{"task_name", task_name}, {"episode_index", entry.episode_index}};
    REEL_RETURN_IF_ERROR(WriteJsonFile(fs, JoinPath(tmp, "episode.json"), sidecar, 2));
    REEL_RETURN_IF_ERROR(fs->SyncDir(tmp));
    REEL_RETURN_IF_ERROR(fs->Rename(tmp, JoinPath(episodes_dir, id)));
    REEL_RETURN_IF_ERROR(fs->SyncDir(episodes_dir));
    manifest_episodes.push_back({{"id", id}, {"length", n}, {"task", task}, {"task_description", task}});
    report->frames += n;
    ++report->episodes;
  }
  OJson manifest;
  manifest["id"] = "mf_" + BundleId(task_name, 0, 0);
  manifest["name"] = task_name;
  manifest["type"] = "teleop";
  manifest["fps"] = fps;
  manifest["features"] = features;
  manifest["episode_count"] = report->episodes;
  manifest["success_rate"] = nullptr;
  manifest["episodes"] = manifest_episodes;
  manifest["schema_version"] = 1;
  manifest["reel"] = ReelBlock(src);
  return WriteJsonFile(fs, JoinPath(dir, "manifest.json"), manifest, 2);
}

}  // namespace reel::internal
