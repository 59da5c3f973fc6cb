// VideoReader (see reel/video.h): decoding frames by index. Keeps the demuxer and
// decoder between calls; seeks only when decoding forward would cost more.
#include <algorithm>
#include <cstring>
#include <vector>

extern "C" {
#include <libavutil/cpu.h>
#include <libavutil/opt.h>
}

#include "video/avio_fs.h"
#include "video/reader_impl.h"

namespace reel {

using video::AvErrorText;
using video::PixFmtName;

namespace {

// Decoding forward past a keyframe still wins over a seek when it is at most this
// many frames longer. A seek costs a demuxer reposition and a decoder flush, far less
// than decoding a frame: 1 means forward only when the next frame is the target's
// keyframe (the same frames either way, without the seek). Measured (bench_video, a
// batch of 27 random frames of a 150-frame GOP-2 file): 4 decoded 59 frames, 1 decodes 40.
constexpr int64_t kSeekCostFrames = 1;

// A random run (fewer targets than this, not streaming) drains the decoder after its last
// target: the next read most likely seeks anyway.
constexpr size_t kRandomRunTargets = 8;

// A seek whose run decodes at least this many frames (from its keyframe through its last
// target), or a seek while the reads follow each other forward, goes to the multi-threaded
// (frame-threaded) decoder; a shorter run to the other one. What pays for threads is the frames
// decoded, not the targets: one frame 29 frames past its keyframe decodes 30 frames, which
// frame threads run side by side; a run of a few frames does not win back the pipeline
// (a frame per thread) that frame threading refills after every seek, and gets slice
// threads where the codec has them (SetDecoderThreads). Measured with bench_video
// (docs/benchmarks.md "Decoder threads by run length").
constexpr int64_t kThreadedRunFrames = 6;

// Every frame of a 12-bit log-code stream goes through this table (4096 codes).
const uint16_t* CodeToMmTable() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(kDepthMaxCode + 1);
    for (int c = 0; c <= kDepthMaxCode; ++c) t[c] = DepthCodeToMm(static_cast<uint16_t>(c));
    return t;
  }();
  return table.data();
}

}  // namespace

// ---- decoding ---------------------------------------------------------------------------

size_t VideoReader::Impl::KeyAtOrBefore(int64_t index) const {
  auto it = std::upper_bound(keyframes.begin(), keyframes.end(), index,
                             [](int64_t i, const KeyframeEntry& k) { return i < k.index; });
  return it == keyframes.begin() ? 0 : static_cast<size_t>(it - keyframes.begin() - 1);
}

bool VideoReader::Impl::ForwardFrom(int64_t from, int64_t t) const {
  const int64_t key_index = keyframes.empty() ? 0 : keyframes[KeyAtOrBefore(t)].index;
  return key_index <= from || t - from <= t - key_index + kSeekCostFrames;
}

size_t VideoReader::Impl::RunEnd(const std::vector<int64_t>& sorted, size_t k, Policy policy) const {
  if (policy == Policy::kOneSeek) return sorted.size() - 1;
  size_t j = k;
  while (j + 1 < sorted.size() && ForwardFrom(sorted[j], sorted[j + 1])) ++j;
  return j;
}

