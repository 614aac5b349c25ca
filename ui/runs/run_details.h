#pragma once
// The Runs tab's details pane: one stored run's full record (id, name, status, schedule, model,
// partition, model file, tags, notes, revision, host, sweep, timing, the last value of each of its
// metrics) and its experiment JSON, pretty-printed, read-only and selectable in a monospace view.
// Opened by double-clicking a run (or Enter on it) in the table; closed by its Close button or
// Escape. GUI thread only.
#include <QWidget>
#include <cstdint>

#include "core/store/run_store.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace pm::ui {

class RunDetailsPane : public QWidget {
  Q_OBJECT
 public:
  explicit RunDetailsPane(QWidget* parent = nullptr);

  // Shows `run` as the store records it now. False (the pane says so) when the store has no such run.
  bool showRun(const RunStore& store, int64_t run);
  // The store changed: reads the shown run again when its listed record differs from the one shown
  // or it is still going (its metrics grow); `listed` is nullptr when the run is not in the listing.
  // Views that did not change keep their scroll position and selection.
  void storeChanged(const RunStore& store, const RunRecord* listed);
  int64_t run() const { return run_; }  // the run shown (0 = none)
  QString titleText() const;
  QString fieldsText() const;                               // the record's fields, as plain text
  QPlainTextEdit* experimentView() const { return json_; }  // the experiment JSON

 Q_SIGNALS:
  void closed();

 private:
  void closePane();
  void setFields(const QString& html);
  int64_t run_ = 0;
  QString shownKey_;  // what storeChanged compares: the listed fields of the record shown
  QLabel* title_;
  QLabel* fields_;
  QPlainTextEdit* json_;
  QPushButton* close_;
};

}  // namespace pm::ui
