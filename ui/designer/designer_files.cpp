// The Design tab's files (designer_view.h): opening a design and the recent ones, saving it (a
// shipped preset is a template: saved as the user's own file, with its own name), and asking
// before unsaved edits are dropped.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QSettings>
#include <QSignalBlocker>
#include <QStandardPaths>
#include <QStringList>
#include <QUndoStack>

#include <string>

#include "core/config/experiment.h"
#include "ui/designer/designer_form.h"
#include "ui/designer/designer_view.h"
#include "ui/designer/run_naming.h"
#include "ui/store/file_dialogs.h"

namespace pm::ui {

using Json = nlohmann::json;

namespace {
// The recent files: the last 8 opened or saved, in the preferences under this key.
constexpr int kRecentFiles = 8;
const char* kRecentKey = "designer/recentFiles";
}  // namespace

// The user's own presets: $XDG_DATA_HOME/pipemare/experiments (~/.local/share/pipemare/experiments).
QString userPresetDir() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QStringLiteral("/pipemare/experiments");
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
  Q_EMIT fileChanged(file_);
  rememberFile(path);
  undo_->setClean();  // undoing back to here is back to the file
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

void DesignerView::openDialog() {
  const QString path = openFileName(this, FileKind::Experiment, tr("Open experiment"), presetDir_, tr("Experiments (*.json)"));
  // Asked once a file is chosen: cancelling the file dialog loses nothing, so asks nothing.
  if (!path.isEmpty() && confirmDiscard() && loadFile(path)) rememberFile(path);
}

bool DesignerView::openFile(const QString& path) {
  if (!loadFile(path)) return false;
  rememberFile(path);
  return true;
}

QStringList DesignerView::recentFiles() const {
  QStringList out;
  for (const QString& f : QSettings().value(kRecentKey).toStringList())
    if (QFileInfo(f).isFile() && !out.contains(f) && out.size() < kRecentFiles) out << f;
  return out;
}

void DesignerView::rememberFile(const QString& path) {
  const QString file = QFileInfo(path).absoluteFilePath();
  QStringList files = recentFiles();
  files.removeAll(file);
  files.prepend(file);
  while (files.size() > kRecentFiles) files.removeLast();
  QSettings().setValue(kRecentKey, files);
}

void DesignerView::clearRecentFiles() { QSettings().remove(kRecentKey); }

void DesignerView::openRecent(const QString& path) {
  if (!QFileInfo(path).isFile()) {
    QSettings().setValue(kRecentKey, recentFiles());  // without it (and any other gone since)
    QMessageBox::warning(this, tr("Open recent"), tr("%1 no longer exists.").arg(path));
    return;
  }
  if (confirmDiscard() && loadFile(path)) rememberFile(path);
}

bool DesignerView::isShippedPreset(const QString& path) const {
  if (path.isEmpty()) return false;
  const QString dir = QFileInfo(presetDir_).canonicalFilePath();
  return !dir.isEmpty() && QFileInfo(path).canonicalPath() == dir;
}

void DesignerView::save() {
  const QFileInfo info(file_);
  // A shipped preset is a template: Save on it is Save as, into the user's own folder.
  if (file_.isEmpty() || isShippedPreset(file_) || !info.isFile() || !info.isWritable()) {
    saveAsDialog();
    return;
  }
  if (!saveTo(file_)) QMessageBox::warning(this, tr("Save experiment"), message_);
}

void DesignerView::adoptOwnIdentity(const QString& path) {
  const Json design = currentJson();
  const std::string stem = QFileInfo(path).completeBaseName().toStdString();
  const std::string preset = QFileInfo(file_).completeBaseName().toStdString();
  // What the user has not edited of the preset's identity becomes theirs: the file's name, the
  // tags that still describe the design (the preset's "preset" tag dropped), and notes that say
  // where it came from instead of the preset's.
  if (design.value("name", Json()) == asLoaded_.value("name", Json())) setFieldText(QStringLiteral("name"), QString::fromStdString(stem));
  if (design.value("tags", Json()) == asLoaded_.value("tags", Json())) {
    std::vector<std::string> tags;
    if (design.contains("tags") && design["tags"].is_array())
      for (const auto& t : design["tags"])
        if (t.is_string() && t.get<std::string>() != "preset") tags.push_back(t.get<std::string>());
    setFieldText(QStringLiteral("tags"), QString::fromStdString(Json(designRunTags(tags, design)).dump()));
  }
  if (design.value("notes", Json()) == asLoaded_.value("notes", Json()))
    setFieldText(QStringLiteral("notes"), tr("From preset %1.").arg(QString::fromStdString(preset)));
}

void DesignerView::saveAsDialog() {
  // From a shipped preset or the defaults: a new file in the user's own presets' folder (which the
  // presets list shows), named after the preset, never the preset itself. Otherwise the open file,
  // or the user's folder where its own folder cannot be written.
  const bool template_ = file_.isEmpty() || isShippedPreset(file_);
  QString start;
  if (template_) {
    QDir().mkpath(userPresetDir());
    const QString stem = file_.isEmpty() ? QStringLiteral("my-design") : QFileInfo(file_).completeBaseName() + QStringLiteral("-mine");
    start = userPresetDir() + QStringLiteral("/") + stem + QStringLiteral(".json");
    for (int n = 2; QFileInfo::exists(start); ++n)
      start = userPresetDir() + QStringLiteral("/%1-%2.json").arg(stem).arg(n);
  } else {
    start = file_;
    if (!QFileInfo(QFileInfo(file_).absolutePath()).isWritable()) {
      QDir().mkpath(userPresetDir());
      start = userPresetDir() + QStringLiteral("/") + QFileInfo(file_).fileName();
    }
  }
  const QString path = saveFileName(this, FileKind::Experiment, tr("Save experiment"), QFileInfo(start).absoluteFilePath(),
                                    tr("Experiments (*.json)"));
  if (path.isEmpty()) return;
  if (isShippedPreset(file_) && QFileInfo(path).absoluteFilePath() != QFileInfo(file_).absoluteFilePath()) adoptOwnIdentity(path);
  if (!saveTo(path)) QMessageBox::warning(this, tr("Save experiment"), message_);
}

}  // namespace pm::ui
