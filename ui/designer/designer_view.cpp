#include "ui/designer/designer_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QEvent>
#include <QFile>
#include <QFileDialog>
#include <QSignalBlocker>
#include <QMessageBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QPointer>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStandardPaths>
#include <QVBoxLayout>
#include <QWheelEvent>

#include <algorithm>
#include <cstdlib>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/util/errors.h"

namespace pm::ui {

namespace {

// What the format says about each field (type, accepted values, help), from core/config's field
// table. Types and choices do not depend on the other fields' values.
const std::vector<FieldInfo>& formatFields() {
  static const std::vector<FieldInfo> fields = experimentFields();
  return fields;
}

// The JSON pointer of a dotted field path ("pipeline.stages" -> "/pipeline/stages").
Json::json_pointer pointerTo(const std::string& path) {
  return Json::json_pointer("/" + QString::fromStdString(path).replace('.', '/').toStdString());
}

// The default value of a field; null for a path the format does not have.
Json defaultOf(const std::string& path) {
  static const Json defaults = experimentToJson(Experiment{});
  try {
    return defaults.at(pointerTo(path));
  } catch (...) {
    return Json();
  }
}

// The widget property holding a field's own tooltip (the validator's message replaces the tooltip
// while the field is flagged).
const char* kFieldTip = "fieldToolTip";

// Each field's tooltip: its path, meaning, accepted values and default. Accepted values that
// depend on other fields (pipeline.stages on model.name, ...) are those of `context`.
void setFieldToolTips(const std::map<std::string, QWidget*>& widgets, const Experiment& context) {
  const std::vector<FieldInfo> fields = experimentFields(context);
  for (const auto& [path, w] : widgets) {
    QString tip = QString::fromStdString(path);
    if (const FieldInfo* f = findField(fields, path))
      tip += QString::fromStdString(": " + f->help + "\naccepts " + f->accepts);
    tip += QString::fromStdString("\ndefault: " + defaultOf(path).dump());
    w->setProperty(kFieldTip, tip);
    w->setToolTip(tip);
  }
}

const char* kInvalidStyle = "border: 2px solid #d62728; border-radius: 3px;";

// A field's value as its text field shows it: a string as it is, anything else as JSON.
QString shownText(const Json& v) { return QString::fromStdString(v.is_string() ? v.get<std::string>() : v.dump()); }

// What the validator says about a key the format does not have: the problem it reports for the
// key set to `value` in the default experiment (which is valid, so the key is the one problem).
// Empty when it finds none, or when the path cannot be set there (it crosses a field that is not
// a section).
QString unknownKeyProblem(const std::string& path, const Json& value) {
  try {
    Json probe = experimentToJson(Experiment{});
    probe[pointerTo(path)] = value;
    static_cast<void>(experimentFromJson(probe, "design"));
  } catch (const Error& e) {
    return QString::fromStdString(e.problem());
  } catch (const std::exception&) {
    // not settable in the default experiment: the caller says so in its own words
  }
  return {};
}

// The user's own presets: $XDG_DATA_HOME/pipemare/experiments (~/.local/share/pipemare/experiments).
QString userPresetDir() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/pipemare/experiments");
}

// The presets beyond those of `presetDir` (the installed ones, or the source checkout's from the
// build tree), each item holding its file's path: those of another installation on $XDG_DATA_DIRS
// (pipemare/experiments) under names not yet listed, then, after a separator, the user's own.
void addOtherPresets(QComboBox* presets, const QString& presetDir) {
  const QString shipped = QFileInfo(presetDir).canonicalFilePath();
  const QString own = QFileInfo(userPresetDir()).canonicalFilePath();  // empty while it does not exist
  QStringList listed;
  for (int i = 1; i < presets->count(); ++i) listed << presets->itemText(i);
  const auto add = [presets](const QFileInfo& f) {
    presets->addItem(f.fileName(), f.absoluteFilePath());
    presets->setItemData(presets->count() - 1, f.absoluteFilePath(), Qt::ToolTipRole);
  };
  for (const QString& dir : QStandardPaths::locateAll(QStandardPaths::GenericDataLocation, QStringLiteral("pipemare/experiments"),
                                                      QStandardPaths::LocateDirectory)) {
    const QString canonical = QFileInfo(dir).canonicalFilePath();
    if (canonical == shipped || canonical == own) continue;
    for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
      if (!listed.contains(f.fileName())) {
        add(f);
        listed << f.fileName();
      }
  }
  if (own.isEmpty() || own == shipped) return;
  const QFileInfoList mine = QDir(own).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
  if (!mine.isEmpty()) presets->insertSeparator(presets->count());
  for (const QFileInfo& f : mine) add(f);
}

}  // namespace

