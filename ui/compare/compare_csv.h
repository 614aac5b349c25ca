#pragma once
// CSV writing for the Compare view's export: RFC 4180 quoting, full-precision numbers (empty for
// NaN), atomic writes. GUI thread (any thread: no widgets involved).
#include <QByteArray>
#include <QString>
#include <map>
#include <vector>

#include "core/analysis/run_data.h"
#include "core/analysis/run_summary.h"

namespace pm::ui {

QString csvField(const QString& text);  // quoted when it holds , " CR or LF
QString csvNumber(double value);        // %.17g; "" for NaN / inf
// Writes through QSaveFile (the old file stays until the new one is complete). False on failure.
bool writeFileAtomically(const QString& path, const QByteArray& bytes);
// The summary table: run_id,run_name,schedule,model,stages,microbatches,status,baseline,
// accuracy_target, the SummaryField keys, then the same keys with "_ratio" (value / baseline).
QByteArray summaryCsv(const std::vector<RunSummary>& rows, const std::map<int64_t, RunData>& runs,
                      double accuracyTarget);

}  // namespace pm::ui
