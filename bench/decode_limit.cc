// reel_decode_limit: the decode limit beside reel's frame reads (issue 16, goal 2).
//
// Plain libavformat/libavcodec/libswscale, no reel code: for each request it decodes
// exactly the frames that request needs and converts the target, so bench/bench_video.py
// can print reel as a fraction of it.
//
//   random (--indices i,j,...): per index, seek to the keyframe at or before the frame
//     (keyframe and pts tables built from the packets before the clock starts), send the
//     packets in decode order up to the target's own packet, with the decoder told to skip
//     frames nothing refers to (skip_frame = AVDISCARD_NONREF, except for the target's
//     packet: those frames cannot change the target), then drain the decoder (no packet
//     after the target's is decoded) and convert the target.
//   sequential (--sequential N): the first N frames in order, each converted.
//
// Conversion: rgb24 through swscale with the settings of `ffmpeg -i F -pix_fmt rgb24`
// (bicubic, MPEG-2 chroma siting for yuv420p, the frame's colour matrix and range) into
// an aligned frame (no copy out); --depth: a 12-bit log-code frame to millimetres by a
// 4096-entry table. Threads: --threads N (decoder thread_count; 0 = one per CPU, as reel's VideoReader).
//
// Output: one JSON object on stdout, {"times_s": [per rep], "requests", "packets_sent",
// "frames_decoded", "skipped", ...} (counts of the last rep); --dump FILE writes the
// converted frames of the first rep (packed rgb24 or uint16 mm) to check them against reel.
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/cpu.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Die(const std::string& what, int err = 0) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = "";
  if (err) av_strerror(err, buf, sizeof buf);
  std::fprintf(stderr, "reel_decode_limit: %s%s%s\n", what.c_str(), err ? ": " : "", buf);
  std::exit(1);
}

struct Args {
  std::string path;
  std::vector<int64_t> indices;  // random mode
  int64_t sequential = 0;        // sequential mode: frames
  int threads = 1;
  int reps = 1;
  bool depth = false;
  bool skip_nonref = true;
  std::string dump;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Die(s + " needs a value");
      return argv[++i];
    };
    if (s == "--indices") {
      const std::string v = next();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        a.indices.push_back(std::stoll(v.substr(p, q - p)));
        p = q + 1;
      }
    } else if (s == "--sequential") {
      a.sequential = std::stoll(next());
    } else if (s == "--threads") {
      a.threads = std::stoi(next());
    } else if (s == "--reps") {
      a.reps = std::stoi(next());
    } else if (s == "--depth") {
      a.depth = true;
    } else if (s == "--no-skip-nonref") {
      a.skip_nonref = false;
    } else if (s == "--dump") {
      a.dump = next();
    } else if (!s.empty() && s[0] != '-' && a.path.empty()) {
      a.path = s;
    } else {
      Die("usage: reel_decode_limit FILE (--indices I,J,... | --sequential N) [--threads N] "
          "[--reps R] [--depth] [--no-skip-nonref] [--dump FILE]");
    }
  }
  if (a.path.empty() || (a.indices.empty() == (a.sequential == 0))) Die("give FILE and one of --indices, --sequential");
  return a;
}

struct Counts {
  int64_t seeks = 0, packets_sent = 0, frames_decoded = 0, frames_converted = 0;
};

