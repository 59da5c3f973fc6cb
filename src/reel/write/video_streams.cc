// SlotStream (see video_streams.h).
#include "write/video_streams.h"

#include <cstring>

namespace reel::internal {

Result<std::unique_ptr<SlotStream>> SlotStream::Open(SlotStreamOptions options) {
  if (options.queue_frames < 1)
    return Status::Invalid("video.queue_frames must be >= 1, got " + std::to_string(options.queue_frames));
  std::unique_ptr<SlotStream> s(new SlotStream(std::move(options)));
  const VideoEncoderOptions& e = s->options_.encoder;
  s->frame_bytes_ = static_cast<size_t>(e.width) * e.height * (e.kind == VideoKind::kRgb ? 3 : 2);
  REEL_ASSIGN_OR_RETURN(s->encoder_, VideoEncoder::Open(s->options_.temp_path, e));
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

SlotStream::~SlotStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SlotStream::Buffer SlotStream::TakeBuffer() {  // mu_ held
  if (pool_.empty()) return std::make_unique<std::vector<uint8_t>>(frame_bytes_);
  Buffer b = std::move(pool_.back());
  pool_.pop_back();
  return b;
}

void SlotStream::ReturnBuffer(Buffer b) {  // mu_ held
  // Keep enough for the queue, the mailbox and one being filled; free the rest.
  if (b && pool_.size() < static_cast<size_t>(options_.queue_frames) + 2) pool_.push_back(std::move(b));
}

Status SlotStream::Push(const uint8_t* data, size_t bytes) {
  if (bytes != frame_bytes_) {
    const VideoEncoderOptions& e = options_.encoder;
    return Status::Invalid("video slot \"" + options_.slot + "\": a frame of " + std::to_string(bytes) +
                           " bytes; " + std::to_string(e.width) + "x" + std::to_string(e.height) +
                           (e.kind == VideoKind::kRgb ? " RGB24" : " uint16 depth") + " needs " +
                           std::to_string(frame_bytes_));
  }
  Buffer b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    b = TakeBuffer();
  }
  // Copy outside the lock: a camera thread must not stall the row thread.
  std::memcpy(b->data(), data, bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (mailbox_) {
    ++drops_.superseded;
    ReturnBuffer(std::move(mailbox_));
  }
  mailbox_ = std::move(b);
  return Status::OK();
}

Status SlotStream::PushRgb(std::span<const uint8_t> rgb) {
  if (options_.encoder.kind != VideoKind::kRgb)
    return Status::Invalid("video slot \"" + options_.slot + "\" is a depth slot; use PushDepth");
  return Push(rgb.data(), rgb.size());
}

Status SlotStream::PushDepth(std::span<const uint16_t> mm) {
  if (options_.encoder.kind == VideoKind::kRgb)
    return Status::Invalid("video slot \"" + options_.slot + "\" is an RGB slot; use PushRgb");
  return Push(reinterpret_cast<const uint8_t*>(mm.data()), mm.size_bytes());
}

Status SlotStream::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  Item item;
  if (mailbox_) {
    item.pixels = std::move(mailbox_);
    gap_rows_ = 0;
    if (buffered_ >= options_.queue_frames) {
      if (options_.queue_full == QueueFullPolicy::kBlock) {
        cv_.wait(lock, [&] { return buffered_ < options_.queue_frames || !error_.ok(); });
        if (!error_.ok()) return error_;
      } else {
        ++drops_.queue_dropped;  // the frame goes; a repeat keeps row i = frame i
        ReturnBuffer(std::move(item.pixels));
      }
    }
  } else {
    ++drops_.repeated;
    drops_.longest_gap_rows = std::max(drops_.longest_gap_rows, ++gap_rows_);
  }
  if (item.pixels) ++buffered_;
  queue_.push_back(std::move(item));
  lock.unlock();
  cv_.notify_all();
  return Status::OK();
}

void SlotStream::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return !queue_.empty() || closing_; });
    if (queue_.empty()) return;  // closing and drained
    Item item = std::move(queue_.front());
    queue_.pop_front();
    const bool ok = error_.ok();
    lock.unlock();
    Status st;
    if (ok) {
      if (!item.pixels) {
        st = encoder_->Repeat();
      } else if (options_.encoder.kind == VideoKind::kRgb) {
        st = encoder_->AddRgb(*item.pixels);
      } else {
        st = encoder_->AddDepth({reinterpret_cast<const uint16_t*>(item.pixels->data()),
                                 item.pixels->size() / 2});
      }
    }
    lock.lock();
    if (item.pixels) {
      --buffered_;
      ReturnBuffer(std::move(item.pixels));
    }
    if (!st.ok() && error_.ok())
      error_ = Status(st.code(), "video slot \"" + options_.slot + "\": " + st.message());
    cv_.notify_all();  // a blocked Tick() may go on
  }
}

Status SlotStream::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  REEL_RETURN_IF_ERROR(Error());
  Status st = encoder_->Finish();
  if (!st.ok()) return Status(st.code(), "video slot \"" + options_.slot + "\": " + st.message());
  return st;
}

Status SlotStream::Error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

int64_t SlotStream::frames_written() const { return encoder_->frames(); }

SlotDrops SlotStream::drops() const {
  std::lock_guard<std::mutex> lock(mu_);
  return drops_;
}

std::string SlotStream::DescribeJson() const { return encoder_->DescribeJson(); }

}  // namespace reel::internal
