#pragma once
// The workbench's file dialogs: open a model, open or save an experiment, export a plot or a table.
//
// Qt's own file dialog reads the first bytes of every file in the folder it lists, to choose an
// icon and a type for it. Among them may be the run store (runs.db, its -wal and -shm): opening
// and closing a descriptor of those files drops the POSIX locks of this process's store
// connection (see store_watcher.h), and another process that closes the store then deletes the
// write-ahead log under it, after which the workbench sees no new run. These dialogs name files by
// their names alone, so nothing they list is opened. They are always Qt's own dialog (a platform
// dialog in this process would read the files too), and each kind starts in the folder that kind
// was last used in (kept in QSettings), else in `fallbackDir`.
#include <QString>

class QWidget;
class QFileDialog;

namespace pm::ui {

// What a dialog is for: each kind remembers its own last folder.
enum class FileKind { Model, Data, Experiment, Export };

// The file chosen to open; "" when the user cancelled.
QString openFileName(QWidget* parent, FileKind kind, const QString& caption, const QString& fallbackDir,
                     const QString& filter);
// The file chosen to write; "" when the user cancelled. `suggested` is an absolute path (the
// dialog starts in its folder) or a bare name (it starts in the kind's last folder, else in
// `fallbackDir`, else in the working folder).
QString saveFileName(QWidget* parent, FileKind kind, const QString& caption, const QString& suggested,
                     const QString& filter, const QString& fallbackDir = {});

// The folder chosen to open (a dataset's folder); "" when the user cancelled. It starts in
// `current` when that is a folder, else the kind's last folder, else `fallbackDir`.
QString openDirectory(QWidget* parent, FileKind kind, const QString& caption, const QString& current, const QString& fallbackDir);

// The folder a dialog of `kind` starts in ("" when none was used yet).
QString lastFolder(FileKind kind);

// Makes `dialog` list files without reading them (the icon provider above); the helpers above do
// it to every dialog they make.
void listWithoutReading(QFileDialog* dialog);

}  // namespace pm::ui
