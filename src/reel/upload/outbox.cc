// The upload outbox's SQLite store (outbox.h).
#include "upload/outbox.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "reel/fs.h"

namespace reel::upload {
namespace {

constexpr const char* kStates[] = {"committed", "packing", "sending", "imported",
                                   "confirmed", "pruned",  "rejected", "conflict"};

// The schema. A new column is added with ALTER TABLE under a new user_version; never
// change a column's meaning.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs(
  id INTEGER PRIMARY KEY,
  server TEXT NOT NULL, project TEXT NOT NULL, episode_index INTEGER NOT NULL,
  digest TEXT NOT NULL DEFAULT '', state TEXT NOT NULL,
  bytes INTEGER NOT NULL DEFAULT 0, zip_bytes INTEGER NOT NULL DEFAULT 0,
  zip_sha256 TEXT NOT NULL DEFAULT '', recompressed TEXT NOT NULL DEFAULT '',
  tus_location TEXT NOT NULL DEFAULT '', sent INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0, next_try REAL NOT NULL DEFAULT 0,
  last_error TEXT NOT NULL DEFAULT '', rule TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '', proof_unavailable INTEGER NOT NULL DEFAULT 0,
  created REAL NOT NULL, updated REAL NOT NULL, confirmed_at REAL NOT NULL DEFAULT 0,
  files TEXT NOT NULL DEFAULT '',
  UNIQUE(server, project, episode_index, digest));
CREATE INDEX IF NOT EXISTS jobs_by_episode ON jobs(episode_index, id);
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
)sql";

constexpr const char* kColumns =
    "id, server, project, episode_index, digest, state, bytes, zip_bytes, zip_sha256, recompressed, "
    "tus_location, sent, attempts, next_try, last_error, rule, session_id, proof_unavailable, created, "
    "updated, confirmed_at, files";

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Status Prepared() const { return rc_ == SQLITE_OK ? Status::OK() : Error("prepare"); }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  // SQLITE_ROW -> true, SQLITE_DONE -> false, else an error.
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  Result<bool> Step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return Error("step");
  }
  std::string Text(int c) const {
    const auto* p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : "";
  }
  int64_t Int(int c) const { return sqlite3_column_int64(s_, c); }
  double Real(int c) const { return sqlite3_column_double(s_, c); }

 private:
  Status Error(const char* what) const {
    return Status::IOError(std::string("upload outbox: sqlite ") + what + ": " + sqlite3_errmsg(db_));
  }
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_OK;
};

Job ReadJob(const Stmt& s) {
  Job j;
  j.id = s.Int(0);
  j.server = s.Text(1);
  j.project = s.Text(2);
  j.episode_index = s.Int(3);
  j.digest = s.Text(4);
  const std::string state = s.Text(5);
  for (int i = 0; i < 8; ++i)
    if (state == kStates[i]) j.state = static_cast<JobState>(i);
  j.bytes = static_cast<uint64_t>(s.Int(6));
  j.zip_bytes = static_cast<uint64_t>(s.Int(7));
  j.zip_sha256 = s.Text(8);
  j.recompressed = s.Text(9);
  j.tus_location = s.Text(10);
  j.sent = static_cast<uint64_t>(s.Int(11));
  j.attempts = static_cast<int>(s.Int(12));
  j.next_try = s.Real(13);
  j.last_error = s.Text(14);
  j.rule = s.Text(15);
  j.session_id = s.Text(16);
  j.proof_unavailable = s.Int(17) != 0;
  j.created = s.Real(18);
  j.updated = s.Real(19);
  j.confirmed_at = s.Real(20);
  j.files = s.Text(21);
  return j;
}

// Creates `path` unless it is a directory already. Anything else there, a symbolic link
// included, is refused: the outbox is the task's own file, and a link would lead its
// writes (the database, packed slices) outside the task.
Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    const std::string why = "upload outbox: cannot create " + path + ": " + std::strerror(errno);
    if (errno == EACCES || errno == EPERM || errno == EROFS) return Status::PermissionDenied(why);
    return Status::IOError(why);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::Invalid("upload outbox: " + path + " is not a directory (a link is refused)");
  return Status::OK();
}

}  // namespace

