#pragma once
// Turns POSIX signals (SIGINT, SIGTERM) into a Qt signal on the GUI thread: the handler only
// writes the signal's number to a socket pair (async-signal-safe); a QSocketNotifier reads it in the
// event loop and emits received(). One instance per process (the handler's socket is process-wide);
// the destructor restores the default handlers.
#include <QObject>

#include <initializer_list>
#include <vector>

class QSocketNotifier;

namespace pm::ui {

class SignalNotifier : public QObject {
  Q_OBJECT
 public:
  // Throws std::runtime_error when another instance exists or the socket pair cannot be made.
  explicit SignalNotifier(std::initializer_list<int> signalNumbers, QObject* parent = nullptr);
  ~SignalNotifier() override;

 Q_SIGNALS:
  void received(int signalNumber);

 private:
  void drain();

  std::vector<int> signals_;
  QSocketNotifier* notifier_ = nullptr;
};

}  // namespace pm::ui
