// The upload outbox (src/reel/upload/outbox.h, docs/upload.md): a SQLite database kept in
// the task (meta/.upload-outbox/outbox.sqlite), so one of the task's files and outside
// input. Input: the database file's bytes. Per input: ReadOutboxStatus (what --status does,
// read-only), then Outbox::Open as the uploader opens it (schema on a forged file), an
// enqueue and a listing. Checked: nothing crashes; a listing returns jobs whose states are
// the outbox's own names.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "harness_util.h"
#include "reel/upload.h"
#include "upload/outbox.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reel;
  auto& tmp = fuzz::TempDir::Get();
  tmp.Clean();
  const std::string task = tmp.path() + "/task";
  std::error_code ec;
  std::filesystem::create_directories(task + "/meta/.upload-outbox", ec);
  tmp.Write("task/meta/.upload-outbox/outbox.sqlite", std::string_view(reinterpret_cast<const char*>(data), size));
  static const std::set<std::string> kStates = {"committed", "packing", "sending", "imported",
                                                "confirmed", "pruned",  "rejected", "conflict"};
  auto st = ReadOutboxStatus(task);
  if (fuzz::Debug()) fprintf(stderr, "outbox: %s\n", st.ok() ? "read" : st.status().ToString().c_str());
  if (st.ok())
    for (const OutboxEntry& e : st->entries)
      if (!kStates.count(e.state)) {
        fprintf(stderr, "outbox: a job read back in state \"%s\"\n", e.state.c_str());
        std::abort();
      }
  auto box = upload::Outbox::Open(task, /*create=*/true);
  if (!box.ok()) return 0;
  (void)(*box)->Enqueue("http://127.0.0.1:1", "p", {{1, 10}, {2, 20}});
  auto jobs = (*box)->Jobs("http://127.0.0.1:1", "p");
  if (jobs.ok())
    for (upload::Job& j : *jobs) (void)(*box)->Save(j);
  (void)(*box)->Counters();
  return 0;
}