const char* JobStateName(JobState s) { return kStates[static_cast<int>(s)]; }

bool IsSettled(JobState s) {
  return s == JobState::kConfirmed || s == JobState::kPruned || s == JobState::kRejected ||
         s == JobState::kConflict;
}

std::string OutboxDir(const std::string& task_root) { return JoinPath(task_root, "meta/.upload-outbox"); }

Result<std::unique_ptr<Outbox>> Outbox::Open(const std::string& task_root, bool create) {
  const std::string dir = OutboxDir(task_root);
  const std::string path = JoinPath(dir, "outbox.sqlite");
  struct stat st {};
  // The outbox is the task's own file: a link there would lead the database outside it.
  if (::lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return Status::Invalid("upload outbox: " + dir + " is not a directory");
  if (!create && ::lstat(path.c_str(), &st) != 0)
    return Status::NotFound("no upload outbox in this task (" + path + "): nothing was uploaded from it");
  if (create) {
    REEL_RETURN_IF_ERROR(MakeDir(dir));
    REEL_RETURN_IF_ERROR(MakeDir(JoinPath(dir, "slices")));
  }
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::Invalid("upload outbox: " + path + " is not a regular file");
  sqlite3* db = nullptr;
  // Without `create` the outbox is only read (--status): nothing is written, not even the
  // schema, so a reader never syncs the disk of a rig that is recording.
  const int flags = (create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) |
                    SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Status s = Status::IOError("upload outbox: cannot open " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<Outbox> box(new Outbox(db, dir));
  sqlite3_busy_timeout(db, 10000);
  // The database is one of the task's files, so outside input: SQLite's defences against a
  // crafted file (no schema-defined functions or triggers run, cell sizes checked).
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  REEL_RETURN_IF_ERROR(box->Exec("PRAGMA cell_size_check=ON;"));
  if (!create) return box;
  REEL_RETURN_IF_ERROR(box->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"));
  REEL_RETURN_IF_ERROR(box->Exec(kSchema));
  REEL_RETURN_IF_ERROR(box->Migrate());
  return box;
}

Outbox::~Outbox() {
  sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // after the database: its own locks are fcntl's
}

// Version 1 (the first outboxes) lacks jobs.files; version 2 has it.
Status Outbox::Migrate() {
  int64_t version = 0;
  {
    Stmt v(db_, "PRAGMA user_version");
    REEL_RETURN_IF_ERROR(v.Prepared());
    REEL_ASSIGN_OR_RETURN(bool row, v.Step());
    if (row) version = v.Int(0);
  }
  if (version == 1) REEL_RETURN_IF_ERROR(Exec("ALTER TABLE jobs ADD COLUMN files TEXT NOT NULL DEFAULT ''"));
  if (version < 2) REEL_RETURN_IF_ERROR(Exec("PRAGMA user_version = 2"));
  return Status::OK();
}

Status Outbox::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return Status::OK();
  Status s = Status::IOError(std::string("upload outbox: ") + (err ? err : "sqlite error") + " (" + dir_ + ")");
  sqlite3_free(err);
  return s;
}

Status Outbox::Lock() {
  const std::string path = JoinPath(dir_, "lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("upload outbox: cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const ssize_t got = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    return Status::AlreadyExists("another uploader (pid " + std::string(pid, got > 0 ? got : 0) +
                                 ") is draining this task's outbox (" + path + ")");
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The pid is only for the message above; the lock is what counts.
  }
  lock_fd_ = fd;
  return Status::OK();
}

Result<int> Outbox::Enqueue(const std::string& server, const std::string& project,
                            const std::vector<std::pair<int64_t, uint64_t>>& episodes) {
  std::lock_guard<std::mutex> g(mu_);
  REEL_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  Stmt one(db_,
           "INSERT INTO jobs(server, project, episode_index, state, bytes, created, updated) "
           "SELECT ?1, ?2, ?3, 'committed', ?4, ?5, ?5 WHERE NOT EXISTS "
           "(SELECT 1 FROM jobs WHERE server = ?1 AND project = ?2 AND episode_index = ?3)");
  Status st = one.Prepared();
  int added = 0;
  const double now = Now();
  for (size_t i = 0; st.ok() && i < episodes.size(); ++i) {
    one.Reset();
    one.Bind(1, server).Bind(2, project).Bind(3, episodes[i].first)
        .Bind(4, static_cast<int64_t>(episodes[i].second)).Bind(5, now);
    auto r = one.Step();
    if (!r.ok()) st = r.status();
    else added += sqlite3_changes(db_);
  }
  if (!st.ok()) {
    (void)Exec("ROLLBACK");
    return st;
  }
  REEL_RETURN_IF_ERROR(Exec("COMMIT"));
  return added;
}

Result<std::vector<Job>> Outbox::Jobs(const std::string& server, const std::string& project) {
  std::lock_guard<std::mutex> g(mu_);
  const std::string sql = std::string("SELECT ") + kColumns + " FROM jobs" +
                          (server.empty() && project.empty() ? "" : " WHERE server = ?1 AND project = ?2") +
                          " ORDER BY episode_index, id";
  Stmt s(db_, sql.c_str());
  REEL_RETURN_IF_ERROR(s.Prepared());
  if (!server.empty() || !project.empty()) s.Bind(1, server).Bind(2, project);
  std::vector<Job> out;
  for (;;) {
    REEL_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadJob(s));
  }
  return out;
}

Status Outbox::Save(Job& j) {
  std::lock_guard<std::mutex> g(mu_);
  j.updated = Now();
  Stmt s(db_,
         "UPDATE jobs SET digest=?2, state=?3, bytes=?4, zip_bytes=?5, zip_sha256=?6, recompressed=?7, "
         "tus_location=?8, sent=?9, attempts=?10, next_try=?11, last_error=?12, rule=?13, session_id=?14, "
         "proof_unavailable=?15, updated=?16, confirmed_at=?17, files=?18 WHERE id=?1");
  REEL_RETURN_IF_ERROR(s.Prepared());
  s.Bind(1, j.id).Bind(2, j.digest).Bind(3, std::string(JobStateName(j.state)))
      .Bind(4, static_cast<int64_t>(j.bytes)).Bind(5, static_cast<int64_t>(j.zip_bytes)).Bind(6, j.zip_sha256)
      .Bind(7, j.recompressed).Bind(8, j.tus_location).Bind(9, static_cast<int64_t>(j.sent))
      .Bind(10, static_cast<int64_t>(j.attempts)).Bind(11, j.next_try).Bind(12, j.last_error).Bind(13, j.rule)
      .Bind(14, j.session_id).Bind(15, static_cast<int64_t>(j.proof_unavailable ? 1 : 0)).Bind(16, j.updated)
      .Bind(17, j.confirmed_at).Bind(18, j.files);
  REEL_ASSIGN_OR_RETURN(bool row, s.Step());
  (void)row;
  return Status::OK();
}

Status Outbox::Count(const std::string& name, int64_t delta) {
  std::lock_guard<std::mutex> g(mu_);
  Stmt s(db_, "INSERT INTO counters(name, value) VALUES(?1, ?2) "
              "ON CONFLICT(name) DO UPDATE SET value = value + ?2");
  REEL_RETURN_IF_ERROR(s.Prepared());
  s.Bind(1, name).Bind(2, delta);
  REEL_ASSIGN_OR_RETURN(bool row, s.Step());
  (void)row;
  return Status::OK();
}

Result<std::map<std::string, int64_t>> Outbox::Counters() {
  std::lock_guard<std::mutex> g(mu_);
  Stmt s(db_, "SELECT name, value FROM counters ORDER BY name");
  REEL_RETURN_IF_ERROR(s.Prepared());
  std::map<std::string, int64_t> out;
  for (;;) {
    REEL_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out[s.Text(0)] = s.Int(1);
  }
  return out;
}

std::string Outbox::SlicePath(const Job& job) const {
  return JoinPath(JoinPath(dir_, "slices"), std::to_string(job.episode_index) + "-" + std::to_string(job.id) + ".zip");
}

}  // namespace reel::upload
