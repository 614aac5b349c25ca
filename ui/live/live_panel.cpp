#include "ui/live/live_panel.h"

#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include "ui/live/live_run_view.h"

namespace pm::ui {

LivePanel::LivePanel(const QString& pipemareBinary, const QString& dbPath, QWidget* parent)
    : QWidget(parent), binary_(pipemareBinary), db_(dbPath), tabs_(new QTabWidget(this)) {
  tabs_->setTabsClosable(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* hint = new QLabel(tr("Runs started from the Design tab appear here, one tab each (Ctrl+R runs the current design)."), this);
  hint->setWordWrap(true);
  layout->addWidget(hint);
  layout->addWidget(tabs_, 1);
  connect(tabs_, &QTabWidget::tabCloseRequested, this, [this](int i) {
    auto* v = qobject_cast<LiveRunView*>(tabs_->widget(i));
    if (v && v->running()) return;  // stop it first
    tabs_->removeTab(i);
    views_.erase(std::remove(views_.begin(), views_.end(), v), views_.end());
    if (v) v->deleteLater();
  });
}

LiveRunView* LivePanel::startRun(const QString& experimentFile, const QString& title) {
  auto* v = new LiveRunView(binary_, db_, this);
  v->setStoreWatcher(watcher_);
  views_.push_back(v);
  const int i = tabs_->addTab(v, title);
  tabs_->setCurrentIndex(i);
  connect(v, &LiveRunView::runFinished, this, [this, v](const QString& status) {
    const int idx = tabs_->indexOf(v);
    if (idx >= 0) tabs_->setTabText(idx, tabs_->tabText(idx) + " [" + status + "]");
    Q_EMIT runFinished(status);
  });
  v->start(experimentFile, title);
  return v;
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
