// Video: encoding while recording and frame-exact decoding, through FFmpeg's
// libraries (libavformat / libavcodec / libswscale) in process.
//
// The pooled layout's promise is "row i of the data parquet is frame i of every
// video of the episode" (contract §8). Encoders here write frame i with pts i in
// a time base of 1/fps, and decoders address frames by that index. Files that
// pack many episodes (LeRobot v3) are addressed by timestamp instead.
//
// Depth (reference-behaviour.md "Depth"): 12-bit gray HEVC .mp4 holding the log
// depth code (100-5000 mm, 4095 codes, range=full, qp=6, hvc1 tag), or FFV1
// gray16le .mkv holding millimetres. Readers decide by the file's container and
// codec (the task's video_extensions names the file), never by a fixed stream
// index: an older dual-stream .mkv (H.264 heatmap + FFV1) is read by finding its
// FFV1 stream.
//
// Thread safety: a VideoEncoder or VideoReader is used from one thread at a time;
// distinct objects are independent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reel/status.h"

namespace reel {

class FileSystem;

// ---- depth code ------------------------------------------------------------------------
inline constexpr int kDepthMinMm = 100;
inline constexpr int kDepthMaxMm = 5000;
inline constexpr int kDepthMaxCode = 4095;

// code = clip(rint((ln(mm) - ln 100) * 4095 / ln 50), 0, 4095); 0 mm (no depth) -> 0.
uint16_t DepthMmToCode(uint16_t mm);
// mm = rint(exp(ln 100 + code * ln 50 / 4095)); code 0 -> 100 mm.
uint16_t DepthCodeToMm(uint16_t code);

// ---- encoding --------------------------------------------------------------------------
enum class VideoKind {
  kRgb,        // RGB24 frames in, H.264 or HEVC .mp4 out
  kDepthHevc,  // uint16 mm in, 12-bit log code gray HEVC .mp4 out
  kDepthFfv1,  // uint16 mm in, FFV1 gray16le .mkv out (lossless)
};

struct VideoEncoderOptions {
  VideoKind kind = VideoKind::kRgb;
  int width = 0;
  int height = 0;
  double fps = 30.0;
  // RGB only. codec: "h264" (libx264) or "hevc" (libx265); pixel format yuv420p.
  std::string codec = "h264";
  // x264/x265 preset (RGB and 12-bit HEVC depth; FFV1 has none).
  std::string preset = "veryfast";
  int crf = 20;  // RGB only
  // Keyframe interval. Short, so a random frame decodes quickly (LeRobot uses 2).
  int gop = 2;
  // Encoder threads (0 = codec default). The recorder runs one encoder per slot on
  // its own thread, so 1 keeps a rig's many streams from oversubscribing the cores.
  int threads = 1;
  // Where the file is written (not owned; must outlive the encoder). Null =
  // DefaultFileSystem(). Every byte goes through one WritableFile of it: Append for
  // the stream, WriteAt when the muxer patches its headers (mp4 box sizes, Matroska
  // cues), so the file system must support WriteAt.
  FileSystem* fs = nullptr;
  // Finish() syncs the file (WritableFile::Sync) before closing it. Off: no fsync,
  // the caller makes the file durable itself.
  bool sync_on_finish = false;
};

// Whether this FFmpeg build can encode 12-bit gray HEVC (libx265 with gray12le).
bool HaveHevc12Encoder();

// The extension a stream of this kind is stored under: "mp4" or "mkv".
const char* VideoExtension(VideoKind kind);

// Writes one video file. Open() creates `path` through options.fs (the container
// is chosen by `kind`, not by the name, so a dotfile temp name works); Add*()
// encodes one frame with pts = number of frames added so far; Finish() flushes the
// encoder, writes the trailer and closes the file (fsync only with sync_on_finish).
// A write error of the file system is returned as that Status by the call that
// hit it (an Add*() or Finish()); the file is then incomplete and the encoder is
// unusable. Destroying an unfinished encoder closes the file as it is (the caller
// removes it).
class VideoEncoder {
 public:
  static Result<std::unique_ptr<VideoEncoder>> Open(const std::string& path,
                                                    const VideoEncoderOptions& options);
  ~VideoEncoder();

  // kRgb: width*height*3 bytes, packed RGB24, row-major.
  Status AddRgb(std::span<const uint8_t> rgb);
  // Depth kinds: width*height millimetres, row-major.
  Status AddDepth(std::span<const uint16_t> mm);
  // Re-encodes the previous frame (a gap or a dropped frame keeps row i = frame i).
  Status Repeat();
  Status Finish();

  int64_t frames() const;
  const VideoEncoderOptions& options() const;
  // What went into the file, for the episodes row's video_codec:
  // e.g. {"encoder": "libx264", "codec": "h264", "crf": 20, "preset": ..., "gop": 2}.
  std::string DescribeJson() const;

  struct Impl;

