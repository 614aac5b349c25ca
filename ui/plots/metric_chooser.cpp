#include "ui/plots/metric_chooser.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLineEdit>
#include <QRegularExpression>
#include <QStandardItemModel>
#include <map>
#include <vector>

namespace pm::ui {

namespace {

constexpr int kKeyRole = Qt::UserRole + 1;  // a metric item's key; headers have none

const QRegularExpression& stagePrefix() {
  static const QRegularExpression re(QStringLiteral("^stage\\d+/"));
  return re;
}

// Headers in list order: train and eval first, then the other whole-run groups, then the per-stage ones.
int groupRank(const QString& group) {
  if (group == QLatin1String("train")) return 0;
  if (group == QLatin1String("eval")) return 1;
  return group.startsWith(QLatin1String("per stage")) ? 3 : 2;
}

bool matches(const QString& key, const QStringList& words) {
  for (const QString& w : words)
    if (!key.contains(w, Qt::CaseInsensitive)) return false;
  return true;
}

}  // namespace

MetricChooser::MetricChooser(QWidget* parent)
    : QWidget(parent), search_(new QLineEdit(this)), box_(new QComboBox(this)), model_(new QStandardItemModel(this)) {
  search_->setObjectName(QStringLiteral("metricSearch"));
  search_->setPlaceholderText(tr("Search metrics"));
  search_->setClearButtonEnabled(true);
  search_->setToolTip(tr("Filter the metric list: every word typed must appear in the key (Return: take the first "
                         "match, Down: open the list)"));
  search_->setMaximumWidth(130);
  search_->setMinimumWidth(70);
  search_->installEventFilter(this);
  box_->setObjectName(QStringLiteral("metricBox"));
  box_->setModel(model_);
  box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  box_->setMinimumContentsLength(14);
  box_->setMaxVisibleItems(25);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(search_);
  layout->addWidget(box_, 1);
  setFocusProxy(box_);
  connect(search_, &QLineEdit::textChanged, this, [this] { rebuild(); });
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    const QStringList shown = shownMetrics();
    if (!shown.isEmpty() && !shown.contains(current_)) choose(shown.front());
  });
  connect(box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (rebuilding_ || index < 0) return;
    const QString key = box_->itemData(index, kKeyRole).toString();
    if ((!key.isEmpty() || !noneText_.isEmpty()) && key != current_) choose(key);
  });
}

QString MetricChooser::groupOf(const QString& key) {
  const QRegularExpressionMatch m = stagePrefix().match(key);
  if (m.hasMatch()) {
    const QString kind = key.mid(m.capturedLength()).section(QLatin1Char('/'), 0, 0);
    return tr("per stage: %1").arg(kind == QLatin1String("mem") ? tr("memory") : kind);
  }
  const int slash = key.indexOf(QLatin1Char('/'));
  return slash > 0 ? key.left(slash) : tr("other");
}

void MetricChooser::setNoneText(const QString& text) {
  noneText_ = text;
  rebuild();
}

void MetricChooser::setMetrics(const QStringList& keys, const QString& current) {
  keys_ = keys;
  current_ = current;
  rebuild();
}

QStringList MetricChooser::shownMetrics() const {
  QStringList out;
  for (int i = 0; i < box_->count(); ++i) {
    const QString key = box_->itemData(i, kKeyRole).toString();
    if (!key.isEmpty()) out << key;
  }
  return out;
}

void MetricChooser::choose(const QString& key) {
  current_ = key;
  rebuild();
  Q_EMIT metricChosen(key);
}

void MetricChooser::rebuild() {
  rebuilding_ = true;
  const QStringList words = search_->text().split(QLatin1Char(' '), Qt::SkipEmptyParts);
  std::map<std::pair<int, QString>, QStringList> groups;  // (rank, header) -> keys, in keys_ order
  for (const QString& key : keys_)
    if (matches(key, words)) {
      const QString group = groupOf(key);
      groups[{groupRank(group), group}] << key;
    }
  model_->clear();
  int currentRow = -1;
  if (!noneText_.isEmpty()) {
    auto* none = new QStandardItem(noneText_);
    none->setData(QString(), kKeyRole);
    if (current_.isEmpty()) currentRow = 0;
    model_->appendRow(none);
  }
  for (const auto& [group, keys] : groups) {
    auto* header = new QStandardItem(group.second);
    header->setFlags(Qt::NoItemFlags);  // a header: shown, never chosen (the arrow keys skip it)
    QFont bold = font();
    bold.setBold(true);
    header->setFont(bold);
    model_->appendRow(header);
    for (const QString& key : keys) {
      auto* item = new QStandardItem(key);
      item->setData(key, kKeyRole);
      if (key == current_) currentRow = model_->rowCount();
      model_->appendRow(item);
    }
  }
  // The key still plotted but filtered out of the list: the box names it, greyed, until another is chosen.
  box_->setPlaceholderText(current_);
  box_->setCurrentIndex(currentRow);
  if (words.isEmpty())
    box_->setToolTip(tr("%n metric(s)", nullptr, static_cast<int>(keys_.size())));
  else
    box_->setToolTip(tr("%1 of %2 metrics match \"%3\"").arg(shownMetrics().size()).arg(keys_.size()).arg(search_->text()));
  rebuilding_ = false;
}

bool MetricChooser::eventFilter(QObject* watched, QEvent* event) {
  if (watched == search_ && event->type() == QEvent::KeyPress && static_cast<QKeyEvent*>(event)->key() == Qt::Key_Down) {
    box_->setFocus();
    box_->showPopup();
    return true;
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace pm::ui
