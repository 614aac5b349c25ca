// The Design tab's wheel rule (designer_form.h): a field takes the wheel only with the focus.
#include <QCoreApplication>
#include <QScrollBar>
#include <QWheelEvent>
#include <QWidget>

#include <cstdlib>

#include "ui/designer/designer_form.h"

namespace pm::ui {

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

}  // namespace pm::ui