class Limit {
 public:
  explicit Limit(const Args& a) : args_(a) {
    int err = avformat_open_input(&fmt_, a.path.c_str(), nullptr, nullptr);
    if (err < 0) Die(a.path, err);
    if ((err = avformat_find_stream_info(fmt_, nullptr)) < 0) Die(a.path + ": stream info", err);
    stream_ = av_find_best_stream(fmt_, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (stream_ < 0) Die(a.path + ": no video stream", stream_);
    for (unsigned i = 0; i < fmt_->nb_streams; ++i)
      if (static_cast<int>(i) != stream_) fmt_->streams[i]->discard = AVDISCARD_ALL;
    pkt_ = av_packet_alloc();
    frame_ = av_frame_alloc();
    Scan();
    OpenDecoder();
  }

  // Frame pts (ascending) and, per frame, the timestamp to seek the keyframe at or before
  // it by: its pts, as PyAV's seek (mov's index holds timestamps shifted by the edit list,
  // so a keyframe's dts can land a seek a GOP early).
  void Scan() {
    std::vector<std::pair<int64_t, int64_t>> keys;  // (pts, dts)
    while (av_read_frame(fmt_, pkt_) >= 0) {
      if (pkt_->stream_index == stream_) {
        pts_.push_back(pkt_->pts);
        if (pkt_->flags & AV_PKT_FLAG_KEY) keys.emplace_back(pkt_->pts, pkt_->pts);
      }
      av_packet_unref(pkt_);
    }
    std::sort(pts_.begin(), pts_.end());
    std::sort(keys.begin(), keys.end());
    key_dts_.resize(pts_.size());
    size_t k = 0;
    for (size_t i = 0; i < pts_.size(); ++i) {
      while (k + 1 < keys.size() && keys[k + 1].first <= pts_[i]) ++k;
      key_dts_[i] = keys.empty() ? pts_.front() : keys[k].second;
    }
  }

  void OpenDecoder() {
    const AVCodecParameters* par = fmt_->streams[stream_]->codecpar;
    const AVCodec* codec = avcodec_find_decoder(par->codec_id);
    if (!codec) Die(args_.path + ": no decoder");
    ctx_ = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(ctx_, par);
    ctx_->thread_count = args_.threads > 0 ? args_.threads : std::max(1, av_cpu_count());
    ctx_->pkt_timebase = fmt_->streams[stream_]->time_base;
    const int err = avcodec_open2(ctx_, codec, nullptr);
    if (err < 0) Die(args_.path + ": opening the decoder", err);
    width_ = par->width;
    height_ = par->height;
  }

  int64_t frames() const { return static_cast<int64_t>(pts_.size()); }

  // One random request: seek, decode up to the target's packet, drain, convert.
  void ReadOne(int64_t index, Counts* c, std::FILE* dump) {
    const int64_t target = pts_.at(index);
    int err = av_seek_frame(fmt_, stream_, key_dts_[index], AVSEEK_FLAG_BACKWARD);
    if (err < 0) Die(args_.path + ": seek", err);
    avcodec_flush_buffers(ctx_);
    ++c->seeks;
    bool sent_target = false;
    while (!sent_target) {
      if ((err = av_read_frame(fmt_, pkt_)) < 0) Die(args_.path + ": the target's packet never came", err);
      if (pkt_->stream_index != stream_) {
        av_packet_unref(pkt_);
        continue;
      }
      sent_target = pkt_->pts == target;
      ctx_->skip_frame = args_.skip_nonref && !sent_target ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
      err = avcodec_send_packet(ctx_, pkt_);
      av_packet_unref(pkt_);
      if (err < 0) Die(args_.path + ": send", err);
      ++c->packets_sent;
      if (ReceiveUntil(target, c, dump)) return;
    }
    avcodec_send_packet(ctx_, nullptr);  // drain: the target comes out without later packets
    if (!ReceiveUntil(target, c, dump)) Die(args_.path + ": the target frame never came out");
  }

  // Receives what the decoder has; converts and returns true on the target's pts.
  bool ReceiveUntil(int64_t target, Counts* c, std::FILE* dump) {
    for (;;) {
      const int err = avcodec_receive_frame(ctx_, frame_);
      if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return false;
      if (err < 0) Die(args_.path + ": decode", err);
      ++c->frames_decoded;
      const int64_t ts = frame_->pts != AV_NOPTS_VALUE ? frame_->pts : frame_->best_effort_timestamp;
      if (ts == target) {
        Convert(c, dump);
        av_frame_unref(frame_);
        return true;
      }
      av_frame_unref(frame_);
    }
  }

  void Sequential(int64_t n, Counts* c, std::FILE* dump) {
    av_seek_frame(fmt_, stream_, key_dts_[0], AVSEEK_FLAG_BACKWARD);
    avcodec_flush_buffers(ctx_);
    ctx_->skip_frame = AVDISCARD_DEFAULT;
    int64_t got = 0;
    bool eof = false;
    while (got < n) {
      int err = avcodec_receive_frame(ctx_, frame_);
      if (err == 0) {
        ++c->frames_decoded;
        Convert(c, dump);
        av_frame_unref(frame_);
        ++got;
        continue;
      }
      if (err != AVERROR(EAGAIN) || eof) Die(args_.path + ": sequential decode ended early", err);
      err = av_read_frame(fmt_, pkt_);
      if (err == AVERROR_EOF) {
        eof = true;
        avcodec_send_packet(ctx_, nullptr);
        continue;
      }
      if (err < 0) Die(args_.path + ": read", err);
      if (pkt_->stream_index == stream_) {
        avcodec_send_packet(ctx_, pkt_);
        ++c->packets_sent;
      }
      av_packet_unref(pkt_);
    }
  }

  void Convert(Counts* c, std::FILE* dump) {
    ++c->frames_converted;
    const AVFrame& f = *frame_;
    if (args_.depth) {
      if (f.format != AV_PIX_FMT_GRAY12LE) Die(args_.path + ": --depth needs gray12le frames");
      mm_.resize(static_cast<size_t>(f.width) * f.height);
      const uint16_t* lut = CodeToMm();
      for (int y = 0; y < f.height; ++y) {
        const auto* row = reinterpret_cast<const uint16_t*>(f.data[0] + static_cast<ptrdiff_t>(y) * f.linesize[0]);
        uint16_t* dst = mm_.data() + static_cast<size_t>(y) * f.width;
        for (int x = 0; x < f.width; ++x) dst[x] = lut[std::min<uint16_t>(row[x], 4095)];
      }
      if (dump) std::fwrite(mm_.data(), 2, mm_.size(), dump);
      return;
    }
    SetupSws(f);
    sws_scale(sws_, f.data, f.linesize, 0, f.height, rgb_->data, rgb_->linesize);
    if (dump)
      for (int y = 0; y < f.height; ++y)
        std::fwrite(rgb_->data[0] + static_cast<ptrdiff_t>(y) * rgb_->linesize[0], 1, f.width * 3, dump);
  }

  // The conversion `ffmpeg -i F -pix_fmt rgb24` makes, built once.
  void SetupSws(const AVFrame& f) {
    if (sws_) return;
    sws_ = sws_alloc_context();
    av_opt_set_int(sws_, "srcw", f.width, 0);
    av_opt_set_int(sws_, "srch", f.height, 0);
    av_opt_set_int(sws_, "src_format", f.format, 0);
    av_opt_set_int(sws_, "dstw", f.width, 0);
    av_opt_set_int(sws_, "dsth", f.height, 0);
    av_opt_set_int(sws_, "dst_format", AV_PIX_FMT_RGB24, 0);
    av_opt_set_int(sws_, "sws_flags", SWS_BICUBIC, 0);
    if (f.format == AV_PIX_FMT_YUV420P) av_opt_set_int(sws_, "src_v_chr_pos", 128, 0);
    if (sws_init_context(sws_, nullptr, nullptr) < 0) Die(args_.path + ": swscale");
    int *inv = nullptr, *tab = nullptr, in_full = 0, out_full = 0, b = 0, ct = 0, sat = 0;
    if (sws_getColorspaceDetails(sws_, &inv, &in_full, &tab, &out_full, &b, &ct, &sat) >= 0) {
      const int* coef = sws_getCoefficients(f.colorspace);
      if (f.color_range != AVCOL_RANGE_UNSPECIFIED) in_full = f.color_range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails(sws_, coef, in_full, coef, out_full, b, ct, sat);
    }
    rgb_ = av_frame_alloc();
    rgb_->format = AV_PIX_FMT_RGB24;
    rgb_->width = f.width;
    rgb_->height = f.height;
    if (av_frame_get_buffer(rgb_, 0) < 0) Die("out of memory");
  }

  static const uint16_t* CodeToMm() {
    static std::vector<uint16_t> t = [] {
      std::vector<uint16_t> v(4096);
      for (int c = 0; c < 4096; ++c)
        v[c] = static_cast<uint16_t>(std::lrint(std::exp(std::log(100.0) + c * std::log(50.0) / 4095)));
      return v;
    }();
    return t.data();
  }

 private:
  const Args& args_;
  AVFormatContext* fmt_ = nullptr;
  AVCodecContext* ctx_ = nullptr;
  AVPacket* pkt_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVFrame* rgb_ = nullptr;
  SwsContext* sws_ = nullptr;
  int stream_ = -1, width_ = 0, height_ = 0;
  std::vector<int64_t> pts_, key_dts_;
  std::vector<uint16_t> mm_;
};

}  // namespace

