#pragma once
// A chooser for a metric among the many a run records (train/..., eval/..., stage<s>/... per
// stage): a search box that filters the list as the user types (every word must appear in the key,
// in any case; Return takes the first match, Down opens the list) beside a combo box whose list
// groups the keys under headers that cannot be chosen: "train", "eval", then one header per
// per-stage metric ("per stage: utilization" holds stage0/utilization, stage1/utilization...).
// GUI thread only.
#include <QString>
#include <QStringList>
#include <QWidget>

class QComboBox;
class QLineEdit;
class QStandardItemModel;

namespace pm::ui {

class MetricChooser : public QWidget {
  Q_OBJECT
 public:
  explicit MetricChooser(QWidget* parent = nullptr);
  // The keys offered (in this order within their groups) and the one shown as chosen; emits nothing.
  void setMetrics(const QStringList& keys, const QString& current);
  // An entry above the groups that chooses no metric (key ""), named `text`; "" offers none.
  void setNoneText(const QString& text);
  QString current() const { return current_; }
  QStringList metrics() const { return keys_; }
  // The keys the list shows now (those matching the search text), in list order.
  QStringList shownMetrics() const;
  // The header a key is listed under.
  static QString groupOf(const QString& key);
  QLineEdit* searchBox() const { return search_; }
  QComboBox* box() const { return box_; }

 Q_SIGNALS:
  // The user chose a key (in the list, or with Return in the search box).
  void metricChosen(const QString& key);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();  // the list from keys_, the search text and current_
  void choose(const QString& key);
  QLineEdit* search_;
  QComboBox* box_;
  QStandardItemModel* model_;
  QStringList keys_;
  QString current_;
  QString noneText_;
  bool rebuilding_ = false;
};

}  // namespace pm::ui
