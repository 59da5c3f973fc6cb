// ExportTask (reel/interop.h): choosing and planning what to export, the atomic
// output directory, and helpers the LeRobot and bundle writers share.
#include <arrow/api.h>
#include <parquet/arrow/writer.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "interop/aligned_features.h"
#include "interop/export_internal.h"
#include "reel/dataset.h"
#include "video/video_concat.h"
#include "io/scratch_dir.h"
#include "io/temp_name.h"
#include "util/json_util.h"
#include "io/parquet_io.h"

namespace reel {

Result<ExportFormat> ParseExportFormat(const std::string& name) {
  if (name == "lerobot-v3" || name == "lerobot-v3.0") return ExportFormat::kLeRobotV30;
  if (name == "lerobot-v2.1") return ExportFormat::kLeRobotV21;
  if (name == "bundle") return ExportFormat::kBundle;
  if (name == "flat") return ExportFormat::kFlat;
  return Status::Invalid("unknown export format '" + name + "' (lerobot-v3, lerobot-v2.1, bundle, flat)");
}

const char* ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kLeRobotV30: return "lerobot-v3";
    case ExportFormat::kLeRobotV21: return "lerobot-v2.1";
    case ExportFormat::kBundle: return "bundle";
    case ExportFormat::kFlat: return "flat";
  }
  return "?";
}

Result<ForceMatrixFeature> ParseForceMatrixFeature(const std::string& name) {
  if (name == "none") return ForceMatrixFeature::kNone;
  if (name == "fz") return ForceMatrixFeature::kFz;
  if (name == "full") return ForceMatrixFeature::kFull;
  return Status::Invalid("unknown force-matrix feature '" + name + "' (full, fz, none)");
}

const char* ForceMatrixFeatureName(ForceMatrixFeature mode) {
  switch (mode) {
    case ForceMatrixFeature::kNone: return "none";
    case ForceMatrixFeature::kFz: return "fz";
    case ForceMatrixFeature::kFull: return "full";
  }
  return "?";
}

