// VideoReader (see reel/video.h): opening a file and its frame index. Decoding by
// index is in reader_decode.cc, by timestamp in reader_at.cc.
#include <arrow/io/interfaces.h>
#include <arrow/result.h>

#include <algorithm>
#include <cstring>
#include <mutex>

extern "C" {
#include <libavutil/cpu.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

#include "video/avio_fs.h"
#include "video/reader_impl.h"

namespace reel {

using video::AvErrorText;
using video::PixFmtName;

namespace {

// FFmpeg logs at info level by default (stream banners, decoder chatter); the
// library reports failures through Status instead. Same policy as the encoder:
// quieten once, unless the application has chosen a level.
void QuietFfmpegLogs() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_ERROR);
  });
}

// The stream to read: the FFV1 stream when there is one (depth; the older
// dual-stream .mkv has H.264 first), otherwise the first video stream.
int ChooseStream(const AVFormatContext& f) {
  int first_video = -1;
  for (unsigned i = 0; i < f.nb_streams; ++i) {
    const AVStream* s = f.streams[i];
    if (s->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) continue;
    if (s->disposition & AV_DISPOSITION_ATTACHED_PIC) continue;
    if (s->codecpar->codec_id == AV_CODEC_ID_FFV1) return static_cast<int>(i);
    if (first_video < 0) first_video = static_cast<int>(i);
  }
  return first_video;
}

// The payload ranges of the top-level `mdat` boxes of an mp4/mov file, read from the box
// headers (a bounded walk; it stops at the first header that does not fit the file).
// Empty when none is found, and then nothing is judged by it.
std::vector<std::pair<int64_t, int64_t>> MdatRanges(arrow::io::RandomAccessFile& file, int64_t size) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t pos = 0;
  for (int boxes = 0; boxes < 4096 && pos + 8 <= size; ++boxes) {
    unsigned char h[16];
    auto got = file.ReadAt(pos, std::min<int64_t>(sizeof h, size - pos), h);
    if (!got.ok() || *got < 8) break;
    auto be = [&](int at, int n) {
      uint64_t v = 0;
      for (int i = 0; i < n; ++i) v = v << 8 | h[at + i];
      return v;
    };
    uint64_t length = be(0, 4);
    int64_t header = 8;
    if (length == 1) {
      if (pos + 16 > size) break;
      length = be(8, 8);
      header = 16;
    } else if (length == 0) {
      length = static_cast<uint64_t>(size - pos);  // the box runs to the end of the file
    }
    if (length < static_cast<uint64_t>(header) || length > static_cast<uint64_t>(size - pos)) break;
    if (std::memcmp(h + 4, "mdat", 4) == 0) ranges.emplace_back(pos + header, pos + static_cast<int64_t>(length));
    pos += static_cast<int64_t>(length);
  }
  return ranges;
}

// Every frame of an mp4 lies in its media data. A damaged index (chunk offsets zeroed
// or shifted) points frames at the file's header boxes: the demuxer would hand the
// decoder whatever lies there, and `check` would count the frames without noticing.
Status CheckIndexInMediaData(const std::string& path, arrow::io::RandomAccessFile& file, int64_t size,
                             const std::vector<const AVIndexEntry*>& entries) {
  const auto ranges = MdatRanges(file, size);
  if (ranges.empty()) return Status::OK();
  for (size_t i = 0; i < entries.size(); ++i) {
    const int64_t begin = entries[i]->pos, end = begin + entries[i]->size;
    const bool inside = std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) {
      return begin >= r.first && end <= r.second;
    });
    if (!inside)
      return Status::Corruption(path + ": damaged index: frame " + std::to_string(i) + " at byte " +
                                std::to_string(begin) + " lies outside the file's media data "
                                "(its chunk offsets are wrong)");
  }
  return Status::OK();
}

// Frames of one stream occupy distinct bytes. A damaged index (an mp4 whose chunk
// offsets were zeroed) points many frames at the same bytes: the demuxer would hand
// the decoder whatever lies there, so such a file is refused when opened.
Status CheckIndexOverlap(const std::string& path, const std::vector<const AVIndexEntry*>& entries) {
  std::vector<std::pair<int64_t, int64_t>> spans;  // (pos, end)
  spans.reserve(entries.size());
  for (const AVIndexEntry* e : entries) spans.emplace_back(e->pos, e->pos + e->size);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].first < 0 || (i > 0 && spans[i].first < spans[i - 1].second))
      return Status::Corruption(path + ": damaged index: frames overlap at byte " +
                                std::to_string(spans[i].first) +
                                " (the chunk offsets of the file are wrong)");
  }
  return Status::OK();
}

