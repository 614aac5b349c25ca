#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <cstdlib>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // GUI tests never touch the user's own preferences, data folder or run store: all three point
  // into a temporary folder of this test process, removed at the end.
  std::string tmpl = (std::filesystem::temp_directory_path() / "pipemare-ui-test-XXXXXX").string();
  const char* home = mkdtemp(tmpl.data());
  if (!home) {
    std::perror("ui tests: cannot make a temporary folder");
    return 1;
  }
  const std::string root(home);
  setenv("XDG_CONFIG_HOME", (root + "/config").c_str(), 1);
  setenv("XDG_DATA_HOME", (root + "/data").c_str(), 1);
  setenv("PIPEMARE_DB", (root + "/data/runs.db").c_str(), 1);
  int rc = 0;
  {
    QApplication app(argc, argv);
    QApplication::setOrganizationName("PipeMareTest");
    QSettings().clear();  // belt and braces: the temporary config folder starts empty anyway
    ::testing::InitGoogleTest(&argc, argv);
    rc = RUN_ALL_TESTS();
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return rc;
}
