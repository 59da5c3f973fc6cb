// reel migrate: v1.0 depth frame sequences (shared/docs/v1.0-layout.md: depth/<slot>/000001.png
// ... uint16 mm PNG16 numbered from 1, or NNNNNN.bin raw uint16 in v1.0.11) encoded into one
// FFV1 gray16le .mkv per slot, lossless (contract-decisions.md "v1.0 migration: media":
// never the lossy 12-bit HEVC). PNGs are decoded with libavcodec's PNG decoder from bytes
// read through the FileSystem; every file is size-checked before it is read.
#include <algorithm>
#include <cstring>

#include "maint/migrate_internal.h"
#include "reel/layout.h"
#include "reel/video.h"
#include "video/png_decode.h"

namespace reel::internal {
namespace {

// The largest frame reel migrate takes, PNG or .bin: what FFV1 can encode in bounded memory
// (video/png_decode.h).
constexpr int64_t kMaxPixels = video::kMaxPngPixels;

std::string FrameName(const SessionVideo& v, int64_t number) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(number));
  return v.rel + "/" + buf + "." + v.sequence;
}

// Frame `number` of the sequence as millimetres, width x height checked against `w` x `h`
// (0: not known yet; set from the first PNG).
Result<std::vector<uint16_t>> ReadFrame(FileSystem* fs, const std::string& path, const SessionVideo& v, int* w,
                                        int* h) {
  REEL_ASSIGN_OR_RETURN(FileInfo st, fs->Stat(path));
  if (st.type != FileType::kFile) return Status::NotFound(path + ": missing");
  const int64_t pixels = static_cast<int64_t>(*w) * *h;
  if (v.sequence == "bin") {
    if (st.size != static_cast<uint64_t>(pixels) * 2)
      return Status::Invalid(path + ": depth.bin.size: " + std::to_string(st.size) + " bytes; a " +
                             std::to_string(*w) + "x" + std::to_string(*h) + " raw uint16 frame (metadata.json cameras." +
                             v.slot + ") is " + std::to_string(pixels * 2));
    REEL_ASSIGN_OR_RETURN(std::string bytes, fs->ReadFile(path));
    if (bytes.size() != st.size) return Status::IOError(path + ": changed while it was read");
    std::vector<uint16_t> mm(static_cast<size_t>(pixels));
    for (size_t i = 0; i < mm.size(); ++i)  // little-endian, as numpy's tofile wrote it
      mm[i] = static_cast<uint16_t>(static_cast<uint8_t>(bytes[2 * i]) | static_cast<uint8_t>(bytes[2 * i + 1]) << 8);
    return mm;
  }
  // A PNG's deflate stream is never much larger than its raw samples; unknown dimensions
  // (the first frame, cameras.<slot> without width/height) allow the largest frame.
  const uint64_t limit = static_cast<uint64_t>(pixels > 0 ? pixels : kMaxPixels) * 4 + (uint64_t{1} << 20);
  if (st.size > limit)
    return Status::Invalid(path + ": png.size: " + std::to_string(st.size) + " bytes, over the limit of " +
                           std::to_string(limit) + " for a " + std::to_string(*w) + "x" + std::to_string(*h) +
                           " depth frame");
  REEL_ASSIGN_OR_RETURN(std::string bytes, fs->ReadFile(path));
  REEL_ASSIGN_OR_RETURN(video::GrayImage16 image, video::DecodePngGray16(bytes, path, kMaxPixels));
  if (*w == 0 && *h == 0) {
    *w = image.width;
    *h = image.height;
  }
  if (image.width != *w || image.height != *h)
    return Status::Invalid(path + ": png.size: " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                           "; the depth slot " + v.slot + " is " + std::to_string(*w) + "x" + std::to_string(*h) +
                           (v.width ? " (metadata.json cameras)" : " (its first frame)"));
  return std::move(image.values);
}

// The numbers must be exactly 1..rows: the first missing or extra one is named.
Status CheckNumbers(const std::string& session_dir, const SessionVideo& v, int64_t rows) {
  for (const auto& [number, rel] : v.frames)
    if (number < 1 || number > rows)
      return Status::Invalid(JoinPath(session_dir, rel) + ": depth frame number " + std::to_string(number) +
                             " is outside 1.." + std::to_string(rows) + " (the session has " + std::to_string(rows) +
                             " frames in timestamps.json)");
  for (int64_t k = 1; k <= rows; ++k)
    if (!v.frames.count(k))
      return Status::Invalid(JoinPath(session_dir, FrameName(v, k)) + ": missing; the session has " +
                             std::to_string(rows) + " frames (timestamps.json), so its depth sequence numbers 1.." +
                             std::to_string(rows));
  return Status::OK();
}

}  // namespace

