#pragma once
// The experiment designer: every field of the experiment format as a widget (grouped by
// section, defaults shown in tooltips), validated on every edit by the engine's own validator
// (core/config): an invalid value is flagged in place with the validator's message. Presets from
// experiments/ and the user's files can be opened, edited and saved; Run hands the experiment to
// the main window. A spin box or drop-down of the form takes the mouse wheel only while it has
// the keyboard focus; elsewhere the wheel scrolls the form. Every field edit can be undone (an undo
// stack per design opened; its Undo and Redo actions are the Edit menu's). A run of an edited
// design is named after what it is, its name confirmed by the user (run_naming.h). The files
// opened and saved are remembered (Open Recent). GUI thread only.
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QWidget>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

class QAction;
class QComboBox;
class QEvent;
class QHideEvent;
class QLabel;
class QShowEvent;
class QUndoStack;
class QVBoxLayout;

class QProcess;


namespace pm::ui {

class FieldWheelGuard;
class ScrollHold;
class FieldEditCommand;

class DesignerView : public QWidget {
  Q_OBJECT
 public:
  DesignerView(const QString& presetDir, QWidget* parent = nullptr);
  // Stops the background checks first: their answers must not reach a view being destroyed.
  ~DesignerView() override;

  bool loadFile(const QString& path);      // false (and a message) when unreadable
  // Opens a design file named outside the Open dialog (the command line's --experiment): loadFile,
  // and when it loads, the file first in the recent files. Asks nothing about unsaved edits.
  bool openFile(const QString& path);
  void setExperiment(const nlohmann::json& j);
  nlohmann::json currentJson() const;      // built from the widgets
  // The design as a run or the planner reads it: currentJson() with the file paths it names
  // relative to the open file (model.path, a tensor dataset's data.path and data.eval_path) made
  // absolute, as `pipemare run FILE` resolves them. currentJson() when the design is not valid.
  nlohmann::json runnableJson() const;
  nlohmann::json runnableJsonOf(const nlohmann::json& design) const;  // runnableJson of another design
  // The `pipemare` executable that describes model files (`pipemare models --file`).
  void setEngineBinary(const QString& binary) { engine_ = binary; }
  // A TorchScript model file: the design's model becomes it, and its units are described below
  // the preset list (what "Open model..." does once a file is chosen).
  void openModelFile(const QString& path);
  // The units of the design's model file as last described ("" when none is shown).
  QString modelUnitsText() const;
  bool valid() const { return valid_; }
  QString validationMessage() const { return message_; }
  // What the planner can still plan while the design is invalid: where the one problem is a field
  // that only some schedules use (pipemare.*, pipeline.update_interval, ...), the design with that
  // field at its default, and `note` says so; null otherwise (the planner then has nothing to plan).
  nlohmann::json plannableDespiteInvalid(QString* note) const;
  QString invalidField() const { return invalidField_; }  // dotted path of the flagged field
  QString statusText() const;  // the status line under the form, as plain text
  QWidget* fieldWidget(const QString& path) const;
  // Sets a field from text as a user would type it (tests).
  bool setFieldText(const QString& path, const QString& text);
  // Writes the design to `path` and makes it the open file; false (the reason in the status line
  // and validationMessage()) when it cannot be written.
  bool saveTo(const QString& path);
  QString currentFile() const { return file_; }
  // The fields changed since the file was opened or saved, as "path=value" (notes excluded).
  std::vector<std::string> editsSinceLoaded() const;
  // Whether the design has edits (notes included) since it was opened, saved, or reset to the
  // defaults: the window title's and the Design tab's "*".
  bool isModified() const { return modified_; }
  // Before the window closes: true when there are no unsaved edits, or the user saved them (Save,
  // the file written) or chose to discard them; false for Cancel (or a save that did not happen).
  bool confirmClose();

  // The field edits of the design shown, one command per edit of a field (consecutive keys,
  // arrow steps or toggles of one field while it is being edited are one edit): cleared when a
  // design is opened, clean where it was opened or saved.
  QUndoStack* undoStack() const { return undo_; }
  // Edit > Undo (Ctrl+Z) and Redo (Ctrl+Shift+Z, Ctrl+Y): "Undo edit data.batch_size". Enabled
  // only while the Design tab is shown. They take their keys from the form's text fields too,
  // whose own undo would otherwise answer them.
  QAction* undoAction() const { return undoAction_; }
  QAction* redoAction() const { return redoAction_; }
  // The design files last opened (Open..., Open Recent) or saved, most recent first, at most 8,
  // missing files left out (kept in the settings, designer/recentFiles).
  QStringList recentFiles() const;

 Q_SIGNALS:
  void runRequested(const QString& experimentJson, const QString& name);
  void validityChanged(bool valid);
  // isModified() changed: an edit made the design differ from the file, or saving, opening or an
  // edit back to the file's values made it match again.
  void modifiedChanged(bool modified);
  // The design's file changed (opened, saved as, or a new design: ""): what the window title names.
  void fileChanged(const QString& file);

