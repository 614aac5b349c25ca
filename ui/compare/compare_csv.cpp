#include "ui/compare/compare_csv.h"

#include <QSaveFile>
#include <QStringList>
#include <cmath>

namespace pm::ui {

QString csvNumber(double v) { return std::isfinite(v) ? QString::number(v, 'g', 17) : QString(); }

QString csvField(const QString& s) {
  if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n')) &&
      !s.contains(QLatin1Char('\r')))
    return s;
  QString q = s;
  q.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + q + QLatin1Char('"');
}

bool writeFileAtomically(const QString& path, const QByteArray& bytes) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return false;
  if (f.write(bytes) != bytes.size()) return false;
  return f.commit();
}

QByteArray summaryCsv(const std::vector<RunSummary>& rows, const std::map<int64_t, RunData>& runs, double target) {
  QByteArray out = "run_id,run_name,schedule,model,stages,microbatches,status,baseline,accuracy_target";
  for (int f = 0; f < kSummaryFieldCount; ++f) out += QByteArray(",") + summaryFieldInfo(summaryField(f)).key;
  for (int f = 0; f < kSummaryFieldCount; ++f) out += QByteArray(",") + summaryFieldInfo(summaryField(f)).key + "_ratio";
  out += "\n";
  for (const auto& s : rows) {
    auto it = runs.find(s.runId);
    const RunRecord r = it != runs.end() ? it->second.record : RunRecord{};
    QStringList row{QString::number(s.runId),
                    csvField(QString::fromStdString(s.name)),
                    csvField(QString::fromStdString(r.schedule)),
                    csvField(QString::fromStdString(r.model)),
                    QString::number(r.stages),
                    QString::number(r.microbatches),
                    csvField(it != runs.end() ? QString::fromUtf8(toString(r.status)) : QString()),  // "" without a record
                    s.isBaseline ? QStringLiteral("1") : QStringLiteral("0"),
                    csvNumber(target)};
    for (double v : s.values) row << csvNumber(v);
    for (double v : s.ratios) row << csvNumber(v);
    out += row.join(QLatin1Char(',')).toUtf8() + "\n";
  }
  return out;
}

}  // namespace pm::ui
