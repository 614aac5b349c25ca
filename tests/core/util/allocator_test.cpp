// keepLargeAllocations: large blocks come from the heap and stay with the process, instead of
// being mapped and unmapped (and page-faulted afresh) on every training step.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/util/system_info.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// AddressSanitizer replaces malloc (mallopt and mallinfo2 then see nothing of it).
#if defined(__SANITIZE_ADDRESS__)
#define PM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PM_ASAN 1
#endif
#endif

#if defined(__GLIBC__) && !defined(PM_ASAN)
#if __GLIBC_PREREQ(2, 33)
#define PM_TEST_MALLOC 1
#endif
#endif

#if defined(PM_TEST_MALLOC)
namespace {
// Blocks glibc holds as separate mappings right now.
size_t mappedBlocks() { return mallinfo2().hblks; }
}  // namespace

TEST(Allocator, LargeBlocksComeFromTheHeapOnceKept) {
  // 48 MiB: above the largest threshold glibc's adaptive rule reaches (32 MiB), so without the
  // setting such a block is always a mapping of its own.
  const size_t size = size_t{48} << 20;
  ::setenv("PIPEMARE_MALLOC", "default", 1);
  EXPECT_FALSE(pm::keepLargeAllocations());  // the way to turn it off
  const size_t before = mappedBlocks();
  void* mapped = std::malloc(size);
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(mappedBlocks(), before + 1);
  std::free(mapped);
  ::unsetenv("PIPEMARE_MALLOC");
  ASSERT_TRUE(pm::keepLargeAllocations());
  const size_t kept = mappedBlocks();
  void* heap = std::malloc(size);
  ASSERT_NE(heap, nullptr);
  static_cast<volatile char*>(heap)[size - 1] = 1;
  EXPECT_EQ(mappedBlocks(), kept);
  std::free(heap);
}
#else
TEST(Allocator, LargeBlocksComeFromTheHeapOnceKept) {
  GTEST_SKIP() << "not glibc 2.33+, or under AddressSanitizer: the setting does not apply";
}
#endif
