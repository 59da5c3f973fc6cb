// Test-only: a FileSystem that remembers what a power cut would keep (LevelDB's
// db/fault_injection_test.cc, with renames and removals undone too), for the power-loss
// campaigns (testing/power_loss.h). Header-only: src/reel/testing/ holds no .cc, because
// every non-test .cc under src/reel/ is compiled into reel_core.
//
// FaultFileSystem forwards every call to the POSIX file system, so the disk always holds
// what a running machine would show, and beside it records, for every file and directory
// under `root`, what is durable:
//
//   - File data. A file's durable bytes are its bytes at its last fsync
//     (WritableFile::Sync or FileSystem::SyncFile; for a file on disk when the wrapper was
//     made, its bytes then). Bytes appended, patched (WriteAt) or truncated away since are
//     not durable.
//   - Directory entries. Each directory has its entries now and its durable entries: a
//     creation, a rename (into or out of it) or a removal becomes durable with the next
//     SyncDir of that directory, and only then (POSIX promises no more: fsync of a file
//     makes its data durable, not its name). A rename between two directories is two
//     entries: the target's with a SyncDir of the target directory, the source's removal
//     with a SyncDir of the source directory; syncing only the target leaves the file under
//     both names after a crash, syncing only the source leaves it under neither. Files are
//     tracked by identity (an inode number of the model) through renames, so a file renamed
//     and synced keeps its durable bytes whatever name it has.
//   - New directories are entries of their parent like files: a directory created by
//     CreateDirs / CreateUniqueDir survives a crash only once its parent was SyncDir'ed
//     after the creation, and everything inside it goes with it otherwise. This is what
//     POSIX requires of a writer (ext4 and xfs happen to make a mkdir durable with the next
//     journal commit, which any fsync forces; the model does not count on that). A removed
//     directory (RemoveDir) not followed by a SyncDir of its parent comes back with its
//     durable entries.
//
// Crash(mode) then rewrites the tree under `root` to what a power cut leaves: every
// directory and file reachable through durable entries, each file with its durable bytes
// (kWhole), or with its durable bytes plus the first half of the bytes appended since its
// last sync, patches since then undone (kTorn; a file truncated since its last sync keeps
// only that half). Everything else under `root` is gone. The disk layout is rebuilt from
// scratch (new inodes, new mtimes), which readers must cope with anyway.
//
// "Crash at sync point k": CrashAfterSync(k) makes the k-th sync call under `root` (Sync,
// SyncFile, SyncDir; it completes) the last thing the process does: every later call of
// any kind (reads included, and LockFile) fails with IOError, as if the process had died,
// so nothing more reaches the disk while the operation under test unwinds. The caller then
// calls Crash(). CrashBeforeSync(k) kills it when it calls the k-th sync instead, so what
// it wrote since the sync before is on the disk, unsynced: the moment a kTorn crash
// exposes (with kWhole both give the same durable state). LockFile is forwarded (a real flock) while the process lives. Under
// `root` no real fsync is made (the model decides what a crash keeps; a sync of a missing
// path is an IOError as fsync would give).
//
// Paths outside `root` are forwarded untouched and not recorded (scratch directories in
// $TMPDIR, a source read elsewhere); their syncs are not sync points. A file that appears
// under `root` without going through this FileSystem (a writer that bypasses it) is adopted
// when a call first names it and counted in strays(); one never named is not durable.
//
// Injected faults (the other use, for error-path tests): Inject(fault) makes the nth call
// of the chosen kinds (FsOp), on the chosen paths, fail with a chosen status, or every one
// from then on (stays_down), or end the process (_exit, for kill tests); a failing Append
// or WriteAt can write half its bytes first. Calls are counted per kind (count()) and those
// the fault counts (and those of the kinds given to Log()) are logged. Made without a root, FaultFileSystem models no
// power loss: it forwards every call and injects faults only. SetCapabilities() makes it
// pose as another kind of store (an object store: no rename, no locks).
//
// Thread safety: every call takes one mutex (calls are serialised, which also keeps sync
// points in a deterministic order for a single-threaded operation).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <unistd.h>

#include <array>
#include <functional>
#include <initializer_list>

#include "reel/fs.h"

