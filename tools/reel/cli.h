// The reel command-line tool: one file per command group over the public API.
// Exit codes (docs/cli.md): 0 success; 1 `check` found an error; 2 a usage error, an
// output that exists without --force, or input that could not be read (the library
// returned a non-OK Status). Interrupted by SIGINT/SIGTERM: scratch removed, then the
// process ends by that signal (a shell shows 130 / 143).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reel/object_store.h"
#include "reel/progress.h"
#include "reel/status.h"

namespace reel {
class Task;
}

namespace reel::cli {

using Json = nlohmann::ordered_json;

constexpr int kExitOk = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUnreadable = 2;
constexpr int kExitUsage = 2;

// Prints "reel: <status message>" to stderr and returns kExitUnreadable.
int Fail(const Status& status);
// Prints "reel: <message>" to stderr and returns kExitUsage.
int UsageFail(const std::string& message);

// Prints JSON (indent 2, UTF-8) to stdout.
void PrintJson(const Json& j);
// A job's report (ToJson of reel/jobs.h) printed as above.
void PrintJson(const std::string& report_json);

void AddInfoCommands(CLI::App& app, int& exit_code);   // info, ls, show, stats
void AddCheckCommand(CLI::App& app, int& exit_code);   // check
void AddRecordCommands(CLI::App& app, int& exit_code);  // simulate, delete
void AddFramesCommand(CLI::App& app, int& exit_code);   // frames
void AddPackCommand(CLI::App& app, int& exit_code);     // pack
void AddServeCommand(CLI::App& app, int& exit_code);    // serve
void AddUploadCommand(CLI::App& app, int& exit_code);   // upload
void AddExportCommand(CLI::App& app, int& exit_code);   // export
void AddImportCommand(CLI::App& app, int& exit_code);   // import
void AddPushCommand(CLI::App& app, int& exit_code);     // push
void AddRepairScaleCommand(CLI::App& app, int& exit_code);  // repair-scale
void AddMaintenanceCommands(CLI::App& app, int& exit_code);  // migrate
void AddSplitCommand(CLI::App& app, int& exit_code);    // split-episodes
void AddViewCommands(CLI::App& app, int& exit_code);    // view, report (Python: reel._view_cli)
void AddKeypointsCommands(CLI::App& app, int& exit_code);  // backfill-hand-pose, add-columns
void AddOverlayCommand(CLI::App& app, int& exit_code);  // overlay ls|show|write (bundles)

// keypoints_cmds.cc: the keypoints mirror (contract §10, reel/jobs.h KeypointsMirrorOf) in
// `ls` and `show`: per episode the parts present (ls); show's keypoints document as text.
Json KeypointsLsJson(const Task& task, const std::string& mirror, int64_t episode_index);
void PrintKeypointsShow(const Json& keypoints);

// grammar.cc: the parts every command shares.
void AddCompletionCommand(CLI::App& app, int& exit_code);  // completion bash|zsh
// --version on the app and on every subcommand. Call after the last subcommand.
void AddVersionFlags(CLI::App& app);
// A usage error: "reel: <what>", a "did you mean" for a mistyped command or option,
// the --help hint; returns kExitUsage.
int UsageFailure(const CLI::App& app, const CLI::ParseError& error, int argc, char** argv);
// --json, the same words everywhere.
void AddJsonFlag(CLI::App* cmd, bool& json);
// job.cc: --progress auto|json|none, and its renderer on stderr (empty: no progress).
void AddProgressOption(CLI::App* cmd, std::string& mode);
ProgressFn MakeProgress(const std::string& mode);
// For a job that holds scratch (export, import, pack, upload, check, simulate): on
// SIGINT/SIGTERM/SIGHUP the scratch directories go, then the process ends by the signal.
// Call first in the command's callback, before any thread is started.
void RemoveScratchOnInterrupt();
// location.cc: --endpoint-url, --region, --anonymous (docs/storage.md) on a command that
// reads a task or dataset given as a path or a URI.
void AddStoreOptions(CLI::App* cmd, ObjectStoreOptions& options);
// OpenLocation (reel/object_store.h) for a command's input. An object-store input is
// remembered, so that Fail() names its files by URI ("s3://b/task/meta/info.json", not the
// store's own path "b/task/meta/info.json").
Result<OpenedLocation> OpenInput(const std::string& path_or_uri, const ObjectStoreOptions& options);
// `message` with the store paths of the inputs OpenInput opened written as their URIs.
std::string NameInputs(std::string message);
// "1,3,5-9" (reel/index_list.h) with the flag's name in the error; `unique`: each once
// (episodes), else as written (frames).
Result<std::vector<int64_t>> ParseListFlag(const std::string& flag, const std::string& text, bool unique);

}  // namespace reel::cli
