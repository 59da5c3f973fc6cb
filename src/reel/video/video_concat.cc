#include "video/video_concat.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "reel/fs.h"
#include "reel/video.h"
#include "video/avio_fs.h"
#include "video/ffmpeg_util.h"

namespace reel::internal {

using video::AvStatus;
using video::InputPtr;
using video::OutputPtr;
using video::PacketPtr;

namespace {

FileSystem* Or(FileSystem* fs) { return fs ? fs : DefaultFileSystem(); }

// FFmpeg's error, or the FileSystem's when a read or write of `f` failed underneath.
Status AvOrIoStatus(AVFormatContext* f, const std::string& path, const std::string& what, int err) {
  if (Status io = video::TakeIoError(f); !io.ok()) return io;
  return AvStatus(path, what, err);
}

struct Input {
  InputPtr format;
  AVStream* stream = nullptr;
};

Result<Input> OpenVideo(FileSystem* fs, const std::string& path) {
  REEL_ASSIGN_OR_RETURN(auto file, Or(fs)->OpenRandomAccess(path));
  Input in;
  REEL_RETURN_IF_ERROR(video::OpenFsInput(std::move(file), path, &in.format));
  AVFormatContext* raw = in.format.get();
  int err = avformat_find_stream_info(raw, nullptr);
  if (err < 0) return AvOrIoStatus(raw, path, "reading stream info", err);
  for (unsigned i = 0; i < raw->nb_streams; ++i) {
    AVStream* s = raw->streams[i];
    if (s->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && !(s->disposition & AV_DISPOSITION_ATTACHED_PIC)) {
      // FFV1 wins over an H.264 heatmap in the older dual-stream depth .mkv.
      if (!in.stream || s->codecpar->codec_id == AV_CODEC_ID_FFV1) in.stream = s;
    }
  }
  if (!in.stream) return Status::Invalid(path + ": no video stream");
  return in;
}

bool SameParameters(const AVCodecParameters& a, const AVCodecParameters& b) {
  return a.codec_id == b.codec_id && a.width == b.width && a.height == b.height &&
         a.format == b.format && a.extradata_size == b.extradata_size &&
         (a.extradata_size == 0 || std::memcmp(a.extradata, b.extradata, a.extradata_size) == 0);
}

bool Mp4Codec(AVCodecID id) {
  return id == AV_CODEC_ID_H264 || id == AV_CODEC_ID_HEVC || id == AV_CODEC_ID_AV1;
}

// Creates an .mp4 muxer at `path` with `in`'s stream parameters and writes the header.
Status OpenMp4Output(FileSystem* fs, const std::string& path, const AVStream& in, OutputPtr* out,
                     AVStream** stream) {
  AVFormatContext* raw = nullptr;
  int err = avformat_alloc_output_context2(&raw, nullptr, "mp4", path.c_str());
  if (err < 0 || !raw) return AvStatus(path, "creating the mp4 muxer", err);
  out->reset(raw);
  AVStream* s = avformat_new_stream(raw, nullptr);
  if (!s) return Status::IOError(path + ": cannot add a stream");
  err = avcodec_parameters_copy(s->codecpar, in.codecpar);
  if (err < 0) return AvStatus(path, "copying codec parameters", err);
  // Keep the tag only where .mp4 knows it (hvc1 for HEVC, what players expect).
  s->codecpar->codec_tag = in.codecpar->codec_id == AV_CODEC_ID_HEVC ? MKTAG('h', 'v', 'c', '1') : 0;
  s->time_base = in.time_base;
  s->avg_frame_rate = in.avg_frame_rate;
  s->r_frame_rate = in.r_frame_rate;
  REEL_RETURN_IF_ERROR(video::OpenFsOutput(Or(fs), path, raw));
  err = avformat_write_header(raw, nullptr);
  if (err < 0) return AvOrIoStatus(raw, path, "writing the container header", err);
  *stream = s;
  return Status::OK();
}

}  // namespace

struct StreamConcat::Impl {
  std::string path;
  OutputPtr out;
  AVStream* stream = nullptr;
  AVCodecParameters* params = nullptr;  // the first input's, for Accepts()
  int64_t next_ticks = 0;               // where the next episode starts (output time base)
  int64_t last_dts = INT64_MIN;
  ~Impl() { avcodec_parameters_free(&params); }
};

StreamConcat::StreamConcat(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamConcat::~StreamConcat() = default;

Result<std::unique_ptr<StreamConcat>> StreamConcat::Open(FileSystem* output_fs, const std::string& path,
                                                         FileSystem* input_fs, const std::string& first_input) {
  REEL_ASSIGN_OR_RETURN(Input in, OpenVideo(input_fs, first_input));
  if (!Mp4Codec(in.stream->codecpar->codec_id)) {
    return Status::NotSupported(first_input + ": codec " +
                                avcodec_get_name(in.stream->codecpar->codec_id) +
                                " cannot be copied into .mp4");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  REEL_RETURN_IF_ERROR(OpenMp4Output(output_fs, path, *in.stream, &impl->out, &impl->stream));
  impl->params = avcodec_parameters_alloc();
  if (!impl->params) return Status::IOError(path + ": out of memory");
  avcodec_parameters_copy(impl->params, in.stream->codecpar);
  return std::unique_ptr<StreamConcat>(new StreamConcat(std::move(impl)));
}

Result<bool> StreamConcat::Accepts(FileSystem* input_fs, const std::string& input) const {
  REEL_ASSIGN_OR_RETURN(Input in, OpenVideo(input_fs, input));
  return SameParameters(*impl_->params, *in.stream->codecpar);
}

Result<EpisodeSpan> StreamConcat::Append(FileSystem* input_fs, const std::string& input) {
  Impl& m = *impl_;
  REEL_ASSIGN_OR_RETURN(Input in, OpenVideo(input_fs, input));
  if (!SameParameters(*m.params, *in.stream->codecpar)) {
    return Status::Invalid(input + ": stream parameters differ from " + m.path + "'s");
  }
  const AVRational in_tb = in.stream->time_base;
  const AVRational out_tb = m.stream->time_base;
  PacketPtr pkt(av_packet_alloc());
  if (!pkt) return Status::IOError(m.path + ": out of memory");
  int64_t first_pts = AV_NOPTS_VALUE, end_pts = AV_NOPTS_VALUE;
  int64_t frames = 0;
  for (;;) {
    int err = av_read_frame(in.format.get(), pkt.get());
    if (err == AVERROR_EOF) break;
    if (err < 0) return AvOrIoStatus(in.format.get(), input, "reading a packet", err);
    if (pkt->stream_index != in.stream->index) {
      av_packet_unref(pkt.get());
      continue;
    }
    if (pkt->pts == AV_NOPTS_VALUE) {
      av_packet_unref(pkt.get());
      return Status::Invalid(input + ": a packet without a presentation time");
    }
    // The episode starts at its first keyframe's pts (0 for reel's files).
    if (first_pts == AV_NOPTS_VALUE) first_pts = pkt->pts;
    const int64_t duration = pkt->duration > 0 ? pkt->duration : 0;
    if (end_pts == AV_NOPTS_VALUE || pkt->pts + duration > end_pts) end_pts = pkt->pts + duration;
    const int64_t dts = pkt->dts == AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    pkt->pts = av_rescale_q(pkt->pts - first_pts, in_tb, out_tb) + m.next_ticks;
    pkt->dts = av_rescale_q(dts - first_pts, in_tb, out_tb) + m.next_ticks;
    pkt->duration = av_rescale_q(duration, in_tb, out_tb);
    if (pkt->dts <= m.last_dts) {
      av_packet_unref(pkt.get());
      return Status::Invalid(input + ": decode times overlap the previous episode in " + m.path);
    }
    m.last_dts = pkt->dts;
    pkt->stream_index = m.stream->index;
    pkt->pos = -1;
    ++frames;
    err = av_write_frame(m.out.get(), pkt.get());
    av_packet_unref(pkt.get());
    if (err < 0) return AvOrIoStatus(m.out.get(), m.path, "writing a packet", err);
  }
  // A read error FFmpeg took for the end of the input must not pass for a short episode.
  REEL_RETURN_IF_ERROR(video::TakeIoError(in.format.get()));
  if (frames == 0) return Status::Invalid(input + ": no video frames");
  EpisodeSpan span;
  span.frames = frames;
  const int64_t from = m.next_ticks;
  const int64_t to = from + av_rescale_q(end_pts - first_pts, in_tb, out_tb);
  span.from_s = static_cast<double>(from) * out_tb.num / out_tb.den;
  span.to_s = static_cast<double>(to) * out_tb.num / out_tb.den;
  m.next_ticks = to;
  return span;
}

Status StreamConcat::Finish() {
  Impl& m = *impl_;
  if (!m.out) return Status::OK();
  int err = av_write_trailer(m.out.get());
  if (err < 0) return AvOrIoStatus(m.out.get(), m.path, "writing the trailer", err);
  Status st = video::CloseFsOutput(m.out.get(), /*sync=*/false);
  m.out.reset();
  return st;
}

int64_t StreamConcat::bytes() const {
  return impl_->out && impl_->out->pb ? avio_tell(impl_->out->pb) : 0;
}

Status CopySegment(FileSystem* input_fs, const std::string& input, double from_s, int64_t frames,
                   FileSystem* output_fs, const std::string& output) {
  REEL_ASSIGN_OR_RETURN(Input in, OpenVideo(input_fs, input));
  AVStream* st = in.stream;
  const AVRational tb = st->time_base;
  const AVRational rate = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
  if (rate.num <= 0) return Status::Invalid(input + ": no frame rate to measure frames by");
  // Frame period and tolerance in ticks of the stream's time base.
  const int64_t period = av_rescale_q(1, av_inv_q(rate), tb);
  const int64_t from = static_cast<int64_t>(std::llround(from_s * tb.den / tb.num));
  const int64_t tol = std::max<int64_t>(period / 2, 1);
  const int64_t end = from + frames * period;  // first pts after the segment (nominal)
  int err = av_seek_frame(in.format.get(), st->index, from, AVSEEK_FLAG_BACKWARD);
  if (err < 0) return AvOrIoStatus(in.format.get(), input, "seeking", err);
  std::vector<PacketPtr> kept;
  PacketPtr pkt(av_packet_alloc());
  int64_t last_dts_needed = end + 8 * period;  // reordering never reaches this far
  for (;;) {
    err = av_read_frame(in.format.get(), pkt.get());
    if (err == AVERROR_EOF) break;
    if (err < 0) return AvOrIoStatus(in.format.get(), input, "reading a packet", err);
    if (pkt->stream_index != st->index || pkt->pts == AV_NOPTS_VALUE) {
      av_packet_unref(pkt.get());
      continue;
    }
    const int64_t dts = pkt->dts == AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (dts > last_dts_needed) {
      av_packet_unref(pkt.get());
      break;
    }
    if (pkt->pts >= from - tol && pkt->pts < end - tol) {
      kept.emplace_back(av_packet_clone(pkt.get()));
    }
    av_packet_unref(pkt.get());
  }
  REEL_RETURN_IF_ERROR(video::TakeIoError(in.format.get()));
  if (static_cast<int64_t>(kept.size()) != frames) {
    return Status::Invalid(input + ": " + std::to_string(kept.size()) + " frames from " +
                           std::to_string(from_s) + " s, expected " + std::to_string(frames));
  }
  if (!(kept.front()->flags & AV_PKT_FLAG_KEY)) {
    return Status::NotSupported(input + ": the frame at " + std::to_string(from_s) +
                                " s is not a keyframe; a stream copy cannot start there");
  }
  int64_t first_pts = kept.front()->pts;
  for (const auto& p : kept) first_pts = std::min(first_pts, p->pts);
  OutputPtr out;
  AVStream* os = nullptr;
  REEL_RETURN_IF_ERROR(OpenMp4Output(output_fs, output, *st, &out, &os));
  for (auto& p : kept) {
    const int64_t dts = p->dts == AV_NOPTS_VALUE ? p->pts : p->dts;
    p->pts = av_rescale_q(p->pts - first_pts, tb, os->time_base);
    p->dts = av_rescale_q(dts - first_pts, tb, os->time_base);
    p->duration = av_rescale_q(p->duration, tb, os->time_base);
    p->stream_index = os->index;
    p->pos = -1;
    err = av_write_frame(out.get(), p.get());
    if (err < 0) return AvOrIoStatus(out.get(), output, "writing a packet", err);
  }
  err = av_write_trailer(out.get());
  if (err < 0) return AvOrIoStatus(out.get(), output, "writing the trailer", err);
  return video::CloseFsOutput(out.get(), /*sync=*/false);
}

Result<bool> CopyableToMp4(const std::string& input, FileSystem* fs, bool h264_yuv420p) {
  REEL_ASSIGN_OR_RETURN(Input in, OpenVideo(fs, input));
  const AVCodecParameters* par = in.stream->codecpar;
  if (h264_yuv420p) return par->codec_id == AV_CODEC_ID_H264 && par->format == AV_PIX_FMT_YUV420P;
  return Mp4Codec(par->codec_id);
}

Status ReencodeToMp4(FileSystem* input_fs, const std::string& input, FileSystem* output_fs,
                     const std::string& output, double fps, std::span<const int64_t> frames, int crf) {
  VideoReaderOptions read_options;
  read_options.fs = input_fs;
  REEL_ASSIGN_OR_RETURN(auto reader, VideoReader::Open(input, read_options));
  const VideoInfo info = reader->info();
  VideoEncoderOptions options;
  options.kind = info.depth ? VideoKind::kDepthHevc : VideoKind::kRgb;
  options.width = info.width;
  options.height = info.height;
  options.fps = fps;
  options.crf = crf;
  options.threads = 0;
  options.fs = output_fs;
  if (options.kind == VideoKind::kDepthHevc && !HaveHevc12Encoder()) {
    return Status::NotSupported(input + ": depth must be re-encoded for .mp4, and this FFmpeg has "
                                "no 12-bit HEVC encoder (libx265 with gray12le)");
  }
  REEL_ASSIGN_OR_RETURN(auto encoder, VideoEncoder::Open(output, options));
  const int64_t pixels = static_cast<int64_t>(info.width) * info.height;
  constexpr int64_t kBatch = 16;
  std::vector<uint8_t> rgb;
  std::vector<uint16_t> mm;
  const int64_t total = frames.empty() ? info.frames : static_cast<int64_t>(frames.size());
  if (info.frames == 0 && total > 0) return Status::Invalid(input + ": no frames to re-time");
  for (int64_t start = 0; start < total; start += kBatch) {
    const int64_t n = std::min(kBatch, total - start);
    std::vector<int64_t> indices(n);
    for (int64_t i = 0; i < n; ++i)
      indices[i] = frames.empty() ? start + i : std::clamp<int64_t>(frames[start + i], 0, info.frames - 1);
    if (info.depth) {
      mm.resize(n * pixels);
      REEL_RETURN_IF_ERROR(reader->ReadDepth(indices, mm));
      for (int64_t i = 0; i < n; ++i) {
        REEL_RETURN_IF_ERROR(encoder->AddDepth({mm.data() + i * pixels, static_cast<size_t>(pixels)}));
      }
    } else {
      rgb.resize(n * pixels * 3);
      REEL_RETURN_IF_ERROR(reader->ReadRgb(indices, rgb));
      for (int64_t i = 0; i < n; ++i) {
        REEL_RETURN_IF_ERROR(
            encoder->AddRgb({rgb.data() + i * pixels * 3, static_cast<size_t>(pixels * 3)}));
      }
    }
  }
  return encoder->Finish();
}

}  // namespace reel::internal