namespace reel::testing {

// The calls an injected fault can count: FileSystem's, WritableFile's (kAppend ... kClose)
// and reads of a file opened by OpenRandomAccess (kRead: ReadAt, Read).
enum class FsOp {
  kStat, kListDir, kReadFile, kOpenRandomAccess, kRead, kNewWritableFile, kAppend, kWriteAt, kSync, kClose,
  kRename, kSyncDir, kSyncFile, kRemoveFile, kRemoveDir, kCreateDirs, kCreateUniqueDir, kLockFile, kCount
};
inline const char* FsOpName(FsOp op) {
  static constexpr std::array<const char*, static_cast<size_t>(FsOp::kCount)> kNames = {
      "Stat",   "ListDir", "ReadFile", "OpenRandomAccess", "Read",       "NewWritableFile",
      "Append", "WriteAt", "Sync",     "Close",            "Rename",     "SyncDir",
      "SyncFile", "RemoveFile", "RemoveDir", "CreateDirs", "CreateUniqueDir", "LockFile"};
  return kNames[static_cast<size_t>(op)];
}
// A set of FsOp, as bits.
using FsOps = uint32_t;
constexpr FsOps Ops(std::initializer_list<FsOp> ops) {
  FsOps out = 0;
  for (FsOp op : ops) out |= FsOps{1} << static_cast<int>(op);
  return out;
}
inline constexpr FsOps kEveryOp = (FsOps{1} << static_cast<int>(FsOp::kCount)) - 1;
// The calls that change the disk.
inline constexpr FsOps kWriteOps =
    Ops({FsOp::kNewWritableFile, FsOp::kAppend, FsOp::kWriteAt, FsOp::kSync, FsOp::kClose, FsOp::kRename,
         FsOp::kSyncDir, FsOp::kSyncFile, FsOp::kRemoveFile, FsOp::kRemoveDir, FsOp::kCreateDirs,
         FsOp::kCreateUniqueDir});

struct InjectedFault {
  FsOps ops = kEveryOp;  // the kinds of call counted
  // Only calls on paths it accepts are counted (null: every path). A rename is counted by
  // its source, a WritableFile's calls by the file's path.
  std::function<bool(const std::string& path)> on;
  int nth = 1;              // the nth counted call fails; 0: none (count and log only)
  bool stays_down = false;  // and every counted call after it
  StatusCode code = StatusCode::kIOError;
  std::string reason = "Input/output error";  // "<path>: injected <op> fault: <reason>"
  bool half_write = false;  // a failing Append / WriteAt writes the first half of its bytes
  int exit_code = 0;        // > 0: the failing call ends the process with _exit(exit_code)
};
// InjectedFault::on for paths that start with `prefix` / contain `part`.
inline std::function<bool(const std::string&)> PathsUnder(std::string prefix) {
  return [prefix = std::move(prefix)](const std::string& p) { return p.rfind(prefix, 0) == 0; };
}
inline std::function<bool(const std::string&)> PathsContaining(std::string part) {
  return [part = std::move(part)](const std::string& p) { return p.find(part) != std::string::npos; };
}

class FaultFileSystem : public FileSystemWrapper {
 public:
  enum class CrashMode { kWhole, kTorn };

  // Takes what is under `root` now (an existing directory) as durable.
  explicit FaultFileSystem(std::string root) : FileSystemWrapper(DefaultFileSystem()), root_(Normalize(root)) {
    Snapshot();
  }
  // No power-loss model: forwards every call to `target` and injects faults only.
  explicit FaultFileSystem(FileSystem* target = DefaultFileSystem()) : FileSystemWrapper(target) {}