 private:
  explicit VideoEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- decoding --------------------------------------------------------------------------
struct VideoInfo {
  int width = 0;
  int height = 0;
  int64_t frames = 0;        // frames in the stream (counted from the packet index)
  int time_base_num = 0;     // the stream's time base
  int time_base_den = 1;
  double fps = 0;            // average frame rate
  std::string codec;         // e.g. "h264", "hevc", "ffv1"
  std::string pix_fmt;       // native pixel format, e.g. "yuv420p", "gray12le", "gray16le"
  bool depth = false;        // a depth stream (gray12le HEVC or FFV1 gray16le)
  int stream_index = 0;      // the stream read (the FFV1 stream of a dual-stream .mkv)
};

struct VideoReaderOptions {
  // Decoder threads (0 = chosen by the reader, 1 = one thread always). The reader picks
  // at every seek by the frames the run decodes, from the keyframe through its last
  // target: a long run (a frame far into its GOP, a batch, a sequential read) decodes on
  // frame threads, one per CPU this process may run on (H.264: libavcodec's own count, one
  // more, which its frame threads fill; HEVC only queued on it: 640x480 367 -> 410 fps,
  // 12-bit depth 86 -> 102, on 2 cores); a run of a few frames, which frame threading
  // would delay by a frame per thread and refill after the seek, decodes on one thread
  // (H.264) or on slice threads (HEVC's wavefronts, FFV1's slices). A value above 1 sets
  // the count for both. Measured: docs/benchmarks.md, "Decoder threads by run length".
  int threads = 0;
  // Where the file is read from (not owned; must outlive the reader). Null =
  // DefaultFileSystem(). Every byte is read through one OpenRandomAccess() handle
  // of it (ReadAt and GetSize; no whole-file download), so a ranged-read store
  // serves a random frame with a few reads.
  FileSystem* fs = nullptr;
};

// What a VideoReader did to serve its reads, counted since Open() (or ResetStats()), so
// that tests and benchmarks can check how a request was served.
struct VideoReadStats {
  int64_t requests = 0;          // reads served (a ReadRgb/ReadDepth call; each cluster of ReadRgbAt)
  int64_t seeks = 0;             // demuxer seeks to a keyframe (each flushes a decoder)
  int64_t threaded_seeks = 0;    // of those, seeks that chose the frame-threaded decoder (a long run)
  int64_t packets_read = 0;      // packets of the stream read and sent to the decoder
  int64_t packets_skippable = 0;  // of those, sent with non-reference frames skipped: no target,
                                 // before the read's last target, so nothing asked can need them
  int64_t frames_decoded = 0;    // frames the decoder returned
  int64_t frames_converted = 0;  // frames converted to RGB24 or millimetres (a repeat is copied)
  int64_t drains = 0;            // reads that drained the decoder after their last target's packet
                                 // (so no packet past it is decoded; the next read seeks)
};

// Reads one video file by frame index (pooled layout: row i = frame i) or by
// timestamp. Keeps its demuxer and decoder open between calls: reading forward
// decodes forward; it seeks to the keyframe before a target only when that is
// cheaper than decoding up to it. Frames no target needs and nothing refers to (non-reference
// frames before a read's last target) are skipped, and a random read (one that does not
// continue the previous read forward) drains the decoder after its last target instead of
// decoding packets past it. A read error of the file system is returned as
// that Status (code and message kept, e.g. IOError), never as a crash or a wrong
// frame; the next call tries again from a fresh seek.
class VideoReader {
 public:
  static Result<std::unique_ptr<VideoReader>> Open(const std::string& path,
                                                   const VideoReaderOptions& options = {});
  ~VideoReader();

  const VideoInfo& info() const;
  const std::string& path() const;

  // Frames `indices` (any order, repeats allowed) as RGB24 into `out`
  // (indices.size() * height * width * 3 bytes, in the order asked).
  Status ReadRgb(std::span<const int64_t> indices, std::span<uint8_t> out);
  // Depth frames as millimetres into `out` (indices.size() * height * width):
  // 12-bit HEVC through the inverse log code, FFV1 gray16le as stored.
  Status ReadDepth(std::span<const int64_t> indices, std::span<uint16_t> out);

  // Presentation time of frame i in seconds (pts * time_base).
  Result<double> FrameTime(int64_t index);

  // Counts of what the reads so far did (see VideoReadStats); ResetStats() zeroes them.
  const VideoReadStats& stats() const;
  void ResetStats();

  // The frames nearest to each target time (seconds, stream time), RGB24 into
  // `out`, in the order asked. Targets are sorted internally, split into
  // clusters where consecutive targets are more than `cluster_gap_s` apart, and
  // each cluster is served by one seek. Fails naming the file and the target
  // when no frame lies within `tolerance_s` of it.
  Status ReadRgbAt(std::span<const double> targets, double tolerance_s, std::span<uint8_t> out,
                   double cluster_gap_s = 1.0);

  struct Impl;

