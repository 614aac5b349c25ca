// The Design tab's form keeps the view where it is when fields below it hide (designer_form.h).
#include <QGroupBox>
#include <QLayout>
#include <QList>
#include <QScrollArea>
#include <QScrollBar>

#include <algorithm>

#include "ui/designer/designer_form.h"

namespace pm::ui {

ScrollHold::ScrollHold(QScrollArea* area, QWidget* form, QWidget* reserve, QObject* parent)
    : QObject(parent), area_(area), form_(form), reserve_(reserve) {
  reserve_->setFixedHeight(0);
  // Scrolled up: the view's bottom needs less of the reserve (never more: scrolling down stops
  // at the content's end).
  connect(area->verticalScrollBar(), &QScrollBar::valueChanged, this, [this] {
    if (reserve_->minimumHeight() > 0) settle(viewBottom());
  });
}

// Where the view's bottom is in the content.
int ScrollHold::viewBottom() const { return area_->verticalScrollBar()->value() + area_->viewport()->height(); }

// The form's height with the rows as they are now. Rows hidden a moment ago reach the layouts'
// cached hints only when Qt lays them out (after this event, and after the scroll area has pulled
// the view back): the section boxes' layouts, which hold the rows, are invalidated innermost first
// (a few boxes, on every edit: not every field), so the hint is measured now.
int ScrollHold::formHeight() const {
  const QList<QGroupBox*> boxes = form_->findChildren<QGroupBox*>();
  for (auto it = boxes.rbegin(); it != boxes.rend(); ++it)
    if (QLayout* l = (*it)->layout()) {
      l->invalidate();
      (*it)->updateGeometry();
    }
  form_->layout()->invalidate();
  return form_->sizeHint().height();
}

// The reserve that lets the content reach `need` with the form as it is now.
void ScrollHold::settle(int need) {
  if (!area_->isVisible()) return release();
  const int reserve = std::max(0, need - formHeight());
  if (reserve_->minimumHeight() != reserve) reserve_->setFixedHeight(reserve);
}

void ScrollHold::release() {
  if (reserve_->minimumHeight() != 0) reserve_->setFixedHeight(0);
}

}  // namespace pm::ui