  // ---- injected faults ----
  // Replaces the fault injected before (and restarts counted(), fired() and failed_*()).
  void Inject(InjectedFault fault) {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    fault_ = std::move(fault);
    counted_ = 0;
    fired_ = false;
    failed_op_.reset();
    failed_path_.clear();
  }
  // No fault from now on (the log and counts stay).
  void Disarm() {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    fault_.reset();
  }
  // Calls the fault counted, and whether (and where) it failed one.
  int counted() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return counted_;
  }
  bool fired() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return fired_;
  }
  std::optional<FsOp> failed_op() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return failed_op_;
  }
  std::string failed_path() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return failed_path_;
  }
  // "<op> <path>" ("Rename <from> -> <to>") for every call the injected fault counted and
  // every call of the kinds given to Log(), in order.
  std::vector<std::string> calls() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return log_;
  }
  // Logs the calls of these kinds from now on (kWriteOps: every change to the disk).
  void Log(FsOps ops) {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    logged_ = ops;
  }
  // Calls of one kind so far, counted or not.
  int count(FsOp op) const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return counts_[static_cast<size_t>(op)];
  }
  void SetCapabilities(FileSystemCapabilities capabilities) {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    capabilities_ = capabilities;
  }
  FileSystemCapabilities Capabilities() const override {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return capabilities_ ? *capabilities_ : target()->Capabilities();
  }

  // The process dies right after the k-th sync call completes (0 = never, the default).
  void CrashAfterSync(int k) {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    crash_at_ = k;
  }
  // The process dies when it makes the k-th sync call, which does not happen: everything
  // it did since the (k-1)-th is on the disk unsynced (what kTorn then keeps half of).
  void CrashBeforeSync(int k) {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    crash_before_ = k;
  }
  // Sync calls under root so far.
  int syncs() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return syncs_;
  }
  // One line per sync call: "SyncDir meta", "Sync data/chunk-000/.x.tmp", ...
  std::vector<std::string> trace() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return trace_;
  }
  bool dead() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return dead_;
  }
  // Paths under root met without having been made through this FileSystem.
  std::vector<std::string> strays() const {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    return strays_;
  }

  // Rewrites the disk under root to what a power cut now would leave (see the file
  // comment), then takes that as the durable state of a fresh machine (alive again, the
  // sync count and trace kept).
  Status Crash(CrashMode mode);

  // ---- FileSystem ----
  Result<FileInfo> Stat(const std::string& path) override {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    REEL_RETURN_IF_ERROR(Alive(path));
    REEL_RETURN_IF_ERROR(Injected(FsOp::kStat, path));
    return target()->Stat(path);
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    REEL_RETURN_IF_ERROR(Alive(path));
    REEL_RETURN_IF_ERROR(Injected(FsOp::kListDir, path));
    return target()->ListDir(path);
  }
  Result<std::string> ReadFile(const std::string& path) override {
    std::lock_guard<std::recursive_mutex> hold(mu_);
    REEL_RETURN_IF_ERROR(Alive(path));
    REEL_RETURN_IF_ERROR(Injected(FsOp::kReadFile, path));
    return target()->ReadFile(path);
  }
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return OpenForWrite(path, /*append=*/false);
  }
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return OpenForWrite(path, /*append=*/true);
  }
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::string> CreateUniqueDir(const std::string& prefix) override;
  Status SyncFile(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;

 private:
  struct Node {
    bool dir = false;
    // A directory's entries: now, and as of its last SyncDir (name -> node).
    std::map<std::string, uint64_t> now, durable;
    // A file. `known`: `synced` holds its durable bytes (else its bytes now are durable).
    bool known = false;
    std::string synced;
    // Its bytes now, when written through this FileSystem (else they are on disk, or in
    // `saved` once its last name went).
    bool has_mirror = false;
    std::string mirror;
    bool has_saved = false;
    std::string saved;
    // Since the last sync: whether it was truncated, and the bytes appended, in order.
    bool dirty = false, truncated = false;
    std::string appended;
    // Where it is now (parent directory node and name); linked = it has a name now.
    uint64_t parent = 0;
    std::string name;
    bool linked = false;
  };
  class File;

  static std::string Normalize(const std::string& path) {
    std::vector<std::string> parts;
    size_t at = 0;
    while (at <= path.size()) {
      const size_t end = std::min(path.find('/', at), path.size());
      const std::string part = path.substr(at, end - at);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      at = end + 1;
    }
    std::string out = path.starts_with("/") ? "" : ".";
    for (const std::string& p : parts) out += "/" + p;
    return out.empty() ? "/" : out;
  }
  // The path relative to root ("" for root itself), or nullopt outside it.
  std::optional<std::string> Rel(const std::string& path) const {
    if (root_.empty()) return std::nullopt;  // no power-loss model
    const std::string p = Normalize(path);
    if (p == root_) return std::string();
    if (p.size() > root_.size() && p.compare(0, root_.size(), root_) == 0 && p[root_.size()] == '/')
      return p.substr(root_.size() + 1);
    return std::nullopt;
  }
  static std::vector<std::string> Split(const std::string& rel) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < rel.size()) {
      const size_t end = std::min(rel.find('/', at), rel.size());
      out.push_back(rel.substr(at, end - at));
      at = end + 1;
    }
    return out;
  }
  std::string Abs(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }
  std::string PathOf(uint64_t id) const {
    std::string rel;
    for (uint64_t at = id; at != kRoot; at = nodes_.at(at).parent)
      rel = rel.empty() ? nodes_.at(at).name : nodes_.at(at).name + "/" + rel;
    return Abs(rel);
  }

  Status Alive(const std::string& path) const {
    if (dead_) return Status::IOError(path + ": power cut (injected: the process died at sync point " +
                                      std::to_string(crash_at_ > 0 ? crash_at_ : crash_before_) + ")");
    return Status::OK();
  }
  // Before a sync call under root: the process may die here (CrashBeforeSync).
  Status BeforeSync(const std::string& path) {
    if (crash_before_ > 0 && syncs_ + 1 == crash_before_) dead_ = true;
    return Alive(path);
  }
  // Counts a completed sync call under root; the crash_at_-th one is the process's last.
  Status SyncPoint(const std::string& what, Status st) {
    ++syncs_;
    trace_.push_back(what);
    if (crash_at_ > 0 && syncs_ == crash_at_) dead_ = true;
    return st;
  }

  uint64_t NewNode(bool dir) {
    nodes_[next_].dir = dir;
    return next_++;
  }
  void Link(uint64_t parent, const std::string& name, uint64_t id) {
    nodes_[parent].now[name] = id;
    Node& n = nodes_[id];
    n.parent = parent;
    n.name = name;
    n.linked = true;
  }
  // Reads the bytes of file `id` off the disk before a call that may unlink them (a crash
  // can bring the name back).
  void Keep(uint64_t id) {
    Node& n = nodes_[id];
    if (n.dir || n.has_mirror || n.has_saved || !n.linked) return;
    auto bytes = target()->ReadFile(PathOf(id));
    n.saved = bytes.ok() ? *bytes : std::string();
    n.has_saved = true;
  }
  void Unlink(uint64_t id) {
    Node& n = nodes_[id];
    if (!n.linked) return;
    nodes_[n.parent].now.erase(n.name);
    n.linked = false;
  }
  // The bytes of file `id` now.
  std::string BytesNow(uint64_t id) {
    Node& n = nodes_[id];
    if (n.has_mirror) return n.mirror;
    if (n.has_saved) return n.saved;
    auto bytes = target()->ReadFile(PathOf(id));
    return bytes.ok() ? *bytes : std::string();
  }
  // The node named by `rel` now (0 = none), adopting what the disk holds there and the
  // model does not know (a writer that bypassed this FileSystem).
  uint64_t Lookup(const std::string& rel) {
    uint64_t at = kRoot;
    std::string walked;
    for (const std::string& part : Split(rel)) {
      walked = walked.empty() ? part : walked + "/" + part;
      Node& dir = nodes_[at];
      if (!dir.dir) return 0;
      auto it = dir.now.find(part);
      if (it != dir.now.end()) {
        at = it->second;
        continue;
      }
      auto st = target()->Stat(Abs(walked));
      if (!st.ok() || (st->type != FileType::kFile && st->type != FileType::kDirectory)) return 0;
      strays_.push_back(walked);
      const uint64_t id = NewNode(st->type == FileType::kDirectory);
      Link(at, part, id);
      if (st->type == FileType::kDirectory) Walk(id, Abs(walked), /*durable=*/false);
      at = id;
    }
    return at;
  }
  // Adds what the disk holds under `dir` (node id, absolute path) to the model.
  void Walk(uint64_t id, const std::string& dir, bool durable) {
    auto entries = target()->ListDir(dir);
    if (!entries.ok()) return;
    for (const DirEntry& e : *entries) {
      if (e.symlink || (e.type != FileType::kFile && e.type != FileType::kDirectory)) continue;
      const uint64_t child = NewNode(e.type == FileType::kDirectory);
      Link(id, e.name, child);
      if (durable) nodes_[id].durable[e.name] = child;
      if (e.type == FileType::kDirectory) Walk(child, dir + "/" + e.name, durable);
    }
  }
  void Snapshot() {
    nodes_.clear();
    next_ = kRoot;
    const uint64_t root = NewNode(true);
    nodes_[root].linked = true;
    Walk(root, root_, /*durable=*/true);
  }
  // The parent node of `rel` and its last component; parent 0 when the parent is unknown.
  std::pair<uint64_t, std::string> ParentOf(const std::string& rel) {
    const size_t slash = rel.rfind('/');
    if (slash == std::string::npos) return {kRoot, rel};
    const uint64_t parent = Lookup(rel.substr(0, slash));
    return {parent != 0 && nodes_[parent].dir ? parent : 0, rel.substr(slash + 1)};
  }
  void MarkSynced(uint64_t id) {
    Node& n = nodes_[id];
    n.synced = BytesNow(id);
    n.known = true;
    n.dirty = n.truncated = false;
    n.appended.clear();
  }
  // What a crash leaves of file `id`.
  std::string CrashBytes(uint64_t id, CrashMode mode) {
    Node& n = nodes_[id];
    if (!n.known) return BytesNow(id);
    if (!n.dirty || mode == CrashMode::kWhole) return n.synced;
    return (n.truncated ? std::string() : n.synced) + n.appended.substr(0, n.appended.size() / 2);
  }
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path, bool append);
  void Wrote(uint64_t id, std::optional<uint64_t> offset, std::string_view data);

  // Counts a call; the injected fault's error when it fails this one (or the process ends).
  // `half`: what a failing Append / WriteAt writes first when the fault says half_write.
  Status Injected(FsOp op, const std::string& path, const std::string& log_path = "",
                  const std::function<void()>& half = nullptr) {
    ++counts_[static_cast<size_t>(op)];
    const bool counted = fault_ && (fault_->ops & Ops({op})) != 0 && (!fault_->on || fault_->on(path));
    if (counted || (logged_ & Ops({op})) != 0)
      log_.push_back(std::string(FsOpName(op)) + " " + (log_path.empty() ? path : log_path));
    if (!counted) return Status::OK();
    const int n = ++counted_;
    const bool fails = fault_->nth > 0 && (n == fault_->nth || (fault_->stays_down && n > fault_->nth));
    if (!fails) return Status::OK();
    if (!fired_) {
      failed_op_ = op;
      failed_path_ = path;
    }
    fired_ = true;
    if (fault_->half_write && half) half();
    if (fault_->exit_code > 0) ::_exit(fault_->exit_code);
    return Status(fault_->code, path + ": injected " + FsOpName(op) + " fault: " + fault_->reason);
  }
  class ReadableFile;

  static constexpr uint64_t kRoot = 1;
  const std::string root_;
  mutable std::recursive_mutex mu_;
  std::map<uint64_t, Node> nodes_;
  uint64_t next_ = kRoot;
  int crash_at_ = 0, crash_before_ = 0, syncs_ = 0;
  bool dead_ = false;
  std::vector<std::string> trace_, strays_;
  std::optional<InjectedFault> fault_;
  int counted_ = 0;
  bool fired_ = false;
  std::optional<FsOp> failed_op_;
  std::string failed_path_;
  std::vector<std::string> log_;
  FsOps logged_ = 0;
  std::array<int, static_cast<size_t>(FsOp::kCount)> counts_{};
  std::optional<FileSystemCapabilities> capabilities_;
};