int main(int argc, char** argv) {
  av_log_set_level(AV_LOG_ERROR);
  const Args args = Parse(argc, argv);
  Limit limit(args);
  for (int64_t i : args.indices)
    if (i < 0 || i >= limit.frames()) Die("index " + std::to_string(i) + " out of range");
  if (args.sequential > limit.frames()) Die("--sequential beyond the file's frames");
  std::vector<double> times;
  Counts c;
  for (int rep = 0; rep < args.reps; ++rep) {
    std::FILE* dump = rep == 0 && !args.dump.empty() ? std::fopen(args.dump.c_str(), "wb") : nullptr;
    c = Counts{};
    const auto t0 = std::chrono::steady_clock::now();
    if (args.sequential > 0)
      limit.Sequential(args.sequential, &c, dump);
    else
      for (int64_t i : args.indices) limit.ReadOne(i, &c, dump);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (dump) std::fclose(dump);
  }
  std::printf("{\"mode\": \"%s\", \"threads\": %d, \"skip_nonref\": %s, \"requests\": %lld, \"times_s\": [",
              args.sequential > 0 ? "sequential" : "random", args.threads, args.skip_nonref ? "true" : "false",
              static_cast<long long>(args.sequential > 0 ? args.sequential : args.indices.size()));
  for (size_t i = 0; i < times.size(); ++i) std::printf("%s%.6f", i ? ", " : "", times[i]);
  std::printf("], \"seeks\": %lld, \"packets_sent\": %lld, \"frames_decoded\": %lld, \"frames_converted\": %lld}\n",
              static_cast<long long>(c.seeks), static_cast<long long>(c.packets_sent),
              static_cast<long long>(c.frames_decoded), static_cast<long long>(c.frames_converted));
  return 0;
}