 public Q_SLOTS:
  void requestRun();
  void openDialog();
  void openModelDialog();
  // The Browse action of a path field (model.path, data.path): a file, or the dataset's folder
  // for fashion-mnist, chosen in a dialog and put in the field as one undoable edit.
  void browseForField(const QString& path);
  void saveAsDialog();
  // Save (Ctrl+S): writes the open file when there is one and it can be written; otherwise (a new
  // design, a read-only installed preset) it is Save as....
  void save();
  // Opens a recent file as Open... does (asking first about unsaved edits); a missing file
  // is reported and dropped from the list.
  void openRecent(const QString& path);
  void clearRecentFiles();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  friend class FieldEditCommand;
  // A field's widget changed (the form's signal of every field): recorded on the undo stack
  // unless an undo or redo made the change, then validated.
  void fieldEdited(const std::string& path);
  // Shows `text` in the field, as the user would type it, without recording it, then validates.
  void applyFieldText(const std::string& path, const QString& text);
  // After the form is built: the fields' shown values (the edits' "before"), their end of an edit
  // (Return, focus leaving) and the undo keys taken from their own undo.
  void watchFields();
  void updateUndoActions();
  // A file of the shipped presets' folder: a template that Save never writes over.
  bool isShippedPreset(const QString& path) const;
  // Before a design opened from a shipped preset is saved as `path`: the name, tags and notes the
  // user left as the preset's become the design's own (the file's name; the tags that describe
  // it, without "preset"; "From preset NAME.").
  void adoptOwnIdentity(const QString& path);
  // The file first in the recent files.
  void rememberFile(const QString& path);
  void showFileInPresets(const QString& path);
  // True when there are no unsaved edits, or the user chose to discard them (Discard / Cancel).
  bool confirmDiscard();
  // Compares the design with baseline_ and emits modifiedChanged when that changes.
  void updateModified();
  void build(const nlohmann::json& normalised);
  void addFields(const nlohmann::json& obj, const std::string& prefix, QWidget* box, int depth);
  void validate();
  // A field the edit of `edited` made inapplicable: it applies to `before` (the design as it was
  // before that edit), not to the design shown, and holds a value other than its default (e.g.
  // pipemare.t1 once the schedule is gpipe). Its path, its text and its default's text as the
  // field shows them, and why it does not apply.
  struct StoppedField {
    std::string path;
    QString text, defaultText;
    std::string why;
  };
  std::vector<StoppedField> fieldsThatStoppedApplying(const std::string& edited, const nlohmann::json& before) const;
  // Describes the design's model file (its units, parameters and output shapes) with `pipemare
  // models --file` in the background, when the file or the data it is described with changed.
  void describeModelFile();
  // Checks the design's model and data files as a run would (`pipemare validate` on the design, in
  // the background) when it reads a model file or a tensor file; a problem found makes the design
  // invalid (status, Run and planner) until the files or the fields change.
  void checkFiles(const nlohmann::json& runnable);
  static bool needsFileCheck(const nlohmann::json& runnable);
  nlohmann::json readWidget(const std::string& path, const nlohmann::json& like, bool* ok) const;
  QString presetDir_, file_;
  nlohmann::json asLoaded_;  // the design as opened or last saved (for editsSinceLoaded)
  // The design as opened, saved or reset to the defaults, read back from the widgets: unlike
  // asLoaded_ (null for the defaults, so that a run of them names no edits) it is always set,
  // so edits of the defaults count as unsaved too.
  nlohmann::json baseline_;
  bool modified_ = false;
  int shownPreset_ = 0;  // the presets list's entry of the design shown (put back on Cancel)
  QComboBox* presets_;
  QWidget* form_;
  QVBoxLayout* formLayout_;
  QLabel* status_;
  FieldWheelGuard* wheelGuard_ = nullptr;  // the wheel rule of every field (designer_form.h)
  ScrollHold* scrollHold_ = nullptr;       // the form never moves when fields below hide (designer_form.h)
  std::map<std::string, QWidget*> widgets_;
  // path -> the value as the file gave it: a text field left as shown reads back as this value,
  // its JSON type included; an edited one takes the format's type for the field.
  std::map<std::string, nlohmann::json> kinds_;
  // path -> the validator's message, for each key the format does not have: flagged whichever
  // problem the validator reports first.
  std::map<std::string, QString> unknownKeys_;
  nlohmann::json lastDesign_;  // the design as the last validate() saw it: an edit's "before"
  QString dropNote_;           // the fields the last edit dropped, said under the status
  bool valid_ = true, building_ = false;
  QString message_, invalidField_;
  QString engine_;              // the pipemare executable
  QLabel* modelUnits_ = nullptr;  // the model file's units, under the preset list
  QProcess* describer_ = nullptr;
  QString described_;           // the file (and data) the shown description is of
  QProcess* fileCheck_ = nullptr;
  std::unique_ptr<QTemporaryDir> checkDir_;  // where the checked design is written
  QString fileCheckKey_;        // the design (as run) the last file check was of ("" none)
  QString fileProblem_;         // what that check found ("" none, or still checking)
  bool fileCheckDone_ = false;  // the check of fileCheckKey_ has answered
  QUndoStack* undo_ = nullptr;
  QAction* undoAction_ = nullptr;
  QAction* redoAction_ = nullptr;
  std::map<std::string, QString> shown_;  // path -> the field's value as last recorded, as typed
  std::string openEdit_;  // the field being edited: its next change joins its last undo command
  bool applying_ = false;  // an undo or redo is setting a field
};

}  // namespace pm::ui
