#pragma once
// The runs browser: every run in the store in a sortable, filterable table, the selected run's
// curves (training loss, held-out accuracy) beside it, and a double-clicked run's details
// (RunDetailsPane) beside those. Reads and writes the store through a StoreWatcher (the process's
// one connection) and re-reads when the watcher reports a change or a run in progress. GUI thread
// only.
#include <QWidget>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/store/run_store.h"

class QTableView;
class QLineEdit;
class QComboBox;
class QLabel;
class QModelIndex;
class QSortFilterProxyModel;

namespace pm::ui {

class RunsTableModel;
class RunDetailsPane;
class CurvePlot;
class StoreWatcher;

class RunsBrowser : public QWidget {
  Q_OBJECT
 public:
  // Through `watcher`, which must outlive this browser (MainWindow's, shared by every view).
  explicit RunsBrowser(StoreWatcher* watcher, QWidget* parent = nullptr);
  // With a watcher of its own on dbPath, owned by the browser (a browser on its own, as in tests).
  explicit RunsBrowser(const std::string& dbPath, QWidget* parent = nullptr);
  ~RunsBrowser() override;

  StoreWatcher* storeWatcher() const { return watcher_; }

  int runCount() const;
  QTableView* table() const { return table_; }
  CurvePlot* lossPlot() const { return lossPlot_; }
  CurvePlot* evalPlot() const { return accPlot_; }  // accuracy, or perplexity for language models
  const std::string& lastError() const { return lastError_; }
  // Ids of the runs selected in the table, in the table's order.
  std::vector<int64_t> selectedRunIds() const;
  int64_t shownRun() const { return shownRun_; }  // the run whose curves are shown (0 = none)
  int curveLoads() const { return curveLoads_; }   // times curves were read from the store (tests)
  // The details pane (a run's whole record and experiment JSON): opened by double-clicking a run
  // or pressing Enter on it, beside the curves; hidden while closed.
  RunDetailsPane* detailsPane() const { return details_; }
  // Opens the details pane on that run. False when the store has no such run.
  bool showDetails(int64_t runId);

  // Run management (also on the table's context menu). Tags: comma-separated.
  bool setTags(int64_t run, const QString& commaSeparated);
  bool setNotes(int64_t run, const QString& notes);
  // Deletes the runs after asking (confirm = false skips the question, for tests).
  int deleteRuns(const std::vector<int64_t>& runs, bool confirm = true);

 Q_SIGNALS:
  // The context menu's Resume on a stopped, failed or interrupted run (isResumable): whoever
  // starts runs (MainWindow, through the Live panel) continues it from its checkpoint. The entry
  // is disabled while nothing is connected here.
  void resumeRequested(int64_t runId, const QString& name);

 public Q_SLOTS:
  void refresh();
  // Selects and shows that run (clearing the filters when they hide it). False when not in the store.
  bool selectRun(int64_t runId);

 private:
  void connectSignals();
  void showRun(int64_t runId);
  // refresh()'s parts.
  void updateTagList(RunStore* store, const RunFilter& f, const std::vector<RunRecord>& runs);
  void fitColumns();
  void reselect(int64_t keep, const std::vector<int64_t>& previous);
  void updateSummary();  // the footer: runs shown, running, store
  void showNoRuns(bool none);  // the empty state: the sentence instead of the table, plots cleared
  void contextMenu(const QPoint& pos);
  void detailsOfRow(const QModelIndex& index);  // a double click or Enter on a row
  void storeChanged();   // the watcher's signals: refresh(), or later while the context menu is open
  StoreWatcher* watcher_;
  RunsTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
  QComboBox* status_;
  QComboBox* schedule_;  // any schedule, or one
  QComboBox* tag_;       // any tag, or one of the tags in the store
  QLabel* summary_;
  CurvePlot* lossPlot_;
  CurvePlot* accPlot_;
  RunDetailsPane* details_;
  QLabel* noRuns_ = nullptr;  // takes the table's place while the store has no runs: how to make one
  bool menuOpen_ = false;          // the context menu or its dialog is open: no refresh under the user
  bool changedMeanwhile_ = false;  // the watcher reported a change while it was
  int64_t shownRun_ = 0;
  std::optional<RunStatus> shownStatus_;  // the shown run's status when its curves were read (none: not listed)
  int curveLoads_ = 0;
  std::string lastError_;
  bool reloading_ = false;  // refresh() is re-selecting rows: not a user's choice of run
};

}  // namespace pm::ui
