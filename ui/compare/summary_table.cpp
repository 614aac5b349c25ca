#include "ui/compare/summary_table.h"

#include <QCoreApplication>
#include <QHeaderView>
#include <QPainter>
#include <QPixmap>
#include <QStringList>
#include <QTableWidget>
#include <algorithm>
#include <cmath>

namespace pm::ui {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("pm::ui::CompareView", text); }

QString formatBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return QStringLiteral("%1 %2").arg(QString::number(b, 'f', u == 0 ? 0 : 1), units[u]);
}

QString formatSeconds(double s) {
  if (s < 60) return QStringLiteral("%1 s").arg(QString::number(s, 'f', 1));
  const auto total = static_cast<long long>(std::llround(s));
  if (s < 3600) return QStringLiteral("%1m %2s").arg(total / 60).arg(total % 60, 2, 10, QLatin1Char('0'));
  return QStringLiteral("%1h %2m").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QLatin1Char('0'));
}
}  // namespace

QIcon colorSwatch(const QColor& c) {
  QPixmap pm(12, 12);
  pm.fill(Qt::transparent);
  if (c.isValid()) {
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(c.darker(130));
    p.setBrush(c);
    p.drawRoundedRect(QRectF(0.5, 0.5, 11, 11), 2, 2);
  }
  return QIcon(pm);
}

QString formatSummaryValue(SummaryField f, double v) {
  if (!std::isfinite(v)) return QStringLiteral("-");
  switch (f) {
    case SummaryField::FinalLoss:
    case SummaryField::BestLoss: return QString::number(v, 'f', 4);  // as pipemare compare and the Runs tab
    case SummaryField::FinalAccuracy:
    case SummaryField::BestAccuracy: return QString::number(v, 'f', 4);
    case SummaryField::TimeToTarget: return formatSeconds(v);
    case SummaryField::Throughput: return QString::number(v, 'f', 1);
    case SummaryField::Utilization: return QStringLiteral("%1 %").arg(QString::number(v * 100, 'f', 1));
    case SummaryField::PeakMemory: return formatBytes(v);
  }
  return QString::number(v);
}