Status VideoReader::Impl::SeekTo(size_t key, const std::vector<int64_t>& sorted, size_t k, Policy policy) {
  if (frame_pts.empty() || (!keyframes.empty() && key >= keyframes.size()))
    return Status::Corruption(path + ": no frame to seek to: the file's index is empty or damaged");
  seek_index = keyframes.empty() ? 0 : keyframes[key].index;
  // The targets sorted[k..j] are reached from this keyframe by decoding forward.
  const size_t j = RunEnd(sorted, k, policy);
  const bool random = !streaming && j - k + 1 < kRandomRunTargets;
  const bool many = options.threads != 1 && (streaming || sorted[j] - seek_index + 1 >= kThreadedRunFrames);
  REEL_RETURN_IF_ERROR(OpenDecoder(many));
  // Without a keyframe list (nothing flagged), the first frame's timestamp.
  const int64_t ts = keyframes.empty() ? frame_pts.front() : keyframes[key].seek_ts;
  const int err = av_seek_frame(format.get(), stream->index, ts, AVSEEK_FLAG_BACKWARD);
  if (err < 0)
    return Status::Corruption(path + ": cannot seek to the keyframe at timestamp " +
                              std::to_string(ts) + " (" + AvErrorText(err) + ")");
  decoder = many ? decoder_many.get() : decoder_one.get();
  avcodec_flush_buffers(decoder);
  ++stats.seeks;
  if (many) ++stats.threaded_seeks;
  // Drain once the run's targets are in the decoder (SendPacket) when the next target
  // needs another seek anyway, or when this is a random run (the next read most likely
  // seeks too; a sequential one keeps the decoder primed).
  run_first = k;
  run_last = j;
  run_last_frame = sorted[j];
  run_sent = 0;
  drain_at_end = j + 1 < sorted.size() || random;
  positioned = true;
  draining = false;
  drained = false;
  exhausted = false;
  last_out = -1;
  return Status::OK();
}

Status VideoReader::Impl::SendPacket(int64_t wanted) {
  ++stats.packets_read;
  const int64_t pts = packet->pts;
  // A frame nothing refers to, before the read's last target and not one of its
  // targets: skipping it cannot change a frame the read returns.
  const bool skip = pts != AV_NOPTS_VALUE && pts < skip_below_pts &&
                    !std::binary_search(want_pts.begin(), want_pts.end(), pts);
  decoder->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
  if (skip) ++stats.packets_skippable;
  const int err = avcodec_send_packet(decoder, packet.get());
  av_packet_unref(packet.get());
  if (err < 0 && err != AVERROR(EAGAIN))
    return Status::Corruption(Where(wanted) + "the decoder rejected a packet: " + AvErrorText(err));
  if (pts != AV_NOPTS_VALUE && run_last < want_pts.size() &&
      std::binary_search(want_pts.begin() + run_first, want_pts.begin() + run_last + 1, pts))
    ++run_sent;
  if (drain_at_end && run_sent == run_last - run_first + 1) {
    // The run's targets are all in the decoder: let them out without decoding the
    // packets a reordering decoder would otherwise wait for.
    avcodec_send_packet(decoder, nullptr);
    draining = true;
    drained = true;
    drained_through = run_last_frame;
    ++stats.drains;
  }
  return Status::OK();
}

Status VideoReader::Impl::DecodeNext(int64_t wanted, bool* eof) {
  *eof = false;
  for (;;) {
    int err = avcodec_receive_frame(decoder, frame.get());
    if (err == 0) {
      ++stats.frames_decoded;
      return Status::OK();
    }
    if (err == AVERROR_EOF || (err == AVERROR(EAGAIN) && draining)) {
      exhausted = true;
      *eof = true;
      return Status::OK();
    }
    if (err != AVERROR(EAGAIN))
      return Status::Corruption(Where(wanted) + "decoding failed: " + AvErrorText(err));
    err = av_read_frame(format.get(), packet.get());
    if (err == AVERROR_EOF) {
      draining = true;
      avcodec_send_packet(decoder, nullptr);
      continue;
    }
    if (err < 0)
      return Status::Corruption(Where(wanted) + "reading failed (" + AvErrorText(err) +
                                "): truncated or corrupt file");
    if (packet->stream_index != stream->index) {
      av_packet_unref(packet.get());
      continue;
    }
    REEL_RETURN_IF_ERROR(SendPacket(wanted));
  }
}

