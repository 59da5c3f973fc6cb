// reel._core video bindings: VideoReader (frames by index or by time, RGB or
// depth), FramePool (batches of frames on a pool of threads), Task.frames, and
// encode_rgb (benchmarks and tests). Type conversion,
// the GIL released around decoding and encoding, errors through RaiseStatus.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "binding.h"
#include "reel/metadata.h"
#include "reel/task.h"
#include "reel/video.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace reel {
namespace py {
namespace {

using U8Buffer = nb::ndarray<uint8_t, nb::c_contig, nb::device::cpu>;
using U16Buffer = nb::ndarray<uint16_t, nb::c_contig, nb::device::cpu>;
using RgbFrames = nb::ndarray<const uint8_t, nb::ndim<4>, nb::c_contig, nb::device::cpu>;

// A VideoReader is used from one thread at a time (reel/video.h); the GIL is
// released while it decodes, so the mutex keeps two Python threads off one reader.
// close() drops the decoder and the file; info stays readable.
struct PyVideoReader {
  std::unique_ptr<VideoReader> reader;
  std::string path;
  VideoInfo info;
  std::mutex mu;
};

Status ClosedError(const std::string& path) { return Status::Invalid(path + ": the reader is closed"); }

nb::dict InfoDict(const VideoInfo& v) {
  nb::dict d;
  d["width"] = v.width;
  d["height"] = v.height;
  d["frames"] = v.frames;
  d["fps"] = v.fps;
  d["codec"] = v.codec;
  d["pix_fmt"] = v.pix_fmt;
  d["depth"] = v.depth;
  d["time_base"] = nb::make_tuple(v.time_base_num, v.time_base_den);
  d["stream_index"] = v.stream_index;
  return d;
}

nb::dict StatsDict(const VideoReadStats& s) {
  nb::dict d;
  d["requests"] = s.requests;
  d["seeks"] = s.seeks;
  d["threaded_seeks"] = s.threaded_seeks;
  d["packets_read"] = s.packets_read;
  d["packets_skippable"] = s.packets_skippable;
  d["frames_decoded"] = s.frames_decoded;
  d["frames_converted"] = s.frames_converted;
  d["drains"] = s.drains;
  return d;
}

// The reader's counts (zeros once closed), read under its lock.
VideoReadStats ReaderStats(PyVideoReader& r, bool reset) {
  nb::gil_scoped_release release;
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.reader) return {};
  VideoReadStats s = r.reader->stats();
  if (reset) r.reader->ResetStats();
  return s;
}

std::span<const int64_t> Span(const IndexArray& a) { return {a.data(), a.shape(0)}; }

// Decodes `indices` into a new numpy array: RGB uint8 (n, H, W, 3) or depth
// uint16 (n, H, W). Called with the GIL held; releases it to decode. The sizes
// come from r.info (a copy), so a close() from another thread cannot pull the
// reader away before the lock is taken.
nb::object ReadFrames(PyVideoReader& r, std::span<const int64_t> wanted, bool depth) {
  if (!r.reader) RaiseStatus(ClosedError(r.path));
  const size_t n = wanted.size();
  const size_t pixels = static_cast<size_t>(r.info.width) * r.info.height;
  nb::object out = depth ? NumpyEmpty(nb::make_tuple(n, r.info.height, r.info.width), "uint16")
                         : NumpyEmpty(nb::make_tuple(n, r.info.height, r.info.width, 3), "uint8");
  uint16_t* mm = depth ? nb::cast<U16Buffer>(out).data() : nullptr;
  uint8_t* rgb = depth ? nullptr : nb::cast<U8Buffer>(out).data();
  Status st;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.reader)
      st = ClosedError(r.path);
    else if (depth)
      st = r.reader->ReadDepth(wanted, std::span<uint16_t>(mm, n * pixels));
    else
      st = r.reader->ReadRgb(wanted, std::span<uint8_t>(rgb, n * pixels * 3));
  }
  if (!st.ok()) RaiseStatus(st);
  return out;
}

// A path or a URI: the file is read through its store's FileSystem (ranged reads).
// Call without the GIL.
Result<std::unique_ptr<VideoReader>> OpenVideo(const std::string& path, int threads,
                                               const ObjectStoreOptions& storage) {
  REEL_ASSIGN_OR_RETURN(OpenedLocation loc, OpenLocation(path, storage));
  VideoReaderOptions options;
  options.threads = threads;
  options.fs = loc.fs.get();  // lives until process exit (object_store.h)
  return VideoReader::Open(loc.root, options);
}

