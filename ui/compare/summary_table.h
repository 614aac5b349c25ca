#pragma once
// Presentation of the Compare view's summary: value formatting and filling a QTableWidget with one
// row per run (figures, ratios to the baseline tinted green/red when better/worse by more than 1 %).
// GUI thread only.
#include <QColor>
#include <QIcon>
#include <QString>
#include <map>
#include <string>
#include <vector>

#include "core/analysis/run_summary.h"

class QTableWidget;

namespace pm::ui {

QIcon colorSwatch(const QColor& color);  // a small filled square; invalid colour = blank
QString formatSummaryValue(SummaryField field, double value);  // "-" for NaN
// Replaces the table's contents. colors[i] is rows[i]'s series colour; labels: run id -> what
// tells it apart from the others (distinguishingLabels), shown before its name.
void fillSummaryTable(QTableWidget* table, const std::vector<RunSummary>& rows, const std::vector<QColor>& colors,
                      double accuracyTarget, const std::map<int64_t, std::string>& labels = {});
// Sizes the columns to the table's width: each figure its contents' width, the run's name (first
// column) the rest, elided at its end (the name, after the id and what tells the run apart) when short of room. fillSummaryTable calls it.
void fitSummaryColumns(QTableWidget* table);

}  // namespace pm::ui
