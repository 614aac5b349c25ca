// The Design tab's form: a widget per field of the experiment format (built from a design,
// grouped by the format's sections in the field table's order, with tooltips from the format's
// field table), read back into a design and validated on every edit, the flagged field marked in
// place; the fields that do not apply to the design hidden unless "Show all fields" is ticked (the
// wheel rule of its fields is in field_wheel_guard.cpp). The presets and Run are in
// designer_view.cpp, the files in designer_files.cpp.
#include <QAbstractScrollArea>
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QTextDocument>
#include <QLayoutItem>
#include <QLineEdit>
#include <QPoint>
#include <QSpinBox>
#include <QStyle>
#include <QString>
#include <QVBoxLayout>
#include <QVariant>
#include <QWidget>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "core/config/field_spec.h"
#include "core/util/errors.h"
#include "ui/designer/designer_form.h"
#include "ui/designer/designer_view.h"
#include "ui/plots/text_wrap.h"

namespace pm::ui {

Json::json_pointer pointerTo(const std::string& path) {
  return Json::json_pointer("/" + QString::fromStdString(path).replace('.', '/').toStdString());
}

Json defaultOf(const std::string& path) {
  static const Json defaults = experimentToJson(Experiment{});
  try {
    return defaults.at(pointerTo(path));
  } catch (...) {
    return Json();
  }
}

namespace {

// What the format says about each field (type, accepted values, help), from core/config's field
// table. Types and choices do not depend on the other fields' values.
const std::vector<FieldInfo>& formatFields() {
  static const std::vector<FieldInfo> fields = experimentFields();
  return fields;
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
// The widget property that says a field is flagged (drawn with kInvalidStyle), and the label
// property that says whether its field applies to the design: the form's state, for its readers.
const char* kFlagged = "flagged";
const char* kApplies = "applies";

// The form's "Show all fields" box (objectName), kept across rebuilds of the form.
const char* kShowAllName = "showAllFields";

// A section's title: the name docs/experiment-format.md gives it ("Top level", "model",
// "partition", ...).
QString sectionTitle(const std::string& section) {
  if (section.empty()) return QObject::tr("Top level");
  const auto dot = section.rfind('.');
  return QString::fromStdString(dot == std::string::npos ? section : section.substr(dot + 1));
}

// The group box of the section at `section` ("" the top level, "pipeline.partition"), objectName
// "section:<section>". Created when missing: a section at the end of the form, a subsection as
// the next row of its section's box, so that sections come in the order of their first field.
QGroupBox* sectionBox(QWidget* form, QVBoxLayout* layout, const std::string& section) {
  const QString name = QStringLiteral("section:") + QString::fromStdString(section);
  if (auto* box = form->findChild<QGroupBox*>(name)) return box;
  const auto dot = section.rfind('.');
  QGroupBox* parent = dot == std::string::npos ? nullptr : sectionBox(form, layout, section.substr(0, dot));
  auto* box = new QGroupBox(sectionTitle(section), parent ? static_cast<QWidget*>(parent) : form);
  box->setObjectName(name);
  box->setStyleSheet(QStringLiteral("QGroupBox { font-weight: bold; }"));  // the title (a style sheet's font is not inherited)
  auto* rows = new QFormLayout(box);
  rows->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
  if (parent)
    qobject_cast<QFormLayout*>(parent->layout())->addRow(box);
  else
    layout->addWidget(box);
  return box;
}

// The value of `path` in `j`; nullptr when `j` does not have it (or a section on the way is not
// an object).
const Json* valueAt(const Json& j, const std::string& path) {
  const Json* v = &j;
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!v->is_object()) return nullptr;
    auto it = v->find(key);
    if (it == v->end()) return nullptr;
    v = &*it;
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// Sets a label's text, style sheet and tooltip, each only when it changes (a new style sheet
// restyles the label, and the form is re-evaluated on every key typed).
void setLabel(QLabel* label, const QString& text, const QString& style, const QString& tip) {
  if (label->text() != text) label->setText(text);
  if (label->styleSheet() != style) label->setStyleSheet(style);
  if (label->toolTip() != tip) label->setToolTip(tip);
}

// Shows a section's rows whose field is shown, and the subsections with a row shown; true when
// any is. `shown`: whether each field's widget is to be shown.
bool showSectionRows(QGroupBox* box, const std::map<QWidget*, bool>& shown) {
  auto* rows = qobject_cast<QFormLayout*>(box->layout());
  bool any = false;
  for (int r = 0; r < rows->rowCount(); ++r) {
    QLayoutItem* item = rows->itemAt(r, QFormLayout::FieldRole);
    if (!item) item = rows->itemAt(r, QFormLayout::SpanningRole);
    QWidget* w = item ? item->widget() : nullptr;
    if (!w) continue;
    bool visible = false;
    if (auto* sub = qobject_cast<QGroupBox*>(w))
      visible = showSectionRows(sub, shown);
    else if (auto it = shown.find(w); it != shown.end())
      visible = it->second;
    else
      continue;  // the note of a section none of whose fields apply
    rows->setRowVisible(r, visible);
    any = any || visible;
  }
  return any;
}

// Shows the fields that apply to `design` (core/config's whyFieldDoesNotApply of what can be read
// of it, so that an invalid design still shows its choices' fields) and hides the others, unless
// "Show all fields" is ticked. A field that does not apply stays shown, marked with the reason,
// when its value is not the default (a value the file sets must never be hidden) or it is
// flagged. A section none of whose fields is shown says why; an emptied subsection is hidden.
void showApplicableFields(QWidget* form, const std::map<std::string, QWidget*>& widgets, const Json& design,
                          const std::string& flagged, const std::map<std::string, QString>& unknownKeys) {
  auto* showAll = form->findChild<QCheckBox*>(kShowAllName);
  const bool all = showAll && showAll->isChecked();
  const Experiment e = experimentAsFarAsReadable(design);
  std::map<QWidget*, bool> shown;
  std::map<std::string, std::vector<std::string>> reasons;  // top-level section -> why its fields do not apply
  int hidden = 0;
  for (const auto& [path, w] : widgets) {
    const bool isFlagged = path == flagged || unknownKeys.count(path);
    const std::string why = isFlagged ? std::string() : whyFieldDoesNotApply(e, path);
    const Json* value = valueAt(design, path);
    const Json byDefault = defaultOf(path);
    const bool set = !value || byDefault.is_null() || *value != byDefault;
    const bool visible = why.empty() || all || set;
    shown[w] = visible;
    if (!visible) ++hidden;
    const auto dot = path.find('.');
    reasons[dot == std::string::npos ? std::string() : path.substr(0, dot)].push_back(visible ? std::string() : why);
    auto* rows = qobject_cast<QFormLayout*>(w->parentWidget()->layout());
    auto* label = rows ? qobject_cast<QLabel*>(rows->labelForField(w)) : nullptr;
    const QString key = QString::fromStdString(path.substr(path.rfind('.') + 1));
    if (label) label->setProperty(kApplies, why.empty());
    if (why.empty()) {
      if (label) setLabel(label, key, QString(), QString());
      if (!isFlagged) w->setToolTip(w->property(kFieldTip).toString());
      continue;
    }
    const QString tip = w->property(kFieldTip).toString() + QObject::tr("\n\ndoes not apply to this design: %1").arg(QString::fromStdString(why));
    w->setToolTip(tip);
    // Greyed; a value the file sets is called out, since it has no effect on a run.
    if (label)
      setLabel(label, set ? QObject::tr("%1 (does not apply)").arg(key) : key,
               set ? QStringLiteral("color: #b35c00;") : QStringLiteral("color: palette(mid); font-style: italic;"), tip);
  }
  for (QGroupBox* box : form->findChildren<QGroupBox*>(QString(), Qt::FindDirectChildrenOnly)) {
    const bool any = showSectionRows(box, shown);
    // A section with nothing shown keeps its title, with why its fields do not apply.
    const std::string section = box->objectName().mid(QStringLiteral("section:").size()).toStdString();
    auto* note = box->findChild<QLabel*>(QStringLiteral("sectionNote"), Qt::FindDirectChildrenOnly);
    if (!any && !note) {
      note = new QLabel(box);
      note->setObjectName(QStringLiteral("sectionNote"));
      // Broken into lines here, never by the label (setWordWrap): a height-for-width row in a
      // QFormLayout whose rows hide and show makes Qt 6.4's QFormLayout::setGeometry write past
      // its arrays (valgrind: "Invalid write"), a heap corruption that crashed the form later.
      note->setStyleSheet(QStringLiteral("color: palette(mid); font-style: italic;"));
      qobject_cast<QFormLayout*>(box->layout())->insertRow(0, note);
    }
    if (!note) continue;
    const auto& why = reasons[section];
    const bool oneReason = !why.empty() && std::all_of(why.begin(), why.end(), [&](const std::string& r) { return r == why.front(); });
    const int width = box->contentsRect().width() > 200 ? box->contentsRect().width() - 24 : 60 * note->fontMetrics().averageCharWidth();
    note->setText(wrapText(oneReason ? QObject::tr("Its fields do not apply: %1.").arg(QString::fromStdString(why.front()))
                                     : QObject::tr("None of its fields applies to this design."),
                           note->font(), width));
    note->setVisible(!any);
  }
  if (showAll)
    showAll->setText(hidden == 0 || all ? QObject::tr("Show all fields")
                                        : QObject::tr("Show all fields (%n hidden)", "", hidden));
}

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

void DesignerView::build(const Json& normalised) {
  building_ = true;
  // "Show all fields" stays, ticked or not, when another design is shown.
  auto* showAll = form_->findChild<QCheckBox*>(kShowAllName, Qt::FindDirectChildrenOnly);
  if (!showAll) {
    showAll = new QCheckBox(form_);
    showAll->setObjectName(kShowAllName);
    showAll->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Fixed);  // as wide as its text: a click beside it does nothing
    showAll->setToolTip(tr("Fields that have no effect on a run of this design (Adam's betas with SGD, a text "
                           "dataset's context with images, ...) are hidden; tick to show them, greyed, with why"));
    connect(showAll, &QCheckBox::toggled, this, [this] {
      scrollHold_->keep([&] { showApplicableFields(form_, widgets_, currentJson(), invalidField_.toStdString(), unknownKeys_); });
    });
  }
  while (QLayoutItem* item = formLayout_->takeAt(0)) {
    if (item->widget() != showAll) delete item->widget();
    delete item;
  }
  widgets_.clear();
  kinds_.clear();
  unknownKeys_.clear();
  formLayout_->addWidget(showAll);
  // The format's fields in the field table's order (the order of docs/experiment-format.md), each
  // in its section's box; then the keys the format does not have, in the sections they are in.
  for (const FieldInfo& f : formatFields()) {
    const Json* v = valueAt(normalised, f.path);
    if (!v) continue;  // its section is not an object: shown (and flagged) as a key of its own
    const std::string section = fieldSection(f.path);
    Json one = Json::object();
    one[f.path.substr(section.empty() ? 0 : section.size() + 1)] = *v;
    addFields(one, section.empty() ? section : section + ".", sectionBox(form_, formLayout_, section), 0);
  }
  addFields(normalised, "", nullptr, 0);
  formLayout_->addStretch(1);
  setFieldToolTips(widgets_, Experiment{});  // the defaults' ranges until validate() finds the design valid
  building_ = false;
}

// Adds a row for each field of `obj`, the section at `prefix` ("" or "pipeline."), that has no
// widget yet, to `box` (nullptr: its section's box, created at the end of the form for a section
// the format does not have). An object that is not a field of the format is a section of its own.
void DesignerView::addFields(const Json& obj, const std::string& prefix, QWidget* box, int depth) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string path = prefix + it.key();
    if (path == "model.options") continue;  // reserved, always {}
    // nullptr for a key the format does not have (the validator flags it).
    const FieldInfo* info = findField(formatFields(), path);
    if (it->is_object() && !info) {
      addFields(*it, path + ".", nullptr, depth + 1);
      continue;
    }
    if (widgets_.count(path)) continue;
    if (!box) box = sectionBox(form_, formLayout_, prefix.empty() ? prefix : prefix.substr(0, prefix.size() - 1));
    auto* form = qobject_cast<QFormLayout*>(box->layout());
    const Json& v = *it;
    QWidget* w = newFieldWidget(v, info, box, this, [this, path] { fieldEdited(path); });  // undoable, then validated
    w->setObjectName(QString::fromStdString(path));
    wheelGuard_->guard(w);
    widgets_[path] = w;
    kinds_[path] = v;
    if (!info) {
      const QString problem = unknownKeyProblem(path, v);
      unknownKeys_[path] =
          problem.isEmpty() ? tr("%1 is not a field of the experiment format").arg(QString::fromStdString(path)) : problem;
    }
    // A path field has its Browse button inside it (the field stays one widget, as the form's
    // other fields are).
    if (auto* edit = qobject_cast<QLineEdit*>(w); edit && (path == "data.path" || path == "model.path")) {
      QAction* browse = edit->addAction(style()->standardIcon(QStyle::SP_DirOpenIcon), QLineEdit::TrailingPosition);
      browse->setObjectName(QStringLiteral("browse:") + QString::fromStdString(path));
      browse->setToolTip(tr("Browse... (choose the %1 in a dialog)").arg(path == "model.path" ? tr("model file") : tr("data file or folder")));
      connect(browse, &QAction::triggered, this, [this, path] { browseForField(QString::fromStdString(path)); });
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
    w->setProperty(kFlagged, false);
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
    // The fields are right; the files they name are checked as a run would read them.
    const nlohmann::json runnable = runnableJson();
    if (needsFileCheck(runnable)) {
      checkFiles(runnable);
      if (fileCheckDone_ && !fileProblem_.isEmpty()) {
        valid_ = false;
        message_ = fileProblem_;
        status_->setText(tr("<span style='color:#d62728'>%1</span>").arg(message_.toHtmlEscaped()));
      } else if (!fileCheckDone_) {
        status_->setText(tr("<span style='color:#2ca02c'>valid</span> (checking the model and data files...)"));
      }
    }
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
      widgets_[p]->setProperty(kFlagged, true);
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
    w->setProperty(kFlagged, true);
    w->setToolTip(problem);
    if (QString::fromStdString(path) != invalidField_)
      others += QStringLiteral("<br><span style='color:#d62728'>%1: %2</span>")
                    .arg(QString::fromStdString(path).toHtmlEscaped(), problem.toHtmlEscaped());
  }
  if (!others.isEmpty()) status_->setText(status_->text() + others);
  if (!dropNote_.isEmpty()) status_->setText(status_->text() + QStringLiteral("<br>") + dropNote_);
  lastDesign_ = currentJson();
  scrollHold_->keep([&] { showApplicableFields(form_, widgets_, lastDesign_, invalidField_.toStdString(), unknownKeys_); });
  Q_EMIT validityChanged(valid_);
  updateModified();  // every edit passes here: the "*" of unsaved edits follows it
}

std::vector<DesignerView::StoppedField> DesignerView::fieldsThatStoppedApplying(const std::string& edited,
                                                                               const Json& before) const {
  std::vector<StoppedField> out;
  if (!before.is_object()) return out;
  const Json now = currentJson();
  const Experiment was = experimentAsFarAsReadable(before), is = experimentAsFarAsReadable(now);
  for (const auto& [path, w] : widgets_) {
    if (path == edited || unknownKeys_.count(path)) continue;
    const std::string why = whyFieldDoesNotApply(is, path);
    if (why.empty() || !whyFieldDoesNotApply(was, path).empty()) continue;
    const Json* value = valueAt(now, path);
    const Json byDefault = defaultOf(path);
    if (!value || byDefault.is_null() || *value == byDefault) continue;
    out.push_back({path, shownText(*value), shownText(byDefault), why});
  }
  return out;
}

}  // namespace pm::ui