// Counts the frames from the demuxer's packet index when it lists every packet
// (mp4: one entry per sample); -1 when it does not (mkv indexes only the keyframes
// of its cues). Builds frame_pts and keyframes from it when the presentation times
// follow from the index (see below); otherwise they come from a packet scan later.
Result<int64_t> CountFromIndex(VideoReader::Impl& m) {
  AVStream* st = m.stream;
  const int n = avformat_index_get_entries_count(st);
  if (n <= 0) return -1;
  std::vector<const AVIndexEntry*> entries;  // presented packets, decode order
  bool has_delta = false;
  for (int i = 0; i < n; ++i) {
    const AVIndexEntry* e = avformat_index_get_entry(st, i);
    if (!e || (e->flags & AVINDEX_DISCARD_FRAME)) continue;  // cut by an edit list
    entries.push_back(e);
    has_delta = has_delta || !(e->flags & AVINDEX_KEYFRAME);
  }
  const int64_t count = static_cast<int64_t>(entries.size());
  const bool complete =
      count > 0 && (st->nb_frames > 0 ? st->nb_frames == n || st->nb_frames == count : has_delta);
  if (!complete) return -1;
  // A file cut short still has its whole index when the index comes first (faststart).
  const int64_t size = m.format->pb ? avio_size(m.format->pb) : -1;
  int64_t end = 0;
  for (const AVIndexEntry* e : entries) end = std::max<int64_t>(end, e->pos + e->size);
  if (size >= 0 && end > size)
    return Status::Corruption(m.path + ": truncated: its index lists frames up to byte " +
                              std::to_string(end) + " but the file has " + std::to_string(size) +
                              " bytes");
  REEL_RETURN_IF_ERROR(CheckIndexOverlap(m.path, entries));
  if (size >= 0 && std::strstr(m.format->iformat->name, "mp4"))
    REEL_RETURN_IF_ERROR(CheckIndexInMediaData(m.path, *m.file, size, entries));
  // Index timestamps are decode timestamps. Without frame reordering, or with it at
  // a constant frame rate, the presentation times are the same values shifted by
  // the first packet's pts - dts; decoding verifies every frame against them and
  // falls back to a packet scan on a mismatch. Reordered variable-rate streams get
  // the scan straight away.
  bool uniform = true;
  for (size_t r = 2; r < entries.size() && uniform; ++r)
    uniform = entries[r]->timestamp - entries[r - 1]->timestamp ==
              entries[1]->timestamp - entries[0]->timestamp;
  if (st->codecpar->video_delay > 0 && !uniform) return count;
  int64_t shift = 0;
  while (av_read_frame(m.format.get(), m.packet.get()) >= 0) {
    const bool ours = m.packet->stream_index == st->index;
    if (ours && m.packet->pts != AV_NOPTS_VALUE && m.packet->dts != AV_NOPTS_VALUE)
      shift = m.packet->pts - m.packet->dts;
    av_packet_unref(m.packet.get());
    if (ours) break;
  }
  m.frame_pts.clear();
  m.keyframes.clear();
  for (size_t r = 0; r < entries.size(); ++r) {
    m.frame_pts.push_back(entries[r]->timestamp + shift);
    // In a closed GOP a keyframe is presented after everything decoded before it,
    // so its decode rank is its frame index (open GOPs are handled by seeking back).
    if (entries[r]->flags & AVINDEX_KEYFRAME)
      m.keyframes.push_back({static_cast<int64_t>(r), entries[r]->timestamp + shift});
  }
  std::sort(m.frame_pts.begin(), m.frame_pts.end());
  m.pts_exact = false;
  return count;
}

}  // namespace

// ---- frame index ---------------------------------------------------------------------

