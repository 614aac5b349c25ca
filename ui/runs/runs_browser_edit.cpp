// The runs browser's edits of the store: tags, notes, deleting runs, and the table's context menu
// (which also offers to resume a stopped run).
#include "ui/runs/runs_browser.h"

#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMetaMethod>
#include <QMessageBox>
#include <QStringList>
#include <QTableView>

#include <algorithm>
#include <optional>

#include "core/events/run_status.h"
#include "core/store/run_store.h"
#include "core/util/strings.h"
#include "ui/runs/runs_table_model.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

namespace {

// The runs a question names: `run 3 "baseline"` each (the name as the table lists it; the id alone
// for a run it does not list), the first few of them, then how many more.
QString namedRuns(const RunsTableModel& model, const std::vector<int64_t>& runs) {
  constexpr size_t kNamed = 10;
  QStringList parts;
  for (size_t i = 0; i < runs.size() && i < kNamed; ++i) {
    QString part = RunsBrowser::tr("run %1").arg(runs[i]);
    for (int r = 0; r < model.rowCount(); ++r)
      if (const RunRecord* rec = model.runAt(r); rec && rec->id == runs[i]) {
        part += QStringLiteral(" \"%1\"").arg(QString::fromStdString(rec->name));
        break;
      }
    parts << part;
  }
  if (runs.size() > kNamed) parts << RunsBrowser::tr("%1 more").arg(runs.size() - kNamed);
  return parts.join(QStringLiteral(", "));
}

}  // namespace

bool RunsBrowser::setTags(int64_t run, const QString& commaSeparated) {
  try {
    std::vector<std::string> tags;
    for (const QString& t : commaSeparated.split(',', Qt::SkipEmptyParts)) tags.push_back(t.trimmed().toStdString());
    watcher_->requireStore().setTags(run, tags);
    watcher_->refresh();  // every view shows the new tags (this one through runsChanged)
    return true;
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
    return false;
  }
}

bool RunsBrowser::setNotes(int64_t run, const QString& notes) {
  try {
    watcher_->requireStore().setNotes(run, notes.toStdString());
    watcher_->refresh();
    return true;
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
    return false;
  }
}

int RunsBrowser::deleteRuns(const std::vector<int64_t>& runs, bool confirm) {
  if (runs.empty()) return 0;
  if (confirm) {
    // Named, so that the user sees which runs go; No is the default answer (Return, Escape), as
    // deleting cannot be undone. Plain text: a run's name is shown as it is.
    const QString question =
        runs.size() == 1
            ? tr("Delete %1 and all its metrics, traces and logs? This cannot be undone.").arg(namedRuns(*model_, runs))
            : tr("Delete %1 runs (%2) and all their metrics, traces and logs? This cannot be undone.")
                  .arg(QString::number(runs.size()), namedRuns(*model_, runs));
    QMessageBox box(QMessageBox::Question, runs.size() == 1 ? tr("Delete run") : tr("Delete runs"), question,
                    QMessageBox::Yes | QMessageBox::No, this);
    box.setTextFormat(Qt::PlainText);
    box.setDefaultButton(QMessageBox::No);
    box.setEscapeButton(QMessageBox::No);
    if (box.exec() != QMessageBox::Yes) return 0;
  }
  int n = 0;
  lastError_.clear();
  try {
    RunStore& store = watcher_->requireStore();
    store.markDeadRunsInterrupted();  // before judging which runs are still running
    std::vector<std::string> live;
    for (int64_t id : runs) {
      const auto rec = store.getRun(id);
      if (rec && rec->status == RunStatus::Running) {  // its process (alive: dead ones were just marked) records into it
        live.push_back(std::to_string(id));
        continue;
      }
      store.deleteRun(id);
      ++n;
    }
    if (!live.empty())
      lastError_ = "not deleted: run " + join(live, ", ") + (live.size() == 1 ? " is" : " are") + " still running; stop " +
                   (live.size() == 1 ? "it" : "them") + " first";
  } catch (const std::exception& ex) {
    lastError_ = ex.what();
  }
  if (shownRun_ && std::find(runs.begin(), runs.end(), shownRun_) != runs.end()) shownRun_ = 0;
  const std::string problem = lastError_;
  watcher_->refresh();  // every view drops the deleted runs (this one through runsChanged)
  if (!problem.empty()) lastError_ = problem;  // for the caller to show (refresh clears it)
  return n;
}

void RunsBrowser::contextMenu(const QPoint& pos) {
  const auto ids = selectedRunIds();
  if (ids.empty()) return;
  // A copy: the refresh replaces the model's records while the menu or a dialog is open.
  std::optional<RunRecord> first;
  for (int r = 0; r < model_->rowCount(); ++r)
    if (model_->runAt(r)->id == ids.front()) first = *model_->runAt(r);
  // No refresh while the user is choosing or typing (it would also move the selection): a change
  // the watcher reports meanwhile is read once the menu and its dialog are done.
  menuOpen_ = true;
  struct Resume {
    RunsBrowser* b;
    ~Resume() {
      b->menuOpen_ = false;
      if (b->changedMeanwhile_) {
        b->changedMeanwhile_ = false;
        b->refresh();
      }
    }
  } resume{this};
  QMenu menu(this);
  auto* tags = menu.addAction(tr("Edit tags..."));
  auto* notes = menu.addAction(tr("Edit notes..."));
  menu.addSeparator();
  // Resume: one run, stopped, failed or interrupted (what `pipemare run --resume` accepts), and
  // someone to start it (MainWindow connects resumeRequested to the Live panel).
  auto* resumeRun = menu.addAction(first && ids.size() == 1 ? tr("Resume run %1").arg(first->id) : tr("Resume"));
  resumeRun->setEnabled(first && ids.size() == 1 && isResumable(first->status) &&
                        isSignalConnected(QMetaMethod::fromSignal(&RunsBrowser::resumeRequested)));
  resumeRun->setToolTip(tr("Continue the run from its latest checkpoint in the Live tab (pipemare run --resume)"));
  menu.addSeparator();
  auto* del = menu.addAction(tr("Delete %1 run(s)...").arg(ids.size()));
  QAction* chosen = menu.exec(table_->viewport()->mapToGlobal(pos));
  bool ok = false;
  bool done = true;
  if (chosen == tags && first) {
    QStringList current;
    for (const auto& t : first->tags) current << QString::fromStdString(t);
    const QString text = QInputDialog::getText(this, tr("Tags"), tr("Tags of run %1 (comma-separated):").arg(first->id),
                                               QLineEdit::Normal, current.join(", "), &ok);
    if (ok) done = setTags(first->id, text);
  } else if (chosen == notes && first) {
    const QString text = QInputDialog::getMultiLineText(this, tr("Notes"), tr("Notes of run %1:").arg(first->id),
                                                        QString::fromStdString(first->notes), &ok);
    if (ok) done = setNotes(first->id, text);
  } else if (chosen == resumeRun && first && isResumable(first->status)) {
    Q_EMIT resumeRequested(first->id, QString::fromStdString(first->name));
  } else if (chosen == del) {
    deleteRuns(ids);
    done = lastError_.empty();
  }
  if (!done) QMessageBox::warning(this, tr("Run store"), QString::fromStdString(lastError_));
}

}  // namespace pm::ui
