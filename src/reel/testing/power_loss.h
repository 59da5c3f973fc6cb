// Test-only: the power-loss campaign over one commit path (docs/reliability.md "Power
// loss"). Header-only, like the rest of src/reel/testing/.
//
// A PowerLossCase builds the old state of a directory (setup, run once, everything on disk
// taken as durable), and names the operation that changes it (op, given the FileSystem to
// write through). RunPowerLoss then
//   1. runs op once on a fresh copy of the old state through a FaultFileSystem to learn the
//      new state and K, the number of sync points (fsyncs of files and directories);
//   2. runs op again, lets it return, and cuts the power (both modes): everything the
//      operation said was done must survive (else "lost");
//   3. for each sync point k (all of them, or max_points spread evenly, K always among
//      them) and each mode: a fresh copy, op with the process dying right after sync point
//      k and the power cut dropping every unsynced write (kWhole), or op dying as it calls
//      sync point k and the cut keeping half of each file's unsynced appended bytes
//      (kTorn: the moment between two syncs, with whatever the process wrote since the
//      last one, is the one a torn write shows); then the next open with the real file
//      system (TaskLock::Acquire: interrupted commits rolled forward) and the judgement
//      below.
// Judged on the task (`task`, relative to the directory), read as a reader would
// (Task::Open, the episode index off): every episode N is the old one or the new one (its
// data parquet, its videos and its episodes row, byte for byte, with their paths; or
// absent), each of `atomic_files` is old or new, and with `whole_tree` the task's visible
// files (no dotfile) are the old set or the new one; info.json, stats.json and tasks.jsonl
// parse; CheckTask reports no error. A unit that was new after sync point k must not be old
// after a later one (durability does not go backwards): that is "lost".
//
// Counting, per crash: torn (a unit neither old nor new), else lost, else old (every unit
// old), new (every unit new) or between (some episodes of a multi-commit operation done,
// the rest not yet: each is whole). A crash whose state fails to open or to check counts in
// `unclean` too. A crash whose every finding is a known defect the case names counts only
// in `known`.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <gtest/gtest.h>

#include "reel/check.h"
#include "reel/fs.h"
#include "reel/task.h"
#include "reel/video.h"
#include "testing/fault_fs.h"
#include "write/transaction.h"

