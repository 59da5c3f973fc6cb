// SlotStream: the recorder's per-slot video pipeline (see VideoStream in
// reel/recorder.h for the timing rules the caller sees).
//
//   capture thread --Push()--> mailbox (latest frame) --Tick() at each row--> bounded
//   queue --encoder thread--> VideoEncoder --> temp file
//
// Memory is bounded by the queue: at most `queue_frames` frame buffers wait for
// the encoder; a repeated frame is a token without pixels. Buffers are recycled
// through a small pool, so steady-state recording allocates nothing per frame.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reel/recorder.h"
#include "reel/video.h"

namespace reel::internal {

struct SlotStreamOptions {
  std::string slot;
  VideoEncoderOptions encoder;  // kind, size, fps included
  std::string temp_path;        // absolute; the encoder writes here
  QueueFullPolicy queue_full = QueueFullPolicy::kBlock;
  int queue_frames = 8;
};

// Counters for the episodes row's drop_stats.
struct SlotDrops {
  int64_t repeated = 0;        // rows without a new frame: the previous one written again
  int64_t longest_gap_rows = 0;
  int64_t superseded = 0;      // frames pushed and replaced by a newer one before a row
  int64_t queue_dropped = 0;   // frames dropped because the encoder queue was full (kDrop)
};

class SlotStream final : public VideoStream {
 public:
  // Opens the encoder (errors are immediate) and starts the encoder thread.
  static Result<std::unique_ptr<SlotStream>> Open(SlotStreamOptions options);
  ~SlotStream() override;  // stops the thread; the temp file is left to the caller

  const std::string& slot() const override { return options_.slot; }
  Status PushRgb(std::span<const uint8_t> rgb) override;
  Status PushDepth(std::span<const uint16_t> mm) override;

  // One row: hands the latest pushed frame (or a repeat) to the encoder. Returns the
  // encoder's first error, if any.
  Status Tick();
  // Drains the queue, flushes the encoder and closes the file.
  Status Finish();

  int64_t frames_written() const;
  SlotDrops drops() const;
  std::string DescribeJson() const;
  const SlotStreamOptions& options() const { return options_; }

 private:
  using Buffer = std::unique_ptr<std::vector<uint8_t>>;
  struct Item {
    Buffer pixels;  // null: repeat the previous frame
  };
  explicit SlotStream(SlotStreamOptions options) : options_(std::move(options)) {}
  Status Push(const uint8_t* data, size_t bytes);
  Buffer TakeBuffer();
  void ReturnBuffer(Buffer b);
  void Run();  // the encoder thread
  Status Error() const;

  SlotStreamOptions options_;
  size_t frame_bytes_ = 0;
  std::unique_ptr<VideoEncoder> encoder_;

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  Buffer mailbox_;
  std::vector<Buffer> pool_;
  std::deque<Item> queue_;
  int buffered_ = 0;  // items in queue_ that hold pixels
  bool closing_ = false;
  Status error_;
  SlotDrops drops_;
  int64_t gap_rows_ = 0;
  std::thread thread_;
};

}  // namespace reel::internal