// A file opened through FaultFileSystem: writes are forwarded and recorded (id 0: a file
// outside root, forwarded only); every call fails once the process is dead.
class FaultFileSystem::File final : public WritableFileWrapper {
 public:
  File(FaultFileSystem* fs, uint64_t id, std::string path, std::unique_ptr<WritableFile> target)
      : WritableFileWrapper(std::move(target)), fs_(fs), id_(id), path_(std::move(path)) {}
  Status Append(std::string_view data) override {
    std::lock_guard<std::recursive_mutex> hold(fs_->mu_);
    REEL_RETURN_IF_ERROR(fs_->Alive(path_));
    REEL_RETURN_IF_ERROR(fs_->Injected(FsOp::kAppend, path_, "", [&] { (void)Write(std::nullopt, Half(data)); }));
    return Write(std::nullopt, data);
  }
  Status WriteAt(uint64_t offset, std::string_view data) override {
    std::lock_guard<std::recursive_mutex> hold(fs_->mu_);
    REEL_RETURN_IF_ERROR(fs_->Alive(path_));
    REEL_RETURN_IF_ERROR(fs_->Injected(FsOp::kWriteAt, path_, "", [&] { (void)Write(offset, Half(data)); }));
    return Write(offset, data);
  }
  Status Sync() override {
    std::lock_guard<std::recursive_mutex> hold(fs_->mu_);
    REEL_RETURN_IF_ERROR(id_ == 0 ? fs_->Alive(path_) : fs_->BeforeSync(path_));
    REEL_RETURN_IF_ERROR(fs_->Injected(FsOp::kSync, path_));
    if (id_ == 0) return target()->Sync();
    fs_->MarkSynced(id_);  // the model decides what is durable: no real fsync needed
    return fs_->SyncPoint("Sync " + *fs_->Rel(path_), Status::OK());
  }
  Status Close() override {
    std::lock_guard<std::recursive_mutex> hold(fs_->mu_);
    REEL_RETURN_IF_ERROR(fs_->Alive(path_));
    Status closed = target()->Close();  // the descriptor is released even when Close fails
    REEL_RETURN_IF_ERROR(fs_->Injected(FsOp::kClose, path_));
    return closed;
  }

