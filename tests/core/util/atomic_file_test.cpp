#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/util/atomic_file.h"
#include "core/util/errors.h"

namespace fs = std::filesystem;
using pm::writeFileAtomically;

namespace {

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pipemare-atomic-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  size_t entries() { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator())); }
  fs::path dir_;
};

}  // namespace

// The file appears whole, with exactly the mode asked for whatever the umask, and replaces an old one.
TEST_F(AtomicFile, WritesWholeWithItsModeUnderAnyUmask) {
  const fs::path f = dir_ / "stage0.pt";
  const mode_t old = ::umask(0);
  writeFileAtomically(f.string(), "first", 0600);
  writeFileAtomically(f.string(), std::string(100000, 'x'), 0600);
  ::umask(old);
  EXPECT_EQ(read(f), std::string(100000, 'x'));
  struct stat st {};
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(entries(), 1u) << "a temporary file was left behind";
}

// A write that fails part way (here the file size limit, as a full disk does: the write returns an
// error) throws FileError naming the target and the reason, leaves the old file as it was and no
// temporary beside it. In a child process: the limit is the process's.
TEST_F(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path f = dir_ / "partition.json";
  writeFileAtomically(f.string(), "{\"boundaries\": [2]}\n");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      writeFileAtomically(f.string(), std::string(1 << 20, 'y'));
      std::_Exit(10);  // no error
    } catch (const pm::FileError& e) {
      const std::string what = e.what();
      std::_Exit(what.find(f.string()) != std::string::npos && what.find("File too large") != std::string::npos ? 0 : 11);
    } catch (...) {
      std::_Exit(12);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no error; 11: the error did not name the file and the reason";
  EXPECT_EQ(read(f), "{\"boundaries\": [2]}\n");
  EXPECT_EQ(entries(), 1u) << "a temporary file was left behind";
}

// A link planted where the temporary could go is never followed: the names are random and the
// file is created exclusively, so a planted link to a victim's file leaves the victim alone.
TEST_F(AtomicFile, APlantedLinkIsNotFollowed) {
  const fs::path victim = dir_ / "victim.txt";
  { std::ofstream(victim) << "secret"; }
  const fs::path f = dir_ / "run.json";
  fs::create_symlink(victim, dir_ / "run.json.part");
  fs::create_symlink(victim, dir_ / "run.json.tmp");
  writeFileAtomically(f.string(), "{}");
  EXPECT_EQ(read(victim), "secret");
  EXPECT_EQ(read(f), "{}");
  // A link at the target itself is replaced by the file, not written through.
  fs::remove(f);
  fs::create_symlink(victim, f);
  writeFileAtomically(f.string(), "new");
  EXPECT_FALSE(fs::is_symlink(f));
  EXPECT_EQ(read(victim), "secret");
}