// The one wheel rule of the form's fields: a field (spin box, drop-down, any other) takes the
// mouse wheel only while it has the keyboard focus, clicked or tabbed into. Over any other field
// the wheel scrolls the form, so that scrolling past a field never edits it (an edit a run would
// record). Fields take the focus by click or Tab only (Qt::StrongFocus): with Qt's default for spin
// boxes and drop-downs (Qt::WheelFocus) the wheel itself would give them the focus first.
class FieldWheelGuard : public QObject {
 public:
  // `form`: the scroll area the wheel scrolls instead.
  FieldWheelGuard(QAbstractScrollArea* form, QObject* parent) : QObject(parent), form_(form) {}

  void guard(QWidget* field) {
    field->setFocusPolicy(Qt::StrongFocus);
    field->installEventFilter(this);
  }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    auto* field = qobject_cast<QWidget*>(watched);
    if (!field || field->hasFocus()) return false;  // a focused field takes the wheel as usual
    // Handed to the form's scroll bar, as the scroll area does with a wheel over its viewport (a
    // wheel the field ignored would reach the form only when it comes from the mouse, not from a
    // synthesised event).
    if (form_ && form_->isAncestorOf(field)) {
      auto* wheel = static_cast<QWheelEvent*>(event);
      const QPoint delta = wheel->angleDelta();
      QScrollBar* bar = std::abs(delta.x()) > std::abs(delta.y()) ? form_->horizontalScrollBar() : form_->verticalScrollBar();
      QCoreApplication::sendEvent(bar, wheel);
    }
    event->accept();
    return true;
  }

 private:
  QPointer<QAbstractScrollArea> form_;
};

DesignerView::DesignerView(const QString& presetDir, QWidget* parent)
    : QWidget(parent), presetDir_(presetDir), presets_(new QComboBox(this)), form_(new QWidget(this)),
      formLayout_(new QVBoxLayout(form_)), status_(new QLabel(this)) {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Preset:"), this));
  presets_->addItem(tr("(defaults)"));
  for (const QString& f : QDir(presetDir_).entryList({"*.json"}, QDir::Files, QDir::Name)) presets_->addItem(f);
  addOtherPresets(presets_, presetDir_);
  top->addWidget(presets_, 1);
  auto* open = new QPushButton(tr("Open..."), this);
  auto* save = new QPushButton(tr("Save as..."), this);
  auto* run = new QPushButton(tr("Run"), this);
  run->setObjectName("runButton");
  run->setDefault(true);
  top->addWidget(open);
  top->addWidget(save);
  top->addWidget(run);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(form_);
  wheelGuard_ = new FieldWheelGuard(scroll, this);
  wheelGuard_->guard(presets_);  // a wheel over the list would open another preset
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(scroll, 1);
  layout->addWidget(status_);

  connect(presets_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (i == 0) {
      asLoaded_ = nlohmann::json();  // a new design: no file whose notes could mislead
      file_.clear();                 // nor a file its messages name, or that is reopened next time
      setExperiment(experimentToJson(Experiment{}));
    } else if (presets_->itemData(i).isValid()) loadFile(presets_->itemData(i).toString());
    else loadFile(QDir(presetDir_).filePath(presets_->itemText(i)));
  });
  connect(open, &QPushButton::clicked, this, &DesignerView::openDialog);
  connect(save, &QPushButton::clicked, this, &DesignerView::saveAsDialog);
  connect(run, &QPushButton::clicked, this, &DesignerView::requestRun);
  connect(this, &DesignerView::validityChanged, run, &QPushButton::setEnabled);
  setExperiment(experimentToJson(Experiment{}));
}

