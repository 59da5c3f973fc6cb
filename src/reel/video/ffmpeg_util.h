// Small RAII and error helpers around FFmpeg's C API, shared by the video
// encoder and reader. Internal to src/reel/video/.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

#include <memory>
#include <string>

#include "reel/status.h"

namespace reel::video {

struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;
// Frees an AVIOContext made by OpenFsInput/OpenFsOutput (avio_fs.h) with its file
// handle (null: nothing). FFmpeg never frees a caller's I/O context itself.
void FreeFsIo(AVIOContext* pb);

// An opened demuxer (avformat_open_input), with its FileSystem I/O context.
struct InputDeleter {
  void operator()(AVFormatContext* f) const {
    AVIOContext* pb = (f->flags & AVFMT_FLAG_CUSTOM_IO) ? f->pb : nullptr;
    avformat_close_input(&f);
    FreeFsIo(pb);
  }
};
using InputPtr = std::unique_ptr<AVFormatContext, InputDeleter>;

// A muxer (avformat_alloc_output_context2), with its FileSystem I/O context if any.
// Freeing one that was not finished leaves its file as written so far.
struct OutputDeleter {
  void operator()(AVFormatContext* f) const {
    if (!f) return;
    AVIOContext* pb = (f->flags & AVFMT_FLAG_CUSTOM_IO) ? f->pb : nullptr;
    if (!pb && f->pb && !(f->oformat->flags & AVFMT_NOFILE)) avio_closep(&f->pb);
    avformat_free_context(f);
    FreeFsIo(pb);
  }
};
using OutputPtr = std::unique_ptr<AVFormatContext, OutputDeleter>;

// FFmpeg's message for an AVERROR code.
inline std::string AvErrorText(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

// "<path>: <what>: <FFmpeg's message>" as an IOError.
inline Status AvStatus(const std::string& path, const std::string& what, int err) {
  return Status::IOError(path + ": " + what + ": " + AvErrorText(err));
}

}  // namespace reel::video