int64_t VideoReader::Impl::IndexOf(const AVFrame& f, bool* mismatch) const {
  int64_t ts = f.pts != AV_NOPTS_VALUE ? f.pts : f.best_effort_timestamp;
  // A frame without a timestamp follows the previous one (or is the keyframe sought).
  if (ts == AV_NOPTS_VALUE) return last_out >= 0 ? last_out + 1 : seek_index;
  auto it = std::lower_bound(frame_pts.begin(), frame_pts.end(), ts);
  if (it != frame_pts.end() && *it == ts) return it - frame_pts.begin();
  if (!pts_exact) {
    *mismatch = true;
    return -1;
  }
  // Exact list, yet no exact match (a decoder-made timestamp): the nearest frame.
  if (it == frame_pts.end()) return static_cast<int64_t>(frame_pts.size()) - 1;
  if (it == frame_pts.begin()) return 0;
  return (ts - *(it - 1) <= *it - ts) ? (it - frame_pts.begin() - 1) : (it - frame_pts.begin());
}

Status VideoReader::Impl::ReadSortedOnce(const std::vector<int64_t>& sorted, Policy policy,
                                         const Sink& sink, bool* mismatch) {
  for (size_t k = 0; k < sorted.size(); ++k) {
    const int64_t t = sorted[k];
    if (held_index == t) {
      REEL_RETURN_IF_ERROR(sink(k, *held));
      continue;
    }
    size_t key = KeyAtOrBefore(t);
    // A draining decoder (the demuxer's end, or a drain after a run's targets) still
    // hands out what it holds; only an exhausted one needs a seek.
    const bool can_forward = positioned && !exhausted && last_out >= 0 && last_out < t &&
                             (!drained || t <= drained_through);
    bool forward = can_forward && ForwardFrom(last_out, t);
    if (policy == Policy::kOneSeek && k > 0 && can_forward) forward = true;
    if (!forward) REEL_RETURN_IF_ERROR(SeekTo(key, sorted, k, policy));
    int retries = 0;
    for (;;) {
      bool eof = false;
      REEL_RETURN_IF_ERROR(DecodeNext(t, &eof));
      if (eof && drained && !pts_exact) {
        // Drained after the packet whose pts the index-derived list gives this frame, and
        // it never came: the list is wrong; check it against the packets.
        *mismatch = true;
        return Status::OK();
      }
      if (eof && drained && retries++ < 3) {
        // Drained before this target's packet was sent: decode it again from its keyframe.
        REEL_RETURN_IF_ERROR(SeekTo(key, sorted, k, policy));
        forward = false;
        continue;
      }
      if (eof)
        return Status::Corruption(
            Where(t) + "the stream ended before this frame (" +
            (last_out >= 0 ? "last frame decoded: " + std::to_string(last_out) : "no frame decoded") +
            ", the file lists " + std::to_string(info.frames) + " frames): truncated or corrupt");
      const int64_t i = IndexOf(*frame, mismatch);
      if (*mismatch) return Status::OK();
      if (i > t && !pts_exact) {
        // Frame times derived from the index put this frame past the target: check
        // them against the packets.
        *mismatch = true;
        return Status::OK();
      }
      if (i > t) {
        // The decoder skipped the target (open GOP, or the demuxer landed late):
        // start again from its keyframe, then from earlier ones.
        if (retries++ < 3 && (forward || key > 0)) {
          if (!forward) --key;
          REEL_RETURN_IF_ERROR(SeekTo(key, sorted, k, policy));
          forward = false;
          continue;
        }
        return Status::Corruption(Where(t) + "the decoder did not produce this frame (next "
                                  "frame decoded: " + std::to_string(i) + ")");
      }
      last_out = i;
      if (i == t) break;
    }
    av_frame_unref(held.get());
    const int err = av_frame_ref(held.get(), frame.get());
    if (err < 0) return Status::IOError(Where(t) + "out of memory: " + AvErrorText(err));
    held_index = t;
    REEL_RETURN_IF_ERROR(sink(k, *held));
  }
  return Status::OK();
}

