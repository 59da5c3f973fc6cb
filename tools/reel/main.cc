// reel: inspect and check pooled_episodes_v1 tasks.
#include <iostream>

#include "cli.h"

namespace reel::cli {

int Fail(const Status& status) {
  std::cerr << "reel: " << status.message() << " [" << StatusCodeName(status.code()) << "]\n";
  return kExitUnreadable;
}

void PrintJson(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace reel::cli

int main(int argc, char** argv) {
  CLI::App app{"reel: storage engine for robot-learning recordings (pooled_episodes_v1)"};
  app.set_version_flag("--version", std::string("reel ") + REEL_VERSION);
  app.require_subcommand(1);
  int exit_code = reel::cli::kExitOk;
  reel::cli::AddInfoCommands(app, exit_code);
  reel::cli::AddCheckCommand(app, exit_code);
  reel::cli::AddRecordCommands(app, exit_code);
  reel::cli::AddFramesCommand(app, exit_code);
  reel::cli::AddPackCommand(app, exit_code);
  reel::cli::AddServeCommand(app, exit_code);
  reel::cli::AddUploadCommand(app, exit_code);
  reel::cli::AddExportCommand(app, exit_code);
  reel::cli::AddImportCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
