// reel overlay ls | show | write: annotations beside a bundle dataset's episodes
// (seed 004 overlays; reel/dataset.h OverlayKind, reel/interop.h WriteOverlay).

#include <arrow/api.h>

#include <iomanip>
#include <iostream>
#include <memory>

#include "cli.h"
#include "foreign_cmds.h"
#include "reel/dataset.h"
#include "reel/jobs.h"

namespace reel::cli {
namespace {

struct OverlayArgs {
  std::string dataset, name, episode, from;
  bool replace = false, dry_run = false, json = false;
  ObjectStoreOptions store;
};

Result<std::unique_ptr<ForeignDataset>> OpenBundle(const OpenedLocation& loc) {
  return ForeignDataset::Open(loc.root, {.fs = loc.fs.get()});
}

int RunLs(const OverlayArgs& a) {
  auto loc = OpenInput(a.dataset, a.store);
  if (!loc.ok()) return Fail(loc.status());
  auto dataset = OpenBundle(*loc);
  if (!dataset.ok()) return Fail(dataset.status());
  auto overlays = (*dataset)->ListOverlays();
  if (!overlays.ok()) return Fail(overlays.status());
  Json list = Json::array();
  for (const OverlayInfo& o : *overlays)
    list.push_back({{"name", o.name}, {"kind", OverlayKindName(o.kind)}, {"columns", o.columns},
                    {"episodes", o.episodes}});
  if (a.json) {
    PrintJson({{"path", loc->display}, {"overlays", list}});
    return kExitOk;
  }
  if (overlays->empty()) std::cout << loc->display << ": no overlays\n";
  for (const OverlayInfo& o : *overlays) {
    std::string columns;
    for (const std::string& c : o.columns) columns += (columns.empty() ? "" : ", ") + c;
    std::cout << std::left << std::setw(24) << o.name << " " << std::setw(6) << OverlayKindName(o.kind) << " "
              << std::right << std::setw(6) << o.episodes.size() << " episodes  " << columns << "\n";
  }
  return kExitOk;
}

int RunShow(const OverlayArgs& a) {
  auto loc = OpenInput(a.dataset, a.store);
  if (!loc.ok()) return Fail(loc.status());
  auto dataset = OpenBundle(*loc);
  if (!dataset.ok()) return Fail(dataset.status());
  auto episodes = (*dataset)->ReadEpisodes();
  if (!episodes.ok()) return Fail(episodes.status());
  auto e = FindBundleEpisode(*episodes, a.episode, loc->display);
  if (!e.ok()) return Fail(e.status());
  auto table = (*dataset)->ReadOverlay(**e, a.name);
  if (!table.ok()) return Fail(table.status());
  Json columns = Json::array();
  for (const auto& field : (*table)->schema()->fields())
    columns.push_back({{"name", field->name()},
                       {"type", field->type()->ToString()},
                       {"sample", SampleValues(*(*table)->GetColumnByName(field->name()), 5)}});
  Json j = {{"name", a.name},          {"bundle_id", (*e)->bundle_id}, {"episode_index", (*e)->episode_index},
            {"length", (*e)->length},  {"rows", (*table)->num_rows()}, {"columns", columns}};
  if (a.json) {
    PrintJson(j);
    return kExitOk;
  }
  std::cout << "overlay " << a.name << " of episode " << (*e)->episode_index << " (" << (*e)->bundle_id << ", length "
            << (*e)->length << "): " << (*table)->num_rows() << " rows\n";
  for (const Json& c : columns) {
    std::string joined;
    for (const Json& v : c["sample"]) joined += (joined.empty() ? "" : " | ") + v.get<std::string>();
    std::cout << "  " << std::left << std::setw(24) << c["name"].get<std::string>() << " "
              << c["type"].get<std::string>() << "\n      " << joined.substr(0, 150) << "\n";
  }
  return kExitOk;
}

int RunWrite(const OverlayArgs& a) {
  const OverlayWriteOptions options{.from = a.from, .replace = a.replace, .dry_run = a.dry_run};
  auto r = WriteOverlayJob(a.dataset, a.name, a.episode, options, a.store);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(ToJson(*r));
    return kExitOk;
  }
  std::cout << (r->dry_run ? "dry run: would write " : r->replaced ? "replaced " : "wrote ") << r->path << " ("
            << r->kind << ", " << r->rows << " rows)\n";
  return kExitOk;
}

}  // namespace

void AddOverlayCommand(CLI::App& app, int& exit_code) {
  auto* overlay = app.add_subcommand(
      "overlay", "Annotations beside a bundle dataset's episodes (seed 004 overlay files): ls, show, write");
  overlay->require_subcommand(1);
  auto common = [](CLI::App* cmd, OverlayArgs& a) {
    cmd->add_option("dataset", a.dataset, "bundle dataset directory or URI")->required();
    AddJsonFlag(cmd, a.json);
    AddStoreOptions(cmd, a.store);
  };
  auto episode_option = [](CLI::App* cmd, OverlayArgs& a) {
    cmd->add_option("name", a.name, "overlay name (a directory under overlays/)")->required();
    cmd->add_option("episode", a.episode, "bundle id (ep_...) or manifest position (0-based)")->required();
  };
  auto l = std::make_shared<OverlayArgs>();
  auto* ls = overlay->add_subcommand("ls", "Each overlay: kind, value columns, the episodes that have one");
  common(ls, *l);
  ls->callback([&exit_code, l] { exit_code = RunLs(*l); });

  auto s = std::make_shared<OverlayArgs>();
  auto* show = overlay->add_subcommand("show", "One episode's overlay: its rows, columns and first values, checked");
  common(show, *s);
  episode_option(show, *s);
  show->callback([&exit_code, s] { exit_code = RunShow(*s); });

  auto w = std::make_shared<OverlayArgs>();
  auto* write = overlay->add_subcommand(
      "write", "Write one episode's overlay from a parquet file (dense: step; spans: start_step, end_step; "
               "plus value columns); never touches the bundle");
  common(write, *w);
  episode_option(write, *w);
  write->add_option("--from", w->from, "parquet file holding the overlay's rows")->required();
  write->add_flag("--replace", w->replace, "replace the episode's existing file of this overlay");
  write->add_flag("--dry-run", w->dry_run, "validate and report, write nothing");
  write->callback([&exit_code, w] { exit_code = RunWrite(*w); });
}

}  // namespace reel::cli
