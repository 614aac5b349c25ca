#pragma once
// The Design tab's wheel rule, shared by the designer's two sources: the constructor
// (designer_view.cpp) guards the preset list, the form (designer_form.cpp) every field.
// GUI thread only.
#include <QAbstractScrollArea>
#include <QObject>
#include <QPointer>

#include <string>

#include <nlohmann/json.hpp>

class QEvent;
class QWidget;

class QString;

namespace pm::ui {

// The user's own presets: $XDG_DATA_HOME/pipemare/experiments (designer_files.cpp).
QString userPresetDir();

// The JSON pointer of a dotted field path ("pipeline.stages" -> "/pipeline/stages").
nlohmann::json::json_pointer pointerTo(const std::string& path);
// The default value of a field; null for a path the format does not have.
nlohmann::json defaultOf(const std::string& path);

// The one wheel rule of the form's fields: a field (spin box, drop-down, any other) takes the
// mouse wheel only while it has the keyboard focus, clicked or tabbed into. Over any other field
// the wheel scrolls the form, so that scrolling past a field never edits it (an edit a run would
// record). Fields take the focus by click or Tab only (Qt::StrongFocus): with Qt's default for spin
// boxes and drop-downs (Qt::WheelFocus) the wheel itself would give them the focus first.
class FieldWheelGuard : public QObject {
 public:
  // `form`: the scroll area the wheel scrolls instead.
  FieldWheelGuard(QAbstractScrollArea* form, QObject* parent) : QObject(parent), form_(form) {}

  void guard(QWidget* field);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QPointer<QAbstractScrollArea> form_;
};

}  // namespace pm::ui
