#include "core/events/node_link.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/util/errors.h"
#include "tests/support/test_support.h"

using namespace pm;
namespace fs = std::filesystem;

namespace {

const std::string kSecret = "0123456789abcdef-shared-secret";

// Node 0's and node k's ends of one connection, as the launchers make them.
struct Link {
  std::string challenge = randomNonce(), nonce = randomNonce();
  NodeLinkSession node0{kSecret, challenge, nonce, true};
  NodeLinkSession nodeK{kSecret, challenge, nonce, false};
};

std::string withoutNewline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

TEST(NodeLink, SealedLinesOpenInOrderInBothDirections) {
  Link l;
  for (int i = 0; i < 3; ++i) {
    auto up = l.nodeK.seal(Json{{"type", "step"}, {"loss", i}});
    auto got = l.node0.open(withoutNewline(up));
    ASSERT_TRUE(got) << up;
    EXPECT_EQ((*got)["loss"], i);
    auto down = l.node0.seal(Json{{"type", node_msg::kStop}});
    ASSERT_TRUE(l.nodeK.open(withoutNewline(down)));
  }
}

TEST(NodeLink, ForgedReplayedAlteredOrReflectedLinesAreRefused) {
  Link l;
  // Another secret: a well-formed line that does not verify.
  NodeLinkSession forger("another secret, long enough", l.challenge, l.nonce, false);
  EXPECT_FALSE(l.node0.open(withoutNewline(forger.seal(Json{{"type", "step"}, {"loss", 12345}}))));
  // No MAC at all (a plain event line).
  EXPECT_FALSE(l.node0.open(R"({"type":"step","loss":12345})"));
  const std::string first = withoutNewline(l.nodeK.seal(Json{{"type", "step"}, {"loss", 1}}));
  // Altered: same MAC, other content.
  std::string altered = first;
  const auto at = altered.find("\"loss\":1");
  ASSERT_NE(at, std::string::npos) << altered;
  altered[at + 7] = '9';
  EXPECT_FALSE(l.node0.open(altered));
  ASSERT_TRUE(l.node0.open(first));
  EXPECT_FALSE(l.node0.open(first)) << "a replayed line must not verify a second time";
  // Reflected: node 0's own line sent back to it.
  EXPECT_FALSE(l.node0.open(withoutNewline(l.node0.seal(Json{{"type", node_msg::kStop}}))));
  // A line of another connection (another challenge) does not verify here.
  Link other;
  EXPECT_FALSE(l.node0.open(withoutNewline(other.nodeK.seal(Json{{"type", "step"}}))));
}

TEST(NodeLink, HelloIsAcceptedOnlyWithTheSecret) {
  const std::string challenge = randomNonce(), nonce = randomNonce();
  const Json hello{{"type", node_msg::kHello}, {"node", 1}, {"nnodes", 2}, {"nonce", nonce}};
  NodeLinkSession genuine(kSecret, challenge, nonce, false);
  Json got;
  std::string why;
  auto session = acceptHello(kSecret, challenge, withoutNewline(genuine.seal(hello)), got, why);
  ASSERT_TRUE(session) << why;
  EXPECT_EQ(got["node"], 1);
  // The session continues where the hello left off.
  EXPECT_TRUE(session->open(withoutNewline(genuine.seal(Json{{"type", "step"}}))));

  NodeLinkSession wrong("not the run secret at all", challenge, nonce, false);
  EXPECT_FALSE(acceptHello(kSecret, challenge, withoutNewline(wrong.seal(hello)), got, why));
  EXPECT_NE(why.find("authentication failed"), std::string::npos) << why;
  // A hello answering another challenge (recorded from another connection) is refused.
  EXPECT_FALSE(acceptHello(kSecret, randomNonce(), withoutNewline(genuine.seal(hello)), got, why));
  // Plain JSON, or a hello without a nonce.
  EXPECT_FALSE(acceptHello(kSecret, challenge, hello.dump(), got, why));
  Json noNonce = hello;
  noNonce.erase("nonce");
  EXPECT_FALSE(acceptHello(kSecret, challenge, withoutNewline(NodeLinkSession(kSecret, challenge, "", false).seal(noNonce)), got, why));
  EXPECT_NE(why.find("nonce"), std::string::npos) << why;
}

TEST(NodeLink, RunSecretSourcesAndTheirErrors) {
  const pm::test::TempDir tmp;
  const fs::path& dir = tmp.dir;
  ::unsetenv(kRunSecretEnv);
  ::setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
  // The default file is made once, private, and read back the same by every launcher.
  const RunSecret made = loadRunSecret("");
  const fs::path def = dir / "pipemare" / "run-secret";
  EXPECT_EQ(made.source, def.string());
  EXPECT_GE(made.bytes.size(), 32u);
  struct stat st {};
  ASSERT_EQ(::stat(def.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(loadRunSecret("").bytes, made.bytes);
  // The environment comes before the default file; a short secret is refused, naming its source.
  ::setenv(kRunSecretEnv, "short", 1);
  try {
    loadRunSecret("");
    FAIL() << "a 5-byte secret was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.place(), kRunSecretEnv);
    EXPECT_EQ(e.exitCode(), 2);
  }
  ::setenv(kRunSecretEnv, kSecret.c_str(), 1);
  EXPECT_EQ(loadRunSecret("").bytes, kSecret);
  // --secret-file comes first; one that others can read, or that is missing, is refused.
  const fs::path file = dir / "secret";
  std::ofstream(file) << "file-secret-0123456789\n";
  ::chmod(file.c_str(), 0644);
  EXPECT_THROW(loadRunSecret(file.string()), ConfigError);
  ::chmod(file.c_str(), 0600);
  EXPECT_EQ(loadRunSecret(file.string()).bytes, "file-secret-0123456789");
  EXPECT_THROW(loadRunSecret((dir / "missing").string()), ConfigError);
  ::unsetenv(kRunSecretEnv);
  ::unsetenv("XDG_CONFIG_HOME");
}

// With HOME unset the default secret lives under /tmp/.config, where another local user may have
// made the folders first: a secret folder (or the one above it) that others can write, or that
// belongs to another user, is refused naming it, before any secret is made or read there.
TEST(NodeLink, ASecretFolderOthersControlIsRefused) {
  const pm::test::TempDir tmp;
  ::unsetenv(kRunSecretEnv);
  const fs::path open = tmp.dir / "shared-config";
  fs::create_directories(open);
  ::chmod(open.c_str(), 0777);  // as /tmp/.config made by anyone under umask 000
  ::setenv("XDG_CONFIG_HOME", open.c_str(), 1);
  try {
    loadRunSecret("");
    FAIL() << "a secret under a folder everyone can write was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(open.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("can be written by other users"), std::string::npos) << e.what();
    EXPECT_EQ(e.exitCode(), 2);
  }
  EXPECT_FALSE(fs::exists(open / "pipemare")) << "something was made in the refused folder";

  if (::geteuid() == 0) {  // only root can give a folder to another user
    const fs::path theirs = tmp.dir / "their-config";
    fs::create_directories(theirs / "pipemare");
    ::chmod(theirs.c_str(), 0755);
    ASSERT_EQ(::chown((theirs / "pipemare").c_str(), 65534, 65534), 0);
    ::setenv("XDG_CONFIG_HOME", theirs.c_str(), 1);
    try {
      loadRunSecret("");
      FAIL() << "a secret folder of another user was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("belongs to another user (uid 65534)"), std::string::npos) << e.what();
    }
  }
  // A private folder of one's own is taken, as before.
  const fs::path mine = tmp.dir / "my-config";
  fs::create_directories(mine);
  ::chmod(mine.c_str(), 0700);
  ::setenv("XDG_CONFIG_HOME", mine.c_str(), 1);
  EXPECT_GE(loadRunSecret("").bytes.size(), 32u);
  ::unsetenv("XDG_CONFIG_HOME");
}