std::unique_ptr<PyVideoReader> OpenReader(const std::string& path, int threads, const ObjectStoreOptions& storage) {
  Result<std::unique_ptr<VideoReader>> r = NotRunYet();
  {
    nb::gil_scoped_release release;
    r = OpenVideo(path, threads, storage);
  }
  auto out = std::make_unique<PyVideoReader>();
  out->reader = Unwrap(std::move(r));
  out->path = path;
  out->info = out->reader->info();
  return out;
}

nb::object ReadRgbAt(PyVideoReader& r, TimeArray times, double tolerance_s) {
  if (!r.reader) RaiseStatus(ClosedError(r.path));
  const VideoInfo& info = r.info;
  if (tolerance_s < 0) {  // default: half a frame period, as ReadRgbAtTimestamps
    if (!(info.fps > 0))
      RaiseStatus(Status::Invalid(r.path + ": no frame rate, so no default tolerance; pass one"));
    tolerance_s = 0.5 / info.fps;
  }
  const size_t n = times.shape(0);
  nb::object out = NumpyEmpty(nb::make_tuple(n, info.height, info.width, 3), "uint8");
  uint8_t* dst = nb::cast<U8Buffer>(out).data();
  Status st;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.reader)
      st = ClosedError(r.path);
    else
      st = r.reader->ReadRgbAt(std::span<const double>(times.data(), n), tolerance_s,
                               std::span<uint8_t>(dst, n * info.width * info.height * 3));
  }
  if (!st.ok()) RaiseStatus(st);
  return out;
}

// Encodes (n, H, W, 3) uint8 RGB frames to an H.264/HEVC .mp4 with VideoEncoder.
int64_t EncodeRgb(const std::string& path, RgbFrames frames, double fps, const std::string& codec,
                  const std::string& preset, int crf, int gop, int threads) {
  if (frames.shape(3) != 3)
    RaiseStatus(Status::Invalid(path + ": frames must be (n, height, width, 3) RGB, got last dimension " +
                                std::to_string(frames.shape(3))));
  VideoEncoderOptions o;
  o.kind = VideoKind::kRgb;
  o.height = static_cast<int>(frames.shape(1));
  o.width = static_cast<int>(frames.shape(2));
  o.fps = fps;
  o.codec = codec;
  o.preset = preset;
  o.crf = crf;
  o.gop = gop;
  o.threads = threads;
  const size_t n = frames.shape(0);
  const size_t bytes = static_cast<size_t>(o.width) * o.height * 3;
  Status st;
  int64_t written = 0;
  {
    nb::gil_scoped_release release;
    st = [&]() -> Status {
      REEL_ASSIGN_OR_RETURN(auto encoder, VideoEncoder::Open(path, o));
      for (size_t i = 0; i < n; ++i)
        REEL_RETURN_IF_ERROR(encoder->AddRgb(std::span<const uint8_t>(frames.data() + i * bytes, bytes)));
      REEL_RETURN_IF_ERROR(encoder->Finish());
      written = encoder->frames();
      return Status::OK();
    }();
  }
  if (!st.ok()) RaiseStatus(st);
  return written;
}


// A FramePool and the lock that keeps two Python threads off it (one Read at a time;
// the GIL is released while it decodes).
struct PyFramePool {
  std::unique_ptr<FramePool> pool;
  std::mutex mu;
};

// Targets as handed over by reel.torch: (n, 4) int64 rows of file, frame index, output, slot.
using TargetArray = nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using AnyBuffer = nb::ndarray<nb::c_contig, nb::device::cpu>;

std::unique_ptr<PyFramePool> MakeFramePool(int threads, size_t max_idle_readers, const ObjectStoreOptions& storage) {
  FramePoolOptions o;
  o.threads = threads;
  o.max_idle_readers = max_idle_readers;
  // A path or a URI, as VideoReader.open: one decoder thread (the pool's threads give the parallelism).
  o.open = [storage](const std::string& path) { return OpenVideo(path, 1, storage); };
  auto out = std::make_unique<PyFramePool>();
  out->pool = std::make_unique<FramePool>(std::move(o));
  return out;
}