Status VideoReader::Impl::ScanPackets() {
  // A second demuxer, so the one decoding keeps its position.
  video::InputPtr scan;
  REEL_RETURN_IF_ERROR(video::OpenFsInput(file, path, &scan));
  if (stream->index >= static_cast<int>(scan->nb_streams))
    return Status::Corruption(path + ": the stream layout changed while reading");
  for (unsigned i = 0; i < scan->nb_streams; ++i)
    if (static_cast<int>(i) != stream->index) scan->streams[i]->discard = AVDISCARD_ALL;
  video::PacketPtr pkt(av_packet_alloc());
  if (!pkt) return Status::IOError(path + ": out of memory");
  std::vector<int64_t> pts;
  std::vector<std::pair<int64_t, int64_t>> keys;  // (pts, seek timestamp)
  for (;;) {
    const int err = av_read_frame(scan.get(), pkt.get());
    if (Status io = video::TakeIoError(scan.get()); !io.ok()) return io;
    if (err == AVERROR_EOF) break;
    if (err < 0)
      return Status::Corruption(path + ": unreadable after " + std::to_string(pts.size()) +
                                " frames (" + AvErrorText(err) + "): truncated or corrupt");
    if (pkt->stream_index == stream->index && !(pkt->flags & AV_PKT_FLAG_DISCARD)) {
      const int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
      if (ts == AV_NOPTS_VALUE) {
        av_packet_unref(pkt.get());
        return Status::NotSupported(path + ": packet " + std::to_string(pts.size()) +
                                    " has no timestamp; frames cannot be addressed");
      }
      pts.push_back(ts);
      if (pkt->flags & AV_PKT_FLAG_KEY)
        keys.emplace_back(ts, ts);
    }
    av_packet_unref(pkt.get());
  }
  std::sort(pts.begin(), pts.end());
  keyframes.clear();
  for (const auto& [ts, seek_ts] : keys)
    keyframes.push_back({std::lower_bound(pts.begin(), pts.end(), ts) - pts.begin(), seek_ts});
  std::sort(keyframes.begin(), keyframes.end(),
            [](const KeyframeEntry& a, const KeyframeEntry& b) { return a.index < b.index; });
  frame_pts = std::move(pts);
  pts_exact = true;
  info.frames = static_cast<int64_t>(frame_pts.size());
  return Status::OK();
}

namespace {

// The decoder's threads (`threads`: 1 = one thread always, 0 = chosen here). `many` (a long
// run from a keyframe, or a stream): frame threads, which decode consecutive frames side by
// side; for H.264 as many as libavcodec chooses (a thread per CPU and one more: its frame
// threads wait on each other's rows, and the extra one fills the wait), else one per CPU
// (HEVC lost 10-15% with the extra one). Otherwise (a run of a few frames, whose frame
// pipeline would not fill): slice threads, except for H.264, whose streams here are one
// slice a frame; HEVC's wavefronts (WPP, on by default in x265) and FFV1's slices run one
// frame's parts side by side. Measured with bench_video (docs/benchmarks.md, "Decoder
// threads by run length"). av_cpu_count() honours the process's CPU affinity.
void SetDecoderThreads(AVCodecContext& ctx, bool many, int threads) {
  const bool h264 = ctx.codec_id == AV_CODEC_ID_H264;
  if (threads == 1 || (!many && h264)) {
    ctx.thread_count = 1;
  } else if (many) {
    ctx.thread_type = FF_THREAD_FRAME;
    ctx.thread_count = threads > 0 ? threads : h264 ? 0 : std::max(1, av_cpu_count());
  } else {
    ctx.thread_type = FF_THREAD_SLICE;
    ctx.thread_count = threads > 0 ? threads : 0;
  }
}

}  // namespace

Status VideoReader::Impl::OpenDecoder(bool many) {
  video::CodecContextPtr& slot = many ? decoder_many : decoder_one;
  if (slot) return Status::OK();
  const AVCodecParameters* par = stream->codecpar;
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (!codec)
    return Status::NotSupported(path + ": no decoder for codec " + avcodec_get_name(par->codec_id));
  video::CodecContextPtr ctx(avcodec_alloc_context3(codec));
  if (!ctx) return Status::IOError(path + ": out of memory");
  int err = avcodec_parameters_to_context(ctx.get(), par);
  if (err < 0) return Status::Corruption(path + ": bad codec parameters: " + AvErrorText(err));
  SetDecoderThreads(*ctx, many, options.threads);
  ctx->pkt_timebase = stream->time_base;
  err = avcodec_open2(ctx.get(), codec, nullptr);
  if (err < 0)
    return Status::NotSupported(path + ": cannot open the " + avcodec_get_name(par->codec_id) +
                                " decoder: " + AvErrorText(err));
  slot = std::move(ctx);
  return Status::OK();
}

Status VideoReader::Impl::EnsureFramePts() {
  if (!frame_pts.empty() || info.frames == 0) return Status::OK();
  return ScanPackets();
}

// ---- public API -----------------------------------------------------------------------------

VideoReader::VideoReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VideoReader::~VideoReader() = default;

