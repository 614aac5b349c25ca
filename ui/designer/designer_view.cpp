// The Design tab: the preset chooser, opening and saving experiment files (and the recent ones),
// the undo stack of field edits, and Run. The form of fields (built, read back, validated) and its
// wheel rule are in designer_form.cpp; opening, saving and the recent files in designer_files.cpp.
#include "ui/designer/designer_view.h"

#include <QAction>
#include <QByteArray>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QKeyEvent>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStringList>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QVariant>

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "ui/designer/designer_form.h"
#include "ui/designer/run_naming.h"
#include "ui/store/file_dialogs.h"

namespace pm::ui {

// One edit of one field: its value before and after, as typed. Pushed once the widget shows the
// new value (the first redo does nothing); consecutive changes of the field being edited join it,
// and one that brings the field back to where it was leaves nothing to undo.
class FieldEditCommand : public QUndoCommand {
 public:
  FieldEditCommand(DesignerView* view, std::string path, QString before, QString after, bool joins)
      : QUndoCommand(QObject::tr("edit %1").arg(QString::fromStdString(path))), view_(view), path_(std::move(path)),
        before_(std::move(before)), after_(std::move(after)), joins_(joins) {}
  int id() const override { return 1; }
  bool mergeWith(const QUndoCommand* other) override {
    const auto* next = static_cast<const FieldEditCommand*>(other);
    if (!next->joins_ || next->path_ != path_) return false;
    after_ = next->after_;
    setObsolete(after_ == before_);
    return true;
  }
  void undo() override { view_->applyFieldText(path_, before_); }
  void redo() override {
    if (done_) view_->applyFieldText(path_, after_);
    done_ = true;
  }