 private:
  static std::string_view Half(std::string_view data) { return data.substr(0, data.size() / 2); }
  // Forwards a write and records it in the model (a file under root).
  Status Write(std::optional<uint64_t> offset, std::string_view data) {
    REEL_RETURN_IF_ERROR(offset ? target()->WriteAt(*offset, data) : target()->Append(data));
    if (id_ != 0) fs_->Wrote(id_, offset, data);
    return Status::OK();
  }

  FaultFileSystem* fs_;
  uint64_t id_;
  std::string path_;
};

// A file opened by OpenRandomAccess: reads are counted (FsOp::kRead) and can fail.
class FaultFileSystem::ReadableFile final : public arrow::io::RandomAccessFile {
 public:
  ReadableFile(FaultFileSystem* fs, std::string path, std::shared_ptr<arrow::io::RandomAccessFile> f)
      : fs_(fs), path_(std::move(path)), f_(std::move(f)) {}
  arrow::Status Close() override { return f_->Close(); }
  bool closed() const override { return f_->closed(); }
  arrow::Result<int64_t> Tell() const override { return f_->Tell(); }
  arrow::Status Seek(int64_t position) override { return f_->Seek(position); }
  arrow::Result<int64_t> GetSize() override { return f_->GetSize(); }
  arrow::Result<int64_t> Read(int64_t n, void* out) override {
    ARROW_RETURN_NOT_OK(Check());
    return f_->Read(n, out);
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t n) override {
    ARROW_RETURN_NOT_OK(Check());
    return f_->Read(n);
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t n, void* out) override {
    ARROW_RETURN_NOT_OK(Check());
    return f_->ReadAt(position, n, out);
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t n) override {
    ARROW_RETURN_NOT_OK(Check());
    return f_->ReadAt(position, n);
  }

