// A Live view's history: the run's curves as the store holds them, shown when a run resumes (in
// its own tab, or a new one) so that its curves carry on from the first step.
#include <QPlainTextEdit>

#include <limits>
#include <map>

#include "core/events/event.h"
#include "core/events/metric_keys.h"
#include "core/store/run_store.h"
#include "ui/live/live_run_view.h"
#include "ui/plots/curve_plot.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

void LiveRunView::showHistory(int64_t runId) {
  // Afresh: the curves of an earlier session in this view (and its steps after the checkpoint,
  // which the resumed session trains again) give way to the store's record of the run.
  for (CurvePlot* p : {loss_, accuracy_, utilization_, wait_, memory_, throughput_, asyncPlot_, lr_, gap_}) p->clear();
  seriesIndex_.clear();
  stageSeriesReady_ = false;
  rankSteps_.clear();
  memoryNowByStage_.clear();
  try {
    const RunStore* store = storeWatcher()->storeOrThrow();
    if (!store) return;
    const auto run = store->getRun(runId);
    if (!run) return;
    // A stopped run continues after its stop checkpoint; a crashed one from its latest, which
    // the view cannot tell: its whole record is shown.
    const int64_t upTo = run->halt_step > 0 ? run->halt_step : std::numeric_limits<int64_t>::max();
    std::map<int64_t, nlohmann::json> steps, evals;
    for (const char* key : metric::kStepFields)
      for (const auto& p : store->loadMetric(runId, std::string(metric::kTrainPrefix) + key))
        if (p.step <= upTo) steps[p.step][key] = p.value;
    for (const char* key : metric::kEvalFields)
      for (const auto& p : store->loadMetric(runId, std::string(metric::kEvalPrefix) + key))
        if (p.step <= upTo) evals[p.step][key] = p.value;
    for (auto& [step, e] : steps) {
      e["type"] = ev::kStep;
      e["step"] = step;
      onEvent(e);
    }
    for (auto& [step, e] : evals) {
      e["type"] = ev::kEval;
      e["step"] = step;
      onEvent(e);
    }
    if (!steps.empty())
      log_->appendPlainText(tr("run %1's record so far: %2 logged steps up to step %3").arg(runId).arg(steps.size()).arg(steps.rbegin()->first));
  } catch (const std::exception& ex) {
    log_->appendPlainText(tr("cannot read the run's record so far: %1").arg(QString::fromUtf8(ex.what())));
  }
}

}  // namespace pm::ui
