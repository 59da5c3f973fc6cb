// The reel command-line tool: one file per command group over the public API.
// Exit codes: 0 success; 1 `check` found an error; 2 the input could not be
// read (the library returned a non-OK Status); CLI11 usage errors keep its codes.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "reel/status.h"

namespace reel::cli {

using Json = nlohmann::ordered_json;

constexpr int kExitOk = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUnreadable = 2;

// Prints "reel: <status message>" to stderr and returns kExitUnreadable.
int Fail(const Status& status);
// Prints JSON (indent 2, UTF-8) to stdout.
void PrintJson(const Json& j);

void AddInfoCommands(CLI::App& app, int& exit_code);   // info, ls, show, stats
void AddCheckCommand(CLI::App& app, int& exit_code);   // check
void AddRecordCommands(CLI::App& app, int& exit_code);  // simulate, delete
void AddFramesCommand(CLI::App& app, int& exit_code);   // frames
void AddPackCommand(CLI::App& app, int& exit_code);     // pack
void AddServeCommand(CLI::App& app, int& exit_code);    // serve
void AddUploadCommand(CLI::App& app, int& exit_code);   // upload
void AddExportCommand(CLI::App& app, int& exit_code);   // export
void AddImportCommand(CLI::App& app, int& exit_code);   // import

}  // namespace reel::cli
