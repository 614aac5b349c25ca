// pipemare-report: writes the reproduction study's report (Markdown + PNG figures drawn by the
// workbench's plot widgets) from a study store. Runs offscreen; used by scripts/reproduce.sh.
#include <QApplication>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ui/report/study_report.h"

int main(int argc, char** argv) {
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  pm::ui::StudyReportOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--db") o.db = argv[i + 1];
    else if (a == "--out") o.outDir = argv[i + 1];
    else if (a == "--plans") o.planDir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: pipemare-report --db STORE --out DIR [--plans DIR]\nunknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (o.db.isEmpty() || o.outDir.isEmpty()) {
    std::fprintf(stderr, "usage: pipemare-report --db STORE --out DIR [--plans DIR]\n");
    return 2;
  }
  if (o.planDir.isEmpty()) o.planDir = o.outDir;
  QApplication app(argc, argv);
  try {
    const int figures = pm::ui::writeStudyReport(o);
    std::fprintf(stderr, "wrote %s/study.md with %d figure(s)\n", o.outDir.toStdString().c_str(), figures);
    return 0;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", ex.what());
    return 2;
  }
}