Status VideoReader::Impl::ReadSorted(const std::vector<int64_t>& sorted, Policy policy,
                                     const Sink& sink) {
  if (sorted.empty()) return Status::OK();
  REEL_RETURN_IF_ERROR(EnsureFramePts());
  ++stats.requests;
  auto reset = [this] {
    positioned = false;
    held_index = -1;
    prev_last = -1;
    av_frame_unref(held.get());
  };
  REEL_RETURN_IF_ERROR(Plan(sorted));
  for (int attempt = 0;; ++attempt) {
    bool mismatch = false;
    Status st = ReadSortedOnce(sorted, policy, sink, &mismatch);
    // A FileSystem read error wins over what FFmpeg made of it (EOF, a short packet).
    if (Status io = video::TakeIoError(format.get()); !io.ok()) st = std::move(io);
    if (!st.ok()) {
      reset();
      return st;
    }
    if (!mismatch) {
      prev_last = sorted.back();
      return Status::OK();
    }
    // A decoded timestamp is not in the list derived from the index: rebuild the
    // list from the packets themselves and read again.
    reset();
    if (attempt > 0 || pts_exact)
      return Status::Corruption(path + ": decoded frame timestamps do not match the packets");
    REEL_RETURN_IF_ERROR(ScanPackets());
    REEL_RETURN_IF_ERROR(Plan(sorted));
  }
}

Status VideoReader::Impl::Plan(const std::vector<int64_t>& sorted) {
  // After a rescan (ScanPackets) the packets may hold fewer frames than the index said.
  if (sorted.front() < 0 || sorted.back() >= static_cast<int64_t>(frame_pts.size()))
    return Status::Corruption(Where(sorted.back()) + "not among the " + std::to_string(frame_pts.size()) +
                              " frames the packets hold");
  want_pts.clear();
  for (int64_t t : sorted) want_pts.push_back(frame_pts[t]);
  std::sort(want_pts.begin(), want_pts.end());
  skip_below_pts = frame_pts[sorted.back()];
  streaming = prev_last >= 0 && sorted.front() > prev_last && ForwardFrom(prev_last, sorted.front());
  // A read continuing forward from the last (no seek) never drains.
  drain_at_end = false;
  return Status::OK();
}

// ---- pixels -------------------------------------------------------------------------------

