#pragma once
// What the workbench's store tests look at: the store's files as this process holds them
// (/proc/self/fd), the status the Runs tab shows for a run, and a `pipemare` run in another
// process while the event loop goes on.
#include <QAbstractItemModel>
#include <QProcess>
#include <QStringList>
#include <QTableView>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "ui/runs/runs_browser.h"
#include "ui/runs/runs_table_model.h"

namespace pm::test {

inline const QString& pipemareBinary() {
  static const QString bin = QString::fromStdString(binPath("pipemare"));
  return bin;
}

// The files of the store `db` (the file, its -wal and -shm) this process has open, as the kernel
// names them in /proc/self/fd: a file deleted while open reads "<path> (deleted)".
inline std::vector<std::string> openStoreFiles(const std::string& db) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code linkError;  // a descriptor closed meanwhile (another thread) has no link
    const std::string link = std::filesystem::read_symlink(it->path(), linkError).string();
    if (!linkError && link.rfind(db, 0) == 0) out.push_back(link);
  }
  return out;
}

inline std::vector<std::string> deletedStoreFiles(const std::string& db) {
  const std::string suffix = " (deleted)";
  std::vector<std::string> out;
  for (const auto& link : openStoreFiles(db))
    if (link.size() > suffix.size() && link.compare(link.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(link);
  return out;
}

inline std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

inline bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The status the Runs tab's table shows for a run, found by id or by name; "" when it is not listed.
inline QString statusShown(pm::ui::RunsBrowser* browser, int64_t id, const QString& name = {}) {
  const QAbstractItemModel* m = browser->table()->model();
  for (int r = 0; r < m->rowCount(); ++r) {
    const bool match = name.isEmpty() ? m->index(r, pm::ui::RunsTableModel::Id).data().toLongLong() == id
                                      : m->index(r, pm::ui::RunsTableModel::Name).data().toString() == name;
    if (match) return m->index(r, pm::ui::RunsTableModel::Status).data().toString();
  }
  return {};
}

// Runs the engine (another process) with these arguments; true when it exits 0. Waits on the
// event loop, so the window goes on polling while the child writes.
inline bool runEngine(const QStringList& args, QString* output) {
  QProcess child;
  child.setProcessChannelMode(QProcess::MergedChannels);
  child.start(pipemareBinary(), args);
  if (!child.waitForStarted(30000)) {
    *output = child.errorString();
    return false;
  }
  const bool ended = QTest::qWaitFor([&] { return child.state() == QProcess::NotRunning; }, 180000);
  *output = QString::fromUtf8(child.readAll());
  if (!ended) {
    child.kill();
    child.waitForFinished(5000);
    return false;
  }
  return child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0;
}


}  // namespace pm::test
