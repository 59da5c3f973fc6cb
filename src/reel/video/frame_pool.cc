// FramePool (see reel/video.h): batches of frames from many files, decoded by per-file
// jobs on a pool of threads and scattered into their output slots.
#include <algorithm>
#include <array>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
#include <libavutil/mem.h>
}

#include "util/parallel.h"
#include "video/frame_plan.h"
#include "video/reader_impl.h"

namespace reel {

namespace internal {

std::vector<FrameJob> PlanFrameJobs(std::span<const FrameTarget> targets) {
  std::map<uint32_t, FrameJob> by_file;
  for (size_t k = 0; k < targets.size(); ++k) {
    FrameJob& job = by_file[targets[k].file];
    job.file = targets[k].file;
    job.frames.push_back(targets[k].index);
    job.targets.push_back(k);
  }
  std::vector<FrameJob> jobs;
  jobs.reserve(by_file.size());
  for (auto& [file, job] : by_file) {
    std::sort(job.frames.begin(), job.frames.end());
    job.frames.erase(std::unique(job.frames.begin(), job.frames.end()), job.frames.end());
    jobs.push_back(std::move(job));
  }
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const FrameJob& a, const FrameJob& b) { return a.frames.size() > b.frames.size(); });
  return jobs;
}

}  // namespace internal

namespace {

// value / 255.0f for every byte value: the same float32 quotient as dividing each time.
const std::array<float, 256>& UnitTable() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  return table;
}

template <typename T>
T Value(uint8_t v);
template <>
uint8_t Value<uint8_t>(uint8_t v) { return v; }
template <>
float Value<float>(uint8_t v) { return UnitTable()[v]; }

// One packed RGB24 frame (pixels values * 3) into `dst` in `layout`.
template <typename T>
void WriteFrame(const uint8_t* rgb, size_t pixels, FrameLayout layout, T* dst) {
  if (layout == FrameLayout::kHwc) {
    if constexpr (std::is_same_v<T, uint8_t>)
      std::memcpy(dst, rgb, pixels * 3);
    else
      for (size_t i = 0; i < pixels * 3; ++i) dst[i] = Value<T>(rgb[i]);
    return;
  }
  T* r = dst;
  T* g = dst + pixels;
  T* b = dst + 2 * pixels;
  for (size_t i = 0; i < pixels; ++i) {
    r[i] = Value<T>(rgb[3 * i]);
    g[i] = Value<T>(rgb[3 * i + 1]);
    b[i] = Value<T>(rgb[3 * i + 2]);
  }
}

void WriteTarget(const uint8_t* rgb, const FrameOutput& o, int64_t slot) {
  const size_t pixels = static_cast<size_t>(o.width) * o.height;
  if (o.dtype == FrameDtype::kUint8)
    WriteFrame(rgb, pixels, o.layout, static_cast<uint8_t*>(o.data) + slot * pixels * 3);
  else
    WriteFrame(rgb, pixels, o.layout, static_cast<float*>(o.data) + slot * pixels * 3);
}

// Checks every target against the files and outputs before anything is decoded.
Status CheckTargets(std::span<const std::string> files, std::span<const FrameTarget> targets,
                    std::span<const FrameOutput> outputs) {
  for (const FrameOutput& o : outputs)
    if (!o.data || o.slots < 0 || o.width <= 0 || o.height <= 0)
      return Status::Invalid("frame batch: an output has no buffer or no frame size");
  for (const FrameTarget& t : targets) {
    if (t.file >= files.size())
      return Status::Invalid("frame batch: a target names file " + std::to_string(t.file) + " of " +
                             std::to_string(files.size()));
    if (t.output >= outputs.size())
      return Status::Invalid("frame batch: a target names output " + std::to_string(t.output) + " of " +
                             std::to_string(outputs.size()));
    if (t.slot < 0 || t.slot >= outputs[t.output].slots)
      return Status::Invalid("frame batch: slot " + std::to_string(t.slot) + " is outside output " +
                             std::to_string(t.output) + " (" + std::to_string(outputs[t.output].slots) +
                             " slots)");
  }
  return Status::OK();
}

struct AvFree {
  void operator()(uint8_t* p) const { av_free(p); }
};

}  // namespace