bool DesignerView::loadFile(const QString& path) {
  try {
    Json raw = loadExperimentJson(path.toStdString());
    file_ = path;
    showFileInPresets(path);  // which preset is open (without reloading it)
    setExperiment(raw);
    asLoaded_ = currentJson();
    return true;
  } catch (const std::exception& ex) {
    valid_ = false;
    message_ = QString::fromStdString(ex.what());
    status_->setText(tr("<span style='color:#d62728'>%1</span>").arg(message_.toHtmlEscaped()));
    return false;
  }
}

void DesignerView::setExperiment(const Json& j) {
  // Show every field: defaults merged under what the file sets (an invalid file still shows).
  Json full = experimentToJson(Experiment{});
  full.merge_patch(j);
  build(full);
  validate();
}

void DesignerView::build(const Json& normalised) {
  building_ = true;
  while (QLayoutItem* item = formLayout_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  widgets_.clear();
  kinds_.clear();
  unknownKeys_.clear();
  auto* general = new QGroupBox(tr("experiment"), form_);
  new QFormLayout(general);
  Json top = Json::object();
  for (auto it = normalised.begin(); it != normalised.end(); ++it)
    if (!it->is_object()) top[it.key()] = *it;
  addFields(top, "", general, 0);
  formLayout_->addWidget(general);
  for (auto it = normalised.begin(); it != normalised.end(); ++it) {
    if (!it->is_object()) continue;
    auto* box = new QGroupBox(QString::fromStdString(it.key()), form_);
    new QFormLayout(box);
    addFields(*it, it.key() + ".", box, 0);
    formLayout_->addWidget(box);
  }
  formLayout_->addStretch(1);
  setFieldToolTips(widgets_, Experiment{});  // the defaults' ranges until validate() finds the design valid
  building_ = false;
}

void DesignerView::addFields(const Json& obj, const std::string& prefix, QWidget* box, int depth) {
  auto* form = qobject_cast<QFormLayout*>(box->layout());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string path = prefix + it.key();
    if (path == "model.options") continue;  // reserved, always {}
    if (it->is_object()) {
      auto* sub = new QGroupBox(QString::fromStdString(it.key()), box);
      new QFormLayout(sub);
      addFields(*it, path + ".", sub, depth + 1);
      form->addRow(sub);
      continue;
    }
    QWidget* w = nullptr;
    const Json& v = *it;
    // nullptr for a key the format does not have (the validator flags it).
    const FieldInfo* info = findField(formatFields(), path);
    // The field's type is the format's, not how the file happened to write the value: "epochs": 1
    // is a number that takes fractions, so it gets a text field, not an integer spin box.
    const bool integerField = (v.is_number_integer() || v.is_number_unsigned()) && (!info || info->type == FieldType::Integer);
    if (info && info->type == FieldType::Choice) {
      auto* c = new QComboBox(box);
      for (const auto& s : info->choices) c->addItem(QString::fromStdString(s));
      // A value the format does not allow ("PipeMare") is kept and shown as it is, so that the
      // validator flags it: a combo box would otherwise silently show (and run) its first item.
      const QString given = shownText(v);
      if (c->findText(given) < 0) c->insertItem(0, given);
      c->setCurrentText(given);
      connect(c, &QComboBox::currentTextChanged, this, [this] { validate(); });
      w = c;
    } else if (v.is_boolean()) {
      auto* c = new QCheckBox(box);
      c->setChecked(v.get<bool>());
      connect(c, &QCheckBox::toggled, this, [this] { validate(); });
      w = c;
    } else if (integerField) {
      // Out-of-range values stay editable (the validator flags them in place), so the spin box
      // spans more than any one field's range.
      auto* s = new QSpinBox(box);
      s->setRange(-1, 1000000000);
      s->setValue(static_cast<int>(std::min<int64_t>(v.get<int64_t>(), 1000000000)));
      connect(s, &QSpinBox::valueChanged, this, [this] { validate(); });
      w = s;
    } else {
      auto* e = new QLineEdit(box);
      e->setText(shownText(v));
      connect(e, &QLineEdit::textChanged, this, [this] { validate(); });
      w = e;
    }
    w->setObjectName(QString::fromStdString(path));
    wheelGuard_->guard(w);
    widgets_[path] = w;
    kinds_[path] = v;
    if (!info) {
      const QString problem = unknownKeyProblem(path, v);
      unknownKeys_[path] =
          problem.isEmpty() ? tr("%1 is not a field of the experiment format").arg(QString::fromStdString(path)) : problem;
    }
    form->addRow(QString::fromStdString(it.key()), w);
  }
}

