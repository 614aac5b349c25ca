// The Compare view's run list: its rows, the filter, ticking runs and the colour each ticked run keeps.
#include "ui/compare/compare_view.h"

#include <QLineEdit>
#include <QScrollBar>
#include <QTimer>
#include <QTreeWidget>
#include <algorithm>
#include <iterator>
#include <set>

#include "ui/compare/summary_table.h"

namespace pm::ui {

namespace {

// Distinct series colours (matplotlib's tab10).
const QColor kPalette[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                           {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

}  // namespace

QColor CompareView::colorOf(int64_t runId) const {
  const auto it = colorSlot_.find(runId);
  return kPalette[(it == colorSlot_.end() ? 0 : it->second) % std::size(kPalette)];
}

void CompareView::assignColors() {
  for (auto it = colorSlot_.begin(); it != colorSlot_.end();)
    it = std::binary_search(selected_.begin(), selected_.end(), it->first) ? std::next(it) : colorSlot_.erase(it);
  for (int64_t id : selected_) {
    if (colorSlot_.count(id)) continue;
    std::set<size_t> used;
    for (const auto& [run, slot] : colorSlot_) used.insert(slot);
    size_t slot = 0;
    while (used.count(slot)) ++slot;
    colorSlot_[id] = slot;
  }
}

void CompareView::setFilterText(const QString& text) { findChild<QLineEdit*>(QStringLiteral("runFilter"))->setText(text); }

void CompareView::applyFilter() {
  for (int i = 0; i < runList_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = runList_->topLevelItem(i);
    bool match = filterText_.isEmpty();
    for (int c = 0; c < kRunColumns && !match; ++c) match = it->text(c).contains(filterText_, Qt::CaseInsensitive);
    it->setHidden(!match);
  }
}

void CompareView::reloadRunList() {
  updating_ = true;
  const int64_t current =
      runList_->currentItem() ? runList_->currentItem()->data(0, Qt::UserRole).toLongLong() : int64_t{0};
  const int scroll = runList_->verticalScrollBar()->value();  // the rebuild must not move the list under the mouse
  runList_->clear();
  QList<QTreeWidgetItem*> items;
  for (const auto& r : runs_) {
    auto* it = new QTreeWidgetItem;
    it->setText(0, QStringLiteral("#%1").arg(r.id));
    it->setData(0, Qt::UserRole, QVariant::fromValue<qlonglong>(r.id));
    it->setText(1, QString::fromStdString(r.name));
    it->setText(2, QString::fromUtf8(toString(r.status)));
    it->setText(3, QString::fromStdString(r.schedule));
    it->setText(4, QString::fromStdString(r.model));
    it->setText(5, r.stages ? QString::number(r.stages) : QString());
    it->setText(6, r.microbatches ? QString::number(r.microbatches) : QString());
    it->setToolTip(1, QString::fromStdString(r.name));
    if (!r.status_message.empty()) it->setToolTip(2, QString::fromStdString(r.status_message));
    it->setFlags(it->flags() | Qt::ItemIsUserCheckable);
    const auto pos = std::lower_bound(selected_.begin(), selected_.end(), r.id);
    const bool on = pos != selected_.end() && *pos == r.id;
    it->setCheckState(0, on ? Qt::Checked : Qt::Unchecked);
    it->setIcon(0, colorSwatch(on ? colorOf(r.id) : QColor()));
    items << it;
  }
  runList_->addTopLevelItems(items);
  for (int c = 0; c < kRunColumns; ++c) runList_->resizeColumnToContents(c);
  runList_->setColumnWidth(1, std::min(runList_->columnWidth(1), 140));
  for (auto* it : items)
    if (it->data(0, Qt::UserRole).toLongLong() == current) runList_->setCurrentItem(it);
  applyFilter();  // the filter typed still applies to the rebuilt list
  runList_->verticalScrollBar()->setValue(scroll);
  updating_ = false;
}

void CompareView::onRunChecked(QTreeWidgetItem* item) {
  if (updating_ || !item) return;
  std::vector<int64_t> ids;
  for (int i = 0; i < runList_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* it = runList_->topLevelItem(i);
    if (it->checkState(0) == Qt::Checked) ids.push_back(it->data(0, Qt::UserRole).toLongLong());
  }
  // Called from the list's own signal: rebuild it afterwards, not while it is emitting.
  QTimer::singleShot(0, this, [this, ids] { setSelectedRuns(ids); });
}

}  // namespace pm::ui
