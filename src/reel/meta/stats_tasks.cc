// meta/stats.json and meta/tasks.jsonl.
#include "util/json_util.h"
#include "reel/metadata.h"

namespace reel {

using internal::Json;

namespace {

// Flattens a (possibly nested) numeric array; records the nesting of the first path.
Status FlattenNumbers(const Json& j, const std::string& where, std::vector<double>& out,
                      std::vector<int64_t>* shape, size_t depth) {
  if (j.is_number()) {
    out.push_back(j.get<double>());
    return Status::OK();
  }
  if (!j.is_array())
    return Status::Invalid(where + " must be a list of numbers, found " + internal::JsonTypeName(j) +
                           " " + internal::Brief(j));
  if (shape && shape->size() == depth) shape->push_back(static_cast<int64_t>(j.size()));
  for (const Json& v : j) REEL_RETURN_IF_ERROR(FlattenNumbers(v, where, out, shape, depth + 1));
  return Status::OK();
}

}  // namespace

Result<StatsJson> ParseStatsJson(std::string_view text, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(Json doc, internal::ParseJson(text, path));
  if (!doc.is_object())
    return Status::Invalid(path + ": must be a JSON object, found " + internal::JsonTypeName(doc));
  StatsJson stats;
  stats.source_json = std::string(text);
  for (const auto& [name, block] : doc.items()) {
    const std::string where = path + ": block \"" + name + "\"";
    if (!block.is_object())
      return Status::Invalid(where + " must be a JSON object {count, mean, std, min, max}, found " +
                             internal::JsonTypeName(block));
    StatsBlock b;
    if (block.contains("count")) {
      int64_t count = 0;
      REEL_RETURN_IF_ERROR(internal::GetInt(block, "count", where, count));
      b.count = count;
    }
    struct Field {
      const char* key;
      std::vector<double>* out;
    } fields[] = {{"mean", &b.mean}, {"std", &b.std}, {"min", &b.min}, {"max", &b.max}};
    for (const Field& f : fields) {
      auto it = block.find(f.key);
      if (it == block.end()) continue;
      REEL_RETURN_IF_ERROR(FlattenNumbers(*it, where + "." + f.key, *f.out,
                                          f.out == &b.mean ? &b.shape : nullptr, 0));
    }
    stats.blocks.emplace_back(name, std::move(b));
  }
  return stats;
}

std::string SerializeStatsJson(const StatsJson& stats) {
  Json doc = Json::object();
  if (!stats.source_json.empty()) {
    auto parsed = internal::ParseJson(stats.source_json, "stats.json");
    if (parsed.ok() && parsed->is_object()) doc = *parsed;
  }
  for (const auto& [name, b] : stats.blocks) {
    Json block = Json::object();
    if (b.count) block["count"] = *b.count;
    block["mean"] = b.mean;
    block["std"] = b.std;
    block["min"] = b.min;
    block["max"] = b.max;
    doc[name] = std::move(block);
  }
  return internal::Dump(doc, 2) + "\n";
}

Result<std::vector<TaskEntry>> ParseTasksJsonl(std::string_view text, const std::string& path) {
  std::vector<TaskEntry> tasks;
  size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = path + ": line " + std::to_string(line_no);
    auto parsed = internal::ParseJson(line, where);
    // Past the bounds, or a number out of range: the bound's own message says more.
    if (!parsed.ok() && parsed.status().rule().starts_with("json."))
      return parsed.status();
    if (!parsed.ok())
      return Status::Invalid(where + " is not one complete JSON object: \"" +
                             std::string(line.substr(0, 40)) +
                             "\" (contract §5: one object per line; a pretty-printed, multi-line "
                             "tasks.jsonl breaks first-line readers)");
    Json obj = std::move(*parsed);
    if (!obj.is_object())
      return Status::Invalid(where + " must be a JSON object, found " + internal::JsonTypeName(obj));
    TaskEntry t;
    if (!obj.contains("task_index") || !obj.contains("task"))
      return Status::Invalid(where + " must have \"task_index\" and \"task\"");
    REEL_RETURN_IF_ERROR(internal::GetInt(obj, "task_index", where, t.task_index));
    REEL_RETURN_IF_ERROR(internal::GetString(obj, "task", where, t.task));
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace reel