Json DesignerView::readWidget(const std::string& path, const Json& like, bool* ok) const {
  QWidget* w = widgets_.at(path);
  *ok = true;
  if (auto* c = qobject_cast<QComboBox*>(w)) return c->currentText().toStdString();
  if (auto* c = qobject_cast<QCheckBox*>(w)) return c->isChecked();
  if (auto* s = qobject_cast<QSpinBox*>(w)) return static_cast<int64_t>(s->value());
  const QString shown = qobject_cast<QLineEdit*>(w)->text();
  if (shown == shownText(like)) return like;  // as the file gave it, its JSON type included
  // An edited field takes its type from the format, not from the value it replaces: "2" typed over
  // a "four" that the file gave pipeline.stages is the integer 2. A key the format does not have
  // keeps the type it was given with.
  const FieldInfo* info = findField(formatFields(), path);
  const std::string text = shown.toStdString();
  if (info ? info->type == FieldType::Text : like.is_string()) return text;
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded()) {
    *ok = false;
    return text;  // given as a string: the validator names the field and what it expected
  }
  return parsed;
}

Json DesignerView::currentJson() const {
  Json out = Json::object();
  for (const auto& [path, like] : kinds_) {
    bool ok = true;
    Json v = readWidget(path, like, &ok);
    out[pointerTo(path)] = v;
  }
  return out;
}

void DesignerView::validate() {
  if (building_) return;
  for (auto& [path, w] : widgets_) {
    w->setStyleSheet(QString());
    w->setToolTip(w->property(kFieldTip).toString());
  }
  invalidField_.clear();
  try {
    // The place names the file being edited (its line numbers do not fit the edited values: the
    // field is flagged in place).
    const Experiment design = experimentFromJson(
        currentJson(), file_.isEmpty() ? std::string("design") : QFileInfo(file_).fileName().toStdString() + " (as edited)");
    setFieldToolTips(widgets_, design);
    valid_ = true;
    message_.clear();
    status_->setText(tr("<span style='color:#2ca02c'>valid</span>"));
  } catch (const Error& e) {
    valid_ = false;
    message_ = QString::fromStdString(e.what());
    std::string place = e.place();
    const auto colon = place.find(": ");
    if (colon != std::string::npos) place = place.substr(colon + 2);
    // The flagged field, or the closest enclosing one that has a widget.
    std::string p = place;
    while (!p.empty() && !widgets_.count(p)) {
      const auto dot = p.rfind('.');
      p = dot == std::string::npos ? "" : p.substr(0, dot);
    }
    if (!p.empty()) {
      invalidField_ = QString::fromStdString(p);
      widgets_[p]->setStyleSheet(kInvalidStyle);
      widgets_[p]->setToolTip(QString::fromStdString(e.problem()));
    }
    status_->setText(tr("<span style='color:#d62728'>%1</span>").arg(message_.toHtmlEscaped()));
  }
  // Keys the format does not have stay flagged with the validator's message whichever problem it
  // reports first (it reports one); the status line lists those it did not report.
  QString others;
  for (const auto& [path, problem] : unknownKeys_) {
    QWidget* w = widgets_.at(path);
    w->setStyleSheet(kInvalidStyle);
    w->setToolTip(problem);
    if (QString::fromStdString(path) != invalidField_)
      others += QStringLiteral("<br><span style='color:#d62728'>%1: %2</span>")
                    .arg(QString::fromStdString(path).toHtmlEscaped(), problem.toHtmlEscaped());
  }
  if (!others.isEmpty()) status_->setText(status_->text() + others);
  Q_EMIT validityChanged(valid_);
}

QWidget* DesignerView::fieldWidget(const QString& path) const {
  auto it = widgets_.find(path.toStdString());
  return it == widgets_.end() ? nullptr : it->second;
}

