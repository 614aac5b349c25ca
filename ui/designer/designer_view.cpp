// The Design tab: the preset chooser, opening and saving experiment files, and Run. The form of
// fields (built, read back, validated) and its wheel rule are in designer_form.cpp.
#include "ui/designer/designer_view.h"

#include <QByteArray>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QStandardPaths>
#include <QStringList>
#include <QVBoxLayout>
#include <QVariant>

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "ui/designer/designer_form.h"

namespace pm::ui {

namespace {

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

DesignerView::DesignerView(const QString& presetDir, QWidget* parent)
    : QWidget(parent), presetDir_(presetDir), presets_(new QComboBox(this)), form_(new QWidget(this)),
      formLayout_(new QVBoxLayout(form_)), status_(new QLabel(this)) {
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Preset:"), this));
  presets_->setObjectName(QStringLiteral("presetBox"));
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
  top->addWidget(open);
  top->addWidget(openModel);
  top->addWidget(save);
  top->addWidget(run);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(form_);
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
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(modelUnits_);
  layout->addWidget(scroll, 1);
  layout->addWidget(status_);

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
  setExperiment(experimentToJson(Experiment{}));
  baseline_ = currentJson();  // the defaults, unedited
}

bool DesignerView::loadFile(const QString& path) {
  try {
    Json raw = loadExperimentJson(path.toStdString());
    file_ = path;
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
  // Show every field: defaults merged under what the file sets (an invalid file still shows).
  Json full = experimentToJson(Experiment{});
  full.merge_patch(j);
  build(full);
  validate();
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
  baseline_ = asLoaded_;
  showFileInPresets(path);
  validate();         // its messages now name the saved file
  updateModified();   // as saved: no unsaved edits
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
  shownPreset_ = presets_->currentIndex();
}

bool DesignerView::confirmDiscard() {
  if (!modified_) return true;
  QMessageBox box(QMessageBox::Question, tr("Unsaved edits"),
                  file_.isEmpty() ? tr("The design has edits that are not saved. Discard them?")
                                  : tr("The design has edits not saved to %1. Discard them?").arg(QFileInfo(file_).fileName()),
                  QMessageBox::Discard | QMessageBox::Cancel, this);
  box.setObjectName(QStringLiteral("unsavedEditsBox"));
  box.setDefaultButton(QMessageBox::Cancel);  // Return or Escape keeps the edits
  box.exec();
  return box.clickedButton() == box.button(QMessageBox::Discard);
}

bool DesignerView::confirmClose() {
  if (!modified_) return true;
  QMessageBox box(QMessageBox::Question, tr("Unsaved edits"),
                  file_.isEmpty() ? tr("The design has edits that are not saved. Save them before closing?")
                                  : tr("The design has edits not saved to %1. Save them before closing?").arg(QFileInfo(file_).fileName()),
                  QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  box.setObjectName(QStringLiteral("unsavedEditsOnCloseBox"));
  box.setDefaultButton(QMessageBox::Save);
  box.setEscapeButton(QMessageBox::Cancel);
  box.exec();
  if (box.clickedButton() == box.button(QMessageBox::Discard)) return true;
  if (box.clickedButton() != box.button(QMessageBox::Save)) return false;
  save();  // the open file, or Save as... for a new design or a read-only preset
  return !modified_;
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
  // Asked once a file is chosen: cancelling the file dialog loses nothing, so asks nothing.
  if (!path.isEmpty() && confirmDiscard()) loadFile(path);
}

void DesignerView::save() {
  const QFileInfo info(file_);
  if (file_.isEmpty() || !info.isFile() || !info.isWritable()) {
    saveAsDialog();
    return;
  }
  if (!saveTo(file_)) QMessageBox::warning(this, tr("Save experiment"), message_);
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
