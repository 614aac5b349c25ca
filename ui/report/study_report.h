#pragma once
// The reproduction study's report: reads the study runs from a store (selected by their
// "study:<part>" tags, see scripts/reproduce.sh) and the planner's JSON outputs, draws the figures
// with the project's own plot widgets (PNG) and writes a Markdown report that sets each measured
// figure beside the paper's claim and the planner's prediction. Needs a QApplication (offscreen
// is fine). GUI thread only.
#include <QString>

namespace pm::ui {

struct StudyReportOptions {
  QString db;       // the study's run store; "" = none (the sections that need runs say so)
  QString outDir;   // study.md and figures/ are written here
  QString planDir;  // plan-resnet50-N8.json, plan-resnet50-N32.json (from pipemare plan --json)
};

// Returns the number of figures written; throws std::runtime_error naming the problem.
int writeStudyReport(const StudyReportOptions& o);

}  // namespace pm::ui
