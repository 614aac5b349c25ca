#pragma once
// What a user does, for the GUI tests: clicks, keys and the wheel on real widgets, sent through
// QTest and Qt's own events, and the answers to the menus and dialogs such an action opens. The
// helpers only act; the tests then wait (QTest::qWaitFor) on what the user would see, and never
// sleep. Header-only, for the tests of tests/ui (the QApplication is ui_test_main.cpp's).
#include <QAbstractButton>
#include <QAbstractItemModel>
#include <QAbstractItemView>
#include <QAbstractSpinBox>
#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QGuiApplication>
#include <QInputDialog>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QObject>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QTabBar>
#include <QTabWidget>
#include <QTest>
#include <QTimer>
#include <QVariant>
#include <QWheelEvent>
#include <QWidget>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pm::test {

// ---- Windows ------------------------------------------------------------------------------------

// Shows the widget's window and waits until it is on screen; with `active`, also until it is the
// active window (keyboard shortcuts reach only the active window). False when that did not happen
// within 5 s. Events sent to a widget that was never shown reach a widget without its real size.
[[nodiscard]] inline bool showWindow(QWidget* widget, bool active = false) {
  QWidget* window = widget->window();
  window->show();
  if (!QTest::qWaitForWindowExposed(window)) return false;
  if (!active) return true;
  window->activateWindow();
  return QTest::qWaitForWindowActive(window);
}

// ---- Finding widgets as a user does: by what they show ------------------------------------------

// The push button under `parent` whose label (without '&') is `label`; nullptr when none.
inline QPushButton* buttonLabelled(QWidget* parent, const QString& label) {
  for (QPushButton* b : parent->findChildren<QPushButton*>())
    if (QString(b->text()).remove(QLatin1Char('&')) == label) return b;
  return nullptr;
}

// The menu action of `window` whose text (without '&') is `text`; nullptr when none.
inline QAction* actionNamed(QWidget* window, const QString& text) {
  for (QAction* a : window->findChildren<QAction*>())
    if (QString(a->text()).remove(QLatin1Char('&')) == text) return a;
  return nullptr;
}

// The row of an item view whose cell in `column` reads as the number `id` (a run's id); -1 when none.
inline int rowWithId(const QAbstractItemView* view, int column, int64_t id) {
  const QAbstractItemModel* m = view->model();
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, column).data().toLongLong() == id) return r;
  return -1;
}

// The QCustomPlot inside one of the ui/plots wrappers (CurvePlot, GanttPlot, HeatMap): the widget
// that takes the mouse and the wheel. nullptr when there is none.
inline QWidget* plotCanvas(QWidget* plot) {
  for (QWidget* w : plot->findChildren<QWidget*>())
    if (w->inherits("QCustomPlot")) return w;
  return nullptr;
}

// ---- Mouse ----------------------------------------------------------------------------------------

// Clicks the cell (row, column) of an item view, scrolled into view first, with the keyboard's
// modifiers held (Ctrl adds the row to the selection).
inline void clickCell(QAbstractItemView* view, int row, int column = 0, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  const QModelIndex index = view->model()->index(row, column);
  view->scrollTo(index);
  QTest::mouseClick(view->viewport(), Qt::LeftButton, modifiers, view->visualRect(index).center());
}

// Right-clicks the cell (row, column) of an item view: the button's press and release (a selected
// row keeps the selection), then the context-menu request a right click makes. A menu it opens runs
// its own event loop: answer it with ModalAnswers, made before this call.
inline void rightClickCell(QAbstractItemView* view, int row, int column = 0) {
  const QModelIndex index = view->model()->index(row, column);
  view->scrollTo(index);
  const QPoint pos = view->visualRect(index).center();
  QTest::mouseClick(view->viewport(), Qt::RightButton, Qt::NoModifier, pos);
  QContextMenuEvent request(QContextMenuEvent::Mouse, pos, view->viewport()->mapToGlobal(pos), Qt::NoModifier);
  QApplication::sendEvent(view->viewport(), &request);
}

