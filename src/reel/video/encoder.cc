// VideoEncoder (see reel/video.h): one stream, one file, frame i at pts i.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include <nlohmann/json.hpp>

#include "reel/fs.h"
#include "reel/video.h"
#include "video/avio_fs.h"
#include "video/ffmpeg_util.h"

namespace reel {

using video::AvStatus;
using video::OutputPtr;

namespace {

const char* EncoderName(const VideoEncoderOptions& o) {
  switch (o.kind) {
    case VideoKind::kRgb: return o.codec == "hevc" ? "libx265" : "libx264";
    case VideoKind::kDepthHevc: return "libx265";
    case VideoKind::kDepthFfv1: return "ffv1";
  }
  return "";
}

AVPixelFormat EncodedPixelFormat(VideoKind kind) {
  switch (kind) {
    case VideoKind::kRgb: return AV_PIX_FMT_YUV420P;
    case VideoKind::kDepthHevc: return AV_PIX_FMT_GRAY12LE;
    case VideoKind::kDepthFfv1: return AV_PIX_FMT_GRAY16LE;
  }
  return AV_PIX_FMT_NONE;
}

// FFmpeg logs every encoder's settings at its default level (info); a recorder
// opening eight streams per episode would flood stderr. Quieten it once, unless the
// application has already chosen a level or REEL_FFMPEG_LOG is set (for debugging).
void QuietFfmpegLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (av_log_get_level() == AV_LOG_INFO && !std::getenv("REEL_FFMPEG_LOG")) av_log_set_level(AV_LOG_ERROR);
  });
}

// DepthMmToCode for every uint16 value: a log per pixel would cost more than the
// encoder at 1280x800.
const uint16_t* DepthCodeTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(65536);
    for (size_t mm = 0; mm < t.size(); ++mm) t[mm] = DepthMmToCode(static_cast<uint16_t>(mm));
    return t;
  }();
  return table.data();
}

}  // namespace

const char* VideoExtension(VideoKind kind) { return kind == VideoKind::kDepthFfv1 ? "mkv" : "mp4"; }

bool HaveHevc12Encoder() {
  const AVCodec* codec = avcodec_find_encoder_by_name("libx265");
  if (!codec || !codec->pix_fmts) return false;
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == AV_PIX_FMT_GRAY12LE) return true;
  return false;
}

struct VideoEncoder::Impl {
  std::string path;
  VideoEncoderOptions options;
  OutputPtr out;
  video::CodecContextPtr ctx;
  AVStream* stream = nullptr;
  video::FramePtr frame;    // the frame being sent (kept: Repeat() sends it again)
  video::FramePtr staging;  // RGB24 input, padded for swscale
  video::PacketPtr packet;
  video::SwsPtr sws;        // RGB24 -> yuv420p
  int64_t frames = 0;
  bool finished = false;

  // The FileSystem's error when a write of the file failed (FFmpeg only knows EIO),
  // else FFmpeg's.
  Status Error(const std::string& what, int err) {
    if (Status io = video::TakeIoError(out.get()); !io.ok()) return io;
    return AvStatus(path, what, err);
  }

