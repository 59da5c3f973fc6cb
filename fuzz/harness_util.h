// Shared helpers of the libFuzzer harnesses (fuzz/fuzz_<name>.cc; docs/reliability.md).
//
// - MemFs: a read-only in-memory FileSystem, so that a fuzzed "task directory" costs no
//   disk I/O. Everything reel reads through FileSystem (JSON, parquet) goes through it.
// - Parts: several files packed in one fuzz input, separated by kPartSeparator. The
//   seed generator (fuzz/make_seeds.py) writes the same format.
// - TempDir: one per-process scratch directory (under /dev/shm when it exists), for
//   entry points that take a path (FFmpeg, libzip, the serve config). Removed at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "reel/fs.h"

namespace reel::fuzz {

// Splits `data` at every kPartSeparator into exactly `n` parts (missing parts are
// empty; extra separators stay in the last part).
inline constexpr std::string_view kPartSeparator = "\n#%REEL-FILE%#\n";
std::vector<std::string_view> SplitParts(const uint8_t* data, size_t size, size_t n);

class MemFs final : public FileSystem {
 public:
  // `path` absolute ("/mem/task/meta/info.json"); its parent directories exist implicitly.
  void Put(const std::string& path, std::string_view bytes);
  void Clear() { files_.clear(); }

  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Result<std::shared_ptr<arrow::io::RandomAccessFile>> OpenRandomAccess(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& path) override;
  Status RemoveFile(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;

 private:
  static std::string Norm(const std::string& path);
  std::map<std::string, std::string> files_;
};

// Fills `fs` with the files of a packed directory (fuzz/make_seeds.py "tree" format):
// parts separated by kPartSeparator, each "<relative path>\n<bytes>". Paths with ".."
// or a leading '/' are dropped; at most 32 files. Returns the number of files put.
int UnpackTree(const uint8_t* data, size_t size, const std::string& root, MemFs& fs);

class TempDir {
 public:
  // The process's scratch directory, created on first use.
  static TempDir& Get();
  const std::string& path() const { return path_; }
  // Writes `bytes` to <dir>/<name> (truncating) and returns the full path.
  std::string Write(const std::string& name, std::string_view bytes);
  // Removes everything inside the directory (it stays).
  void Clean();
  ~TempDir();

 private:
  TempDir();
  std::string path_;
};

// Known bugs, not fixed yet (fuzz/crashes-open/README.md). A campaign would otherwise
// spend its time re-finding them, so fuzz/run_campaign.sh sets REEL_FUZZ_SKIP_KNOWN=1 and
// the harnesses then step around them; the replay in `make test` never sets it. Remove
// each filter together with the fix.
bool SkipKnown();

// Runs `body`; with SkipKnown(), an nlohmann out_of_range 406 (a JSON number that
// overflows a double, "1e400") escaping reel is the known bug JSON-406 and is ignored.
// Likewise std::out_of_range from std::stoi (TEMPLATE-STOI). And inputs holding a float
// number token of magnitude >= 2^31, or an integer one >= 2^63, are skipped outright
// (GETINT-CAST, CONFIG-CAST: a double cast to an integer type it does not fit, undefined
// behaviour, which cannot be caught), as are inputs with a path template width of more
// than 5 digits (TEMPLATE-WIDTH: an allocation of that many bytes).
bool HasHugeNumber(const uint8_t* data, size_t size);

template <typename F>
int Guard(const uint8_t* data, size_t size, F&& body) {
  // Without SkipKnown() there is no handler at all, so std::terminate reports the stack of
  // the throw (a catch-and-rethrow would report the rethrow instead).
  if (!SkipKnown()) return body();
  if (HasHugeNumber(data, size)) return 0;
  try {
    return body();
  } catch (const nlohmann::ordered_json::out_of_range& e) {
    if (e.id == 406) return 0;
    throw;
  } catch (const std::out_of_range& e) {
    if (std::string_view(e.what()) == "stoi") return 0;
    throw;
  }
}

// True when REEL_FUZZ_DEBUG is set: harnesses then print what reel answered, to check
// that the seeds reach the paths they are meant to (not used while fuzzing).
bool Debug();

// Removes a directory tree (no error when absent).
void RemoveTree(const std::string& path);

}  // namespace reel::fuzz