namespace internal {

namespace {

// The episodes to export, by N: every one (a listing), or those asked for, each found on its
// own (Task::FindEpisode), so that exporting 100 episodes of a large task costs those 100, not
// a listing of the task (bench_growth: 1.6x from 1,000 to 100,000 episodes with the listing).
Result<std::vector<EpisodeEntry>> ExportedEpisodes(const Task& task, const std::vector<int64_t>& asked) {
  if (asked.empty()) return task.ListEpisodes();
  std::vector<EpisodeEntry> out;
  for (int64_t n : std::set<int64_t>(asked.begin(), asked.end())) {
    auto found = task.FindEpisode(n);
    if (found.status().code() == StatusCode::kNotFound)
      return Status::NotFound(task.root() + ": no episode " + std::to_string(n));
    REEL_RETURN_IF_ERROR(found.status());
    out.push_back(std::move(*found));
  }
  return out;
}

}  // namespace

Result<ExportSource> PrepareExport(const Task& task, const ExportOptions& options) {
  ExportSource src;
  src.task = &task;
  src.task_fs = task.fs();
  REEL_ASSIGN_OR_RETURN(std::vector<EpisodeEntry> all, ExportedEpisodes(task, options.episodes));
  for (auto& e : all) {
    if (!e.data_path.empty()) {
      src.episodes.push_back(std::move(e));
    } else if (!options.episodes.empty()) {
      src.warnings.push_back("episode " + std::to_string(e.episode_index) +
                             " has no data file (deleted after upload?); skipped");
    }
  }
  if (src.episodes.empty()) {
    return Status::Invalid(task.root() + ": no episode with a data file to export");
  }
  auto [rows, schemas] = task.ReadRowsAndSchemas(src.episodes);
  for (auto& row : rows) {
    if (!row.ok()) return row.status();
    src.rows.push_back(std::move(row).value());
  }
  auto tasks = task.ReadTasks();
  if (tasks.ok()) src.tasks = std::move(tasks).value();

  // The union of the episodes' schemas, first appearance wins.
  arrow::FieldVector fields;
  std::set<std::string> seen;
  for (auto& schema : schemas) {
    if (!schema.ok()) return schema.status();
    for (const auto& f : (*schema)->fields()) {
      if (seen.insert(f->name()).second) fields.push_back(f);
    }
  }
  // Camera slots: every exported episode must have the same ones.
  const auto& first = src.episodes.front();
  std::vector<std::pair<std::string, bool>> slots;
  std::vector<VideoInfo> infos;
  const bool flat = options.format == ExportFormat::kFlat;  // no videos, any cameras
  for (const auto& [slot, path] : first.videos) {
    if (flat) break;
    VideoReaderOptions read_options;
    read_options.fs = task.fs();
    REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(task.Path(path), read_options));
    slots.emplace_back(slot, reader->info().depth);
    infos.push_back(reader->info());
  }
  for (const auto& e : src.episodes) {
    if (flat) break;
    for (const auto& [slot, depth] : slots) {
      if (!Lookup(e.videos, slot)) {
        return Status::Invalid(task.root() + ": episode " + std::to_string(e.episode_index) +
                               " has no '" + slot + "' video but episode " +
                               std::to_string(first.episode_index) +
                               " has; LeRobot needs every camera in every episode (choose episodes "
                               "with --episodes)");
      }
    }
    if (e.videos.size() != slots.size()) {
      return Status::Invalid(task.root() + ": episode " + std::to_string(e.episode_index) +
                             " has cameras that episode " + std::to_string(first.episode_index) +
                             " lacks; export them separately (--episodes)");
    }
  }
  src.schema = arrow::schema(fields);
  // Time-aligned streams are a LeRobot feature; a bundle keeps the row mapping.
  ExportMapping mapping = options.mapping;
  const bool lerobot = options.format == ExportFormat::kLeRobotV30 || options.format == ExportFormat::kLeRobotV21;
  if (!lerobot) mapping.streams.align = false;
  if (mapping.streams.align && (mapping.streams.imu_window < 0 || mapping.streams.imu_window > 4096))
    return Status::Invalid("imu window: 0 to 4096 samples, got " + std::to_string(mapping.streams.imu_window));
  if (!(mapping.streams.tolerance_s >= 0) || !std::isfinite(mapping.streams.tolerance_s))
    return Status::Invalid("align tolerance: a non-negative number of seconds");
  src.streams = mapping.streams;
  REEL_ASSIGN_OR_RETURN(src.plan, PlanFeatures(task.info(), *src.schema, slots, mapping));
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k].second && !options.mapping.include_depth) continue;
    src.cameras.push_back(infos[k]);
  }
  return src;
}

namespace {

// The "no sample" value of a column of `type`, as the recorder writes it on a row without a
// sample (contract §7.2): 0, [0]*d, [] or "connected".
Result<std::shared_ptr<arrow::Scalar>> NoSampleScalar(const std::shared_ptr<arrow::DataType>& type) {
  if (type->id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& t = static_cast<const arrow::FixedSizeListType&>(*type);
    REEL_ASSIGN_OR_RETURN(auto zero, NoSampleScalar(t.value_type()));
    auto values = arrow::MakeArrayFromScalar(*zero, t.list_size());
    if (!values.ok()) return Status::Invalid(values.status().ToString());
    return std::shared_ptr<arrow::Scalar>(std::make_shared<arrow::FixedSizeListScalar>(*values, type));
  }
  if (type->id() == arrow::Type::LIST) {
    auto empty = arrow::MakeEmptyArray(static_cast<const arrow::ListType&>(*type).value_type());
    if (!empty.ok()) return Status::Invalid(empty.status().ToString());
    return std::shared_ptr<arrow::Scalar>(std::make_shared<arrow::ListScalar>(*empty, type));
  }
  if (type->id() == arrow::Type::STRING)
    return std::shared_ptr<arrow::Scalar>(std::make_shared<arrow::StringScalar>("connected"));
  if (arrow::is_integer(type->id()) || arrow::is_floating(type->id())) {
    auto zero = arrow::MakeScalar(type, 0);
    if (zero.ok()) return *zero;
  }
  return Status::NotSupported("no \"no sample\" value for a column of type " + type->ToString());
}

// `table` with every column of `schema` it lacks appended as "no sample": a sparse column
// exists only in the episodes that supplied it (an unstamped episode has no _ns column,
// multi-device §8.1.3), while an export gives every episode the same columns.
Result<std::shared_ptr<arrow::Table>> WithEveryColumn(const arrow::Schema& schema,
                                                      std::shared_ptr<arrow::Table> table) {
  for (const auto& field : schema.fields()) {
    if (table->schema()->GetFieldIndex(field->name()) >= 0) continue;
    REEL_ASSIGN_OR_RETURN(auto value, NoSampleScalar(field->type()));
    auto column = arrow::MakeArrayFromScalar(*value, table->num_rows());
    if (!column.ok()) return Status::Invalid(field->name() + ": " + column.status().ToString());
    auto grown = table->AddColumn(table->num_columns(), field, std::make_shared<arrow::ChunkedArray>(*column));
    if (!grown.ok()) return Status::Invalid(field->name() + ": " + grown.status().ToString());
    table = *grown;
  }
  return table;
}

}  // namespace

