// The Design tab's form: a widget per field of the experiment format (built from a design,
// grouped by section, with tooltips from the format's field table), read back into a design and
// validated on every edit, the flagged field marked in place; and the wheel rule of its fields.
// The presets, files and Run are in designer_view.cpp.
#include <QAbstractScrollArea>
#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLayoutItem>
#include <QLineEdit>
#include <QPoint>
#include <QScrollBar>
#include <QSpinBox>
#include <QString>
#include <QVBoxLayout>
#include <QVariant>
#include <QWheelEvent>
#include <QWidget>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/util/errors.h"
#include "ui/designer/designer_form.h"
#include "ui/designer/designer_view.h"

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

// The widget of one field showing `v`, in `box`: a drop-down for a choice of the format, a check
// box for a flag, a spin box for an integer, else a text field. `info`: the format's field, nullptr
// for a key the format does not have. `edited` runs on every edit (`context`: its receiver).
template <typename Edited>
QWidget* newFieldWidget(const Json& v, const FieldInfo* info, QWidget* box, const QObject* context, Edited edited) {
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
    QObject::connect(c, &QComboBox::currentTextChanged, context, edited);
    return c;
  }
  if (v.is_boolean()) {
    auto* c = new QCheckBox(box);
    c->setChecked(v.get<bool>());
    QObject::connect(c, &QCheckBox::toggled, context, edited);
    return c;
  }
  if (integerField) {
    // Out-of-range values stay editable (the validator flags them in place), so the spin box
    // spans more than any one field's range.
    auto* s = new QSpinBox(box);
    s->setRange(-1, 1000000000);
    s->setValue(static_cast<int>(std::min<int64_t>(v.get<int64_t>(), 1000000000)));
    QObject::connect(s, &QSpinBox::valueChanged, context, edited);
    return s;
  }
  auto* e = new QLineEdit(box);
  e->setText(shownText(v));
  QObject::connect(e, &QLineEdit::textChanged, context, edited);
  return e;
}

}  // namespace

void FieldWheelGuard::guard(QWidget* field) {
  field->setFocusPolicy(Qt::StrongFocus);
  field->installEventFilter(this);
}

bool FieldWheelGuard::eventFilter(QObject* watched, QEvent* event) {
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
    const Json& v = *it;
    // nullptr for a key the format does not have (the validator flags it).
    const FieldInfo* info = findField(formatFields(), path);
    QWidget* w = newFieldWidget(v, info, box, this, [this] { validate(); });
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
    describeModelFile();
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
  updateModified();  // every edit passes here: the "*" of unsaved edits follows it
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

}  // namespace pm::ui