 private:
  arrow::Status Check() {
    std::lock_guard<std::recursive_mutex> hold(fs_->mu_);
    Status st = fs_->Alive(path_);
    if (st.ok()) st = fs_->Injected(FsOp::kRead, path_);
    return st.ok() ? arrow::Status::OK() : arrow::Status::IOError(st.message());
  }
  FaultFileSystem* fs_;
  std::string path_;
  std::shared_ptr<arrow::io::RandomAccessFile> f_;
};

inline Result<std::shared_ptr<arrow::io::RandomAccessFile>> FaultFileSystem::OpenRandomAccess(
    const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kOpenRandomAccess, path));
  REEL_ASSIGN_OR_RETURN(auto file, target()->OpenRandomAccess(path));
  return std::shared_ptr<arrow::io::RandomAccessFile>(std::make_shared<ReadableFile>(this, path, std::move(file)));
}

inline void FaultFileSystem::Wrote(uint64_t id, std::optional<uint64_t> offset, std::string_view data) {
  Node& n = nodes_[id];
  n.dirty = true;
  if (!offset) {
    n.mirror.append(data);
    n.appended.append(data);
  } else if (*offset + data.size() <= n.mirror.size()) {
    n.mirror.replace(*offset, data.size(), data);
  }
}

inline Result<std::unique_ptr<WritableFile>> FaultFileSystem::OpenForWrite(const std::string& path, bool append) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kNewWritableFile, path));
  const std::optional<std::string> rel = Rel(path);
  uint64_t id = rel && !rel->empty() ? Lookup(*rel) : 0;
  if (id != 0 && nodes_[id].dir) id = 0;
  std::string before;
  if (id != 0 && (append || !nodes_[id].known)) before = BytesNow(id);  // before the open truncates it
  auto file = append ? target()->NewAppendableFile(path) : target()->NewWritableFile(path);
  if (!file.ok()) return file;
  if (!rel || rel->empty()) return std::unique_ptr<WritableFile>(new File(this, 0, path, std::move(*file)));
  if (id == 0) {
    const auto [parent, name] = ParentOf(*rel);
    if (parent == 0) return std::unique_ptr<WritableFile>(new File(this, 0, path, std::move(*file)));
    id = NewNode(false);
    Link(parent, name, id);
    Node& fresh = nodes_[id];
    fresh.known = fresh.has_mirror = fresh.dirty = fresh.truncated = true;  // durable: no bytes
  } else {
    Node& n = nodes_[id];
    if (!n.known) {
      n.synced = before;
      n.known = true;
    }
    n.has_mirror = true;
    n.has_saved = false;
    n.dirty = true;
    if (append) {
      n.mirror = before;
    } else {
      n.mirror.clear();
      n.truncated = true;
      n.appended.clear();
    }
  }
  return std::unique_ptr<WritableFile>(new File(this, id, path, std::move(*file)));
}

