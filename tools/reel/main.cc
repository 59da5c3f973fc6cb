// reel: inspect and check pooled_episodes_v1 tasks.
#include <iostream>

#include "cli.h"
#include "reel/object_store.h"

namespace reel::cli {

int Fail(const Status& status) {
  std::cerr << "reel: " << NameInputs(status.message()) << " [" << StatusCodeName(status.code()) << "]\n";
  return kExitUnreadable;
}

int UsageFail(const std::string& message) {
  std::cerr << "reel: " << message << "\n";
  return kExitUsage;
}

void PrintJson(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

void PrintJson(const std::string& report_json) { PrintJson(Json::parse(report_json)); }

}  // namespace reel::cli

int main(int argc, char** argv) {
  CLI::App app{"reel: storage engine for robot-learning recordings (pooled_episodes_v1)"};
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
  reel::cli::AddPushCommand(app, exit_code);
  reel::cli::AddRepairScaleCommand(app, exit_code);
  reel::cli::AddMaintenanceCommands(app, exit_code);
  reel::cli::AddSplitCommand(app, exit_code);
  reel::cli::AddViewCommands(app, exit_code);
  reel::cli::AddKeypointsCommands(app, exit_code);
  reel::cli::AddOverlayCommand(app, exit_code);
  reel::cli::AddCompletionCommand(app, exit_code);
  reel::cli::AddVersionFlags(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return reel::cli::UsageFailure(app, e, argc, argv);
  }
  reel::ShutdownObjectStores();  // S3 down before static destruction (also an atexit fallback)
  return exit_code;
}