namespace reel::testing {

struct PowerLossCase {
  std::string name;  // the commit path, as the table in docs/reliability.md names it
  std::function<Status(const std::string& dir)> setup;  // builds the old state in `dir`
  std::function<Status(FileSystem* fs, const std::string& dir)> op;
  std::string task = "task";              // the task judged, relative to the directory
  std::vector<std::string> atomic_files;  // relative to the task: each old or new as a unit
  bool whole_tree = false;                // the task's visible files: the old set or the new one
  int max_points = 0;                     // 0 = every sync point
  bool check = true;                      // run the conformance checker on every state
  std::set<std::string> ignored_rules;    // checker rules a crash may leave (the case says why)
  // A known defect, not fixed here (the case says why): a crash all of whose findings it
  // accepts is counted as `known`, not as torn, lost or unclean. Null = none.
  std::function<bool(const std::string& finding)> known_failure;
  // Columns whose values an operation takes from the clock (the recorder's wall_time, the
  // episodes row's created_at): an episode's parquet files are then compared by their
  // values without these columns (Arrow IPC bytes), not byte for byte.
  std::vector<std::string> volatile_columns;
  // Videos the operation encodes (the recorder's): compared by what a reader finds (codec,
  // size, frame count, the last frame decodable), not byte for byte. The encoder's output
  // is not reproducible run to run (reel simulate's frames decode differently now and then
  // under load), so bytes would call a whole new video torn.
  bool encoded_videos = false;
  // The next open before the task is read, given the task's root: null = a writer's
  // (TaskLock::Acquire through the real file system, which rolls interrupted commits
  // forward), when the task has a meta/ folder.
  std::function<Status(const std::string& root)> reopen;
};

struct PowerLossTally {
  int sync_points = 0;
  int crashes = 0, old_state = 0, new_state = 0, between = 0, torn = 0, lost = 0, unclean = 0, known = 0;
  std::vector<std::string> failures;  // what went wrong, one line each (the first 20)
  std::vector<std::string> trace;     // the clean run's sync points
  std::vector<std::string> strays;    // files written around the FileSystem (clean run)
  std::string Row(const std::string& name) const {
    return "| " + name + " | " + std::to_string(sync_points) + " | " + std::to_string(crashes) + " | " +
           std::to_string(old_state) + " | " + std::to_string(new_state) + " | " + std::to_string(between) + " | " +
           std::to_string(torn) + " | " + std::to_string(lost) + " | " + std::to_string(unclean) + " | " +
           std::to_string(known) + " |";
  }
};

namespace power_loss_detail {

namespace stdfs = std::filesystem;
using Units = std::map<std::string, std::string>;

struct Observed {
  Units units;
  std::vector<std::string> problems;
};

inline std::string Digest(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char out[40];
  std::snprintf(out, sizeof out, "%zu:%016llx", bytes.size(), static_cast<unsigned long long>(h));
  return out;
}

inline std::string FileDigest(const std::string& path) {
  auto bytes = DefaultFileSystem()->ReadFile(path);
  return bytes.ok() ? Digest(*bytes) : "unreadable";
}

// The visible files under `root` (no component starting with '.'), with their digests.
inline std::string TreeDigest(const std::string& root) {
  std::string out;
  if (!stdfs::is_directory(root)) return "absent";
  std::vector<std::string> files;
  for (auto it = stdfs::recursive_directory_iterator(root); it != stdfs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(stdfs::relative(it->path(), root).string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) out += f + " " + FileDigest(JoinPath(root, f)) + "\n";
  return out;
}

// A parquet file's values without the `dropped` columns (and without key-value metadata).
inline std::string ValuesDigest(const std::string& path, const std::vector<std::string>& dropped) {
  auto table = ReadParquetFile(DefaultFileSystem(), path);
  if (!table.ok()) return "unreadable: " + table.status().ToString();
  std::shared_ptr<arrow::Table> t = (*table)->ReplaceSchemaMetadata(nullptr);
  for (const std::string& name : dropped)
    if (int i = t->schema()->GetFieldIndex(name); i >= 0) t = t->RemoveColumn(i).ValueOrDie();
  auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
  auto writer = arrow::ipc::MakeStreamWriter(sink, t->schema()).ValueOrDie();
  if (!writer->WriteTable(*t).ok() || !writer->Close().ok()) return "unserialisable";
  return "values " + Digest(sink->Finish().ValueOrDie()->ToString());
}

// What a reader finds in a video: its stream, and whether its last frame decodes.
inline std::string VideoDigest(const std::string& path) {
  auto reader = VideoReader::Open(path);
  if (!reader.ok()) return "unreadable: " + reader.status().ToString();
  const VideoInfo& v = (*reader)->info();
  std::string out = v.codec + " " + std::to_string(v.width) + "x" + std::to_string(v.height) + " frames " +
                    std::to_string(v.frames);
  if (v.frames > 0 && !v.depth) {
    std::vector<uint8_t> rgb(static_cast<size_t>(v.width) * v.height * 3);
    const int64_t last = v.frames - 1;
    if (Status st = (*reader)->ReadRgb({&last, 1}, rgb); !st.ok()) out += " last frame unreadable";
  }
  return out;
}

inline std::string EpisodeDigest(const Task& task, const EpisodeEntry& e, const PowerLossCase& c) {
  const std::vector<std::string>& dropped = c.volatile_columns;
  auto digest = [&](const std::string& rel) {
    if (rel.empty()) return std::string();
    return dropped.empty() ? FileDigest(task.Path(rel)) : ValuesDigest(task.Path(rel), dropped);
  };
  std::string out = "data " + e.data_path + " " + digest(e.data_path);
  for (const auto& [slot, path] : e.videos)
    out += "; video " + slot + " " + path + " " +
           (c.encoded_videos ? VideoDigest(task.Path(path)) : FileDigest(task.Path(path)));
  out += std::string("; row ") + RowSourceName(e.row_source) + " " + e.row_path + " " + digest(e.row_path);
  return out;
}

// The next open (interrupted commits rolled forward), then what a reader sees.
inline Observed Observe(const PowerLossCase& c, const std::string& dir) {
  Observed obs;
  const std::string root = JoinPath(dir, c.task);
  if (c.reopen) {
    if (Status st = c.reopen(root); !st.ok()) obs.problems.push_back("next open: " + st.ToString());
  } else if (stdfs::is_directory(JoinPath(root, "meta"))) {
    auto lock = internal::TaskLock::Acquire(DefaultFileSystem(), root);
    if (!lock.ok()) obs.problems.push_back("next open: " + lock.status().ToString());
  }
  const bool has_info = stdfs::exists(JoinPath(root, "meta/info.json"));
  if (has_info) {
    auto task = Task::Open(root, {DefaultFileSystem(), 1, EpisodeIndexMode::kOff});
    if (!task.ok()) {
      obs.problems.push_back("open: " + task.status().ToString());
    } else {
      auto episodes = (*task)->ListEpisodes();
      if (!episodes.ok()) obs.problems.push_back("list: " + episodes.status().ToString());
      for (const EpisodeEntry& e : episodes.ValueOr({}))
        obs.units["episode " + std::to_string(e.episode_index)] = EpisodeDigest(**task, e, c);
      if (stdfs::exists(JoinPath(root, "meta/stats.json")))
        if (auto stats = (*task)->ReadStats(); !stats.ok()) obs.problems.push_back("stats: " + stats.status().ToString());
      if (stdfs::exists(JoinPath(root, "meta/tasks.jsonl")))
        if (auto tasks = (*task)->ReadTasks(); !tasks.ok()) obs.problems.push_back("tasks: " + tasks.status().ToString());
    }
  }
  for (const std::string& f : c.atomic_files)
    obs.units["file " + f] = stdfs::exists(JoinPath(root, f)) ? FileDigest(JoinPath(root, f)) : "absent";
  if (c.whole_tree) obs.units["tree"] = TreeDigest(root);
  if (c.check && has_info) {
    auto report = CheckTask(root, {.fs = DefaultFileSystem(), .io_threads = 1});
    if (!report.ok()) obs.problems.push_back("check: " + report.status().ToString());
    for (const Finding& f : report.ok() ? report->findings : std::vector<Finding>{})
      if (f.severity == Severity::kError && !c.ignored_rules.count(f.rule)) obs.problems.push_back("check: " + f.rule + " " + f.path + ": " + f.message);
  }
  return obs;
}

// The parts ("; "- or line-separated) of `now` found in neither `old` nor `fresh`, and
// those of `fresh` missing from `now`: what makes a unit torn, briefly.
inline std::string Differences(const std::string& now, const std::string& old, const std::string& fresh) {
  auto parts = [](const std::string& s) {
    std::set<std::string> out;
    size_t at = 0;
    while (at < s.size()) {
      size_t end = std::min(s.find("; ", at), s.find('\n', at));
      if (end == std::string::npos) end = s.size();
      out.insert(s.substr(at, end - at));
      at = end + (end < s.size() && s[end] == ';' ? 2 : 1);
    }
    return out;
  };
  const std::set<std::string> n = parts(now), o = parts(old), f = parts(fresh);
  std::string out;
  for (const std::string& p : n)
    if (!o.count(p) && !f.count(p)) out += " [has " + p.substr(0, 400) + "]";
  for (const std::string& p : f)
    if (!n.count(p)) out += " [lacks new " + p.substr(0, 400) + "]";
  return out.substr(0, 1500);
}

inline std::string Get(const Units& u, const std::string& key) {
  auto it = u.find(key);
  return it == u.end() ? "absent" : it->second;
}

inline void Fail(PowerLossTally* t, const std::string& line) {
  if (t->failures.size() < 20) t->failures.push_back(line);
}

// Sync points to crash at: 1..k, or `max` of them spread evenly (k always included).
inline std::vector<int> Points(int k, int max) {
  std::vector<int> out;
  if (max <= 0 || k <= max) {
    for (int i = 1; i <= k; ++i) out.push_back(i);
    return out;
  }
  for (int i = 0; i < max; ++i) out.push_back(1 + static_cast<int>((static_cast<int64_t>(i) * (k - 1)) / (max - 1)));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace power_loss_detail

namespace power_loss_detail {

// Judges one crash's state against the old and the new one. `was_new` holds the units
// seen new at an earlier sync point (per mode); `must_be_new`: the operation had returned.
inline void Judge(const PowerLossCase& c, const Observed& before, const Observed& after, const Observed& now,
                  const std::string& label, std::set<std::string>* was_new, bool must_be_new, PowerLossTally* t) {
  ++t->crashes;
  std::vector<std::string> torn, lost, unclean;  // what is wrong with this state
  for (const std::string& p : now.problems) unclean.push_back(label + ": " + p);
  int olds = 0, news = 0;
  std::set<std::string> all;
  for (const Units* u : {&before.units, &after.units, &now.units})
    for (const auto& [k, v] : *u) all.insert(k);
  for (const std::string& k : all) {
    const std::string o = Get(before.units, k), n = Get(after.units, k), v = Get(now.units, k);
    if (o == n && v == o) continue;  // not changed by the operation
    if (v == n) {
      ++news;
      if (was_new) was_new->insert(k);
    } else if (v == o) {
      ++olds;
      if (must_be_new || (was_new && was_new->count(k)))
        lost.push_back(label + ": " + k + " is old again after it was " + (must_be_new ? "committed" : "new"));
    } else {
      torn.push_back(label + ": " + k + " is neither old nor new: " + Differences(v, o, n));
    }
  }
  auto all_known = [&](const std::vector<std::string>& lines) {
    return std::all_of(lines.begin(), lines.end(), c.known_failure);
  };
  if (c.known_failure && !(torn.empty() && lost.empty() && unclean.empty()) && all_known(torn) && all_known(lost) &&
      all_known(unclean)) {
    ++t->known;
    return;
  }
  for (const auto* lines : {&unclean, &torn, &lost})
    for (const std::string& line : *lines) Fail(t, line);
  if (!unclean.empty()) ++t->unclean;
  if (!torn.empty()) ++t->torn;
  else if (!lost.empty()) ++t->lost;
  else if (news == 0) ++t->old_state;
  else if (olds == 0) ++t->new_state;
  else ++t->between;
}

// The campaign's directory: in memory where the machine has it (a campaign copies the task
// and reads it back a few hundred times, and what runs outside the FaultFileSystem - setup,
// the next open, scratch directories - makes real fsyncs), with TMPDIR pointed inside it
// for the operation's scratch directories. Removed, and TMPDIR restored, on destruction.
struct Workspace {
  std::string base;  // "" when it could not be made
  bool had_tmpdir = false;
  std::string tmpdir;
  Workspace() {
    const bool shm = ::access("/dev/shm", W_OK) == 0;
    std::string tmpl = JoinPath(shm ? std::string("/dev/shm") : ::testing::TempDir(), "reel_powerloss.XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) return;
    base = tmpl;
    stdfs::create_directories(base + "/old");
    stdfs::create_directories(base + "/tmp");
    if (const char* t = ::getenv("TMPDIR")) had_tmpdir = true, tmpdir = t;
    ::setenv("TMPDIR", (base + "/tmp").c_str(), 1);
  }
  ~Workspace() {
    if (base.empty()) return;
    if (had_tmpdir) ::setenv("TMPDIR", tmpdir.c_str(), 1);
    else ::unsetenv("TMPDIR");
    stdfs::remove_all(base);
  }
  // A fresh copy of the old state at base/run (the same path every time).
  void Fresh() const {
    stdfs::remove_all(base + "/run");
    stdfs::copy(base + "/old", base + "/run", stdfs::copy_options::recursive);
  }
};

}  // namespace power_loss_detail

inline PowerLossTally RunPowerLoss(const PowerLossCase& c) {
  namespace d = power_loss_detail;
  using Mode = FaultFileSystem::CrashMode;
  PowerLossTally t;
  const d::Workspace w;
  if (w.base.empty()) {
    d::Fail(&t, "mkdtemp failed");
    return t;
  }
  const std::string run = w.base + "/run";
  if (Status st = c.setup(w.base + "/old"); !st.ok()) {
    d::Fail(&t, "setup: " + st.ToString());
    return t;
  }
  w.Fresh();
  const d::Observed before = d::Observe(c, run);
  for (const std::string& p : before.problems) d::Fail(&t, "old state: " + p);
  w.Fresh();
  {
    FaultFileSystem fs(run);
    if (Status st = c.op(&fs, run); !st.ok()) {
      d::Fail(&t, "clean run: " + st.ToString());
      return t;
    }
    t.sync_points = fs.syncs();
    t.trace = fs.trace();
    t.strays = fs.strays();
  }
  const d::Observed after = d::Observe(c, run);
  for (const std::string& p : after.problems) d::Fail(&t, "new state: " + p);

  for (Mode mode : {Mode::kWhole, Mode::kTorn}) {
    const std::string m = mode == Mode::kWhole ? "whole" : "torn";
    w.Fresh();
    {
      FaultFileSystem fs(run);
      if (Status st = c.op(&fs, run); !st.ok()) d::Fail(&t, "run before the cut (" + m + "): " + st.ToString());
      if (Status st = fs.Crash(mode); !st.ok()) d::Fail(&t, "crash: " + st.ToString());
    }
    d::Judge(c, before, after, d::Observe(c, run), "power cut after the operation returned (" + m + ")", nullptr,
             true, &t);
    std::set<std::string> was_new;
    for (int k : d::Points(t.sync_points, c.max_points)) {
      w.Fresh();
      {
        FaultFileSystem fs(run);
        if (mode == Mode::kWhole) fs.CrashAfterSync(k);
        else fs.CrashBeforeSync(k);
        (void)c.op(&fs, run);
        if (!fs.dead()) d::Fail(&t, "sync point " + std::to_string(k) + " (" + m + ") was never reached");
        if (Status st = fs.Crash(mode); !st.ok()) d::Fail(&t, "crash: " + st.ToString());
      }
      const std::string label = std::string(mode == Mode::kWhole ? "after" : "before") + " sync point " +
                                std::to_string(k) + "/" + std::to_string(t.sync_points) + " (" + m + ", " +
                                (k <= static_cast<int>(t.trace.size()) ? t.trace[k - 1] : "?") + ")";
      d::Judge(c, before, after, d::Observe(c, run), label, &was_new, false, &t);
    }
  }
  std::printf("POWERLOSS %s\n", t.Row(c.name).c_str());
  return t;
}

// The assertions every campaign makes (a gtest helper: call from the TEST body).
#define REEL_EXPECT_POWER_LOSS_CLEAN(tally)                                                       \
  do {                                                                                            \
    const ::reel::testing::PowerLossTally& _t = (tally);                                          \
    EXPECT_GT(_t.sync_points, 0);                                                                 \
    EXPECT_EQ(_t.torn, 0);                                                                        \
    EXPECT_EQ(_t.lost, 0);                                                                        \
    EXPECT_EQ(_t.unclean, 0);                                                                     \
    EXPECT_TRUE(_t.strays.empty()) << _t.strays.front();                                          \
    for (const std::string& _f : _t.failures) ADD_FAILURE() << _f;                                \
    if (::testing::Test::HasFailure())                                                            \
      for (size_t _i = 0; _i < _t.trace.size(); ++_i) std::printf("  sync %zu: %s\n", _i + 1, _t.trace[_i].c_str()); \
  } while (0)

}  // namespace reel::testing