inline Status FaultFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(from));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kRename, from, from + " -> " + to));
  const std::optional<std::string> rf = Rel(from), rt = Rel(to);
  const uint64_t moving = rf && !rf->empty() ? Lookup(*rf) : 0;
  const uint64_t replaced = rt && !rt->empty() ? Lookup(*rt) : 0;
  if (replaced != 0) Keep(replaced);  // a crash may bring the replaced file back
  REEL_RETURN_IF_ERROR(target()->Rename(from, to));
  if (replaced == moving && moving != 0) return Status::OK();
  if (replaced != 0) Unlink(replaced);
  if (moving != 0) Unlink(moving);
  if (!rt || rt->empty()) return Status::OK();
  const auto [parent, name] = ParentOf(*rt);
  if (parent == 0) return Status::OK();
  uint64_t id = moving;
  if (id == 0) {  // from outside root: its writes were not seen; its bytes are taken as they are
    id = NewNode(false);
    strays_.push_back(*rt + " (renamed in from " + from + ")");
  }
  Link(parent, name, id);
  return Status::OK();
}

inline Status FaultFileSystem::SyncDir(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  const std::optional<std::string> rel = Rel(path);
  REEL_RETURN_IF_ERROR(rel ? BeforeSync(path) : Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kSyncDir, path));
  if (!rel) return target()->SyncDir(path);
  const uint64_t id = Lookup(*rel);
  Status st = id != 0 && nodes_[id].dir ? Status::OK() : Status::IOError(path + ": fsync directory: no such directory");
  if (st.ok() && id != 0 && nodes_[id].dir) nodes_[id].durable = nodes_[id].now;
  return SyncPoint("SyncDir " + (rel->empty() ? std::string(".") : *rel), st);
}

inline Status FaultFileSystem::SyncFile(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  const std::optional<std::string> rel = Rel(path);
  REEL_RETURN_IF_ERROR(rel ? BeforeSync(path) : Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kSyncFile, path));
  if (!rel) return target()->SyncFile(path);
  const uint64_t id = Lookup(*rel);
  Status st = id != 0 && !nodes_[id].dir ? Status::OK() : Status::IOError(path + ": fsync file: no such file");
  if (st.ok() && id != 0 && !nodes_[id].dir) MarkSynced(id);
  return SyncPoint("SyncFile " + *rel, st);
}

inline Status FaultFileSystem::RemoveFile(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kRemoveFile, path));
  const std::optional<std::string> rel = Rel(path);
  const uint64_t id = rel && !rel->empty() ? Lookup(*rel) : 0;
  if (id != 0) Keep(id);
  REEL_RETURN_IF_ERROR(target()->RemoveFile(path));
  if (id != 0) Unlink(id);
  return Status::OK();
}

inline Status FaultFileSystem::RemoveDir(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kRemoveDir, path));
  Status st = target()->RemoveDir(path);
  const std::optional<std::string> rel = Rel(path);
  if (!st.ok() || !rel || rel->empty()) return st;
  const uint64_t id = Lookup(*rel);
  if (id != 0 && nodes_[id].dir) Unlink(id);
  return st;
}

