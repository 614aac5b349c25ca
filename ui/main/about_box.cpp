#include "ui/main/about_box.h"

#include <QMessageBox>
#include <QObject>
#include <QPixmap>
#include <QProcess>
#include <QSize>
#include <QStringList>

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "core/util/system_info.h"

// Registers the icons compiled into this static library (pipemare_icons.qrc, AUTORCC). A static
// library's resources are linked in only when referenced, and Q_INIT_RESOURCE declares a function of
// the global namespace, so it is called here, outside pm::ui.
static void registerWorkbenchIcons() { Q_INIT_RESOURCE(pipemare_icons); }

namespace pm::ui {

QIcon workbenchIcon() {
  static const bool registered = [] {
    registerWorkbenchIcons();
    return true;
  }();
  static_cast<void>(registered);
  QIcon icon;
  for (int size : {16, 24, 32, 48, 64, 128, 256})
    icon.addFile(QStringLiteral(":/icons/pipemare-workbench-%1.png").arg(size), QSize(size, size));
  return icon;
}

QMessageBox* showAboutBox(QWidget* parent, const QString& pipemareBinary) {
  auto* box = new QMessageBox(parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setObjectName(QStringLiteral("aboutBox"));
  box->setWindowTitle(QObject::tr("About PipeMare Workbench"));
  box->setIconPixmap(workbenchIcon().pixmap(96, 96));
  box->setTextFormat(Qt::RichText);
  const QString head =
      QObject::tr("<h3>PipeMare Workbench %1</h3><p>Revision %2</p>"
                  "<p>Pipeline-parallel DNN training experiments: PipeMare against GPipe, 1F1B and PipeDream.</p>")
          .arg(QString::fromStdString(projectVersion()).toHtmlEscaped(), QString::fromStdString(projectRevision()).toHtmlEscaped());
  const auto setEngine = [box, head](const QString& engine) {
    box->setText(head + QObject::tr("<p>Engine: %1</p>").arg(engine.toHtmlEscaped()));
  };
  setEngine(QObject::tr("asking %1 ...").arg(pipemareBinary));
  // `pipemare version --json`: {"version", "revision", "build": {"torch", "cuda", "backends"},
  // "blas": {"kind", "library"}, "presets"}.
  auto* engine = new QProcess(box);  // ends with the box
  QObject::connect(engine, &QProcess::finished, box, [engine, setEngine](int code, QProcess::ExitStatus how) {
    if (how != QProcess::NormalExit || code != 0) {
      setEngine(QObject::tr("unknown (pipemare version exited with %1)").arg(code));
      return;
    }
    try {
      const auto j = nlohmann::json::parse(engine->readAllStandardOutput().toStdString());
      const auto blas = j.value("blas", nlohmann::json::object());
      const std::string library = blas.value("library", std::string());
      const auto build = engineBuildFromJson(j.value("build", nlohmann::json::object()));
      setEngine(QObject::tr("pipemare %1 on %2, BLAS %3%4")
                    .arg(QString::fromStdString(j.value("version", std::string("?"))),
                         QString::fromStdString(engineBuildText(build)),
                         QString::fromStdString(blas.value("kind", std::string("?"))),
                         library.empty() ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(library))));
    } catch (const std::exception&) {
      setEngine(QObject::tr("unknown (pipemare version gave no JSON)"));
    }
  });
  QObject::connect(engine, &QProcess::errorOccurred, box, [setEngine, pipemareBinary](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) setEngine(QObject::tr("unknown (cannot start %1)").arg(pipemareBinary));
  });
  engine->start(pipemareBinary, {QStringLiteral("version"), QStringLiteral("--json")});
  box->open();
  return box;
}

}  // namespace pm::ui