 private:
  DesignerView* view_;
  std::string path_;
  QString before_, after_;
  bool joins_;
  bool done_ = false;
};

namespace {


// A field's value as the user types it: a drop-down's text, "true"/"false" for a check box.
QString fieldText(const QWidget* w) {
  if (auto* c = qobject_cast<const QComboBox*>(w)) return c->currentText();
  if (auto* c = qobject_cast<const QCheckBox*>(w)) return c->isChecked() ? QStringLiteral("true") : QStringLiteral("false");
  if (auto* s = qobject_cast<const QSpinBox*>(w)) return QString::number(s->value());
  if (auto* e = qobject_cast<const QLineEdit*>(w)) return e->text();
  return {};
}

void setFieldWidgetText(QWidget* w, const QString& text) {
  if (auto* c = qobject_cast<QComboBox*>(w)) c->setCurrentText(text);
  else if (auto* c = qobject_cast<QCheckBox*>(w)) c->setChecked(text == QLatin1String("true"));
  else if (auto* s = qobject_cast<QSpinBox*>(w)) s->setValue(text.toInt());
  else if (auto* e = qobject_cast<QLineEdit*>(w)) e->setText(text);
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

DesignerView::DesignerView(const QString& presetDir, QWidget* parent)
    : QWidget(parent), presetDir_(presetDir), presets_(new QComboBox(this)), form_(new QWidget(this)),
      formLayout_(new QVBoxLayout(form_)), status_(new QLabel(this)) {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Preset:"), this));
  presets_->setObjectName(QStringLiteral("presetBox"));
  // As narrow as 14 characters (long names elide), not as the longest name: the form shares the
  // Design tab with the planner and fits a 1024 px window beside it.
  presets_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  presets_->setMinimumContentsLength(14);
  presets_->addItem(tr("(defaults)"));
  for (const QString& f : QDir(presetDir_).entryList({"*.json"}, QDir::Files, QDir::Name)) presets_->addItem(f);
  addOtherPresets(presets_, presetDir_);
  top->addWidget(presets_, 1);
  auto* open = new QPushButton(tr("Open..."), this);
  auto* openModel = new QPushButton(tr("Open model..."), this);
  openModel->setToolTip(tr("a TorchScript model (torch.jit.save of an nn.Sequential) as the design's model"));
  auto* save = new QPushButton(tr("Save as..."), this);
  auto* run = new QPushButton(tr("Run"), this);
  run->setObjectName("runButton");
  run->setDefault(true);
  // The buttons on a row of their own under the preset list: side by side with it they would
  // make the form wider than half of a 1024 px window.
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(open);
  buttons->addWidget(openModel);
  buttons->addWidget(save);
  buttons->addStretch(1);
  buttons->addWidget(run);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  // The form, then the blank that ScrollHold reserves below it while fields below the view hide.
  auto* holder = new QWidget(scroll);
  auto* holderLayout = new QVBoxLayout(holder);
  holderLayout->setContentsMargins(0, 0, 0, 0);
  holderLayout->setSpacing(0);
  holderLayout->addWidget(form_);
  auto* reserve = new QWidget(holder);
  holderLayout->addWidget(reserve);
  holderLayout->addStretch(1);
  scroll->setWidget(holder);
  scrollHold_ = new ScrollHold(scroll, form_, reserve, this);
  wheelGuard_ = new FieldWheelGuard(scroll, this);
  wheelGuard_->guard(presets_);  // a wheel over the list would open another preset
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  modelUnits_ = new QLabel(this);
  modelUnits_->setObjectName(QStringLiteral("modelUnits"));
  modelUnits_->setWordWrap(true);
  modelUnits_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  modelUnits_->hide();
  describer_ = new QProcess(this);
  fileCheck_ = new QProcess(this);
  // Nothing above the form changes height, and the messages below it have a height of their own
  // (they scroll when longer): a message that comes or goes never moves a field under the pointer.
  auto* messages = new QScrollArea(this);
  messages->setObjectName(QStringLiteral("designMessages"));
  messages->setWidgetResizable(true);
  messages->setFrameShape(QFrame::NoFrame);
  auto* messageBox = new QWidget(messages);
  auto* messageLayout = new QVBoxLayout(messageBox);
  messageLayout->setContentsMargins(0, 0, 0, 0);
  messageLayout->addWidget(status_);  // the verdict first, then the model file's units
  messageLayout->addWidget(modelUnits_);
  messageLayout->addStretch(1);
  messages->setWidget(messageBox);
  messages->setFixedHeight(5 * fontMetrics().lineSpacing() + 6);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(buttons);
  layout->addWidget(scroll, 1);
  layout->addWidget(messages);

  connect(presets_, &QComboBox::currentIndexChanged, this, [this](int i) {
    // Another preset replaces the design: unsaved edits are dropped only when the user says so;
    // Cancel keeps them and puts the list back on the design shown (without reloading it).
    if (!confirmDiscard()) {
      const QSignalBlocker block(presets_);
      presets_->setCurrentIndex(shownPreset_);
      return;
    }
    shownPreset_ = i;
    if (i == 0) {
      asLoaded_ = nlohmann::json();  // a new design: no file whose notes could mislead
      file_.clear();                 // nor a file its messages name, or that is reopened next time
      Q_EMIT fileChanged(file_);
      baseline_ = nlohmann::json();  // not compared while the form is rebuilt
      setExperiment(experimentToJson(Experiment{}));
      baseline_ = currentJson();     // the defaults, unedited
      updateModified();
    } else if (presets_->itemData(i).isValid()) loadFile(presets_->itemData(i).toString());
    else loadFile(QDir(presetDir_).filePath(presets_->itemText(i)));
  });
  connect(open, &QPushButton::clicked, this, &DesignerView::openDialog);
  connect(openModel, &QPushButton::clicked, this, &DesignerView::openModelDialog);
  connect(save, &QPushButton::clicked, this, &DesignerView::saveAsDialog);
  connect(run, &QPushButton::clicked, this, &DesignerView::requestRun);
  connect(this, &DesignerView::validityChanged, run, &QPushButton::setEnabled);

  undo_ = new QUndoStack(this);
  undoAction_ = new QAction(tr("&Undo"), this);
  undoAction_->setObjectName(QStringLiteral("undoAction"));
  undoAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Z));
  redoAction_ = new QAction(tr("&Redo"), this);
  redoAction_->setObjectName(QStringLiteral("redoAction"));
  redoAction_->setShortcuts({QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
  connect(undoAction_, &QAction::triggered, undo_, &QUndoStack::undo);
  connect(redoAction_, &QAction::triggered, undo_, &QUndoStack::redo);
  connect(undo_, &QUndoStack::indexChanged, this, &DesignerView::updateUndoActions);
  connect(undo_, &QUndoStack::cleanChanged, this, &DesignerView::updateUndoActions);
  setExperiment(experimentToJson(Experiment{}));
  baseline_ = currentJson();  // the defaults, unedited
}

bool DesignerView::loadFile(const QString& path) {
  try {
    Json raw = loadExperimentJson(path.toStdString());
    file_ = path;
    Q_EMIT fileChanged(file_);
    showFileInPresets(path);  // which preset is open (without reloading it)
    baseline_ = Json();       // not compared while the form is rebuilt
    setExperiment(raw);
    asLoaded_ = currentJson();
    baseline_ = asLoaded_;
    updateModified();         // as opened: no unsaved edits
    return true;
  } catch (const std::exception& ex) {
    valid_ = false;
    message_ = QString::fromStdString(ex.what());
    status_->setText(tr("<span style='color:#d62728'>%1</span>").arg(message_.toHtmlEscaped()));
    return false;
  }
}

void DesignerView::setExperiment(const Json& j) {
  dropNote_.clear();
  scrollHold_->release();
  // Show every field: defaults merged under what the file sets (an invalid file still shows).
  Json full = experimentToJson(Experiment{});
  full.merge_patch(j);
  build(full);
  watchFields();
  undo_->clear();  // the edits of another design
  validate();
}

nlohmann::json DesignerView::plannableDespiteInvalid(QString* note) const {
  if (valid_ || invalidField_.isEmpty() || !unknownKeys_.empty()) return nlohmann::json();
  const std::string path = invalidField_.toStdString();
  // A field some schedule does not use: under gpipe or under pipemare it does not apply.
  const Experiment readable = experimentAsFarAsReadable(currentJson());
  bool scheduleOnly = false;
  for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::PipeMare}) {
    Experiment other = readable;
    other.pipeline.schedule = k;
    scheduleOnly = scheduleOnly || !whyFieldDoesNotApply(other, path).empty();
  }
  if (!scheduleOnly) return nlohmann::json();
  const nlohmann::json byDefault = defaultOf(path);
  if (byDefault.is_null()) return nlohmann::json();
  nlohmann::json j = currentJson();
  j[pointerTo(path)] = byDefault;
  try {
    (void)experimentFromJson(j, "design");
  } catch (const std::exception&) {
    return nlohmann::json();  // more than that one field is wrong
  }
  if (note)
    *note = tr("Planned with %1 at its default (%2): the value typed is not valid (%3).")
                .arg(invalidField_, QString::fromStdString(byDefault.dump()), message_);
  return runnableJsonOf(j);  // as a run would read it
}

void DesignerView::watchFields() {
  shown_.clear();
  openEdit_.clear();
  for (const auto& [path, w] : widgets_) {
    shown_[path] = fieldText(w);
    // Return or the focus leaving ends an edit: the field's next change is an edit of its own.
    if (auto* e = qobject_cast<QLineEdit*>(w)) connect(e, &QLineEdit::editingFinished, this, [this] { openEdit_.clear(); });
    if (auto* s = qobject_cast<QSpinBox*>(w)) connect(s, &QSpinBox::editingFinished, this, [this] { openEdit_.clear(); });
    w->installEventFilter(this);
    // A spin box's keys go to its line edit.
    for (QLineEdit* inner : w->findChildren<QLineEdit*>()) inner->installEventFilter(this);
  }
}

void DesignerView::fieldEdited(const std::string& path) {
  if (!building_ && !applying_) {
    const auto w = widgets_.find(path);
    const QString after = w == widgets_.end() ? QString() : fieldText(w->second);
    const QString before = shown_[path];
    if (after != before) {
      shown_[path] = after;
      dropNote_.clear();
      // Fields the edit made inapplicable (T1 and T2 after switching pipemare to gpipe) fall back
      // to their defaults in the same undoable step, so that the design stays valid; the status
      // says which. Ctrl+Z brings them back with the edit.
      // Only a choice does this (a drop-down or a tick): a number or a text being typed passes
      // through values that are not meant.
      const bool choice = w != widgets_.end() && (qobject_cast<QComboBox*>(w->second) || qobject_cast<QCheckBox*>(w->second));
      const std::vector<StoppedField> stopped = choice ? fieldsThatStoppedApplying(path, lastDesign_) : std::vector<StoppedField>{};
      if (stopped.empty()) {
        undo_->push(new FieldEditCommand(this, path, before, after, openEdit_ == path));
        openEdit_ = path;
      } else {
        undo_->beginMacro(tr("edit %1 (and drop %n field(s) that no longer apply)", "", static_cast<int>(stopped.size()))
                              .arg(QString::fromStdString(path)));
        undo_->push(new FieldEditCommand(this, path, before, after, false));
        QStringList names;
        for (const auto& f : stopped) {
          applying_ = true;
          setFieldWidgetText(widgets_.at(f.path), f.defaultText);
          applying_ = false;
          shown_[f.path] = f.defaultText;
          undo_->push(new FieldEditCommand(this, f.path, f.text, f.defaultText, false));
          names << QString::fromStdString(f.path);
        }
        undo_->endMacro();
        openEdit_.clear();
        dropNote_ = tr("<span style='color:#8a6d3b'>%1 set back to the default: %2 (Ctrl+Z brings them back)</span>")
                        .arg(names.join(QStringLiteral(", ")).toHtmlEscaped(), QString::fromStdString(stopped.front().why).toHtmlEscaped());
      }
    }
  }
  validate();
}

void DesignerView::applyFieldText(const std::string& path, const QString& text) {
  openEdit_.clear();  // an undone edit is not continued by the next key
  dropNote_.clear();  // an undo or redo says nothing about dropped fields
  const auto it = widgets_.find(path);
  if (it == widgets_.end()) return;
  applying_ = true;
  setFieldWidgetText(it->second, text);
  applying_ = false;
  shown_[path] = text;
  if (auto* scroll = findChild<QScrollArea*>()) scroll->ensureWidgetVisible(it->second);
  validate();  // flagged, planned and marked as after any edit
}

bool DesignerView::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::FocusOut) {
    openEdit_.clear();
  } else if (event->type() == QEvent::ShortcutOverride) {
    // The Edit menu's keys, not the text field's own undo (which knows only its own keys).
    auto* key = static_cast<QKeyEvent*>(event);
    const QKeySequence pressed(key->keyCombination());
    for (const QAction* a : {undoAction_, redoAction_})
      for (const QKeySequence& k : a->shortcuts())
        if (k.matches(pressed) == QKeySequence::ExactMatch) {
          event->ignore();
          return true;
        }
  }
  return QWidget::eventFilter(watched, event);
}

