#pragma once
// GUI tests share one QApplication, created in ui_test_main.cpp before the tests run and
// destroyed after them (offscreen platform, set by ctest).
#include <QApplication>

namespace pm::test {
inline QApplication& app() { return *qobject_cast<QApplication*>(QCoreApplication::instance()); }
}  // namespace pm::test
