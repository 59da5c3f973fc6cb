#include "io/bounded_pool.h"

#include <limits>
#include <utility>

namespace reel::internal {

BoundedPool::BoundedPool(int64_t limit, std::string what)
    : wrapped_(arrow::default_memory_pool()), limit_(limit), what_(std::move(what)) {}

BoundedPool::Owner BoundedPool::Make(int64_t limit, std::string what) {
  return Owner(new BoundedPool(limit, std::move(what)));
}

void BoundedPool::Raise(int64_t bytes) {
  const int64_t now = limit_.load();
  limit_.store(bytes > std::numeric_limits<int64_t>::max() - now ? std::numeric_limits<int64_t>::max() : now + bytes);
}

void BoundedPool::Unref() {
  if (refs_.fetch_sub(1) == 1) delete this;
}

arrow::Status BoundedPool::Take(int64_t delta) {
  const int64_t now = used_.fetch_add(delta) + delta;
  if (delta > 0 && now > limit_.load()) {
    used_.fetch_sub(delta);
    return arrow::Status::OutOfMemory("a buffer of ", delta, " more bytes would hold ", now, ", over the ",
                                      limit_.load(), " bytes ", what_);
  }
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  if (delta > 0) total_.fetch_add(delta);
  allocations_.fetch_add(1);
  return arrow::Status::OK();
}

void BoundedPool::Give(int64_t delta) { used_.fetch_sub(delta); }

arrow::Status BoundedPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  if (size < 0) return arrow::Status::Invalid("negative allocation size ", size);
  ARROW_RETURN_NOT_OK(Take(size));
  const arrow::Status st = wrapped_->Allocate(size, alignment, out);
  if (!st.ok()) {
    Give(size);
    return st;
  }
  refs_.fetch_add(1);
  return st;
}

arrow::Status BoundedPool::Reallocate(int64_t old_size, int64_t new_size, int64_t alignment, uint8_t** ptr) {
  if (new_size < 0) return arrow::Status::Invalid("negative allocation size ", new_size);
  ARROW_RETURN_NOT_OK(Take(new_size - old_size));
  const arrow::Status st = wrapped_->Reallocate(old_size, new_size, alignment, ptr);
  if (!st.ok()) Give(new_size - old_size);
  return st;
}

void BoundedPool::Free(uint8_t* buffer, int64_t size, int64_t alignment) {
  wrapped_->Free(buffer, size, alignment);
  Give(size);
  Unref();
}

}  // namespace reel::internal
