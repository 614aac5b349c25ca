#include "core/engine/tensor_memory_meter.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

namespace pm {
namespace {

std::atomic<int64_t> gLive{0};
std::atomic<int64_t> gPeak{0};
std::atomic<bool> gInstalled{false};

// Each block is the base allocator's block with this header in front; the data handed out starts
// kHeader bytes in (keeping the base's 64-byte alignment), and the data pointer is its own
// context, so raw_allocate / raw_deallocate work too.
struct Header {
  c10::DataPtr inner;
  int64_t bytes;
};
constexpr size_t kHeader = 64;
static_assert(sizeof(Header) <= kHeader, "the header must fit in front of the data");

void notePeak(int64_t now) {
  int64_t p = gPeak.load(std::memory_order_relaxed);
  while (now > p && !gPeak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}

void countedDelete(void* data) {
  if (!data) return;
  auto* h = reinterpret_cast<Header*>(static_cast<char*>(data) - kHeader);
  gLive.fetch_sub(h->bytes, std::memory_order_relaxed);
  c10::DataPtr inner = std::move(h->inner);
  h->~Header();
}  // inner frees the block here

// No `override` here: LibTorch 1.13 declares allocate() const, PyTorch 2.3+ non-const with a
// pure copy_data(); defining both forms compiles against either.
class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) const { return make(n); }
  c10::DataPtr allocate(size_t n) { return make(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const { return &countedDelete; }

 private:
  c10::DataPtr make(size_t n) const {
    c10::DataPtr inner = base_->allocate(n + kHeader);
    char* block = static_cast<char*>(inner.get());
    const c10::Device device = inner.device();
    new (block) Header{std::move(inner), static_cast<int64_t>(n)};
    notePeak(gLive.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed) + static_cast<int64_t>(n));
    void* data = block + kHeader;
    return c10::DataPtr(data, data, &countedDelete, device);
  }
  c10::Allocator* base_;
};

}  // namespace

void TensorMemoryMeter::install() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator counting(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&counting, /*priority=*/UINT8_MAX);
    gInstalled.store(c10::GetCPUAllocator() == &counting);
  });
}

bool TensorMemoryMeter::installed() { return gInstalled.load(); }
int64_t TensorMemoryMeter::live() { return gLive.load(std::memory_order_relaxed); }
int64_t TensorMemoryMeter::peak() { return gPeak.load(std::memory_order_relaxed); }
void TensorMemoryMeter::resetPeak() { gPeak.store(gLive.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace pm