const VideoInfo& VideoReader::info() const { return impl_->info; }
const std::string& VideoReader::path() const { return impl_->path; }
const VideoReadStats& VideoReader::stats() const { return impl_->stats; }
void VideoReader::ResetStats() { impl_->stats = VideoReadStats{}; }

Result<std::unique_ptr<VideoReader>> VideoReader::Open(const std::string& path,
                                                       const VideoReaderOptions& options) {
  QuietFfmpegLogs();
  FileSystem* fs = options.fs ? options.fs : DefaultFileSystem();
  REEL_ASSIGN_OR_RETURN(const FileInfo st, fs->Stat(path));
  if (st.type == FileType::kNotFound) return Status::NotFound(path + ": no such video file");
  if (st.type == FileType::kDirectory) return Status::Invalid(path + ": is a directory, not a video file");
  if (st.size == 0) return Status::Corruption(path + ": empty file, not a video");

  auto m = std::make_unique<Impl>();
  m->path = path;
  m->options = options;
  REEL_ASSIGN_OR_RETURN(m->file, fs->OpenRandomAccess(path));
  m->frame.reset(av_frame_alloc());
  m->held.reset(av_frame_alloc());
  m->packet.reset(av_packet_alloc());
  if (!m->frame || !m->held || !m->packet) return Status::IOError(path + ": out of memory");
  REEL_RETURN_IF_ERROR(video::OpenFsInput(m->file, path, &m->format));
  int err = avformat_find_stream_info(m->format.get(), nullptr);
  REEL_RETURN_IF_ERROR(video::TakeIoError(m->format.get()));
  if (err < 0)
    return Status::Corruption(path + ": cannot read the streams (" + AvErrorText(err) +
                              "): truncated or corrupt");
  const int index = ChooseStream(*m->format);
  if (index < 0) return Status::Invalid(path + ": has no video stream");
  for (unsigned i = 0; i < m->format->nb_streams; ++i)
    if (static_cast<int>(i) != index) m->format->streams[i]->discard = AVDISCARD_ALL;
  m->stream = m->format->streams[index];
  const AVCodecParameters* par = m->stream->codecpar;

  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (!codec)
    return Status::NotSupported(path + ": no decoder for codec " + avcodec_get_name(par->codec_id) +
                                " in this FFmpeg build");
  // The decoder itself opens on the first read: its threads cost more than the rest
  // of Open(), and `reel check` only needs the frame count.

  VideoInfo& info = m->info;
  info.width = par->width;
  info.height = par->height;
  if (info.width <= 0 || info.height <= 0)
    return Status::Corruption(path + ": the video stream has no frame size");
  info.time_base_num = m->stream->time_base.num;
  info.time_base_den = m->stream->time_base.den;
  const AVRational rate = m->stream->avg_frame_rate.num > 0 ? m->stream->avg_frame_rate
                                                             : m->stream->r_frame_rate;
  info.fps = rate.den > 0 ? av_q2d(rate) : 0.0;
  info.codec = avcodec_get_name(par->codec_id);
  info.pix_fmt = PixFmtName(par->format);
  info.depth = (par->codec_id == AV_CODEC_ID_HEVC && par->format == AV_PIX_FMT_GRAY12LE) ||
               (par->codec_id == AV_CODEC_ID_FFV1 &&
                (par->format == AV_PIX_FMT_GRAY16LE || par->format == AV_PIX_FMT_GRAY16BE));
  info.stream_index = index;

  // Frame count: the packet index, else the container's count, else a packet scan.
  auto counted = CountFromIndex(*m);
  REEL_RETURN_IF_ERROR(video::TakeIoError(m->format.get()));
  REEL_ASSIGN_OR_RETURN(const int64_t indexed, std::move(counted));
  if (indexed >= 0)
    info.frames = indexed;
  else if (m->stream->nb_frames > 0)
    info.frames = m->stream->nb_frames;
  else
    REEL_RETURN_IF_ERROR(m->ScanPackets());
  return std::unique_ptr<VideoReader>(new VideoReader(std::move(m)));
}

Result<double> VideoReader::FrameTime(int64_t index) {
  Impl& m = *impl_;
  REEL_RETURN_IF_ERROR(m.EnsureFramePts());
  if (index < 0 || index >= static_cast<int64_t>(m.frame_pts.size()))
    return Status::Invalid(m.path + ": frame " + std::to_string(index) +
                           " is out of range: the file has " + std::to_string(m.frame_pts.size()) +
                           " frames");
  return m.TimeOf(m.frame_pts[index]);
}

}  // namespace reel