// One batch output: a writable uint8 or float32 array whose last three dimensions are a
// frame, (H, W, 3) or (3, H, W); its leading dimensions are the slots.
FrameOutput ToOutput(AnyBuffer a, bool chw) {
  FrameOutput o;
  if (a.ndim() < 3) RaiseStatus(Status::Invalid("frame batch: an output needs (..., H, W, 3) or (..., 3, H, W) dimensions"));
  if (a.dtype() == nb::dtype<uint8_t>())
    o.dtype = FrameDtype::kUint8;
  else if (a.dtype() == nb::dtype<float>())
    o.dtype = FrameDtype::kFloat32;
  else
    RaiseStatus(Status::Invalid("frame batch: an output must be uint8 or float32"));
  const size_t d = a.ndim();
  const size_t channels = chw ? a.shape(d - 3) : a.shape(d - 1);
  if (channels != 3) RaiseStatus(Status::Invalid("frame batch: an output frame needs 3 channels"));
  o.layout = chw ? FrameLayout::kChw : FrameLayout::kHwc;
  o.height = static_cast<int>(chw ? a.shape(d - 2) : a.shape(d - 3));
  o.width = static_cast<int>(chw ? a.shape(d - 1) : a.shape(d - 2));
  o.slots = 1;
  for (size_t i = 0; i + 3 < d; ++i) o.slots *= static_cast<int64_t>(a.shape(i));
  o.data = a.data();
  return o;
}

void ReadBatch(PyFramePool& p, const std::vector<std::string>& files, TargetArray targets, nb::list outputs,
               bool chw) {
  if (targets.shape(1) != 4) RaiseStatus(Status::Invalid("frame batch: targets must be (n, 4) rows"));
  std::vector<FrameOutput> outs;
  for (nb::handle h : outputs) outs.push_back(ToOutput(nb::cast<AnyBuffer>(h), chw));
  std::vector<FrameTarget> ts(targets.shape(0));
  const int64_t* t = targets.data();
  for (size_t k = 0; k < ts.size(); ++k, t += 4) {
    if (t[0] < 0 || t[2] < 0) RaiseStatus(Status::Invalid("frame batch: a negative file or output"));
    ts[k] = {static_cast<uint32_t>(t[0]), t[1], static_cast<uint32_t>(t[2]), t[3]};
  }
  Status st;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(p.mu);
    st = p.pool->Read(files, ts, outs);
  }
  if (!st.ok()) RaiseStatus(st);
}

}  // namespace

nb::object TaskFrames(const Task& task, int64_t episode_index, const std::string& slot, IndexArray rows) {
  Result<std::unique_ptr<VideoReader>> reader = NotRunYet();
  {
    nb::gil_scoped_release release;
    reader = [&]() -> Result<std::unique_ptr<VideoReader>> {
      REEL_ASSIGN_OR_RETURN(EpisodeEntry e, task.FindEpisode(episode_index));
      const std::string* rel = Lookup(e.videos, slot);
      if (!rel) {
        std::string slots;
        for (const auto& [name, path] : e.videos) slots += (slots.empty() ? "" : ", ") + name;
        return Status::NotFound(task.root() + ": episode " + std::to_string(episode_index) +
                                " has no video for slot \"" + slot + "\" (its slots: " +
                                (slots.empty() ? "none" : slots) + ")");
      }
      VideoReaderOptions options;
      options.fs = task.fs();
      return VideoReader::Open(task.Path(*rel), options);
    }();
  }
  PyVideoReader r;
  r.reader = Unwrap(std::move(reader));
  r.path = r.reader->path();
  r.info = r.reader->info();
  // Rows to the slot's frames: the same at the task's rate; for a slot with its own rate the
  // reference reader's rule, clamped to the file's last frame (reel/metadata.h).
  std::vector<int64_t> frames(Span(rows).begin(), Span(rows).end());
  const double task_fps = task.info().fps, fps = task.info().SlotFps(slot);
  if (fps != task_fps)
    for (int64_t& f : frames) {
      if (f < 0) continue;  // the reader's error names it
      f = std::min(SlotFrameOfRow(f, task_fps, fps), std::max<int64_t>(r.info.frames - 1, 0));
    }
  return ReadFrames(r, frames, r.info.depth);
}

