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

// Adds every count of `s` to `total` (readers' counts summed: ReadRgbAtTimestamps, FramePool).
inline void AddReadStats(const VideoReadStats& s, VideoReadStats* total) {
  total->requests += s.requests;
  total->seeks += s.seeks;
  total->threaded_seeks += s.threaded_seeks;
  total->packets_read += s.packets_read;
  total->packets_skippable += s.packets_skippable;
  total->frames_decoded += s.frames_decoded;
  total->frames_converted += s.frames_converted;
  total->drains += s.drains;
}

// A keyframe the reader can seek to.
struct KeyframeEntry {
  int64_t index = 0;    // its frame index (presentation order)
  // The timestamp the demuxer seeks it by: its presentation time. Demuxers take a seek
  // target as a pts (mov subtracts its decode shift before searching its dts index), so a
  // keyframe's dts would land the seek a keyframe early in a stream with B-frames.
  int64_t seek_ts = 0;
};

struct VideoReader::Impl {
  std::string path;
  VideoReaderOptions options;
  VideoInfo info;
  // The one handle every byte is read through (options.fs->OpenRandomAccess); the
  // demuxer, a packet scan's second demuxer and the mp4 box probe share it.
  std::shared_ptr<arrow::io::RandomAccessFile> file;

  video::InputPtr format;
  // Two decoders, opened on first use: for short runs after a seek (one thread, or slice
  // threads) and for long ones (frame threads; VideoReaderOptions::threads, SetDecoderThreads).
  // A seek picks one by the frames its run decodes; decoding continues on it until the next.
  video::CodecContextPtr decoder_one;
  video::CodecContextPtr decoder_many;  // never opened when options.threads == 1
  AVCodecContext* decoder = nullptr;    // the one in use since the last seek
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
  bool drained = false;     // ... or it was drained after a random run's targets
  bool exhausted = false;   // a draining decoder has handed out its last frame
  int64_t held_index = -1;  // frame index of `held`, -1 when none

  // The read in progress (Plan): the pts of its targets (ascending, as its sorted
  // frames); packets below skip_below_pts that are no target are sent with
  // non-reference frames skipped.
  std::vector<int64_t> want_pts;
  int64_t skip_below_pts = 0;
  // The run since the last seek (SeekTo): the targets want_pts[run_first..run_last] are
  // reached from it; run_sent of their packets were sent; drain_at_end: drain the
  // decoder once all were sent.
  size_t run_first = 0, run_last = 0, run_sent = 0;
  int64_t run_last_frame = 0;   // sorted[run_last]
  int64_t drained_through = 0;  // after a drain: no frame past this one was sent
  bool drain_at_end = false;
  // The last target of the previous read (-1: none), and whether this read continues it
  // forward (sequential reading: the multi-threaded decoder, no drain at the end).
  int64_t prev_last = -1;
  bool streaming = false;
  VideoReadStats stats;

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
  // Opens the one-thread decoder, or the multi-threaded one (`many`), once each.
  Status OpenDecoder(bool many);
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
  // To the keyframes[key] before sorted[k], on the decoder for the run of frames from
  // it (one thread, or many for a long run); resets the decode position.
  Status SeekTo(size_t key, const std::vector<int64_t>& sorted, size_t k, Policy policy);
  // Whether frame t is reached from frame `from` (decoded last) by decoding forward
  // rather than by a seek to t's keyframe.
  bool ForwardFrom(int64_t from, int64_t t) const;
  // The last position j >= k in `sorted` reached forward after a seek for sorted[k].
  size_t RunEnd(const std::vector<int64_t>& sorted, size_t k, Policy policy) const;
  // Sends the packet in `packet` to the decoder (skipping a non-target non-reference
  // frame, draining after the read's last target).
  Status SendPacket(int64_t wanted);
  // Sets want_pts, skip_below_pts and streaming for a read of `sorted`; Corruption when a
  // target is past the frames the packets hold (a rescan found fewer than the index said).
  Status Plan(const std::vector<int64_t>& sorted);
  // Decodes the next frame in presentation order into `frame`; *eof at the end.
  Status DecodeNext(int64_t wanted, bool* eof);
  // Frame index of a decoded frame, or -1 (with *mismatch) when its pts is not in frame_pts.
  int64_t IndexOf(const AVFrame& f, bool* mismatch) const;
  size_t KeyAtOrBefore(int64_t index) const;
  Status ReadSortedOnce(const std::vector<int64_t>& sorted, Policy policy, const Sink& sink,
                        bool* mismatch);
};

}  // namespace reel
