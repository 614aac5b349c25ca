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
class QScrollArea;
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

// The form never moves under the pointer when fields below it hide (a schedule switched, "Show
// all fields" unticked): a blank reserve below the form keeps the content reaching the view's
// bottom, so a shorter form does not pull the view back. The reserve shrinks as the user scrolls
// up, and goes with the next design (release). form_scroll_hold.cpp.
class ScrollHold : public QObject {
 public:
  // `form` and `reserve` are the two widgets of the area's widget's layout, in that order.
  ScrollHold(QScrollArea* area, QWidget* form, QWidget* reserve, QObject* parent);
  // Runs `change` (which may hide fields), keeping the view where it was.
  template <typename Change>
  void keep(Change change) {
    const int need = viewBottom();
    change();
    settle(need);
  }
  void release();  // another design: its own height

 private:
  int viewBottom() const;
  int formHeight() const;
  void settle(int need);
  QScrollArea* area_;
  QWidget* form_;
  QWidget* reserve_;
};

}  // namespace pm::ui