Result<std::optional<SessionVideo>> FindDepthSequence(const std::string& where, const Session& s,
                                                      const std::string& slot, const Json& camera) {
  SessionVideo v;
  v.slot = slot;
  v.ext = "mkv";
  v.rel = "depth/" + slot;
  const std::string dir = v.rel + "/";
  for (const std::string& f : s.files) {
    if (f.rfind(dir, 0) != 0 || f.find('/', dir.size()) != std::string::npos) continue;
    const std::string name = f.substr(dir.size());
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot > 9) continue;  // at most 9 digits: no overflow
    const std::string stem = name.substr(0, dot), ext = name.substr(dot + 1);
    if ((ext != "png" && ext != "bin") || !std::all_of(stem.begin(), stem.end(), [](unsigned char c) { return c >= '0' && c <= '9'; })) continue;
    if (!v.sequence.empty() && v.sequence != ext)
      return Status::Invalid(where + ": depth slot \"" + slot + "\" mixes ." + v.sequence + " and ." + ext +
                             " frames (" + f + ")");
    v.sequence = ext;
    const int64_t number = std::stoll(stem);
    auto [it, fresh] = v.frames.emplace(number, f);
    if (!fresh) return Status::Invalid(where + ": depth frames " + it->second + " and " + f + " have one number");
  }
  if (v.sequence.empty()) return std::optional<SessionVideo>();
  auto dim = [&](const char* key, int* out) -> Status {
    auto it = camera.find(key);
    if (it == camera.end()) return Status::OK();
    if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > 65536)
      return Status::Invalid(where + ": cameras." + slot + "." + key + ": " + Brief(*it) + " is not a frame size");
    *out = static_cast<int>(it->get<int64_t>());
    return Status::OK();
  };
  REEL_RETURN_IF_ERROR(dim("width", &v.width));
  REEL_RETURN_IF_ERROR(dim("height", &v.height));
  if (static_cast<int64_t>(v.width) * v.height > kMaxPixels)
    return Status::Invalid(where + ": cameras." + slot + ": " + std::to_string(v.width) + "x" +
                           std::to_string(v.height) + " is over the limit of " + std::to_string(kMaxPixels) + " pixels");
  if (v.sequence == "bin" && (v.width == 0 || v.height == 0))
    return Status::Invalid(where + ": cameras." + slot + " needs width and height: its depth frames are raw .bin (" +
                           v.frames.begin()->second + ")");
  v.fps = s.fps;
  auto fps = camera.find("fps");
  if (fps != camera.end() && fps->is_number() && fps->get<double>() > 0 && fps->get<double>() <= 10000)
    v.fps = fps->get<double>();
  return std::optional<SessionVideo>(std::move(v));
}

Status EncodeDepthSequence(FileSystem* fs, const std::string& session_dir, const SessionVideo& v, int64_t rows,
                           const std::string& out) {
  REEL_RETURN_IF_ERROR(CheckNumbers(session_dir, v, rows));
  int w = v.width, h = v.height;
  std::unique_ptr<VideoEncoder> encoder;
  for (int64_t k = 1; k <= rows; ++k) {
    const std::string path = JoinPath(session_dir, v.frames.at(k));
    REEL_ASSIGN_OR_RETURN(std::vector<uint16_t> mm, ReadFrame(fs, path, v, &w, &h));
    if (!encoder) {
      VideoEncoderOptions o;
      o.kind = VideoKind::kDepthFfv1;
      o.width = w;
      o.height = h;
      o.fps = v.fps;
      o.fs = fs;
      o.sync_on_finish = true;  // a transaction temp: durable before the commit
      REEL_ASSIGN_OR_RETURN(encoder, VideoEncoder::Open(out, o));
    }
    Status st = encoder->AddDepth(mm);
    if (!st.ok()) return st.WithContext(path);
  }
  if (!encoder) return Status::Invalid(JoinPath(session_dir, v.rel) + ": no depth frames");
  return encoder->Finish().WithContext(JoinPath(session_dir, v.rel) + " -> FFV1");
}

}  // namespace reel::internal
