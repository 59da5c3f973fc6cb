// reel frames: decode frames of one episode's video into PNG files.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
}

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "cli.h"
#include "reel/task.h"
#include "reel/video.h"

namespace reel::cli {
namespace {

struct FramesArgs {
  std::string task;
  int64_t episode = 0;
  std::string slot;
  std::vector<int64_t> at;
  std::string out_dir = ".";
  bool json = false;
};

struct CodecFree {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFree {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

// One PNG through libavcodec's encoder: 8-bit RGB from packed RGB24 `rgb`, or
// 16-bit gray from millimetres `mm` (exactly one of them is non-null).
Result<std::string> EncodePng(int width, int height, const uint8_t* rgb, const uint16_t* mm) {
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (!codec) return Status::NotSupported("this FFmpeg build has no PNG encoder");
  std::unique_ptr<AVCodecContext, CodecFree> ctx(avcodec_alloc_context3(codec));
  std::unique_ptr<AVFrame, FrameFree> frame(av_frame_alloc());
  std::unique_ptr<AVPacket, PacketFree> packet(av_packet_alloc());
  if (!ctx || !frame || !packet) return Status::IOError("out of memory");
  const AVPixelFormat format = rgb ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_GRAY16BE;  // PNG is big-endian
  ctx->width = width;
  ctx->height = height;
  ctx->pix_fmt = format;
  ctx->time_base = {1, 1};
  if (avcodec_open2(ctx.get(), codec, nullptr) < 0) return Status::IOError("cannot open the PNG encoder");
  frame->format = format;
  frame->width = width;
  frame->height = height;
  if (av_frame_get_buffer(frame.get(), 0) < 0) return Status::IOError("out of memory");
  for (int y = 0; y < height; ++y) {
    uint8_t* row = frame->data[0] + static_cast<ptrdiff_t>(y) * frame->linesize[0];
    if (rgb) {
      std::copy_n(rgb + static_cast<size_t>(y) * width * 3, static_cast<size_t>(width) * 3, row);
    } else {
      for (int x = 0; x < width; ++x) {
        const uint16_t v = mm[static_cast<size_t>(y) * width + x];
        row[2 * x] = static_cast<uint8_t>(v >> 8);
        row[2 * x + 1] = static_cast<uint8_t>(v & 0xff);
      }
    }
  }
  if (avcodec_send_frame(ctx.get(), frame.get()) < 0 || avcodec_send_frame(ctx.get(), nullptr) < 0 ||
      avcodec_receive_packet(ctx.get(), packet.get()) < 0)
    return Status::IOError("PNG encoding failed");
  return std::string(reinterpret_cast<const char*>(packet->data), static_cast<size_t>(packet->size));
}

Status WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return Status::IOError(path + ": cannot write");
  return Status::OK();
}

int RunFrames(const FramesArgs& a) {
  auto task = Task::Open(a.task);
  if (!task.ok()) return Fail(task.status());
  auto episode = (*task)->FindEpisode(a.episode);
  if (!episode.ok()) return Fail(episode.status());
  const std::string* rel = Lookup(episode->videos, a.slot);
  if (!rel) {
    std::string slots;
    for (const auto& [slot, path] : episode->videos) slots += (slots.empty() ? "" : ", ") + slot;
    return Fail(Status::NotFound("episode " + std::to_string(a.episode) + " has no video for slot \"" +
                                 a.slot + "\" (its slots: " + (slots.empty() ? "none" : slots) + ")"));
  }
  auto reader = VideoReader::Open((*task)->Path(*rel));
  if (!reader.ok()) return Fail(reader.status());
  VideoReader& r = **reader;
  const VideoInfo& info = r.info();
  const size_t pixels = static_cast<size_t>(info.width) * info.height;
  std::vector<uint8_t> rgb;
  std::vector<uint16_t> mm;
  Status read;
  if (info.depth) {
    mm.resize(a.at.size() * pixels);
    read = r.ReadDepth(a.at, mm);
  } else {
    rgb.resize(a.at.size() * pixels * 3);
    read = r.ReadRgb(a.at, rgb);
  }
  if (!read.ok()) return Fail(read);

  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) return Fail(Status::IOError(a.out_dir + ": " + ec.message()));
  Json written = Json::array();
  for (size_t k = 0; k < a.at.size(); ++k) {
    auto png = info.depth ? EncodePng(info.width, info.height, nullptr, mm.data() + k * pixels)
                          : EncodePng(info.width, info.height, rgb.data() + k * pixels * 3, nullptr);
    if (!png.ok()) return Fail(png.status());
    const std::string path = (std::filesystem::path(a.out_dir) /
                              (a.slot + "_episode-" + std::to_string(a.episode) + "_frame-" +
                               std::to_string(a.at[k]) + ".png"))
                                 .string();
    Status st = WriteBytes(path, *png);
    if (!st.ok()) return Fail(st);
    auto time = r.FrameTime(a.at[k]);
    written.push_back({{"index", a.at[k]}, {"time_s", time.ok() ? Json(*time) : Json()}, {"path", path}});
  }
  if (a.json) {
    PrintJson({{"episode_index", a.episode},
               {"slot", a.slot},
               {"video", *rel},
               {"codec", info.codec},
               {"pix_fmt", info.pix_fmt},
               {"width", info.width},
               {"height", info.height},
               {"frames", info.frames},
               {"depth", info.depth},
               {"written", written}});
    return kExitOk;
  }
  for (const Json& w : written)
    std::cout << w["path"].get<std::string>() << "  frame " << w["index"].get<int64_t>()
              << (info.depth ? "  (16-bit gray, mm)" : "  (RGB)") << "\n";
  return kExitOk;
}

}  // namespace

void AddFramesCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<FramesArgs>();
  auto* cmd = app.add_subcommand(
      "frames", "Decode frames of one episode's video to PNG (RGB 8-bit; depth 16-bit gray, mm)");
  cmd->add_option("task", args->task, "task directory")->required();
  cmd->add_option("episode", args->episode, "global episode number N (1-based)")->required();
  cmd->add_option("--slot", args->slot, "video slot (image_key), e.g. d435_rgb")->required();
  cmd->add_option("--at", args->at, "frame indices (row i = frame i), comma-separated")
      ->required()
      ->delimiter(',');
  cmd->add_option("-o,--out", args->out_dir, "output directory (created when missing; default .)");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args, &exit_code] { exit_code = RunFrames(*args); });
}

}  // namespace reel::cli