bool DesignerView::setFieldText(const QString& path, const QString& text) {
  QWidget* w = fieldWidget(path);
  if (!w) return false;
  if (auto* c = qobject_cast<QComboBox*>(w)) c->setCurrentText(text);
  else if (auto* c = qobject_cast<QCheckBox*>(w)) c->setChecked(text == "true");
  else if (auto* s = qobject_cast<QSpinBox*>(w)) s->setValue(text.toInt());
  else qobject_cast<QLineEdit*>(w)->setText(text);
  validate();
  return true;
}

bool DesignerView::saveTo(const QString& path) {
  QFile f(path);
  const QByteArray body = QByteArray::fromStdString(currentJson().dump(2) + "\n");
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(body) != body.size() || !f.flush()) {
    message_ = tr("%1: cannot be written (%2)").arg(path, f.errorString());
    status_->setText(tr("<span style='color:#d62728'>%1</span>").arg(message_.toHtmlEscaped()));
    return false;
  }
  f.close();
  file_ = path;
  asLoaded_ = currentJson();
  showFileInPresets(path);
  validate();  // its messages now name the saved file
  return true;
}

void DesignerView::showFileInPresets(const QString& path) {
  const QFileInfo info(path);
  const int i = QFileInfo(presetDir_).canonicalFilePath() == info.absoluteDir().canonicalPath() ? presets_->findText(info.fileName()) : -1;
  const QSignalBlocker block(presets_);
  if (i >= 0) {
    presets_->setCurrentIndex(i);
  } else {
    const int known = presets_->findData(info.absoluteFilePath());
    if (known < 0) presets_->addItem(info.fileName(), info.absoluteFilePath());
    presets_->setCurrentIndex(presets_->findData(info.absoluteFilePath()));
  }
}

namespace {

// "key=value" for every leaf of `now` that differs from `before` (arrays compared whole).
void changedFields(const Json& before, const Json& now, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = now.begin(); it != now.end(); ++it) {
    const std::string path = prefix + it.key();
    const Json* old = before.is_object() && before.contains(it.key()) ? &before[it.key()] : nullptr;
    if (it->is_object() && old && old->is_object())
      changedFields(*old, *it, path + ".", out);
    else if (!old || *old != *it)
      out.push_back(path + "=" + it->dump());
  }
}

}  // namespace

std::vector<std::string> DesignerView::editsSinceLoaded() const {
  std::vector<std::string> out;
  if (!asLoaded_.is_object()) return out;
  changedFields(asLoaded_, currentJson(), "", out);
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& f) { return f.rfind("notes=", 0) == 0; }), out.end());
  return out;
}

void DesignerView::requestRun() {
  validate();
  if (!valid_) return;
  Json j = currentJson();
  // The file's notes describe the file; a run of an edited design says what was changed (as a
  // run with --set does).
  if (const auto edits = editsSinceLoaded(); !edits.empty()) {
    std::string joined;
    for (const auto& e : edits) joined += (joined.empty() ? "" : ", ") + e;
    const std::string notes = j.value("notes", std::string());
    j["notes"] = notes + (notes.empty() ? "" : " ") + "[edited in the workbench: " + joined + "]";
  }
  Q_EMIT runRequested(QString::fromStdString(j.dump(2)), QString::fromStdString(j.value("name", std::string("experiment"))));
}

void DesignerView::openDialog() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open experiment"), presetDir_, tr("Experiments (*.json)"));
  if (!path.isEmpty()) loadFile(path);
}

void DesignerView::saveAsDialog() {
  // Offered: the open file (or the presets' folder) where it can be written; else (installed
  // presets are read-only) the user's own presets' folder, which the presets list shows.
  QString start = file_.isEmpty() ? presetDir_ : file_;
  if (!QFileInfo(file_.isEmpty() ? presetDir_ : QFileInfo(file_).absolutePath()).isWritable()) {
    QDir().mkpath(userPresetDir());
    start = userPresetDir() + (file_.isEmpty() ? QString() : QStringLiteral("/") + QFileInfo(file_).fileName());
  }
  const QString path = QFileDialog::getSaveFileName(this, tr("Save experiment"), start, tr("Experiments (*.json)"));
  if (!path.isEmpty() && !saveTo(path)) QMessageBox::warning(this, tr("Save experiment"), message_);
}

}  // namespace pm::ui