Result<EpisodeFrames> ReadEpisodeFrames(const ExportSource& source, size_t i,
                                        std::vector<std::string>* warnings) {
  EpisodeFrames out;
  const auto& entry = source.episodes[i];
  REEL_ASSIGN_OR_RETURN(out.pooled, source.task->ReadData(entry));
  REEL_ASSIGN_OR_RETURN(out.pooled, WithEveryColumn(*source.schema, out.pooled));
  REEL_ASSIGN_OR_RETURN(auto aligned, BuildAlignedColumns(source, i, *out.pooled));
  REEL_ASSIGN_OR_RETURN(out.features, BuildFrameTable(source.plan, *out.pooled,
                                                      source.task->Path(entry.data_path), warnings, aligned));
  return out;
}

std::string TaskStringOf(const ExportSource& source, size_t i) {
  const int64_t index = source.rows[i].task_index;
  for (const auto& t : source.tasks) {
    if (t.task_index == index) return t.task;
  }
  return source.task->info().task_name;
}

Result<FeatureStats> CameraStats(FileSystem* task_fs, const std::string& path, int64_t frames) {
  VideoReaderOptions read_options;
  read_options.fs = task_fs;
  REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(path, read_options));
  const VideoInfo& info = reader->info();
  const int64_t n = std::min(frames, info.frames);
  std::vector<int64_t> indices = ImageSampleIndices(n);
  const int64_t pixels = static_cast<int64_t>(info.width) * info.height;
  std::vector<uint8_t> rgb(indices.size() * pixels * 3);
  if (info.depth) {
    std::vector<uint16_t> mm(indices.size() * pixels);
    REEL_RETURN_IF_ERROR(reader->ReadDepth(indices, mm));
    for (size_t p = 0; p < mm.size(); ++p) {
      const uint8_t gray = static_cast<uint8_t>(DepthMmToCode(mm[p]) >> 4);
      rgb[3 * p] = rgb[3 * p + 1] = rgb[3 * p + 2] = gray;
    }
  } else {
    REEL_RETURN_IF_ERROR(reader->ReadRgb(indices, rgb));
  }
  return ImageStats(rgb, static_cast<int64_t>(indices.size()));
}

Status WriteSidecar(const ExportSource& source, const arrow::Table& pooled, const std::string& path) {
  std::vector<int> indices;
  for (const auto& name : source.plan.sidecar) {
    const int i = pooled.schema()->GetFieldIndex(name);
    if (i >= 0) indices.push_back(i);
  }
  if (indices.empty()) return Status::OK();
  auto selected = pooled.SelectColumns(indices);
  if (!selected.ok()) return Status::IOError(path + ": " + selected.status().ToString());
  return WriteParquet(source.out_fs, path, **selected);
}

Status WriteJsonFile(FileSystem* fs, const std::string& path, const nlohmann::ordered_json& json,
                     int indent) {
  REEL_RETURN_IF_ERROR(fs->CreateDirs(DirName(path)));
  return WriteFileSynced(fs, path, json.dump(indent) + "\n");
}