void DesignerView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  updateUndoActions();
}

void DesignerView::hideEvent(QHideEvent* event) {
  QWidget::hideEvent(event);
  updateUndoActions();
}

void DesignerView::updateUndoActions() {
  // Only for the design in view: Ctrl+Z in another tab changes nothing unseen.
  undoAction_->setEnabled(isVisible() && undo_->canUndo());
  redoAction_->setEnabled(isVisible() && undo_->canRedo());
  undoAction_->setText(undo_->canUndo() ? tr("&Undo %1").arg(undo_->undoText()) : tr("&Undo"));
  redoAction_->setText(undo_->canRedo() ? tr("&Redo %1").arg(undo_->redoText()) : tr("&Redo"));
}

void DesignerView::updateModified() {
  // No baseline while the form is being rebuilt for another design: nothing to compare with yet.
  const bool modified = baseline_.is_object() && currentJson() != baseline_;
  if (modified == modified_) return;
  modified_ = modified;
  Q_EMIT modifiedChanged(modified_);
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
  Json j = runnableJson();
  // The fields edited since the file was opened (or, for a new design, since the defaults).
  std::vector<std::string> edits;
  if (asLoaded_.is_object()) {
    edits = editsSinceLoaded();
  } else if (baseline_.is_object()) {
    changedFields(baseline_, currentJson(), "", edits);
    edits.erase(std::remove_if(edits.begin(), edits.end(), [](const std::string& f) { return f.rfind("notes=", 0) == 0; }),
                edits.end());
  }
  // A file run as it is keeps its name, tags and notes. An edited one is another experiment: the
  // preset's name, its schedule's and model's tags and its notes would describe what was not run,
  // so it is named after what it is, under a name the user confirms or changes (Cancel: no run).
  if (!edits.empty()) {
    const RunIdentity id =
        editedRunIdentity(j, asLoaded_.is_object() ? asLoaded_ : baseline_, file_.toStdString(), edits);
    QInputDialog ask(this);
    ask.setObjectName(QStringLiteral("runNameDialog"));
    ask.setWindowTitle(tr("Run the edited design"));
    ask.setInputMode(QInputDialog::TextInput);
    ask.setLabelText(file_.isEmpty() ? tr("The design is edited from the defaults. Name of the run:")
                                     : tr("The design is edited from %1. Name of the run:").arg(QFileInfo(file_).fileName()));
    ask.setTextValue(QString::fromStdString(id.name));
    ask.resize(std::max(ask.sizeHint().width(), 460), ask.sizeHint().height());
    if (ask.exec() != QDialog::Accepted) return;
    const QString typed = ask.textValue().trimmed();
    j["name"] = typed.isEmpty() ? id.name : typed.toStdString();
    j["tags"] = id.tags;
    j["notes"] = id.notes;
  }
  Q_EMIT runRequested(QString::fromStdString(j.dump(2)), QString::fromStdString(j.value("name", std::string("experiment"))));
}

QString DesignerView::statusText() const {
  QTextDocument doc;
  doc.setHtml(status_->text());
  return doc.toPlainText();
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
