#include "ui/compare/compare_csv.h"

#include <QFileInfo>
#include <QObject>
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

QString writeProblem(const QString& path) {
  const QFileInfo file(path);
  const QString folder = file.absolutePath();
  const QFileInfo dir(folder);
  if (!dir.exists()) return QObject::tr("the folder %1 does not exist").arg(folder);
  if (!dir.isDir()) return QObject::tr("%1 is not a folder").arg(folder);
  if (file.isDir()) return QObject::tr("%1 is a folder").arg(file.absoluteFilePath());
  // QSaveFile writes a temporary file beside the target, so the folder itself must be writable.
  if (!dir.isWritable()) return QObject::tr("the folder %1 is not writable").arg(folder);
  if (file.exists() && !file.isWritable()) return QObject::tr("%1 is read-only").arg(file.absoluteFilePath());
  return {};
}

bool writeFileAtomically(const QString& path, const QByteArray& bytes, QString* error) {
  QSaveFile f(path);
  const bool written = f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() && f.commit();
  if (!written && error) {
    *error = writeProblem(path);
    if (error->isEmpty()) *error = f.errorString();  // e.g. the disk is full
  }
  return written;
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
