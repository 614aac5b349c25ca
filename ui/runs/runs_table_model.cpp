#include "ui/runs/runs_table_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <cmath>

#include "core/analysis/run_data.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm::ui {

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::setRuns(std::vector<RunRecord> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

const RunRecord* RunsTableModel::runAt(int row) const {
  return row >= 0 && row < static_cast<int>(runs_.size()) ? &runs_[static_cast<size_t>(row)] : nullptr;
}

int RunsTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(runs_.size()); }
int RunsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

static QColor statusColor(RunStatus s) {
  switch (s) {
    case RunStatus::Finished: return QColor(46, 139, 87);
    case RunStatus::Running: return QColor(30, 110, 200);
    case RunStatus::Failed:
    case RunStatus::Diverged: return QColor(200, 50, 50);
    case RunStatus::Stopped:
    case RunStatus::Interrupted: return QColor(200, 130, 0);
    case RunStatus::Created: break;
  }
  return QColor(120, 120, 120);
}

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  const RunRecord* r = runAt(index.row());
  if (!r) return {};
  const bool sortRole = role == Qt::UserRole;
  if (role == Qt::ForegroundRole && index.column() == Status) return QBrush(statusColor(r->status));
  if (role == Qt::ToolTipRole && index.column() == Status) return QString::fromStdString(r->status_message);
  if (role == Qt::ToolTipRole && (index.column() == Tags || index.column() == Name))  // cut off in narrow columns
    return QString::fromStdString(index.column() == Tags ? join(r->tags, ", ") : r->name);
  // The notes as written (several lines, maybe long): the cell shows them on one line, which the
  // view elides to the column's width.
  if (role == Qt::ToolTipRole && index.column() == Notes) return QString::fromStdString(r->notes);
  if (role == Qt::ToolTipRole && index.column() == Model && !r->model_file.path.empty())  // a TorchScript model's file
    return tr("%1\n%2 bytes, SHA-256 %3")
        .arg(QString::fromStdString(r->model_file.path))
        .arg(r->model_file.size)
        .arg(QString::fromStdString(r->model_file.sha256));
  if (role == Qt::TextAlignmentRole && index.column() >= Stages && index.column() <= Duration)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && !sortRole) return {};
  auto num = [&](double v, int prec) -> QVariant {
    if (std::isnan(v)) return sortRole ? QVariant(-1e300) : QVariant(QStringLiteral("-"));
    return sortRole ? QVariant(v) : QVariant(QString::number(v, 'f', prec));
  };
  switch (index.column()) {
    case Id: return QVariant::fromValue<qlonglong>(r->id);
    case Name: return QString::fromStdString(r->name);
    case Schedule: return QString::fromStdString(r->schedule);
    case Model: return QString::fromStdString(r->model);
    case Stages: return r->stages;
    case Microbatches: return r->microbatches;
    case Status: return QString::fromUtf8(toString(r->status));
    case Loss: return num(r->final_loss, 4);
    case Accuracy: return num(r->final_accuracy, 4);
    case Duration: {
      const double d = trainingDuration(*r, wallClockSeconds());  // a resumed run's pauses left out
      if (sortRole) return std::isnan(d) ? -1.0 : d;
      return std::isnan(d) ? QStringLiteral("-") : QString::fromStdString(formatDuration(d));
    }
    case Created:
      if (sortRole) return r->created_at;
      return QDateTime::fromSecsSinceEpoch(static_cast<qint64>(r->created_at)).toString("yyyy-MM-dd hh:mm:ss");
    case Tags: return QString::fromStdString(join(r->tags, ", "));
    case Notes: return QString::fromStdString(r->notes).simplified();  // line breaks as spaces: one line
    default: return {};
  }
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Id", "Name", "Schedule", "Model", "P", "N", "Status", "Final loss", "Accuracy",
                                "Duration", "Created", "Tags", "Notes"};
  static_assert(static_cast<int>(sizeof(names) / sizeof(names[0])) == ColumnCount, "a header for each column");
  return section >= 0 && section < ColumnCount ? QString(names[section]) : QVariant();
}

}  // namespace pm::ui