// Clicks the tab titled `title` (without '&'). True when that tab is then the current one.
inline bool clickTab(QTabWidget* tabs, const QString& title) {
  QTabBar* bar = tabs->tabBar();
  for (int i = 0; i < bar->count(); ++i)
    if (QString(bar->tabText(i)).remove(QLatin1Char('&')) == title) {
      QTest::mouseClick(bar, Qt::LeftButton, Qt::NoModifier, bar->tabRect(i).center());
      return tabs->currentIndex() == i;
    }
  return false;
}

// Clicks the menu bar's menu titled `title` (without '&'), which opens it as a popup. False when
// the bar has no such menu.
inline bool clickMenu(QMenuBar* bar, const QString& title) {
  for (QAction* a : bar->actions())
    if (QString(a->text()).remove(QLatin1Char('&')) == title) {
      QTest::mouseClick(bar, Qt::LeftButton, Qt::NoModifier, bar->actionGeometry(a).center());
      return true;
    }
  return false;
}

// Turns the mouse wheel over `pos` of the widget (its centre by default) by `notches` of 15
// degrees: away from the user (zoom in, on the plots) when positive, towards the user when negative.
inline void wheel(QWidget* widget, int notches, QPoint pos = QPoint()) {
  if (pos.isNull()) pos = widget->rect().center();
  QWheelEvent event(QPointF(pos), QPointF(widget->mapToGlobal(pos)), QPoint(), QPoint(0, 120 * notches), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, /*inverted=*/false);
  QApplication::sendEvent(widget, &event);
}

// ---- Keyboard -------------------------------------------------------------------------------------

// Types `text` into the widget (line edit, spin box, text edit) key by key; characters outside
// ASCII go in as the key event's text, as an input method gives them.
inline void typeText(QWidget* widget, const QString& text) {
  for (const QChar c : text) {
    if (c.unicode() < 0x80)
      QTest::keyClick(widget, c.toLatin1());
    else
      QTest::sendKeyEvent(QTest::Click, widget, Qt::Key_unknown, QString(c), Qt::NoModifier);
  }
}

// Replaces the whole text of an editable field as a user does: Ctrl+A, then the new text typed
// (Backspace to empty it). Each key is the field's own change, as from the keyboard.
inline void retype(QWidget* field, const QString& text) {
  QTest::keyClick(field, Qt::Key_A, Qt::ControlModifier);
  if (text.isEmpty())
    QTest::keyClick(field, Qt::Key_Backspace);
  else
    typeText(field, text);
}

// Types a number into a spin box (Ctrl+A, then its digits in the box's locale).
inline void retypeNumber(QAbstractSpinBox* box, double value) { retype(box, box->locale().toString(value, 'g', 12)); }

// Moves a combo box, with the arrow keys one item at a time (each step a change the box reports,
// as from the keyboard), to the item `target()` names; the target is asked again after each key,
// as a box may rebuild its list when it changes. False when there is no such item or the keys did
// not get there.
inline bool chooseWhere(QComboBox* box, const std::function<int()>& target) {
  for (int step = 0; step <= box->count() + 1; ++step) {
    const int want = target();
    if (want < 0) return false;
    if (box->currentIndex() == want) return true;
    QTest::keyClick(box, box->currentIndex() < want ? Qt::Key_Down : Qt::Key_Up);
  }
  return box->currentIndex() == target();
}
inline bool chooseIndex(QComboBox* box, int index) { return chooseWhere(box, [index] { return index; }); }
inline bool chooseText(QComboBox* box, const QString& text) {
  return chooseWhere(box, [box, text] { return box->findText(text); });
}
inline bool chooseData(QComboBox* box, const QVariant& data) {
  return chooseWhere(box, [box, data] { return box->findData(data); });
}

// Opens a combo box's list (F4, as from the keyboard), moves its highlight to the item `text` with
// the arrow keys and takes it with Return: one change, as a user picking from the open list makes
// (chooseText's arrow keys on the closed box change it at every item in between). False when there
// is no such item or the list did not open or close on it.
inline bool pickText(QComboBox* box, const QString& text) {
  const int i = box->findText(text);
  if (i < 0) return false;
  box->setFocus();
  QTest::keyClick(box, Qt::Key_F4);
  QAbstractItemView* view = box->view();
  if (!QTest::qWaitFor([&] { return view->isVisible(); }, 2000)) return false;
  for (int step = 0; step <= box->count() && view->currentIndex().row() != i; ++step)
    QTest::keyClick(view, view->currentIndex().row() < i ? Qt::Key_Down : Qt::Key_Up);
  if (view->currentIndex().row() != i) return false;
  QTest::keyClick(view, Qt::Key_Return);
  return QTest::qWaitFor([&] { return !view->isVisible() && box->currentIndex() == i; }, 2000);
}

