// Internal to src/reel/foreign/: the finding sink shared by ReadEpisodes (strict:
// the first error ends the read) and Validate (collecting), and typed access
// to single Arrow cells with messages that name the file, row and column.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "reel/findings.h"
#include "reel/dataset.h"
#include "reel/status.h"

namespace arrow {
class ChunkedArray;
class Schema;
class Table;
}  // namespace arrow

namespace reel::foreign {

// Collects findings. In strict mode the first error stops the caller: Error()
// returns false and status() carries the message (NotFound for a missing file,
// Invalid otherwise). Callers write `if (!sink.Error(...)) return sink.status();`.
class Sink {
 public:
  explicit Sink(bool strict) : strict_(strict) {}
  bool Error(const std::string& rule, const std::string& path, const std::string& message,
             StatusCode code = StatusCode::kInvalid);
  void Warning(const std::string& rule, const std::string& path, const std::string& message);
  Status status() const { return first_; }
  // Strict: a reader (stops at the first error); else a check (collects them all).
  bool strict() const { return strict_; }
  std::vector<Finding>& findings() { return findings_; }

 private:
  bool strict_;
  Status first_;
  std::vector<Finding> findings_;
};

// Rule ids (docs/foreign-read.md).
inline constexpr const char* kRuleEpisodeOrder = "foreign.episode_order";
inline constexpr const char* kRuleIndexContiguous = "foreign.index_contiguous";
inline constexpr const char* kRuleFileMissing = "foreign.file_missing";
inline constexpr const char* kRuleVideoSpan = "foreign.video_span";
inline constexpr const char* kRuleBundleEpisode = "foreign.bundle_episode";
inline constexpr const char* kRuleLength = "foreign.length";
inline constexpr const char* kRuleStep = "foreign.step";
inline constexpr const char* kRuleDataRows = "foreign.data_rows";
inline constexpr const char* kRuleMetadata = "foreign.metadata";
inline constexpr const char* kRuleTotals = "foreign.totals";
inline constexpr const char* kRuleUnreadable = "foreign.unreadable";
inline constexpr const char* kRuleVideoFrames = "foreign.video_frames";
inline constexpr const char* kRuleOverlay = "foreign.overlay";

// "episode 3" for messages.
std::string EpisodeName(int64_t episode_index);

// Cell readers; `what` is "<file> row <r> column \"<name>\"" style context.
Result<int64_t> IntAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what);
Result<double> DoubleAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what);
Result<std::string> StringAt(const arrow::ChunkedArray& column, int64_t row, const std::string& what);
Result<std::vector<std::string>> StringListAt(const arrow::ChunkedArray& column, int64_t row,
                                              const std::string& what);
// The named column, or Invalid "<path>: no column \"<name>\"".
Result<std::shared_ptr<arrow::ChunkedArray>> Column(const arrow::Table& table,
                                                    const std::string& name,
                                                    const std::string& path);

// Number of rows of a parquet file from its footer (no data read).
Result<int64_t> ParquetRows(FileSystem* fs, const std::string& path);

// Whether `path` is a regular file.
Result<bool> IsFile(FileSystem* fs, const std::string& path);

// The episode index of each format (lerobot_episodes.cc, bundle_episodes.cc).
// A returned error is one the index cannot be built past (an unreadable
// file); rule violations go to `sink`, which stops the read when strict.
Result<std::vector<ForeignEpisode>> LeRobotV2Episodes(FileSystem* fs, const std::string& root,
                                                      const ForeignInfo& info,
                                                      Sink& sink);
Result<std::vector<ForeignEpisode>> LeRobotV3Episodes(FileSystem* fs, const std::string& root,
                                                      const ForeignInfo& info,
                                                      Sink& sink);
// A bundle index is built from manifest.json alone when `sink` is strict (a reader: seed 004
// "a reader can build its whole sampling index from this file alone — no bundle I/O at
// startup"); a check (not strict) also verifies every bundle (CheckBundle).
Result<std::vector<ForeignEpisode>> BundleEpisodes(FileSystem* fs, const std::string& root,
                                                   const ForeignInfo& info,
                                                   Sink& sink);
// One bundle against its manifest entry: its directory, its episode.json (schema_version 1,
// the same length) and its data and video files. Readers run it when they read the
// episode, checks for every bundle. False: the directory is missing (reported to `sink`).
Result<bool> CheckBundle(FileSystem* fs, const std::string& root, const ForeignEpisode& e, Sink& sink);

// Rows of one episode (frames.cc); see ForeignDataset::ReadFrames.
Result<std::shared_ptr<arrow::Table>> ReadEpisodeRows(FileSystem* fs, const std::string& root,
                                                      DatasetFormat format, const ForeignEpisode& e,
                                                      const std::vector<std::string>& columns,
                                                      Sink& sink,
                                                      bool check_only = false);

// Overlays (reel/dataset.h OverlayKind; overlays.cc), shared by the reader, check and the
// writer (interop/overlay_writer.cc).
inline constexpr int64_t kMaxOverlayBytes = int64_t{256} << 20;
// A name is one plain path component: 1..100 bytes of [A-Za-z0-9_.-], not starting with '.'.
bool IsOverlayName(const std::string& name);
// The bundle ids with a file of overlay `name`: plain `<id>.parquet` regular files, not links,
// sorted; dotfiles (in-progress writes) are left out, anything else goes to `strays`. None
// when the overlay has no directory.
Result<std::vector<std::string>> OverlayEpisodes(FileSystem* fs, const std::string& root, const std::string& name,
                                                 std::vector<std::string>* strays);
// "overlays/<name>/<bundle_id>.parquet", relative to the dataset root.
std::string OverlayRelPath(const std::string& name, const std::string& bundle_id);
// The kind of `table` by its key columns, after checking them against an episode of
// `length` steps; Invalid naming `what` and the rule broken.
Result<OverlayKind> CheckOverlayTable(const arrow::Table& table, int64_t length, const std::string& what);
// What all files of one overlay share: its kind's name, then each value column as
// "name: type". Invalid (naming `what`) for a schema with neither kind's key columns.
Result<std::vector<std::string>> OverlaySignature(const arrow::Schema& schema, const std::string& what);
// The value columns (every column but the key columns), in file order.
std::vector<std::string> OverlayValueColumns(const arrow::Schema& schema);
// A parquet file's schema from its footer alone.
Result<std::shared_ptr<arrow::Schema>> FooterSchema(FileSystem* fs, const std::string& path);
// Reads overlays/<rel> (no symlink on the way, at most kMaxOverlayBytes) and checks it.
Result<std::shared_ptr<arrow::Table>> ReadOverlayFile(FileSystem* fs, const std::string& root,
                                                      const std::string& rel, int64_t length);
// Check (not strict): every overlay file against its episode, its overlay's first file and
// the naming rules; findings under kRuleOverlay.
void CheckOverlays(FileSystem* fs, const std::string& root, const std::vector<ForeignEpisode>& episodes,
                   Sink& sink);

// The episode index of any foreign format, dispatching on info.format.
Result<std::vector<ForeignEpisode>> EpisodesOf(FileSystem* fs, const std::string& root,
                                               const ForeignInfo& info, Sink& sink);

}  // namespace reel::foreign
