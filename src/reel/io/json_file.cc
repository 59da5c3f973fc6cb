#include "io/json_file.h"

namespace reel::internal {

namespace {

Status TooLarge(const std::string& path, uint64_t size, int64_t max_bytes) {
  return Status::Invalid(path + ": json.size: " + std::to_string(size) + " bytes of JSON, more than the limit of " +
                         std::to_string(max_bytes) + " (refused from its size, before reading it)")
      .WithRule("json.size");
}

}  // namespace

Result<std::string> ReadFileBounded(FileSystem* fs, const std::string& path, int64_t max_bytes) {
  REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(path));
  if (info.type == FileType::kNotFound) return Status::NotFound(path + ": missing");
  if (info.type != FileType::kFile) return Status::Invalid(path + ": is not a file");
  if (info.size > static_cast<uint64_t>(max_bytes)) return TooLarge(path, info.size, max_bytes);
  REEL_ASSIGN_OR_RETURN(std::string text, fs->ReadFile(path));
  if (text.size() > static_cast<uint64_t>(max_bytes)) return TooLarge(path, text.size(), max_bytes);
  return text;
}

Result<Json> ReadJsonFile(FileSystem* fs, const std::string& path, const JsonLimits& limits) {
  REEL_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(fs, path, limits.max_bytes));
  return ParseJson(text, path, limits);
}

Result<Json> ReadJsonObjectFile(FileSystem* fs, const std::string& path, const JsonLimits& limits,
                                const std::function<bool(const std::string& key)>& keep) {
  Json::parser_callback_t filter;
  if (keep)
    filter = [&keep](int depth, Json::parse_event_t event, Json& parsed) {
      return event != Json::parse_event_t::key || depth != 1 || keep(parsed.get<std::string>());
    };
  REEL_ASSIGN_OR_RETURN(std::string text, ReadFileBounded(fs, path, limits.max_bytes));
  REEL_ASSIGN_OR_RETURN(Json doc, ParseJson(text, path, limits, filter));
  if (!doc.is_object()) return Status::Invalid(path + ": must be a JSON object, found " + JsonTypeName(doc));
  return doc;
}

}  // namespace reel::internal