// ---- Menus and dialogs ----------------------------------------------------------------------------

// Answers, one after the other, the popup menus and modal dialogs that the next user action opens:
// each runs an event loop of its own, so the action returns only once they are closed. Every 20 ms
// it looks for the popup or modal dialog on top and hands it to the next step, which acts on it as
// a user does (keys, clicks) and must close it. A step that fails, or 10 s without the next popup
// or dialog, closes whatever is open (so that a test fails instead of hanging) and says why in
// failure(). Make it before the action; done() says every step ran.
class ModalAnswers {
 public:
  using Step = std::function<bool(QWidget* top)>;

  explicit ModalAnswers(std::vector<Step> steps, int timeoutMs = 10000) : steps_(std::move(steps)), timeoutMs_(timeoutMs) {
    idle_.start();
    QObject::connect(&timer_, &QTimer::timeout, [this] { tick(); });
    timer_.start(20);
  }
  ModalAnswers(const ModalAnswers&) = delete;
  ModalAnswers& operator=(const ModalAnswers&) = delete;
  ~ModalAnswers() { timer_.stop(); }

  bool done() const { return next_ == steps_.size() && failure_.empty(); }
  std::string failure() const {
    if (!failure_.empty()) return failure_;
    return next_ == steps_.size() ? std::string() : "answered " + std::to_string(next_) + " of " + std::to_string(steps_.size()) + " menus or dialogs";
  }

  // Closes every popup menu and modal dialog (a dialog is rejected, as with Escape).
  static void closeAll() {
    for (int i = 0; i < 16; ++i) {
      if (QWidget* popup = QApplication::activePopupWidget()) {
        popup->close();
      } else if (QWidget* modal = QApplication::activeModalWidget()) {
        if (auto* dialog = qobject_cast<QDialog*>(modal))
          dialog->reject();
        else
          modal->close();
      } else {
        return;
      }
    }
  }

 private:
  void tick() {
    if (next_ >= steps_.size() || !failure_.empty()) {
      timer_.stop();
      return;
    }
    QWidget* top = QApplication::activePopupWidget();
    if (!top) top = QApplication::activeModalWidget();
    if (!top || !top->isVisible()) {
      if (idle_.elapsed() > timeoutMs_) fail("no menu or dialog came up for answer " + std::to_string(next_ + 1));
      return;
    }
    const QPointer<QWidget> answered(top);
    const std::string what = top->metaObject()->className();
    const size_t step = next_++;
    if (!steps_[step](top)) {
      fail("answer " + std::to_string(step + 1) + " could not act on the " + what);
      return;
    }
    if (answered && answered->isVisible() &&
        (answered == QApplication::activePopupWidget() || answered == QApplication::activeModalWidget())) {
      fail("answer " + std::to_string(step + 1) + " left the " + what + " open");
      return;
    }
    idle_.restart();
  }

  void fail(const std::string& why) {
    failure_ = why;
    timer_.stop();
    closeAll();
  }

  std::vector<Step> steps_;
  size_t next_ = 0;
  qint64 timeoutMs_;
  QElapsedTimer idle_;
  QTimer timer_;
  std::string failure_;
};

// An answer: in the popup menu, Down until the entry whose text starts with `entry` is highlighted,
// then Return.
inline ModalAnswers::Step chooseMenuEntry(const QString& entry) {
  return [entry](QWidget* top) {
    auto* menu = qobject_cast<QMenu*>(top);
    if (!menu) return false;
    for (int i = 0; i <= menu->actions().size(); ++i) {
      QTest::keyClick(menu, Qt::Key_Down);
      if (menu->activeAction() && menu->activeAction()->text().startsWith(entry)) {
        QTest::keyClick(menu, Qt::Key_Return);
        return true;
      }
    }
    return false;
  };
}