// What a round trip back to the pooled layout needs (interop.h).
nlohmann::ordered_json ReelBlock(const ExportSource& src) {
  nlohmann::ordered_json j;
  j["source_format"] = "pooled_episodes_v1";
  j["task_name"] = src.task->info().task_name;
  nlohmann::ordered_json numbers = nlohmann::ordered_json::array();
  for (const auto& e : src.episodes) numbers.push_back(e.episode_index);
  j["pooled_episode_index"] = numbers;
  nlohmann::ordered_json features = nlohmann::ordered_json::array();
  for (const auto& f : src.plan.features) {
    static const char* kSource[] = {"concat", "column", "last", "string", "aligned"};
    nlohmann::ordered_json fj{{"key", f.key}, {"source", kSource[static_cast<int>(f.source)]}, {"columns", f.columns},
                               {"widths", f.widths}, {"pooled_types", f.pooled_types}};
    if (!f.shape.empty()) fj["shape"] = f.shape;
    if (!f.pooled_shape.empty()) fj["pooled_shape"] = f.pooled_shape;
    features.push_back(fj);
  }
  j["features"] = features;
  nlohmann::ordered_json cameras = nlohmann::ordered_json::array();
  for (const auto& c : src.plan.cameras) {
    cameras.push_back({{"key", c.key}, {"slot", c.slot}, {"depth", c.depth}});
  }
  j["cameras"] = cameras;
  j["dropped"] = src.plan.dropped;
  j["sidecar_columns"] = src.plan.sidecar;
  // Each episode's pooled row (the JSON-string columns verbatim), in export order.
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : src.rows) {
    rows.push_back({{"episode_index", r.episode_index}, {"task_index", r.task_index},
                    {"created_at", r.created_at}, {"duration_sec", r.duration_sec},
                    {"drop_stats", r.drop_stats}, {"video_codec", r.video_codec},
                    {"calibration", r.calibration}, {"force_matrix_specs", r.force_matrix_specs},
                    {"slam_specs", r.slam_specs}});
  }
  j["pooled_rows"] = rows;
  j["pooled_tasks"] = nlohmann::ordered_json::array();
  for (const auto& t : src.tasks) j["pooled_tasks"].push_back({{"task_index", t.task_index}, {"task", t.task}});
  auto pooled = ParseJson(src.task->info().source_json, "info.json");
  j["pooled_info"] = pooled.ok() ? *pooled : nlohmann::ordered_json::object();
  return j;
}

std::vector<int64_t> RetimedFrames(const InfoJson& info, const std::string& slot, int64_t rows) {
  const double fps = info.SlotFps(slot);
  std::vector<int64_t> frames;
  if (fps == info.fps) return frames;
  frames.reserve(rows);
  for (int64_t row = 0; row < rows; ++row) frames.push_back(SlotFrameOfRow(row, info.fps, fps));
  return frames;
}

Result<bool> CopyEpisodeVideo(FileSystem* input_fs, const std::string& input, FileSystem* output_fs,
                              const std::string& output, double fps, const std::string& scratch,
                              const VideoCopy& how) {
  bool copyable = false;
  if (how.retime.empty()) {
    REEL_ASSIGN_OR_RETURN(copyable, CopyableToMp4(input, input_fs, how.bundle));
  }
  // The stream is copied from the input, or from its re-encoded copy in `scratch`.
  std::string from = input;
  FileSystem* from_fs = input_fs;
  if (!copyable) {
    from = JoinPath(scratch, "reencoded.mp4");
    from_fs = output_fs;
    REEL_RETURN_IF_ERROR(ReencodeToMp4(input_fs, input, output_fs, from, fps, how.retime, how.bundle ? 20 : 18));
  }
  REEL_RETURN_IF_ERROR(output_fs->CreateDirs(DirName(output)));
  REEL_ASSIGN_OR_RETURN(auto concat, StreamConcat::Open(output_fs, output, from_fs, from));
  REEL_RETURN_IF_ERROR(concat->Append(from_fs, from).status());
  REEL_RETURN_IF_ERROR(concat->Finish());
  return !copyable;
}

