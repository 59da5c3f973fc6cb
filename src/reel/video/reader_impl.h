// Internal: VideoReader's state, shared by reader.cc (open, frame index,
// decoding by index) and reader_at.cc (decoding by timestamp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "reel/fs.h"
#include "reel/video.h"
#include "video/ffmpeg_util.h"

namespace arrow::io {
class RandomAccessFile;
}

namespace reel {

namespace video {
// The pixel format's FFmpeg name, or "unknown".
inline std::string PixFmtName(int format) {
  const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(format));
  return name ? name : "unknown";
}
}  // namespace video

// A keyframe the reader can seek to.
struct KeyframeEntry {
  int64_t index = 0;    // its frame index (presentation order)
  int64_t seek_ts = 0;  // the timestamp the demuxer seeks it by (index timestamp, or dts/pts)
};

struct VideoReader::Impl {
  std::string path;
  VideoReaderOptions options;
  VideoInfo info;
  // The one handle every byte is read through (options.fs->OpenRandomAccess); the
  // demuxer, a packet scan's second demuxer and the mp4 box probe share it.
  std::shared_ptr<arrow::io::RandomAccessFile> file;

  video::InputPtr format;
  video::CodecContextPtr decoder;  // null until the first read
  video::FramePtr frame;  // the decoder's output
  video::FramePtr held;   // a reference to the last frame handed out (served again on a repeat)
  video::PacketPtr packet;
  AVStream* stream = nullptr;

  // Presentation timestamps of every frame, ascending: frame i has pts frame_pts[i].
  // Either derived from the demuxer's packet index (its decode timestamps shifted by
  // the first packet's pts - dts; pts_exact false, verified against every decoded
  // frame), or read from every packet by a scan (pts_exact true), which also replaces
  // a derived list that a decoded frame contradicts. Empty until needed when only a
  // frame count is known.
  std::vector<int64_t> frame_pts;
  bool pts_exact = false;
  std::vector<KeyframeEntry> keyframes;  // ascending by index

  // Decode position: frame index of the last frame the decoder returned since the
  // last seek (-1: none yet).
  int64_t last_out = -1;
  int64_t seek_index = 0;   // frame index of the keyframe the last seek aimed at
  bool positioned = false;  // a seek has placed the demuxer; decoding forward is meaningful
  bool draining = false;    // the demuxer hit its end and the decoder was sent a flush packet
  int64_t held_index = -1;  // frame index of `held`, -1 when none

  // Converters, rebuilt when the decoded frame's format or colour description changes.
  video::SwsPtr sws;
  video::FramePtr rgb;  // aligned RGB24 staging frame
  int sws_key[5] = {-1, -1, -1, -1, -1};

  // How the indices of one read are reached: kAuto seeks whenever decoding forward
  // would cost more; kOneSeek seeks at most once (before the first target) and then
  // only decodes forward (a timestamp cluster).
  enum class Policy { kAuto, kOneSeek };

  // Reads the frames `sorted` (ascending, no repeats) and calls sink(k, frame) with
  // the position k in `sorted` of every frame as it is decoded.
  using Sink = std::function<Status(size_t k, const AVFrame& frame)>;
  Status ReadSorted(const std::vector<int64_t>& sorted, Policy policy, const Sink& sink);

  // Builds frame_pts/keyframes by reading every packet of the stream (no decoding).
  Status ScanPackets();
  // Opens the decoder (once; the first read does).
  Status OpenDecoder();
  // Makes frame_pts available (a scan when only a frame count is known).
  Status EnsureFramePts();
  // Frame `frame` as packed RGB24 (width*height*3 bytes) into `out`.
  Status ConvertRgb(const AVFrame& frame, int64_t index, uint8_t* out);
  // Frame `frame` as millimetres (width*height) into `out`.
  Status ConvertDepth(const AVFrame& frame, int64_t index, uint16_t* out);

  // "<path>: frame <i>: "
  std::string Where(int64_t index) const {
    return path + ": frame " + std::to_string(index) + ": ";
  }
  double TimeOf(int64_t pts) const {
    return static_cast<double>(pts) * info.time_base_num / info.time_base_den;
  }

 private:
  Status SeekTo(size_t key);  // to keyframes[key]; resets the decode position
  // Decodes the next frame in presentation order into `frame`; *eof at the end.
  Status DecodeNext(int64_t wanted, bool* eof);
  // Frame index of a decoded frame, or -1 (with *mismatch) when its pts is not in frame_pts.
  int64_t IndexOf(const AVFrame& f, bool* mismatch) const;
  size_t KeyAtOrBefore(int64_t index) const;
  Status ReadSortedOnce(const std::vector<int64_t>& sorted, Policy policy, const Sink& sink,
                        bool* mismatch);
};

}  // namespace reel