// An answer: in the input dialog (one line or several), its text replaced by `text` (Ctrl+A, then
// typed), then OK clicked.
inline ModalAnswers::Step enterText(const QString& text) {
  return [text](QWidget* top) {
    auto* dialog = qobject_cast<QInputDialog*>(top);
    if (!dialog) return false;
    QWidget* field = nullptr;
    for (QPlainTextEdit* e : dialog->findChildren<QPlainTextEdit*>())
      if (e->isVisible()) field = e;
    if (!field)
      for (QLineEdit* e : dialog->findChildren<QLineEdit*>())
        if (e->isVisible()) field = e;
    auto* buttons = dialog->findChild<QDialogButtonBox*>();
    QPushButton* ok = buttons ? buttons->button(QDialogButtonBox::Ok) : nullptr;
    if (!field || !ok) return false;
    retype(field, text);
    QTest::mouseClick(ok, Qt::LeftButton);
    return true;
  };
}

// An answer: in the file dialog (Qt's own), `path` pasted into its file name field (Ctrl+A,
// Ctrl+V, as a user pastes a path), then Return. Pasted, not typed: typed key by key, Qt 6.4's
// dialog selects each folder the path passes through ("/", "/tmp", ...) in its list as the name
// grows, and Return then opens the first of them ("/") instead of taking the file. The dialog
// lists its folder in the background and, when the listing arrives, may clear the field and open
// the field's completer list (which takes keys): the list is closed with Escape and the path
// pasted again until the dialog takes it.
inline ModalAnswers::Step chooseFile(const QString& path) {
  return [path](QWidget* top) {
    const QPointer<QFileDialog> dialog = qobject_cast<QFileDialog*>(top);
    if (!dialog) return false;
    const QPointer<QLineEdit> name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
    if (!name) return false;
    return QTest::qWaitFor(
        [&] {
          if (!dialog || !dialog->isVisible()) return true;
          if (QWidget* popup = QApplication::activePopupWidget()) {
            QTest::keyClick(popup, Qt::Key_Escape);
            return false;
          }
          if (!name) return false;
          if (name->text() != path) {
            // Saving, a click in the empty space below the folder's list first clears its
            // selection: the dialog takes a file selected there before the name typed (a design
            // saved as another would otherwise ask to replace the file it was opened from).
            for (const char* viewName : {"listView", "treeView"}) {
              if (dialog->acceptMode() != QFileDialog::AcceptSave) break;
              auto* view = dialog->findChild<QAbstractItemView*>(QString::fromLatin1(viewName));
              if (view && view->isVisible()) {
                const QPoint corner(view->viewport()->width() - 2, view->viewport()->height() - 2);
                if (!view->indexAt(corner).isValid()) QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, corner);
              }
            }
            QGuiApplication::clipboard()->setText(path);
            QTest::keyClick(name, Qt::Key_A, Qt::ControlModifier);
            QTest::keyClick(name, Qt::Key_V, Qt::ControlModifier);
            return false;
          }
          QTest::keyClick(name, Qt::Key_Return);
          return !dialog || !dialog->isVisible();
        },
        10000);
  };
}

// An answer: in the message box, the standard button `which` clicked; the box's text kept in
// *text when given.
inline ModalAnswers::Step pressButton(QMessageBox::StandardButton which, QString* text = nullptr) {
  return [which, text](QWidget* top) {
    auto* box = qobject_cast<QMessageBox*>(top);
    QAbstractButton* button = box ? box->button(which) : nullptr;
    if (!button) return false;
    if (text) *text = box->text();
    QTest::mouseClick(button, Qt::LeftButton);
    return true;
  };
}

// An answer: in the message box, the button labelled `label` (without '&') clicked; the box's text
// kept in *text when given.
inline ModalAnswers::Step pressButtonLabelled(const QString& label, QString* text = nullptr) {
  return [label, text](QWidget* top) {
    auto* box = qobject_cast<QMessageBox*>(top);
    if (!box) return false;
    for (QAbstractButton* button : box->buttons())
      if (QString(button->text()).remove(QLatin1Char('&')) == label) {
        if (text) *text = box->text();
        QTest::mouseClick(button, Qt::LeftButton);
        return true;
      }
    return false;
  };
}

}  // namespace pm::test
