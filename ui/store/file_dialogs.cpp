#include "ui/store/file_dialogs.h"

#include <QAbstractFileIconProvider>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QIcon>
#include <QSettings>

namespace pm::ui {

namespace {

// Icons and types from the file's kind in the directory listing (folder, file, link) alone: Qt's
// provider asks the MIME database, which opens the file to read its first bytes.
class NameOnlyIconProvider final : public QAbstractFileIconProvider {
 public:
  QIcon icon(IconType type) const override { return QAbstractFileIconProvider::icon(type); }
  QIcon icon(const QFileInfo& info) const override { return QAbstractFileIconProvider::icon(info.isDir() ? Folder : File); }
  QString type(const QFileInfo& info) const override {
    if (info.isDir()) return QFileDialog::tr("Folder");
    const QString suffix = info.suffix();
    return suffix.isEmpty() ? QFileDialog::tr("File") : QFileDialog::tr("%1 file").arg(suffix);
  }
};

const NameOnlyIconProvider& provider() {
  static const NameOnlyIconProvider p;
  return p;
}

QString settingsKey(FileKind kind) {
  switch (kind) {
    case FileKind::Model: return QStringLiteral("dialogs/model_folder");
    case FileKind::Data: return QStringLiteral("dialogs/data_folder");
    case FileKind::Experiment: return QStringLiteral("dialogs/experiment_folder");
    case FileKind::Export: return QStringLiteral("dialogs/export_folder");
  }
  return QStringLiteral("dialogs/folder");
}

void remember(FileKind kind, const QString& file) {
  if (!file.isEmpty()) QSettings().setValue(settingsKey(kind), QFileInfo(file).absolutePath());
}

QString run(QFileDialog& dialog, FileKind kind) {
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return {};
  const QString file = dialog.selectedFiles().constFirst();
  remember(kind, file);
  return file;
}

}  // namespace

QString lastFolder(FileKind kind) {
  const QString dir = QSettings().value(settingsKey(kind)).toString();
  return !dir.isEmpty() && QFileInfo(dir).isDir() ? dir : QString();
}

void listWithoutReading(QFileDialog* dialog) {
  dialog->setOption(QFileDialog::DontUseNativeDialog, true);
  dialog->setOption(QFileDialog::DontUseCustomDirectoryIcons, true);
  dialog->setIconProvider(const_cast<NameOnlyIconProvider*>(&provider()));
}

QString openFileName(QWidget* parent, FileKind kind, const QString& caption, const QString& fallbackDir,
                     const QString& filter) {
  QString start = lastFolder(kind);
  if (start.isEmpty()) start = fallbackDir.isEmpty() ? QDir::currentPath() : fallbackDir;
  QFileDialog dialog(parent, caption, start, filter);
  listWithoutReading(&dialog);
  dialog.setAcceptMode(QFileDialog::AcceptOpen);
  dialog.setFileMode(QFileDialog::ExistingFile);
  return run(dialog, kind);
}

QString openDirectory(QWidget* parent, FileKind kind, const QString& caption, const QString& current, const QString& fallbackDir) {
  QString start = !current.isEmpty() && QFileInfo(current).isDir() ? current : lastFolder(kind);
  if (start.isEmpty()) start = fallbackDir.isEmpty() ? QDir::currentPath() : fallbackDir;
  QFileDialog dialog(parent, caption, start);
  listWithoutReading(&dialog);
  dialog.setAcceptMode(QFileDialog::AcceptOpen);
  dialog.setFileMode(QFileDialog::Directory);
  dialog.setOption(QFileDialog::ShowDirsOnly, true);
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return {};
  const QString dir = dialog.selectedFiles().constFirst();
  QSettings().setValue(settingsKey(kind), dir);
  return dir;
}

QString saveFileName(QWidget* parent, FileKind kind, const QString& caption, const QString& suggested,
                     const QString& filter, const QString& fallbackDir) {
  const QFileInfo info(suggested);
  QString dir = info.isAbsolute() ? info.absolutePath() : lastFolder(kind);
  if (dir.isEmpty()) dir = fallbackDir.isEmpty() ? QDir::currentPath() : fallbackDir;
  QFileDialog dialog(parent, caption, dir, filter);
  listWithoutReading(&dialog);
  dialog.setAcceptMode(QFileDialog::AcceptSave);
  dialog.setFileMode(QFileDialog::AnyFile);
  if (!info.fileName().isEmpty()) dialog.selectFile(QDir(dir).filePath(info.fileName()));
  return run(dialog, kind);
}

}  // namespace pm::ui
