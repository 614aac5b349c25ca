#include "ui/main/signal_notifier.h"

#include <QSocketNotifier>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace pm::ui {
namespace {

int gFds[2] = {-1, -1};  // [0] written by the handler, [1] read by the notifier

extern "C" void pmUiSignalToSocket(int signalNumber) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signalNumber);
  [[maybe_unused]] const ssize_t n = ::write(gFds[0], &byte, 1);
  errno = saved;
}

}  // namespace

SignalNotifier::SignalNotifier(std::initializer_list<int> signalNumbers, QObject* parent)
    : QObject(parent), signals_(signalNumbers) {
  if (gFds[0] >= 0) throw std::runtime_error("SignalNotifier: only one instance per process");
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gFds) != 0)
    throw std::runtime_error("SignalNotifier: socketpair failed");
  ::fcntl(gFds[0], F_SETFL, O_NONBLOCK);  // a burst of signals never blocks the handler
  ::fcntl(gFds[1], F_SETFL, O_NONBLOCK);
  notifier_ = new QSocketNotifier(gFds[1], QSocketNotifier::Read, this);
  connect(notifier_, &QSocketNotifier::activated, this, [this] { drain(); });
  struct sigaction sa {};
  sa.sa_handler = pmUiSignalToSocket;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : signals_) ::sigaction(s, &sa, nullptr);
}

SignalNotifier::~SignalNotifier() {
  for (int s : signals_) std::signal(s, SIG_DFL);
  delete notifier_;
  ::close(gFds[0]);
  ::close(gFds[1]);
  gFds[0] = gFds[1] = -1;
}

void SignalNotifier::drain() {
  unsigned char byte = 0;
  while (::read(gFds[1], &byte, 1) == 1) Q_EMIT received(byte);
}

}  // namespace pm::ui