inline Status FaultFileSystem::CreateDirs(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kCreateDirs, path));
  REEL_RETURN_IF_ERROR(target()->CreateDirs(path));
  const std::optional<std::string> rel = Rel(path);
  if (!rel) return Status::OK();
  // Every component the model lacks was made by this call: a new entry of its parent.
  uint64_t at = kRoot;
  for (const std::string& part : Split(*rel)) {
    if (!nodes_[at].dir) break;
    auto it = nodes_[at].now.find(part);
    if (it != nodes_[at].now.end()) {
      at = it->second;
      continue;
    }
    const uint64_t id = NewNode(true);
    Link(at, part, id);
    at = id;
  }
  return Status::OK();
}

inline Result<std::string> FaultFileSystem::CreateUniqueDir(const std::string& prefix) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(prefix));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kCreateUniqueDir, prefix));
  REEL_ASSIGN_OR_RETURN(std::string made, target()->CreateUniqueDir(prefix));
  if (const std::optional<std::string> rel = Rel(made); rel && !rel->empty()) {
    const auto [parent, name] = ParentOf(*rel);
    if (parent != 0 && !nodes_[parent].now.count(name)) Link(parent, name, NewNode(true));
  }
  return made;
}

inline Result<std::unique_ptr<FileLock>> FaultFileSystem::LockFile(const std::string& path) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  REEL_RETURN_IF_ERROR(Alive(path));
  REEL_RETURN_IF_ERROR(Injected(FsOp::kLockFile, path));
  const std::optional<std::string> rel = Rel(path);
  const bool had = rel && !rel->empty() && Lookup(*rel) != 0;
  REEL_ASSIGN_OR_RETURN(auto lock, target()->LockFile(path));
  if (rel && !rel->empty() && !had) {  // created empty: a new entry like any other
    const auto [parent, name] = ParentOf(*rel);
    if (parent != 0) {
      const uint64_t id = NewNode(false);
      Link(parent, name, id);
      nodes_[id].known = nodes_[id].has_mirror = true;
    }
  }
  return lock;
}

inline Status FaultFileSystem::Crash(CrashMode mode) {
  std::lock_guard<std::recursive_mutex> hold(mu_);
  // What survives: every directory and file reachable from root through durable entries.
  std::vector<std::string> dirs;
  std::vector<std::pair<std::string, std::string>> files;
  auto collect = [&](auto&& self, uint64_t id, const std::string& rel, int depth) -> void {
    if (depth > 64) return;
    for (const auto& [name, child] : nodes_[id].durable) {
      const std::string path = rel.empty() ? name : rel + "/" + name;
      if (nodes_[child].dir) {
        dirs.push_back(path);
        self(self, child, path, depth + 1);
      } else {
        files.emplace_back(path, CrashBytes(child, mode));
      }
    }
  };
  collect(collect, kRoot, "", 0);
  // Anything on disk the model never heard of is a stray (written around this FileSystem).
  auto disk = [&](auto&& self, const std::string& rel, int depth) -> void {
    auto entries = target()->ListDir(Abs(rel));
    if (!entries.ok() || depth > 64) return;
    for (const DirEntry& e : *entries) {
      const std::string path = rel.empty() ? e.name : rel + "/" + e.name;
      if (Lookup(path) == 0) continue;  // Lookup adopts (and counts) strays
      if (e.type == FileType::kDirectory && !e.symlink) self(self, path, depth + 1);
    }
  };
  disk(disk, "", 0);
  REEL_ASSIGN_OR_RETURN(auto top, target()->ListDir(root_));
  for (const DirEntry& e : top) REEL_RETURN_IF_ERROR(RemoveAll(target(), Abs(e.name)));
  for (const std::string& d : dirs) REEL_RETURN_IF_ERROR(target()->CreateDirs(Abs(d)));
  for (const auto& [rel, bytes] : files) {
    REEL_ASSIGN_OR_RETURN(auto file, target()->NewWritableFile(Abs(rel)));
    REEL_RETURN_IF_ERROR(file->Append(bytes));
    REEL_RETURN_IF_ERROR(file->Close());
  }
  dead_ = false;
  crash_at_ = crash_before_ = 0;
  Snapshot();
  return Status::OK();
}

}  // namespace reel::testing