  // Sends `frame` (or flushes with null) and writes every packet the encoder returns.
  Status Send(AVFrame* f) {
    int rc = avcodec_send_frame(ctx.get(), f);
    if (rc < 0) return Error("encoding frame " + std::to_string(frames), rc);
    while (true) {
      rc = avcodec_receive_packet(ctx.get(), packet.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return Status::OK();
      if (rc < 0) return Error("encoding", rc);
      const int64_t pts = packet->pts, dts = packet->dts;
      av_packet_rescale_ts(packet.get(), ctx->time_base, stream->time_base);
      packet->stream_index = stream->index;
      rc = av_interleaved_write_frame(out.get(), packet.get());
      if (rc < 0)
        return Error("writing the packet with pts " + std::to_string(pts) + ", dts " + std::to_string(dts), rc);
    }
  }

  // Makes `frame` safe to overwrite: the encoder may still hold a reference to it.
  Status Writable() {
    int rc = av_frame_make_writable(frame.get());
    return rc < 0 ? Error("allocating frame", rc) : Status::OK();
  }

  Status SendCurrent() {
    frame->pts = frames;
    REEL_RETURN_IF_ERROR(Send(frame.get()));
    ++frames;
    return Status::OK();
  }
};

Result<std::unique_ptr<VideoEncoder>> VideoEncoder::Open(const std::string& path,
                                                         const VideoEncoderOptions& options) {
  if (options.width <= 0 || options.height <= 0)
    return Status::Invalid(path + ": video size must be positive, got " + std::to_string(options.width) +
                           "x" + std::to_string(options.height));
  if (options.kind != VideoKind::kDepthFfv1 && (options.width % 2 || options.height % 2))
    return Status::Invalid(path + ": " + std::to_string(options.width) + "x" +
                           std::to_string(options.height) +
                           ": H.264/HEVC need an even width and height");
  if (!(options.fps > 0)) return Status::Invalid(path + ": fps must be positive");
  if (options.kind == VideoKind::kRgb && options.codec != "h264" && options.codec != "hevc")
    return Status::Invalid(path + ": video codec \"" + options.codec + "\"; expected h264 or hevc");
  if (options.gop < 1) return Status::Invalid(path + ": gop must be >= 1");

  QuietFfmpegLogs();
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  const char* muxer = options.kind == VideoKind::kDepthFfv1 ? "matroska" : "mp4";
  AVFormatContext* raw = nullptr;
  int rc = avformat_alloc_output_context2(&raw, nullptr, muxer, path.c_str());
  if (rc < 0) return impl->Error("creating the container", rc);
  impl->out.reset(raw);

  const char* name = EncoderName(options);
  const AVCodec* codec = avcodec_find_encoder_by_name(name);
  if (!codec) return Status::NotSupported(path + ": this FFmpeg has no " + name + " encoder");
  impl->ctx.reset(avcodec_alloc_context3(codec));
  AVCodecContext* c = impl->ctx.get();
  const AVRational rate = av_d2q(options.fps, 1001000);
  c->width = options.width;
  c->height = options.height;
  c->framerate = rate;
  c->time_base = av_inv_q(rate);
  c->pix_fmt = EncodedPixelFormat(options.kind);
  c->gop_size = options.gop;
  c->thread_count = options.threads;
  if (impl->out->oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

  AVDictionary* opts = nullptr;
  const std::string gop = std::to_string(options.gop);
  // x265 3.5 hands out garbage dts for the first packets of a stream shorter than its
  // B-frame delay (seen as "pts/dts pair unsupported" from the mp4 muxer on 1-2 frame
  // episodes), so HEVC streams are written without B-frames: dts = pts, which also
  // keeps frame i at decode position i.
  // libx265 ignores AVCodecContext::thread_count and starts a worker pool of its own (one
  // thread per core): with one thread asked for, its pool is one thread too, or a rig's
  // depth encoders would each run a pool beside the recorder's own thread per encoder
  // (one 640x480 12-bit stream at preset fast: 10-20% less CPU, the same frames).
  const std::string kX265Common =
      std::string(options.threads == 1 ? "pools=1:" : "") + "log-level=error:bframes=0:keyint=";
  switch (options.kind) {
    case VideoKind::kRgb:
      av_dict_set(&opts, "preset", options.preset.c_str(), 0);
      av_dict_set(&opts, "crf", std::to_string(options.crf).c_str(), 0);
      if (options.codec == "hevc") {
        // x265 3.5's cuTree writes past its lookahead arrays on frames smaller than a
        // 64x64 CTU (valgrind: invalid writes, then heap corruption); such small frames
        // are encoded without it.
        const bool tiny = options.width < 64 || options.height < 64;
        av_dict_set(&opts, "x265-params", ((tiny ? "cutree=0:" : "") + kX265Common + gop).c_str(), 0);
      }
      break;
    case VideoKind::kDepthHevc:
      // reference-behaviour.md: -preset fast -x265-params qp=6:range=full, gray12le (the
      // recorder passes "fast" unless told otherwise).
      c->color_range = AVCOL_RANGE_JPEG;
      av_dict_set(&opts, "preset", options.preset.c_str(), 0);
      av_dict_set(&opts, "x265-params", ("qp=6:range=full:" + kX265Common + gop).c_str(), 0);
      break;
    case VideoKind::kDepthFfv1:
      av_dict_set(&opts, "level", "3", 0);
      break;
  }
  rc = avcodec_open2(c, codec, &opts);
  av_dict_free(&opts);
  if (rc < 0) return impl->Error(std::string("opening the ") + name + " encoder", rc);

  impl->stream = avformat_new_stream(impl->out.get(), nullptr);
  if (!impl->stream) return Status::IOError(path + ": cannot add a stream");
  rc = avcodec_parameters_from_context(impl->stream->codecpar, c);
  if (rc < 0) return impl->Error("copying codec parameters", rc);
  impl->stream->time_base = c->time_base;
  impl->stream->avg_frame_rate = rate;
  if (codec->id == AV_CODEC_ID_HEVC) impl->stream->codecpar->codec_tag = MKTAG('h', 'v', 'c', '1');

  REEL_RETURN_IF_ERROR(
      video::OpenFsOutput(options.fs ? options.fs : DefaultFileSystem(), path, impl->out.get()));
  rc = avformat_write_header(impl->out.get(), nullptr);
  if (rc < 0) return impl->Error("writing the container header", rc);

  impl->frame.reset(av_frame_alloc());
  impl->packet.reset(av_packet_alloc());
  if (!impl->frame || !impl->packet) return Status::IOError(path + ": out of memory");
  impl->frame->format = c->pix_fmt;
  impl->frame->width = c->width;
  impl->frame->height = c->height;
  impl->frame->color_range = c->color_range;
  rc = av_frame_get_buffer(impl->frame.get(), 0);
  if (rc < 0) return impl->Error("allocating frame", rc);
  if (options.kind == VideoKind::kRgb) {
    impl->sws.reset(sws_getContext(c->width, c->height, AV_PIX_FMT_RGB24, c->width, c->height,
                                   AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr, nullptr));
    if (!impl->sws) return Status::IOError(path + ": cannot create the RGB to YUV converter");
    impl->staging.reset(av_frame_alloc());
    if (!impl->staging) return Status::IOError(path + ": out of memory");
    impl->staging->format = AV_PIX_FMT_RGB24;
    impl->staging->width = c->width;
    impl->staging->height = c->height;
    rc = av_frame_get_buffer(impl->staging.get(), 64);  // 64-byte aligned, padded lines
    if (rc < 0) return impl->Error("allocating frame", rc);
  }
  return std::unique_ptr<VideoEncoder>(new VideoEncoder(std::move(impl)));
}

VideoEncoder::VideoEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VideoEncoder::~VideoEncoder() = default;

int64_t VideoEncoder::frames() const { return impl_->frames; }
const VideoEncoderOptions& VideoEncoder::options() const { return impl_->options; }

Status VideoEncoder::AddRgb(std::span<const uint8_t> rgb) {
  Impl& m = *impl_;
  if (m.finished) return Status::Invalid(m.path + ": encoder already finished");
  if (m.options.kind != VideoKind::kRgb)
    return Status::Invalid(m.path + ": an RGB frame for a depth stream");
  const size_t want = static_cast<size_t>(m.options.width) * m.options.height * 3;
  if (rgb.size() != want)
    return Status::Invalid(m.path + ": frame " + std::to_string(m.frames) + " has " +
                           std::to_string(rgb.size()) + " bytes; " + std::to_string(m.options.width) +
                           "x" + std::to_string(m.options.height) + " RGB24 needs " + std::to_string(want));
  REEL_RETURN_IF_ERROR(m.Writable());
  // swscale's SIMD reads up to 16 bytes past the end of each source line, so the caller's
  // tightly packed frame is staged into a padded, aligned one first (a memcpy, small
  // beside the encode).
  const size_t line = static_cast<size_t>(m.options.width) * 3;
  for (int y = 0; y < m.options.height; ++y)
    std::memcpy(m.staging->data[0] + y * m.staging->linesize[0], rgb.data() + y * line, line);
  sws_scale(m.sws.get(), m.staging->data, m.staging->linesize, 0, m.options.height, m.frame->data,
            m.frame->linesize);
  return m.SendCurrent();
}

Status VideoEncoder::AddDepth(std::span<const uint16_t> mm) {
  Impl& m = *impl_;
  if (m.finished) return Status::Invalid(m.path + ": encoder already finished");
  if (m.options.kind == VideoKind::kRgb)
    return Status::Invalid(m.path + ": a depth frame for an RGB stream");
  const size_t w = static_cast<size_t>(m.options.width), h = static_cast<size_t>(m.options.height);
  if (mm.size() != w * h)
    return Status::Invalid(m.path + ": depth frame " + std::to_string(m.frames) + " has " +
                           std::to_string(mm.size()) + " values; expected " + std::to_string(w * h));
  REEL_RETURN_IF_ERROR(m.Writable());
  const bool log_code = m.options.kind == VideoKind::kDepthHevc;
  const uint16_t* code_of = log_code ? DepthCodeTable() : nullptr;
  for (size_t y = 0; y < h; ++y) {
    auto* row = reinterpret_cast<uint16_t*>(m.frame->data[0] + y * m.frame->linesize[0]);
    const uint16_t* in = mm.data() + y * w;
    if (log_code) {
      for (size_t x = 0; x < w; ++x) row[x] = code_of[in[x]];
    } else {
      std::copy(in, in + w, row);
    }
  }
  return m.SendCurrent();
}

Status VideoEncoder::Repeat() {
  Impl& m = *impl_;
  if (m.finished) return Status::Invalid(m.path + ": encoder already finished");
  if (m.frames == 0) {
    // Nothing to repeat yet: a black frame (depth: no depth, code 0).
    REEL_RETURN_IF_ERROR(m.Writable());
    if (m.options.kind == VideoKind::kRgb) {
      const int h = m.options.height;
      std::fill_n(m.frame->data[0], static_cast<size_t>(m.frame->linesize[0]) * h, 16);
      std::fill_n(m.frame->data[1], static_cast<size_t>(m.frame->linesize[1]) * (h / 2), 128);
      std::fill_n(m.frame->data[2], static_cast<size_t>(m.frame->linesize[2]) * (h / 2), 128);
    } else {
      std::fill_n(m.frame->data[0], static_cast<size_t>(m.frame->linesize[0]) * m.options.height, 0);
    }
  }
  return m.SendCurrent();
}

Status VideoEncoder::Finish() {
  Impl& m = *impl_;
  if (m.finished) return Status::OK();
  m.finished = true;
  REEL_RETURN_IF_ERROR(m.Send(nullptr));
  int rc = av_write_trailer(m.out.get());
  if (rc < 0) return m.Error("writing the container trailer", rc);
  return video::CloseFsOutput(m.out.get(), m.options.sync_on_finish);
}

std::string VideoEncoder::DescribeJson() const {
  const VideoEncoderOptions& o = impl_->options;
  nlohmann::ordered_json j;
  j["encoder"] = EncoderName(o);
  switch (o.kind) {
    case VideoKind::kRgb:
      j["codec"] = o.codec;
      j["crf"] = o.crf;
      j["preset"] = o.preset;
      j["pix_fmt"] = "yuv420p";
      break;
    case VideoKind::kDepthHevc:
      j["codec"] = "HEVC (Rext) gray12le";
      j["qp"] = 6;
      j["preset"] = o.preset;
      j["format"] = "12bit log codes";
      break;
    case VideoKind::kDepthFfv1:
      j["codec"] = "FFV1 gray16le";
      j["format"] = "uint16 mm";
      break;
  }
  j["gop"] = o.gop;
  j["ffmpeg"] = std::string("FFmpeg ") + av_version_info() + " (libavcodec, in process)";
  return j.dump();
}

}  // namespace reel