void BindVideo(nb::module_& m) {
  nb::class_<PyVideoReader>(m, "VideoReader",
                            "One video file opened for decoding by frame index or by time. Keeps its "
                            "demuxer and decoder open between calls; one call at a time per reader.")
      .def_static("open", &OpenReader, "path"_a, "threads"_a = 0, "storage"_a = ObjectStoreOptions(),
                  "Opens `path` (threads: decoder threads for long runs, 0 = one per CPU; random "
                  "reads decode on one thread).")
      .def_prop_ro("path", [](const PyVideoReader& r) { return r.path; })
      .def_prop_ro("info", [](const PyVideoReader& r) { return InfoDict(r.info); },
                   "width, height, frames, fps, codec, pix_fmt, depth, time_base (num, den), "
                   "stream_index.")
      .def_prop_ro("closed", [](const PyVideoReader& r) { return !r.reader; })
      .def(
          "read_rgb",
          [](PyVideoReader& r, IndexArray indices) { return ReadFrames(r, Span(indices), false); },
          "indices"_a, "Frames `indices` (int64, any order, repeats allowed) as uint8 (n, H, W, 3) RGB24.")
      .def(
          "read_depth",
          [](PyVideoReader& r, IndexArray indices) { return ReadFrames(r, Span(indices), true); },
          "indices"_a, "Depth frames `indices` as uint16 (n, H, W) millimetres.")
      .def("read_rgb_at", &ReadRgbAt, "times_s"_a, "tolerance_s"_a = -1.0,
           "The frames nearest to `times_s` (float64 seconds) as uint8 (n, H, W, 3); tolerance_s < 0 "
           "means half a frame period.")
      .def(
          "stats", [](PyVideoReader& r, bool reset) { return StatsDict(ReaderStats(r, reset)); },
          "reset"_a = false,
          "What the reads so far did: requests, seeks, threaded_seeks, packets_read, "
          "packets_skippable, frames_decoded, frames_converted, drains (reel/video.h "
          "VideoReadStats); reset=True zeroes them after reading.")
      .def(
          "frame_time",
          [](PyVideoReader& r, int64_t index) {
            Result<double> t = NotRunYet();
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(r.mu);
              t = r.reader ? r.reader->FrameTime(index) : Result<double>(ClosedError(r.path));
            }
            return Unwrap(std::move(t));
          },
          "index"_a, "Presentation time of frame `index` in seconds.")
      .def(
          "close",
          [](PyVideoReader& r) {
            nb::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(r.mu);
            r.reader.reset();
          },
          "Closes the file; later reads raise reel.InvalidError.");

  nb::class_<PyFramePool>(m, "FramePool",
                          "Decodes batches of frames from many RGB videos on a pool of threads "
                          "(reel/video.h FramePool); readers stay open between batches.")
      .def(nb::new_(&MakeFramePool), "threads"_a = 0, "max_idle_readers"_a = 32,
           "storage"_a = ObjectStoreOptions(),
           "threads: decode threads of a batch (0 = the cores); max_idle_readers: readers kept open.")
      .def("read", &ReadBatch, "files"_a, "targets"_a, "outputs"_a, "chw"_a = true,
           "Decodes targets (int64 (n, 4) rows: file position in `files`, frame index, output "
           "position in `outputs`, slot) into the outputs (writable uint8 or float32 arrays, "
           "(..., 3, H, W) when chw else (..., H, W, 3); float32 = value / 255). The GIL is "
           "released while it decodes.")
      .def(
          "stats",
          [](PyFramePool& p, bool reset) {
            VideoReadStats s;
            {
              nb::gil_scoped_release release;
              std::lock_guard<std::mutex> lock(p.mu);
              s = p.pool->stats();
              if (reset) p.pool->ResetStats();
            }
            return StatsDict(s);
          },
          "reset"_a = false, "The batches' counts, summed over readers (as VideoReader.stats).")
      .def_prop_ro("open_readers", [](PyFramePool& p) {
        std::lock_guard<std::mutex> lock(p.mu);
        return p.pool->open_readers();
      });

  m.def("encode_rgb", &EncodeRgb, "path"_a, "frames"_a, "fps"_a = 30.0, "codec"_a = "h264",
        "preset"_a = "veryfast", "crf"_a = 20, "gop"_a = 2, "threads"_a = 1,
        "Encodes (n, H, W, 3) uint8 RGB frames into an .mp4 with reel's VideoEncoder (libx264 / "
        "libx265, yuv420p, frame i at pts i). Returns the frames written. For benchmarks and tests.");
}

}  // namespace py
}  // namespace reel