struct FramePool::Impl {
  FramePoolOptions options;
  mutable std::mutex mu;  // guards idle and stats (jobs of one read run concurrently)
  std::list<std::pair<std::string, std::unique_ptr<VideoReader>>> idle;  // most recent first
  VideoReadStats stats;

  // An idle reader of `path`, or a newly opened one.
  Result<std::unique_ptr<VideoReader>> Checkout(const std::string& path) {
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto it = idle.begin(); it != idle.end(); ++it)
        if (it->first == path) {
          std::unique_ptr<VideoReader> r = std::move(it->second);
          idle.erase(it);
          return r;
        }
    }
    if (options.open) return options.open(path);
    VideoReaderOptions o;
    o.threads = 1;
    return VideoReader::Open(path, o);
  }

  // Keeps `reader` for the next read, its counts added to the pool's.
  void Return(const std::string& path, std::unique_ptr<VideoReader> reader) {
    std::unique_ptr<VideoReader> dropped;
    std::lock_guard<std::mutex> lock(mu);
    AddReadStats(reader->stats(), &stats);
    reader->ResetStats();
    idle.emplace_front(path, std::move(reader));
    if (idle.size() > options.max_idle_readers) {
      dropped = std::move(idle.back().second);
      idle.pop_back();
    }
  }

  Status RunJob(const internal::FrameJob& job, std::span<const std::string> files,
                std::span<const FrameTarget> targets, std::span<const FrameOutput> outputs);
};

Status FramePool::Impl::RunJob(const internal::FrameJob& job, std::span<const std::string> files,
                               std::span<const FrameTarget> targets, std::span<const FrameOutput> outputs) {
  const std::string& path = files[job.file];
  REEL_ASSIGN_OR_RETURN(std::unique_ptr<VideoReader> reader, Checkout(path));
  const VideoInfo& info = reader->info();
  if (info.depth)
    return Status::Invalid(path + ": is a depth stream (" + info.codec + " " + info.pix_fmt +
                           "); a frame batch reads RGB videos");
  for (size_t k : job.targets) {
    const FrameOutput& o = outputs[targets[k].output];
    if (o.width != info.width || o.height != info.height)
      return Status::Invalid(path + ": frames are " + std::to_string(info.width) + "x" +
                             std::to_string(info.height) + ", its batch output holds " +
                             std::to_string(o.width) + "x" + std::to_string(o.height));
  }
  const size_t frame_bytes = static_cast<size_t>(info.width) * info.height * 3;
  // Aligned as FFmpeg's frames are, so the converter writes into it directly.
  std::unique_ptr<uint8_t, AvFree> staging(static_cast<uint8_t*>(av_malloc(job.frames.size() * frame_bytes)));
  if (!staging) return Status::IOError(path + ": out of memory for " + std::to_string(job.frames.size()) + " frames");
  REEL_RETURN_IF_ERROR(
      reader->ReadRgb(job.frames, std::span<uint8_t>(staging.get(), job.frames.size() * frame_bytes)));
  for (size_t k : job.targets) {
    const size_t at = std::lower_bound(job.frames.begin(), job.frames.end(), targets[k].index) - job.frames.begin();
    WriteTarget(staging.get() + at * frame_bytes, outputs[targets[k].output], targets[k].slot);
  }
  Return(path, std::move(reader));
  return Status::OK();
}

FramePool::FramePool(FramePoolOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

FramePool::~FramePool() = default;

Status FramePool::Read(std::span<const std::string> files, std::span<const FrameTarget> targets,
                       std::span<const FrameOutput> outputs) {
  REEL_RETURN_IF_ERROR(CheckTargets(files, targets, outputs));
  const std::vector<internal::FrameJob> jobs = internal::PlanFrameJobs(targets);
  const int threads = impl_->options.threads > 0 ? impl_->options.threads
                                                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Status> results(jobs.size());
  internal::ParallelFor(static_cast<int64_t>(jobs.size()), threads, [&](int64_t j) {
    results[j] = impl_->RunJob(jobs[j], files, targets, outputs);
  });
  for (const Status& st : results) REEL_RETURN_IF_ERROR(st);
  return Status::OK();
}

VideoReadStats FramePool::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

void FramePool::ResetStats() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->stats = {};
}

size_t FramePool::open_readers() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->idle.size();
}

}  // namespace reel