void ReportExported(const ExportOptions& options, const ExportSource& src, size_t done) {
  if (!options.progress) return;
  options.progress({"episodes exported", static_cast<int64_t>(done), static_cast<int64_t>(src.episodes.size()),
                    done ? "episode " + std::to_string(src.episodes[done - 1].episode_index) : ""});
}

}  // namespace internal

namespace {

// OK when export may write `out_dir`: it does not exist, or `replace` and it is a
// directory an export could have written (a dataset, or empty). Sets *exists.
Status CheckOutput(FileSystem* fs, const std::string& out_dir, bool replace, bool* exists) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(out_dir));
  *exists = info.type != FileType::kNotFound;
  if (!*exists) return Status::OK();
  if (!replace) return Status::AlreadyExists(out_dir + ": already exists; export writes a new directory");
  if (info.type != FileType::kDirectory)
    return Status::AlreadyExists(out_dir + ": exists and is not a directory; export replaces only a dataset");
  // Only what an export writes is replaced: a LeRobot or bundle dataset, or an empty folder.
  // A pooled task is a recording, never an export's output.
  auto format = DetectFormat(fs, out_dir);
  if (format.ok() && IsForeignFormat(format->format)) return Status::OK();
  if (format.ok())
    return Status::AlreadyExists(out_dir + ": holds a " + DatasetFormatName(format->format) +
                                 " dataset; --force replaces only a LeRobot or bundle export");
  REEL_ASSIGN_OR_RETURN(auto entries, fs->ListDir(out_dir));
  if (entries.empty()) return Status::OK();
  if (fs->Stat(JoinPath(out_dir, "flat.json")).ValueOr(FileInfo{}).type == FileType::kFile) return Status::OK();
  return Status::AlreadyExists(out_dir + ": exists and is neither a LeRobot or bundle export nor empty (" +
                               format.status().message() + "); export does not replace it");
}

// Moves the finished export into `out`; an existing `out` is set aside first and
// removed only once the new one is in place.
Status MoveIntoPlace(FileSystem* fs, const std::string& staged, const std::filesystem::path& out,
                     bool replace) {
  if (!replace) return fs->Rename(staged, out.string());
  // Not under the staging prefix: the stale-scratch sweep must never take the old copy, which
  // is the only copy if the process dies between the two renames.
  // The host id beside the pid: two hosts replacing one output on NFS must not share it.
  const std::string old = JoinPath(out.parent_path().string(), "." + out.filename().string() + ".replaced-" +
                                                                   internal::HostId() + "-" + std::to_string(::getpid()));
  REEL_RETURN_IF_ERROR(fs->Rename(out.string(), old));
  if (Status st = fs->Rename(staged, out.string()); !st.ok()) {
    (void)fs->Rename(old, out.string());
    return st;
  }
  (void)RemoveAll(fs, old);  // best effort: the new export is already in place
  return Status::OK();
}

// `p` absolute, normalized, without a trailing '/'.
std::filesystem::path Normalized(const std::string& p) {
  std::filesystem::path out = std::filesystem::absolute(p).lexically_normal();
  return out.filename().empty() ? out.parent_path() : out;
}

// Export never writes into the task it reads, and --force never removes it. Paths are
// compared only on one file system (two file systems never share a file).
Status CheckNotTheTask(const Task& task, const std::string& out_dir, bool exists) {
  const std::filesystem::path out = Normalized(out_dir);
  const std::filesystem::path root = Normalized(task.root());
  const auto inside = [](const std::filesystem::path& a, const std::filesystem::path& b) {
    const auto rel = a.lexically_relative(b);
    return !rel.empty() && *rel.begin() != "..";
  };
  if (inside(out, root))
    return Status::Invalid(out.string() + ": is inside the task " + root.string() +
                           "; export never writes into the task it reads");
  if (exists && inside(root, out))
    return Status::Invalid(out.string() + ": holds the task " + root.string() + "; --force would remove it");
  return Status::OK();
}