namespace {

// The header: "Run", then each figure's title with its tooltip.
void setSummaryHeaders(QTableWidget* table, double target) {
  QStringList headers{tr("Run")};
  for (int f = 0; f < kSummaryFieldCount; ++f) {
    if (summaryField(f) == SummaryField::TimeToTarget)
      headers << (std::isfinite(target) ? tr("Time to acc. %1").arg(target, 0, 'g', 3) : tr("Time to acc. -"));
    else if (summaryField(f) == SummaryField::Throughput)
      headers << tr("Samples/s");
    else
      headers << tr(summaryFieldInfo(summaryField(f)).title);
  }
  table->setColumnCount(static_cast<int>(headers.size()));
  table->setHorizontalHeaderLabels(headers);
  const QString tips[kSummaryFieldCount] = {
      tr("Last train/loss"), tr("Lowest train/loss"), tr("Last eval/accuracy"), tr("Highest eval/accuracy"),
      tr("Wall time (since the run's first point) at which eval/accuracy first reaches %1; - if never").arg(target),
      tr("Training samples per second over the logged windows"),
      tr("Mean over ranks of each rank's last utilization (compute / wall; a rank holding several stages, as "
         "interleaved-1f1b and zb-v: its stages' summed)"),
      tr("Largest mem/peak of any rank (a rank holding several stages: their peaks summed, an upper bound)")};
  for (int f = 0; f < kSummaryFieldCount; ++f)
    if (auto* h = table->horizontalHeaderItem(f + 1)) h->setToolTip(tips[f]);
}

// The run's name with its series colour; the baseline's in bold.
QTableWidgetItem* runNameCell(const RunSummary& s, const QColor& color, const std::string& label) {
  const QString shown = label.empty() ? QString::fromStdString(s.name)
                                      : QStringLiteral("%1 \u00b7 %2").arg(QString::fromStdString(label), QString::fromStdString(s.name));
  auto* name = new QTableWidgetItem(colorSwatch(color),
                                    QStringLiteral("#%1 %2%3")
                                        .arg(s.runId)
                                        .arg(shown)
                                        .arg(s.isBaseline ? tr("  (base)") : QString()));
  if (s.isBaseline) {
    QFont f = name->font();
    f.setBold(true);
    name->setFont(f);
  }
  name->setToolTip(name->text());  // the whole name where the column elides it
  return name;
}

// One figure of a run, with its difference to the baseline (`base`, if any): accuracy in points,
// the rest as a ratio; tinted green when better, red when worse.
QTableWidgetItem* summaryCell(const RunSummary& s, SummaryField field, const RunSummary* base) {
  const double v = s.value(field), ratio = s.ratio(field);
  QString text = formatSummaryValue(field, v);
  // Accuracy against the baseline in points (as pipemare compare), everything else as a ratio.
  const bool accuracy = field == SummaryField::FinalAccuracy || field == SummaryField::BestAccuracy;
  const double points = accuracy && base ? (v - base->value(field)) * 100.0 : NAN;
  if (!s.isBaseline && accuracy && std::isfinite(points))
    text += QStringLiteral("  %1%2 pts").arg(points >= 0 ? QStringLiteral("+") : QString(), QString::number(points, 'f', 2));
  else if (!s.isBaseline && !accuracy && std::isfinite(ratio))
    text += QStringLiteral("  ×%1").arg(QString::number(ratio, 'f', 2));
  auto* item = new QTableWidgetItem(text);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setToolTip(!std::isfinite(v) ? tr("not available")
                   : accuracy        ? tr("%1 (against the baseline: %2 points)")
                                    .arg(QString::number(v, 'g', 10), std::isfinite(points) ? QString::number(points, 'g', 6) : tr("n/a"))
                                     : tr("%1 (ratio to baseline: %2)")
                                    .arg(QString::number(v, 'g', 10), std::isfinite(ratio) ? QString::number(ratio, 'g', 6) : tr("n/a")));
  if (!s.isBaseline && (accuracy ? std::isfinite(points) : std::isfinite(ratio))) {
    const bool higher = summaryFieldInfo(field).higherIsBetter;
    const bool better = accuracy ? points > 0.5 : higher ? ratio > 1.01 : ratio < 0.99;
    const bool worse = accuracy ? points < -0.5 : higher ? ratio < 0.99 : ratio > 1.01;
    if (better) item->setBackground(QColor(214, 240, 214));
    if (worse) item->setBackground(QColor(246, 218, 218));
  }
  return item;
}

}  // namespace

void fillSummaryTable(QTableWidget* table, const std::vector<RunSummary>& rows, const std::vector<QColor>& colors,
                      double target, const std::map<int64_t, std::string>& labels) {
  table->clear();
  setSummaryHeaders(table, target);
  table->setRowCount(static_cast<int>(rows.size()));
  const auto baseIt = std::find_if(rows.begin(), rows.end(), [](const RunSummary& s) { return s.isBaseline; });
  const RunSummary* base = baseIt == rows.end() ? nullptr : &*baseIt;
  for (size_t r = 0; r < rows.size(); ++r) {
    const RunSummary& s = rows[r];
    const int row = static_cast<int>(r);
    const auto label = labels.find(s.runId);
    table->setItem(row, 0, runNameCell(s, r < colors.size() ? colors[r] : QColor(), label == labels.end() ? std::string() : label->second));
    for (int f = 0; f < kSummaryFieldCount; ++f) table->setItem(row, f + 1, summaryCell(s, summaryField(f), base));
  }
  fitSummaryColumns(table);
}

void fitSummaryColumns(QTableWidget* table) {
  // The figures take their contents' width and the run's name the rest of the table's: the
  // columns fill the width the table has (no empty band on the right) and a long name is elided
  // (its tooltip has it whole) before a figure goes behind the scroll bar.
  QHeaderView* header = table->horizontalHeader();
  header->setStretchLastSection(false);
  header->setSectionResizeMode(QHeaderView::ResizeToContents);
  if (header->count() > 0) header->setSectionResizeMode(0, QHeaderView::Stretch);
  // The cell starts with the run's id and what tells it apart from the others: its end (the
  // name) is cut first.
  table->setTextElideMode(Qt::ElideRight);
}

}  // namespace pm::ui