Status VideoReader::Impl::ConvertRgb(const AVFrame& f, int64_t index, uint8_t* out) {
  ++stats.frames_converted;
  if (f.width != info.width || f.height != info.height)
    return Status::Corruption(Where(index) + "decoded as " + std::to_string(f.width) + "x" +
                              std::to_string(f.height) + ", the stream is " +
                              std::to_string(info.width) + "x" + std::to_string(info.height));
  const int key[5] = {f.width, f.height, f.format, f.colorspace, f.color_range};
  if (!sws || !std::equal(key, key + 5, sws_key)) {
    // The conversion `ffmpeg -i f -pix_fmt rgb24` makes (its scale filter): bicubic,
    // MPEG-2 chroma siting for yuv420p, the frame's own colour matrix and range.
    sws.reset(sws_alloc_context());
    if (!sws) return Status::IOError(Where(index) + "out of memory");
    SwsContext* s = sws.get();
    av_opt_set_int(s, "srcw", f.width, 0);
    av_opt_set_int(s, "srch", f.height, 0);
    av_opt_set_int(s, "src_format", f.format, 0);
    av_opt_set_int(s, "dstw", f.width, 0);
    av_opt_set_int(s, "dsth", f.height, 0);
    av_opt_set_int(s, "dst_format", AV_PIX_FMT_RGB24, 0);
    av_opt_set_int(s, "sws_flags", SWS_BICUBIC, 0);
    if (f.format == AV_PIX_FMT_YUV420P) av_opt_set_int(s, "src_v_chr_pos", 128, 0);
    if (sws_init_context(s, nullptr, nullptr) < 0) {
      sws.reset();
      return Status::NotSupported(Where(index) + "cannot convert " + PixFmtName(f.format) +
                                  " to rgb24");
    }
    int *inv_table = nullptr, *table = nullptr;
    int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
    if (sws_getColorspaceDetails(s, &inv_table, &in_full, &table, &out_full, &brightness, &contrast,
                                 &saturation) >= 0) {
      const int* coefficients = sws_getCoefficients(f.colorspace);
      if (f.color_range != AVCOL_RANGE_UNSPECIFIED) in_full = f.color_range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails(s, coefficients, in_full, coefficients, out_full, brightness,
                               contrast, saturation);
    }
    std::copy(key, key + 5, sws_key);
  }
  // swscale picks its SIMD kernels by the alignment of the destination, and they do
  // not all round alike: convert into a buffer aligned as FFmpeg's own frames are
  // (what the CLI converts into), unless `out` already is.
  const int packed = f.width * 3;
  const size_t align = static_cast<size_t>(av_cpu_max_align());
  const bool direct = reinterpret_cast<uintptr_t>(out) % align == 0 && packed % align == 0;
  if (!direct && (!rgb || rgb->width != f.width || rgb->height != f.height)) {
    rgb.reset(av_frame_alloc());
    if (!rgb) return Status::IOError(Where(index) + "out of memory");
    rgb->format = AV_PIX_FMT_RGB24;
    rgb->width = f.width;
    rgb->height = f.height;
    const int err = av_frame_get_buffer(rgb.get(), 0);
    if (err < 0) {
      rgb.reset();
      return Status::IOError(Where(index) + "out of memory: " + AvErrorText(err));
    }
  }
  uint8_t* dst[4] = {direct ? out : rgb->data[0], nullptr, nullptr, nullptr};
  int dst_stride[4] = {direct ? packed : rgb->linesize[0], 0, 0, 0};
  const int rows = sws_scale(sws.get(), f.data, f.linesize, 0, f.height, dst, dst_stride);
  if (rows != f.height)
    return Status::Corruption(Where(index) + "conversion to rgb24 failed (" + PixFmtName(f.format) + ")");
  if (!direct)
    for (int y = 0; y < f.height; ++y)
      std::memcpy(out + static_cast<size_t>(y) * packed, rgb->data[0] + static_cast<ptrdiff_t>(y) * rgb->linesize[0],
                  packed);
  return Status::OK();
}

Status VideoReader::Impl::ConvertDepth(const AVFrame& f, int64_t index, uint16_t* out) {
  ++stats.frames_converted;
  if (f.width != info.width || f.height != info.height)
    return Status::Corruption(Where(index) + "decoded as " + std::to_string(f.width) + "x" +
                              std::to_string(f.height) + ", the stream is " +
                              std::to_string(info.width) + "x" + std::to_string(info.height));
  const size_t w = static_cast<size_t>(f.width);
  for (int y = 0; y < f.height; ++y) {
    const auto* row = reinterpret_cast<const uint16_t*>(f.data[0] + static_cast<ptrdiff_t>(y) * f.linesize[0]);
    uint16_t* dst = out + y * w;
    switch (f.format) {
      case AV_PIX_FMT_GRAY12LE: {
        const uint16_t* mm = CodeToMmTable();
        for (size_t x = 0; x < w; ++x) dst[x] = mm[std::min<uint16_t>(row[x], kDepthMaxCode)];
        break;
      }
      case AV_PIX_FMT_GRAY16LE: std::memcpy(dst, row, w * sizeof(uint16_t)); break;
      case AV_PIX_FMT_GRAY16BE:
        for (size_t x = 0; x < w; ++x) dst[x] = static_cast<uint16_t>((row[x] >> 8) | (row[x] << 8));
        break;
      default:
        return Status::NotSupported(Where(index) + "depth frames must be gray12le or gray16le, "
                                    "found " + PixFmtName(f.format));
    }
  }
  return Status::OK();
}