// Writes the export of `source` into the existing empty directory `dir` on source.out_fs.
Status WriteExport(const internal::ExportSource& source, const std::string& dir, const ExportOptions& options,
                   ExportReport* report) {
  if (options.format == ExportFormat::kFlat) {
    REEL_RETURN_IF_ERROR(internal::WriteFlat(source, dir, options, report));
  } else if (options.format == ExportFormat::kBundle) {
    REEL_RETURN_IF_ERROR(internal::WriteBundles(source, dir, options, report));
  } else {
    REEL_RETURN_IF_ERROR(internal::WriteLeRobot(source, dir, options, report));
  }
  internal::ReportExported(options, source, source.episodes.size());
  return Status::OK();
}

// ExportPublish::kRename: built beside its final place, renamed into it at the end, so a
// crash leaves only a dotfile directory, never a half dataset under the real name.
Status ExportByRename(internal::ExportSource source, FileSystem* fs, const std::string& out_dir, bool exists,
                      const ExportOptions& options, ExportReport* report) {
  const std::filesystem::path out = Normalized(out_dir);
  REEL_ASSIGN_OR_RETURN(auto scratch, internal::ScratchDir::Create(
                                          "." + out.filename().string() + ".export",
                                          out.parent_path().string(), fs));
  std::error_code ec;
  std::filesystem::permissions(scratch->path(), std::filesystem::perms::owner_all |
                                                    std::filesystem::perms::group_read |
                                                    std::filesystem::perms::group_exec |
                                                    std::filesystem::perms::others_read |
                                                    std::filesystem::perms::others_exec,
                               ec);
  source.out_fs = fs;
  REEL_RETURN_IF_ERROR(WriteExport(source, scratch->path(), options, report));
  REEL_RETURN_IF_ERROR(fs->SyncDir(scratch->path()));
  REEL_RETURN_IF_ERROR(MoveIntoPlace(fs, scratch->path(), out, exists));
  REEL_RETURN_IF_ERROR(fs->SyncDir(out.parent_path().string()));
  report->out_dir = out.string();
  return Status::OK();
}

// ExportPublish::kUpload: the whole export is staged on the local disk first, so the output
// is touched only once the export itself succeeded; then an existing export is removed
// (marker first) and the staged files are uploaded (marker last).
Status ExportByUpload(internal::ExportSource source, FileSystem* fs, const std::string& out_dir, bool exists,
                      const ExportOptions& options, ExportReport* report) {
  FileSystem* local = DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(auto staging, internal::ScratchDir::Create("reel-export-upload", "", local));
  source.out_fs = local;
  REEL_RETURN_IF_ERROR(WriteExport(source, staging->path(), options, report));
  if (exists) REEL_RETURN_IF_ERROR(internal::RemoveExportForReplace(fs, out_dir));
  REEL_RETURN_IF_ERROR(internal::UploadExport(local, staging->path(), fs, out_dir,
                                              internal::DatasetMarker(options.format), options.progress));
  report->out_dir = out_dir;
  return Status::OK();
}

}  // namespace

Result<ExportReport> ExportTask(const Task& task, const std::string& out_dir,
                                const ExportOptions& options) {
  FileSystem* fs = options.output_fs ? options.output_fs : DefaultFileSystem();
  bool exists = false;
  REEL_RETURN_IF_ERROR(CheckOutput(fs, out_dir, options.replace_existing, &exists));
  if (fs == task.fs()) REEL_RETURN_IF_ERROR(CheckNotTheTask(task, out_dir, exists));
  REEL_ASSIGN_OR_RETURN(auto source, internal::PrepareExport(task, options));
  ExportReport report;
  report.format = options.format;
  report.warnings = source.warnings;
  if (options.format != ExportFormat::kFlat) {  // the flat table has its own columns (WriteFlat)
    for (const auto& w : source.plan.warnings) report.warnings.push_back(w);
    for (const auto& f : source.plan.features) report.features.push_back(f.key);
    for (const auto& c : source.plan.cameras) report.features.push_back(c.key);
  }
  if (options.publish == ExportPublish::kUpload) {
    REEL_RETURN_IF_ERROR(ExportByUpload(std::move(source), fs, out_dir, exists, options, &report));
  } else {
    REEL_RETURN_IF_ERROR(ExportByRename(std::move(source), fs, out_dir, exists, options, &report));
  }
  return report;
}

}  // namespace reel
