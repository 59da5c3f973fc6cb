// PathTemplate: compile, render, match and glob info.json path templates.
#include <algorithm>
#include <cctype>
#include <functional>

#include "reel/layout.h"

namespace reel {

namespace {

using Piece = PathTemplate::Piece;
using Var = PathTemplate::Var;

// Bounds on a template from outside (info.json): a path is short, and so is its padding.
constexpr size_t kMaxTemplateBytes = 512;
constexpr int kMaxWidth = 18;

bool IsNumeric(Var v) { return v == Var::kChunk || v == Var::kFile || v == Var::kEpisodeIndex; }

Result<Var> VarOfName(const std::string& name, const std::string& text) {
  if (name == "c" || name == "chunk" || name == "episode_chunk" || name == "chunk_index")
    return Var::kChunk;
  if (name == "f" || name == "file" || name == "file_index") return Var::kFile;
  if (name == "episode_index") return Var::kEpisodeIndex;
  if (name == "image_key" || name == "video_key") return Var::kImageKey;
  if (name == "ext") return Var::kExt;
  return Status::Invalid("path template \"" + text + "\": unknown placeholder {" + name + "}");
}

Result<std::vector<Piece>> ParseComponent(const std::string& comp, const std::string& text) {
  std::vector<Piece> pieces;
  size_t i = 0;
  while (i < comp.size()) {
    if (comp[i] == '}') return Status::Invalid("path template \"" + text + "\": unbalanced '}'");
    if (comp[i] != '{') {
      size_t j = comp.find_first_of("{}", i);
      if (j == std::string::npos) j = comp.size();
      Piece p;
      p.literal = comp.substr(i, j - i);
      pieces.push_back(std::move(p));
      i = j;
      continue;
    }
    size_t close = comp.find('}', i);
    if (close == std::string::npos)
      return Status::Invalid("path template \"" + text + "\": unbalanced '{'");
    std::string body = comp.substr(i + 1, close - i - 1);
    std::string name = body, spec;
    if (size_t colon = body.find(':'); colon != std::string::npos) {
      name = body.substr(0, colon);
      spec = body.substr(colon + 1);
    }
    Piece p;
    p.is_var = true;
    REEL_ASSIGN_OR_RETURN(p.var, VarOfName(name, text));
    if (!spec.empty()) {
      // Only "0Nd" / "Nd" / "d" are meaningful here (Python format specs as used by the contract).
      bool ok = IsNumeric(p.var) && spec.back() == 'd';
      std::string digits = spec.substr(0, spec.size() - 1);
      for (char ch : digits) ok = ok && std::isdigit(static_cast<unsigned char>(ch));
      if (!ok)
        return Status::Invalid("path template \"" + text + "\": unsupported format spec {" + body +
                               "}");
      // A path component holds at most 18 digits of a number (MatchPieces), so wider
      // padding can only be a hostile template (a width of 999999999 would render a
      // gigabyte).
      const size_t first = digits.find_first_not_of('0');  // "03d": the zero flag, width 3
      const std::string width = first == std::string::npos ? "" : digits.substr(first);
      if (width.size() > 2 || (!width.empty() && std::stoi(width) > kMaxWidth))
        return Status::Invalid("path template \"" + text + "\": width in {" + body +
                               "} is more than " + std::to_string(kMaxWidth));
      p.width = width.empty() ? 0 : std::stoi(width);
    }
    if (!pieces.empty() && pieces.back().is_var)
      return Status::Invalid("path template \"" + text +
                             "\": two adjacent placeholders cannot be told apart");
    pieces.push_back(std::move(p));
    i = close + 1;
  }
  // Each string placeholder tries every split of the component: two keep matching
  // quadratic in a component's length, more would let a template take exponential time.
  const auto strings = std::count_if(pieces.begin(), pieces.end(),
                                     [](const Piece& p) { return p.is_var && !IsNumeric(p.var); });
  if (strings > 2)
    return Status::Invalid("path template \"" + text + "\": more than two string placeholders in \"" +
                           comp + "\"");
  return pieces;
}

void SetVar(PathVars& vars, Var v, const std::string& s) {
  switch (v) {
    case Var::kChunk: vars.chunk = std::stoll(s); break;
    case Var::kFile: vars.file = std::stoll(s); break;
    case Var::kEpisodeIndex: vars.episode_index = std::stoll(s); break;
    case Var::kImageKey: vars.image_key = s; break;
    case Var::kExt: vars.ext = s; break;
  }
}

// Matches `s[pos..]` against pieces[i..], filling `vars`.
bool MatchPieces(const std::vector<Piece>& pieces, size_t i, const std::string& s, size_t pos,
                 PathVars& vars) {
  if (i == pieces.size()) return pos == s.size();
  const Piece& p = pieces[i];
  if (!p.is_var) {
    if (s.compare(pos, p.literal.size(), p.literal) != 0) return false;
    return MatchPieces(pieces, i + 1, s, pos + p.literal.size(), vars);
  }
  if (IsNumeric(p.var)) {
    size_t end = pos;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    size_t len = end - pos;
    if (len == 0 || len < static_cast<size_t>(p.width) || len > 18) return false;
    // A number wider than its padding must not carry extra leading zeros.
    if (len > static_cast<size_t>(std::max(p.width, 1)) && s[pos] == '0') return false;
    if (!MatchPieces(pieces, i + 1, s, end, vars)) return false;
    SetVar(vars, p.var, s.substr(pos, len));
    return true;
  }
  // String placeholder: shortest non-empty match that lets the rest match.
  for (size_t end = pos + 1; end <= s.size(); ++end) {
    if (MatchPieces(pieces, i + 1, s, end, vars)) {
      SetVar(vars, p.var, s.substr(pos, end - pos));
      return true;
    }
  }
  return false;
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

}  // namespace

Result<PathTemplate> PathTemplate::Parse(const std::string& text) {
  if (text.empty() || text.front() == '/')
    return Status::Invalid("path template \"" + text + "\": must be a non-empty relative path");
  if (text.size() > kMaxTemplateBytes)
    return Status::Invalid("path template of " + std::to_string(text.size()) +
                           " bytes: longer than the limit of " + std::to_string(kMaxTemplateBytes) +
                           " (\"" + text.substr(0, 60) + "...\")");
  PathTemplate t;
  t.text_ = text;
  for (const std::string& comp : SplitPath(text)) {
    if (comp.empty() || comp == "." || comp == "..")
      return Status::Invalid("path template \"" + text + "\": empty, '.' or '..' component");
    REEL_ASSIGN_OR_RETURN(auto pieces, ParseComponent(comp, text));
    t.components_.push_back(std::move(pieces));
  }
  return t;
}

Result<std::string> PathTemplate::Render(const PathVars& vars) const {
  std::string out;
  for (size_t c = 0; c < components_.size(); ++c) {
    if (c) out += '/';
    for (const Piece& p : components_[c]) {
      if (!p.is_var) {
        out += p.literal;
        continue;
      }
      if (IsNumeric(p.var)) {
        const std::optional<int64_t>& v = p.var == Var::kChunk  ? vars.chunk
                                          : p.var == Var::kFile ? vars.file
                                                                : vars.episode_index;
        if (!v) return Status::Invalid("path template \"" + text_ + "\": no value for a number");
        if (*v < 0) return Status::Invalid("path template \"" + text_ + "\": negative number");
        std::string digits = std::to_string(*v);
        if (digits.size() < static_cast<size_t>(p.width))
          digits.insert(0, static_cast<size_t>(p.width) - digits.size(), '0');
        out += digits;
      } else {
        const std::optional<std::string>& v = p.var == Var::kImageKey ? vars.image_key : vars.ext;
        if (!v) return Status::Invalid("path template \"" + text_ + "\": no value for a name");
        if (v->empty() || v->find('/') != std::string::npos || *v == "." || *v == "..")
          return Status::Invalid("path template \"" + text_ + "\": invalid name \"" + *v + "\"");
        out += *v;
      }
    }
  }
  return out;
}

std::optional<PathVars> PathTemplate::Match(const std::string& relative_path) const {
  std::vector<std::string> parts = SplitPath(relative_path);
  if (parts.size() != components_.size()) return std::nullopt;
  PathVars vars;
  for (size_t c = 0; c < parts.size(); ++c)
    if (!MatchPieces(components_[c], 0, parts[c], 0, vars)) return std::nullopt;
  return vars;
}

namespace {

// The rendered component when every placeholder in it has a value in `fixed`.
std::optional<std::string> RenderFixed(const std::vector<Piece>& comp, const PathVars& fixed) {
  std::string out;
  for (const Piece& p : comp) {
    if (!p.is_var) {
      out += p.literal;
      continue;
    }
    std::optional<std::string> text;
    switch (p.var) {
      case Var::kChunk: if (fixed.chunk) text = std::to_string(*fixed.chunk); break;
      case Var::kFile: if (fixed.file) text = std::to_string(*fixed.file); break;
      case Var::kEpisodeIndex:
        if (fixed.episode_index) text = std::to_string(*fixed.episode_index);
        break;
      case Var::kImageKey: text = fixed.image_key; break;
      case Var::kExt: text = fixed.ext; break;
    }
    if (!text) return std::nullopt;
    if (IsNumeric(p.var) && text->size() < static_cast<size_t>(p.width))
      text->insert(0, static_cast<size_t>(p.width) - text->size(), '0');
    out += *text;
  }
  return out;
}

Result<std::shared_ptr<const std::vector<DirEntry>>> ListShared(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(path));
  return std::make_shared<const std::vector<DirEntry>>(std::move(entries));
}

bool Agrees(const PathVars& got, const PathVars& fixed) {
  auto same = [](const auto& a, const auto& b) { return !a || !b || *a == *b; };
  return same(got.chunk, fixed.chunk) && same(got.file, fixed.file) &&
         same(got.episode_index, fixed.episode_index) && same(got.image_key, fixed.image_key) &&
         same(got.ext, fixed.ext);
}

}  // namespace

Result<std::vector<std::pair<std::string, PathVars>>> PathTemplate::Glob(
    FileSystem* fs, const std::string& root, const PathVars& fixed, const DirLister& list) const {
  std::vector<std::pair<std::string, PathVars>> out;
  REEL_RETURN_IF_ERROR(GlobEach(fs, root, fixed, list, [&](std::string path, PathVars vars) {
    out.emplace_back(std::move(path), std::move(vars));
    return Status::OK();
  }));
  return out;
}

Status PathTemplate::GlobEach(FileSystem* fs, const std::string& root, const PathVars& fixed, const DirLister& list,
                              const Found& found) const {
  std::function<Status(size_t, const std::string&, const PathVars&)> walk =
      [&](size_t level, const std::string& rel, const PathVars& vars) -> Status {
    const bool last = level + 1 == components_.size();
    const std::vector<Piece>& comp = components_[level];
    const FileType want = last ? FileType::kFile : FileType::kDirectory;
    auto visit = [&](const std::string& name) -> Status {
      PathVars next = vars;
      if (name.empty() || name[0] == '.') return Status::OK();  // dotfiles are never data
      if (!MatchPieces(comp, 0, name, 0, next) || !Agrees(next, fixed)) return Status::OK();
      std::string child = rel.empty() ? name : rel + "/" + name;
      if (last) return found(std::move(child), std::move(next));
      return walk(level + 1, child, next);
    };
    if (auto direct = RenderFixed(comp, fixed)) {
      // A directory on a store without directories (an object store's prefix) is not
      // stat'ed: that costs two requests, and listing it says as much (NotFound: nothing).
      if (last || fs->Capabilities().directories) {
        REEL_ASSIGN_OR_RETURN(FileInfo info, fs->Stat(JoinPath(root, rel.empty() ? *direct : rel + "/" + *direct)));
        if (info.type != want) return Status::OK();
      }
      return visit(*direct);
    }
    Result<std::shared_ptr<const std::vector<DirEntry>>> entries =
        list ? list(rel) : ListShared(fs, JoinPath(root, rel));
    if (!entries.ok()) {
      if (entries.status().code() == StatusCode::kNotFound) return Status::OK();
      return entries.status();
    }
    for (const DirEntry& e : **entries) {
      if (e.type != want) continue;
      REEL_RETURN_IF_ERROR(visit(e.name));
    }
    return Status::OK();
  };
  return walk(0, "", PathVars{});
}

}  // namespace reel
