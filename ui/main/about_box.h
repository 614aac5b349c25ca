#pragma once
// The workbench's icon and its About box (Help > About). The icon is compiled into the workbench
// (pipemare_icons.qrc: the PNG sizes of resources/icons/pipemare-workbench.svg), so the title bar
// and the box show it from the build tree and from any installation, with no SVG plugin. GUI thread only.
#include <QIcon>
#include <QString>

class QMessageBox;
class QWidget;

namespace pm::ui {

QIcon workbenchIcon();

// Opens the About box (window-modal, without blocking; deleted when closed): the icon, the
// workbench's version and revision, and the BLAS library the engine loads, which `pipemareBinary
// version --json` reports (the workbench does not load LibTorch itself); that line fills in when the
// engine answers.
QMessageBox* showAboutBox(QWidget* parent, const QString& pipemareBinary);

}  // namespace pm::ui
