#include "ui/live/live_panel.h"

#include <algorithm>

#include <QAbstractButton>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/live/live_run_view.h"

namespace pm::ui {

namespace {
// A view's tab title without its status ("#12 cnn-gpipe-p2"), kept on the view.
constexpr const char* kTabTitle = "pmTabTitle";
}  // namespace

LivePanel::LivePanel(const QString& pipemareBinary, const QString& dbPath, QWidget* parent)
    : QWidget(parent), binary_(pipemareBinary), db_(dbPath), tabs_(new QTabWidget(this)) {
  tabs_->setObjectName(QStringLiteral("liveRunTabs"));
  tabs_->setTabsClosable(true);
  // Many runs: the strip scrolls and long names are shortened in the middle (the run id in front
  // and the status at the end stay readable); the full text is each tab's tooltip.
  tabs_->setUsesScrollButtons(true);
  tabs_->setElideMode(Qt::ElideMiddle);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* hint = new QLabel(tr("Runs started from the Design tab appear here, one tab each (Ctrl+R runs the current design)."), this);
  hint->setWordWrap(true);
  layout->addWidget(hint);
  layout->addWidget(tabs_, 1);
  connect(tabs_, &QTabWidget::tabCloseRequested, this, &LivePanel::closeTab);
}

LiveRunView* LivePanel::addView(const QString& title) {
  auto* v = new LiveRunView(binary_, db_, this);
  v->setStoreWatcher(watcher_);
  views_.push_back(v);
  const int i = tabs_->addTab(v, title);
  tabs_->setTabToolTip(i, title);
  tabs_->setCurrentIndex(i);
  // Named with the run's id once the store has one: "#12 cnn-gpipe-p2".
  connect(v, &LiveRunView::runIdentified, this, [this, v, title](int64_t id) {
    const int idx = tabs_->indexOf(v);
    if (idx < 0) return;
    const QString text = QStringLiteral("#%1 %2").arg(id).arg(title);
    v->setProperty(kTabTitle, text);
    tabs_->setTabText(idx, text);
    tabs_->setTabToolTip(idx, text);
  });
  connect(v, &LiveRunView::resumeRequested, this, &LivePanel::resumeRequested);
  connect(v, &LiveRunView::runFinished, this, [this, v](const QString& status) {
    const int idx = tabs_->indexOf(v);
    if (idx >= 0) {
      const QString base = v->property(kTabTitle).toString();
      tabs_->setTabText(idx, (base.isEmpty() ? tabs_->tabText(idx) : base) + " [" + status + "]");
      tabs_->setTabToolTip(idx, tabs_->tabText(idx));
    } else {  // its tab was closed while it ran (retire): nothing shows it any more
      views_.erase(std::remove(views_.begin(), views_.end(), v), views_.end());
      v->deleteLater();
    }
    Q_EMIT runFinished(status);
  });
  return v;
}

LiveRunView* LivePanel::startRun(const QString& experimentFile, const QString& title) {
  LiveRunView* v = addView(title);
  v->start(experimentFile, title);
  return v;
}

LiveRunView* LivePanel::resumeRun(int64_t runId, const QString& title) {
  // One view per run: a run that has its tab still open continues there.
  for (LiveRunView* v : views_) {
    const int idx = tabs_->indexOf(v);
    if (idx < 0 || v->runId() != runId || v->running()) continue;
    const QString base = v->property(kTabTitle).toString();
    tabs_->setTabText(idx, base);
    tabs_->setTabToolTip(idx, base);
    tabs_->setCurrentIndex(idx);
    v->resume(runId, base);
    return v;
  }
  LiveRunView* v = addView(title);
  v->resume(runId, title);
  return v;
}

void LivePanel::closeTab(int index) {
  auto* v = qobject_cast<LiveRunView*>(tabs_->widget(index));
  if (!v) return;
  if (v->running()) {
    // The window's close dialog for one run (MainWindow::closeEvent): stop it, or leave it
    // running; Cancel (also Escape and Return, the default) keeps the tab. Plain text: the run's
    // name is shown as it is.
    const QString title = tabs_->tabText(index);  // the run's name, as the run was started
    QMessageBox box(QMessageBox::Question, tr("Run in progress"),
                    tr("The run \"%1\" is still in progress. Stop it, or leave it running? A run left running keeps "
                       "recording into the store and shows in the Runs tab.")
                        .arg(title),
                    QMessageBox::NoButton, this);
    box.setTextFormat(Qt::PlainText);
    auto* stop = box.addButton(tr("Stop it"), QMessageBox::DestructiveRole);
    auto* leave = box.addButton(tr("Leave running"), QMessageBox::AcceptRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(QMessageBox::Cancel);
    box.setEscapeButton(QMessageBox::Cancel);
    box.exec();
    QAbstractButton* clicked = box.clickedButton();
    if (clicked == static_cast<QAbstractButton*>(stop)) {
      v->stop();
    } else if (clicked != static_cast<QAbstractButton*>(leave)) {
      return;  // Cancel
    }
    // The run may have ended while the question was open: retire() then deletes the view at once.
  }
  retire(v);
}

void LivePanel::retire(LiveRunView* v) {
  const int index = tabs_->indexOf(v);
  if (index >= 0) tabs_->removeTab(index);
  v->hide();
  if (v->running()) return;  // deleted when its run ends (addView's runFinished handler)
  views_.erase(std::remove(views_.begin(), views_.end(), v), views_.end());
  v->deleteLater();
}

int LivePanel::activeRuns() const {
  int n = 0;
  for (auto* v : views_) n += v->running() ? 1 : 0;
  return n;
}

void LivePanel::stopAll() {
  for (auto* v : views_)
    if (v->running()) v->stop();
}

void LivePanel::detachAll() {
  for (auto* v : views_)
    if (v->running()) v->detach();
}

LiveRunView* LivePanel::current() const { return qobject_cast<LiveRunView*>(tabs_->currentWidget()); }

}  // namespace pm::ui
