#pragma once
// Table model of the runs in the store (name, schedule, model, P, N, status, final metric,
// duration, tags, notes). Reloaded by refresh(); GUI thread only.
#include <QAbstractTableModel>
#include <vector>

#include "core/store/run_store.h"

namespace pm::ui {

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Notes last: the columns before it keep the indices they had before it came.
  enum Column { Id, Name, Schedule, Model, Stages, Microbatches, Status, Loss, Accuracy, Duration, Created, Tags, Notes, ColumnCount };
  explicit RunsTableModel(QObject* parent = nullptr);

  void setRuns(std::vector<RunRecord> runs);
  const RunRecord* runAt(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<RunRecord> runs_;
};

}  // namespace pm::ui
