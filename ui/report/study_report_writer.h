#pragma once
// Internal to ui/report: the study report's writer, one method per section. study_report.cpp has
// the shared helpers, the report's outline and the claims (6); study_report_quality.cpp the
// quality sections (1, 1b-1f); study_report_sections.cpp the language model (2), hardware (3)
// and planner (4) sections; study_report_stability.cpp the stability section (5). GUI thread only.
#include <QColor>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QTextStream>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/store/run_store.h"
#include "ui/report/study_report.h"

namespace pm::ui {

class CurvePlot;

namespace study {

extern const QColor kPalette[10];

// The PipeMare variants of the quality sections (T1 and T2 both on), each judged against the
// target "within 1.0 point of gpipe", and their titles: (variant, title).
extern const std::vector<std::pair<QString, QString>> kPipeMareVariants;

QString num(double v, int decimals = 4);

// "study-resnet20-t1t2" -> "t1t2"
QString variantOf(const RunRecord& r);

std::vector<RunRecord> runsTagged(const RunStore& store, const std::string& tag);

// A metric's points against their step as one series of `plot`.
void addStepSeries(CurvePlot& plot, const QString& name, const QColor& color, const std::vector<MetricPoint>& pts,
                   Qt::PenStyle style = Qt::SolidLine);

QJsonObject readJson(const QString& path);

}  // namespace study

class StudyReportWriter {
 public:
  explicit StudyReportWriter(const StudyReportOptions& o);
  // Writes study.md and the figures; returns the number of figures.
  int write();

 private:
  std::string hostLine() const;
  QString figure(const QString& name);
  // (1) Quality: ResNet-20, one stage per unit. `tag` selects the runs; `into` receives lr ->
  // variant -> final accuracy (for the claims); alsoEpoch > 1 adds a column with the accuracy after
  // that epoch (the study's presets evaluate once per epoch).
  void quality(const std::string& tag, const QString& heading, const QString& figurePrefix,
               std::map<std::string, std::map<QString, double>>& into, const QString& variantsNote = QString(),
               int alsoEpoch = 0);
  // statusOf: lr -> variant -> each seed's status.
  void qualityTargets(const std::map<std::string, std::map<QString, std::pair<double, double>>>& byLr,
                      const std::map<std::string, std::map<QString, std::vector<RunStatus>>>& statusOf);
  void warmupCost(const std::vector<RunRecord>& runs);
  void claims();
  void charlm();
  void hardware();
  bool hardwareRow(const RunRecord& r, double base, double baseCompute, double ceiling, QStringList& slowedBaseline);
  void timeline(const RunRecord& r, bool paperTiming);
  static std::vector<double> values(const std::vector<MetricPoint>& pts);
  void planner();
  void stability();

  StudyReportOptions o_;
  RunStore store_;
  QString text_;
  QTextStream md_{&text_};
  int figures_ = 0;
  std::map<std::string, std::map<QString, double>> quality_, qualityFull_, qualityN8_, qualityN4_, qualityLong_, qualityM0_;
  std::map<std::string, std::vector<double>> hw_;
  std::map<int, std::pair<double, double>> plan_;
};

}  // namespace pm::ui