 private:
  // FramePool cuts a batch's frames of one file at its keyframes (see FramePool).
  friend class FramePool;
  explicit VideoReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One target of a multi-file timestamp read (LeRobot v3: a file packs many
// episodes; the frame time is the episode's from_timestamp + the row timestamp).
struct TimestampTarget {
  std::string path;
  double time_s = 0;
};

// Decodes each target's nearest frame, grouping targets by file (one reader per
// file), as RGB24 into `out` in the order asked. All files must share one frame
// size. Default tolerance: half a frame period of each file. `stats` (optional): the
// readers' counts, summed, added to it.
Status ReadRgbAtTimestamps(std::span<const TimestampTarget> targets, std::span<uint8_t> out,
                           double tolerance_s = -1, double cluster_gap_s = 1.0,
                           VideoReadStats* stats = nullptr);

// ---- batches: a decode pool ---------------------------------------------------------------

// How FramePool writes a frame into a batch output.
enum class FrameLayout {
  kHwc,  // (height, width, 3): packed RGB24, as ReadRgb
  kChw,  // (3, height, width): planes R, G, B (torch's image layout)
};
enum class FrameDtype {
  kUint8,    // the RGB24 values
  kFloat32,  // value / 255.0f: the float32 IEEE quotient, as numpy's and torch's x / 255
};

// One output of a batch read: `slots` frames of width x height, each written whole at
// data + slot * (width * height * 3 values of `dtype`). Not owned; the caller keeps it alive
// and untouched during the read.
struct FrameOutput {
  void* data = nullptr;
  int64_t slots = 0;
  int width = 0;
  int height = 0;
  FrameLayout layout = FrameLayout::kHwc;
  FrameDtype dtype = FrameDtype::kUint8;
};

// One frame of a batch: frame `index` of files[file] into slot `slot` of outputs[output].
struct FrameTarget {
  uint32_t file = 0;
  int64_t index = 0;
  uint32_t output = 0;
  int64_t slot = 0;
};

struct FramePoolOptions {
  // Threads that decode one batch (0 = the machine's cores). They are started by each Read()
  // and joined before it returns, so no thread outlives a call (a forked child inherits
  // none, and a pool copied into it by fork stays usable).
  int threads = 0;
  // Readers kept open between reads, least recently used dropped first. A file read by
  // two jobs at once in one batch holds two readers.
  size_t max_idle_readers = 32;
  // Opens a file for the pool. Null: VideoReader::Open(path, {threads = 1}) (a batch
  // reaches its frames by seeks and short runs, which one decoder thread serves best;
  // the pool's threads give the parallelism).
  std::function<Result<std::unique_ptr<VideoReader>>(const std::string& path)> open;
};

// Decodes batches of frames from many RGB video files on a pool of threads (a training
// loader's batch: frames of several episodes and cameras). Each Read() plans its decodes
// per file (VideoReader's seek plan over the file's distinct targets in ascending order:
// one seek per cluster of frames a keyframe reaches, no frame decoded twice in a read).
// With more than one thread it opens (or takes from its idle readers) one reader per file
// first and cuts a file's frames at its keyframes into up to `threads` jobs, each on its own
// reader, so that a batch of few files still keeps the threads busy: a cut falls only where
// the next frame's keyframe comes after the previous frame, so no GOP is decoded by two jobs
// and the frames decoded are those of one reader's read. It hands the jobs to the threads
// longest first and writes each target into its output slot in the layout and type asked,
// whatever the order of the targets; repeats are decoded once. Readers stay open between
// reads (max_idle_readers).
//
// Thread safety: one Read() at a time per pool; distinct pools are independent.
class FramePool {
 public:
  explicit FramePool(FramePoolOptions options = {});
  ~FramePool();
  FramePool(const FramePool&) = delete;
  FramePool& operator=(const FramePool&) = delete;

  // Reads every target. Invalid (nothing written) when a target names a file or output
  // that does not exist or a slot outside its output. Else a file's error (open, a depth
  // stream, a frame size unlike its output's, decode, a frame out of range) with its path,
  // the first by job order (files that did not open first), after every other job was read;
  // the slots of a failed job are left unwritten.
  Status Read(std::span<const std::string> files, std::span<const FrameTarget> targets,
              std::span<const FrameOutput> outputs);
  // The reads' counts, summed over readers, since construction or ResetStats().
  VideoReadStats stats() const;
  void ResetStats();
  // Readers open now (idle between reads).
  size_t open_readers() const;

  struct Impl;

 private:
  // The reader's state (its keyframe list) for planning a read's jobs.
  static const VideoReader::Impl& ReaderState(const VideoReader& reader);
  std::unique_ptr<Impl> impl_;
};

// ---- images ------------------------------------------------------------------------------
// One PNG through libavcodec's encoder: 8-bit RGB from packed RGB24 (width*height*3
// bytes), or 16-bit gray (e.g. depth millimetres; width*height values).
Result<std::string> EncodePngRgb(int width, int height, std::span<const uint8_t> rgb);
Result<std::string> EncodePngGray16(int width, int height, std::span<const uint16_t> gray);

}  // namespace reel
