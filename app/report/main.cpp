// pipemare-report: writes the reproduction study's report (Markdown + PNG figures drawn by the
// workbench's plot widgets) from a study store. Runs offscreen; used by scripts/reproduce.sh.
#include <QApplication>
#include <QFileInfo>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "ui/report/study_report.h"

int main(int argc, char** argv) {
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  pm::ui::StudyReportOptions o;
  const char* usage =
      "usage: pipemare-report --out DIR [--db STORE] [--plans DIR]\n"
      "  --db: the study's run store (without it, the sections that need runs say none were recorded)\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (a != "--db" && a != "--out" && a != "--plans") {
      std::fprintf(stderr, "pipemare-report: unknown option '%s'\n%s", a.c_str(), usage);
      return 2;
    }
    if (i + 1 >= argc || argv[i + 1][0] == '\0') {
      std::fprintf(stderr, "pipemare-report: option %s needs a value\n%s", a.c_str(), usage);
      return 2;
    }
    const QString value = QString::fromLocal8Bit(argv[++i]);
    if (a == "--db") o.db = value;
    else if (a == "--out") o.outDir = value;
    else o.planDir = value;
  }
  if (o.outDir.isEmpty()) {
    std::fprintf(stderr, "pipemare-report: --out is required\n%s", usage);
    return 2;
  }
  if (!o.planDir.isEmpty() && !QFileInfo(o.planDir).isDir()) {
    std::fprintf(stderr, "pipemare-report: --plans %s: no such directory (it holds plan-resnet50-N*.json from pipemare plan)\n",
                 o.planDir.toLocal8Bit().constData());
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