namespace {

// Validates indices and output size; returns the ascending unique indices and, for
// each asked position, its place in them.
Status PlanRead(const VideoReader::Impl& m, std::span<const int64_t> indices, size_t out_size,
                size_t frame_values, std::vector<int64_t>* sorted, std::vector<size_t>* slot) {
  if (out_size != indices.size() * frame_values)
    return Status::Invalid(m.path + ": output buffer holds " + std::to_string(out_size) +
                           " values, " + std::to_string(indices.size()) + " frames of " +
                           std::to_string(m.info.width) + "x" + std::to_string(m.info.height) +
                           " need " + std::to_string(indices.size() * frame_values));
  for (int64_t i : indices)
    if (i < 0 || i >= m.info.frames)
      return Status::Invalid(m.path + ": frame " + std::to_string(i) + " is out of range: the file has " +
                             std::to_string(m.info.frames) + " frames" +
                             (m.info.frames > 0 ? " (0.." + std::to_string(m.info.frames - 1) + ")"
                                                : std::string()));
  sorted->assign(indices.begin(), indices.end());
  std::sort(sorted->begin(), sorted->end());
  sorted->erase(std::unique(sorted->begin(), sorted->end()), sorted->end());
  slot->clear();
  for (int64_t i : indices)
    slot->push_back(std::lower_bound(sorted->begin(), sorted->end(), i) - sorted->begin());
  return Status::OK();
}

// Runs `convert(frame, index, dst)` once per distinct frame into the first asked
// position of that frame, then copies it to the positions that repeat it.
template <typename T, typename Convert>
Status ReadInto(VideoReader::Impl& m, std::span<const int64_t> indices, std::span<T> out,
                size_t frame_values, Convert convert) {
  std::vector<int64_t> sorted;
  std::vector<size_t> slot;
  REEL_RETURN_IF_ERROR(PlanRead(m, indices, out.size(), frame_values, &sorted, &slot));
  std::vector<size_t> first(sorted.size(), SIZE_MAX);
  for (size_t p = 0; p < slot.size(); ++p)
    if (first[slot[p]] == SIZE_MAX) first[slot[p]] = p;
  REEL_RETURN_IF_ERROR(m.ReadSorted(sorted, VideoReader::Impl::Policy::kAuto,
                                    [&](size_t k, const AVFrame& f) {
                                      return convert(f, sorted[k], out.data() + first[k] * frame_values);
                                    }));
  for (size_t p = 0; p < slot.size(); ++p)
    if (first[slot[p]] != p)
      std::copy_n(out.data() + first[slot[p]] * frame_values, frame_values, out.data() + p * frame_values);
  return Status::OK();
}

}  // namespace

Status VideoReader::ReadRgb(std::span<const int64_t> indices, std::span<uint8_t> out) {
  Impl& m = *impl_;
  if (m.info.depth)
    return Status::Invalid(m.path + ": is a depth stream (" + m.info.codec + " " + m.info.pix_fmt +
                           "); read it with ReadDepth");
  const size_t values = static_cast<size_t>(m.info.width) * m.info.height * 3;
  return ReadInto(m, indices, out, values, [&m](const AVFrame& f, int64_t i, uint8_t* dst) {
    return m.ConvertRgb(f, i, dst);
  });
}

Status VideoReader::ReadDepth(std::span<const int64_t> indices, std::span<uint16_t> out) {
  Impl& m = *impl_;
  if (!m.info.depth)
    return Status::Invalid(m.path + ": is not a depth stream (" + m.info.codec + " " +
                           m.info.pix_fmt + "; depth is 12-bit gray HEVC or FFV1 gray16le)");
  const size_t values = static_cast<size_t>(m.info.width) * m.info.height;
  return ReadInto(m, indices, out, values, [&m](const AVFrame& f, int64_t i, uint16_t* dst) {
    return m.ConvertDepth(f, i, dst);
  });
}

}  // namespace reel
