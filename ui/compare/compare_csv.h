#pragma once
// CSV writing for the Compare view's export: RFC 4180 quoting, full-precision numbers (empty for
// NaN), atomic writes, and why an export's file cannot be written. GUI thread (any thread: no
// widgets involved).
#include <QByteArray>
#include <QString>
#include <map>
#include <vector>

#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"

namespace pm::ui {

QString csvField(const QString& text);  // quoted when it holds , " CR or LF
QString csvNumber(double value);        // %.17g; "" for NaN / inf
// Writes through QSaveFile (the old file stays until the new one is complete). False on failure,
// with why in *error when given (writeProblem's words, else the system's error).
bool writeFileAtomically(const QString& path, const QByteArray& bytes, QString* error = nullptr);
// Why a file cannot be written at `path`, in words that name the culprit: "the folder D does not
// exist", "D is not a folder", "the folder D is not writable", "P is a folder", "P is read-only".
// Empty when none of these holds (the caller says what failed otherwise).
QString writeProblem(const QString& path);
// The summary table: run_id,run_name,schedule,model,stages,microbatches,status,baseline,
// accuracy_target, the SummaryField keys, then the same keys with "_ratio" (value / baseline).
QByteArray summaryCsv(const std::vector<RunSummary>& rows, const std::map<int64_t, RunData>& runs,
                      double accuracyTarget);

}  // namespace pm::ui
