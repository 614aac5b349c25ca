#pragma once
// One live run: starts the engine in a child process and shows its loss / accuracy (or
// perplexity) curves, per-stage utilization with the compute / waiting / idle split, per-stage
// memory, throughput, and for asynchronous schedules each stage's delay, learning rate and weight
// gap; a progress bar with ETA, the log, and Stop. A run that ended with a checkpoint to continue
// from (stopped, failed or interrupted) offers Resume under its log. Events update buffers; plots
// are redrawn by a ~30 Hz timer, never per event. GUI thread only.
#include <QStringList>
#include <QPointer>
#include <QWidget>
#include <map>
#include <nlohmann/json.hpp>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTimer;

namespace pm::ui {

class CurvePlot;
class StackedBarsPlot;
class RunProcess;
class StoreWatcher;

class LiveRunView : public QWidget {
  Q_OBJECT
 public:
  LiveRunView(const QString& pipemareBinary, const QString& dbPath, QWidget* parent = nullptr);
  ~LiveRunView() override;

  void start(const QString& experimentFile, const QString& title);
  // Continues the stored run `runId` from its latest checkpoint (`pipemare run --resume runId`),
  // with the configuration the store recorded for it.
  void resume(int64_t runId, const QString& title);
  void stop();
  bool running() const;
  qint64 pid() const;  // the `pipemare run` child's process id (0 when none)
  void detach();  // leave the child running when this view goes away
  // The process's store connection, told when the child ends (see RunProcess::setStoreWatcher).
  void setStoreWatcher(StoreWatcher* watcher);
  const QString& status() const { return status_; }
  int64_t runId() const { return runId_; }
  size_t lossPoints() const;
  CurvePlot* lossPlot() const { return loss_; }
  CurvePlot* evalPlot() const { return accuracy_; }  // accuracy, or perplexity for language models
  CurvePlot* waitPlot() const { return wait_; }
  CurvePlot* lrPlot() const { return lr_; }
  CurvePlot* gapPlot() const { return gap_; }
  CurvePlot* memoryPlot() const { return memory_; }
  StackedBarsPlot* memoryNowPlot() const { return memoryNow_; }
  // One engine event (docs/events.md); called for every line the child prints (public for tests).
  void onEvent(const nlohmann::json& e);
  QString logText() const;
  // The Resume button under the log: shown once the run has ended resumable (offerResume).
  QPushButton* resumeButton() const { return resumeButton_; }

 Q_SIGNALS:
  void runFinished(const QString& status);
  // The store's id of the run shown, once known (from the engine's events, or the run resumed).
  void runIdentified(int64_t runId);
  // The Resume button: the stored run `runId` (named `name` in the store) is to continue from its
  // checkpoint. Whoever starts runs does it (LivePanel passes it on to MainWindow, which resumes it
  // as the Runs tab's Resume does).
  void resumeRequested(int64_t runId, const QString& name);

 private:
  void buildLayout();
  void setRunId(int64_t id);  // runId_, and runIdentified the first time it is known
  void processFinished(int code, const QString& st);
  // The run has ended: when the store records it stopped, failed or interrupted with a checkpoint
  // directory of its own holding a step, the Resume bar under the log offers to continue it.
  void offerResume();
  // The run's curves as the store holds them (up to its stop checkpoint), in place of what the
  // view showed: a resumed run continues them.
  void showHistory(int64_t runId);
  // onEvent's handlers of the eval, stage, progress and run_started events.
  void showEval(const nlohmann::json& e);
  void showStageReport(const nlohmann::json& e);
  void prepareStageSeries(const nlohmann::json& e);
  bool stageSeriesReady_ = false;
  void showProgress(const nlohmann::json& e);
  void runStarted(const nlohmann::json& e);
  void redraw();
  bool perplexityShown_ = false, accuracyShown_ = false;  // which the evaluation plot shows
  int series(CurvePlot* plot, const QString& name, int index, Qt::PenStyle style = Qt::SolidLine);
  RunProcess* proc_;
  CurvePlot *loss_, *accuracy_, *utilization_, *wait_, *memory_, *throughput_, *asyncPlot_, *lr_, *gap_;
  StackedBarsPlot* memoryNow_;
  std::map<int, nlohmann::json> memoryNowByStage_;
  // The rank of each stage (run_started's partition). Where a rank holds several stages
  // (interleaved-1f1b, zb-v) memory is drawn per rank: a rank is one device, its stages' reports of
  // a step summed once all have arrived.
  std::vector<int> stageRanks_;
  struct RankStep {
    double total = 0, peak = 0;
    int reports = 0;
  };
  std::map<std::pair<int, double>, RankStep> rankSteps_;
  bool memoryPerRank() const;
  QString rankName(int rank) const;  // "rank 0 (stages 0, 3)"
  QProgressBar* progress_;
  QLabel* header_;
  QPlainTextEdit* log_;
  QPushButton* stopButton_;
  QWidget* resumeBar_;  // under the log: why the run can continue, and Resume
  QLabel* resumeNote_;
  QPushButton* resumeButton_;
  QString resumeName_;  // the stored run's name, for resumeRequested
  QString db_;  // the run store the child records into
  QPointer<StoreWatcher> watcher_;  // the store as this process sees it (setStoreWatcher, else the view's own)
  StoreWatcher* storeWatcher();
  QTimer* timer_;
  bool dirty_ = false;
  bool synchronous_ = false;  // the run's schedule is gpipe or 1f1b (from run_started)
  QString status_;
  int64_t runId_ = 0;
  QStringList errorsShown_;  // messages of the error events in the log (not repeated from stderr)
  // From the run_finished event: the run's status, the engine's message and its headline figures
  // ("run 7 finished: final loss 0.0123, accuracy 0.8150, 2400 samples/s over 12.3s"); the log's
  // last line once the process has ended. Empty while no run_finished event came.
  QString summaryLine_;
  std::map<std::pair<CurvePlot*, QString>, int> seriesIndex_;
};

}  // namespace pm::ui
