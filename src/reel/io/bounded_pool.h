// Internal: an arrow::MemoryPool that refuses to hold more than a budget at once, for a
// parquet reader, which sizes buffers from the file's own bytes (a page's declared
// decoded size, a dictionary's declared entry count). A 4 KB file may declare a 4.8 GB
// dictionary (fuzz_keypoints, KEYPOINTS-PAGE-ALLOC); with this pool the reader gets
// OutOfMemory instead of the allocation, and reel a Corruption naming the file.
#pragma once

#include <arrow/memory_pool.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace reel::internal {

class BoundedPool final : public arrow::MemoryPool {
 public:
  // Its owner releases it with Release(); it is deleted once that has happened and every
  // buffer it gave out has been freed (a table read through it may outlive its reader).
  struct Releaser {
    void operator()(BoundedPool* pool) const { pool->Release(); }
  };
  using Owner = std::unique_ptr<BoundedPool, Releaser>;

  // `what` names the budget in the refusal ("over the N bytes <what>").
  static Owner Make(int64_t limit, std::string what);
  int64_t limit() const { return limit_.load(); }
  // Raises the budget by `bytes` (saturating): for what is learnt once the file's footer is
  // read. Call before the pool is shared between threads.
  void Raise(int64_t bytes);

  using arrow::MemoryPool::Allocate;
  using arrow::MemoryPool::Free;
  using arrow::MemoryPool::Reallocate;
  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment, uint8_t** ptr) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;

  int64_t bytes_allocated() const override { return used_.load(); }
  int64_t max_memory() const override { return peak_.load(); }
  int64_t total_bytes_allocated() const override { return total_.load(); }
  int64_t num_allocations() const override { return allocations_.load(); }
  std::string backend_name() const override { return wrapped_->backend_name(); }

 private:
  BoundedPool(int64_t limit, std::string what);
  ~BoundedPool() override = default;
  void Release() { Unref(); }
  void Unref();
  // Reserves `delta` more bytes, or says why not.
  arrow::Status Take(int64_t delta);
  void Give(int64_t delta);

  arrow::MemoryPool* wrapped_;
  std::atomic<int64_t> limit_;
  const std::string what_;
  std::atomic<int64_t> used_{0}, peak_{0}, total_{0}, allocations_{0};
  std::atomic<int64_t> refs_{1};  // the owner's, plus one per live allocation
};

}  // namespace reel::internal
