// The Design tab's model files: "Open model..." makes a TorchScript file the design's model, the
// file's units are described under the preset list (by `pipemare models --file`, in the
// background: the workbench does not link LibTorch), and the design a run or the planner reads
// names its files by absolute path.
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QProcess>
#include <QStringList>

#include <string>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "ui/designer/designer_view.h"
#include "ui/store/file_dialogs.h"

namespace pm::ui {

namespace {

// What a `pipemare models --json` or `validate --json` that failed says as data: "PLACE: PROBLEM"
// from its {"error": {message, place}}; its exit code where it said nothing readable.
QString commandError(const QJsonObject& answer, int code) {
  const QJsonObject e = answer.value(QStringLiteral("error")).toObject();
  const QString message = e.value(QStringLiteral("message")).toString(), place = e.value(QStringLiteral("place")).toString();
  if (message.isEmpty()) return QObject::tr("the engine exited with code %1 and said nothing readable").arg(code);
  return place.isEmpty() ? message : place + QStringLiteral(": ") + message;
}

}  // namespace

nlohmann::json DesignerView::runnableJson() const { return runnableJsonOf(currentJson()); }

nlohmann::json DesignerView::runnableJsonOf(const nlohmann::json& j) const {
  try {
    Experiment e = experimentFromJson(j, "design");
    // Relative to the open file's folder, as `pipemare run FILE` reads them; a new design's are
    // the working folder's.
    resolveFilePaths(e, file_.isEmpty() ? std::string("design.json") : file_.toStdString());
    nlohmann::json out = experimentToJson(e);
    out["notes"] = j.value("notes", std::string());
    return out;
  } catch (const std::exception&) {
    return j;
  }
}

void DesignerView::openModelDialog() {
  const QString start = file_.isEmpty() ? QString() : QFileInfo(file_).absolutePath();
  const QString path = openFileName(this, FileKind::Model, tr("Open model"), start,
                                    tr("TorchScript models (*.pt *.pth *.ts);;All files (*)"));
  if (!path.isEmpty()) openModelFile(path);
}

void DesignerView::browseForField(const QString& path) {
  auto* edit = qobject_cast<QLineEdit*>(fieldWidget(path));
  if (!edit) return;
  // Relative paths are the design's file's folder's, as a run reads them.
  const QString base = file_.isEmpty() ? QDir::currentPath() : QFileInfo(file_).absolutePath();
  const QString current = edit->text().isEmpty() ? QString() : QDir(base).absoluteFilePath(edit->text());
  const QString start = current.isEmpty() ? base : QFileInfo(current).absolutePath();
  QString chosen;
  if (path == QLatin1String("model.path")) {
    chosen = openFileName(this, FileKind::Model, tr("Model file"), start, tr("TorchScript models (*.pt *.pth *.ts);;All files (*)"));
  } else {
    const DatasetKind dataset = experimentAsFarAsReadable(currentJson()).data.dataset;
    if (dataset == DatasetKind::FashionMnist)
      chosen = openDirectory(this, FileKind::Data, tr("Fashion-MNIST folder"), current, base);
    else if (dataset == DatasetKind::Tensors)
      chosen = openFileName(this, FileKind::Data, tr("Tensor data"), start, tr("Tensor files (*.pt *.pth);;All files (*)"));
    else
      chosen = openFileName(this, FileKind::Data, tr("Text corpus"), start, tr("Text files (*.txt);;All files (*)"));
  }
  if (!chosen.isEmpty()) setFieldText(path, chosen);
}

void DesignerView::openModelFile(const QString& path) {
  setFieldText(QStringLiteral("model.name"), QString::fromUtf8(kTorchScriptModel));
  setFieldText(QStringLiteral("model.path"), QFileInfo(path).absoluteFilePath());
  describeModelFile();
}

QString DesignerView::modelUnitsText() const { return modelUnits_ && modelUnits_->isVisible() ? modelUnits_->text() : QString(); }

void DesignerView::describeModelFile() {
  if (!modelUnits_ || !describer_) return;
  const nlohmann::json j = runnableJson();
  const auto model = j.value("model", nlohmann::json::object());
  if (model.value("name", std::string()) != kTorchScriptModel || model.value("path", std::string()).empty()) {
    modelUnits_->hide();
    described_.clear();
    return;
  }
  const QString file = QString::fromStdString(model.value("path", std::string()));
  QStringList args{QStringLiteral("models"), QStringLiteral("--json"), QStringLiteral("--file"), file};
  const auto data = j.value("data", nlohmann::json::object());
  if (data.value("dataset", std::string()) == "tensors" && !data.value("path", std::string()).empty())
    args << QStringLiteral("--data") << QString::fromStdString(data.value("path", std::string()));
  const QString key = args.join(QLatin1Char('\n'));
  if (key == described_ || engine_.isEmpty()) return;
  described_ = key;
  if (describer_->state() != QProcess::NotRunning) {
    describer_->disconnect(this);
    describer_->kill();
    describer_->waitForFinished(1000);
  }
  modelUnits_->setText(tr("reading %1...").arg(QFileInfo(file).fileName()));
  modelUnits_->show();
  connect(describer_, &QProcess::finished, this, [this, file](int code, QProcess::ExitStatus) {
    describer_->disconnect(this);
    const QByteArray out = describer_->readAllStandardOutput();
    const QJsonObject o = QJsonDocument::fromJson(out).object();
    if (code != 0) {
      modelUnits_->setText(tr("<span style='color:#d62728'>%1</span>").arg(commandError(o, code).toHtmlEscaped()));
      return;
    }
    const QLocale locale;
    QStringList rows;
    for (const auto& u : o.value(QStringLiteral("units")).toArray()) {
      const QJsonObject unit = u.toObject();
      QString row = tr("%1 <b>%2</b> (%3, %4 parameters)")
                        .arg(unit.value(QStringLiteral("index")).toInt())
                        .arg(unit.value(QStringLiteral("name")).toString().toHtmlEscaped(),
                             unit.value(QStringLiteral("type")).toString().toHtmlEscaped(),
                             locale.toString(unit.value(QStringLiteral("parameters")).toInteger()));
      if (unit.contains(QStringLiteral("output_shape"))) {
        QStringList dims;
        for (const auto& d : unit.value(QStringLiteral("output_shape")).toArray()) dims << QString::number(d.toInteger());
        row += QStringLiteral(" &rarr; [%1]").arg(dims.join(QStringLiteral(", ")));
      }
      rows << row;
    }
    modelUnits_->setText(tr("<b>%1</b>: %2 units, %3 parameters, sha256 %4<br>%5")
                             .arg(QFileInfo(file).fileName().toHtmlEscaped())
                             .arg(rows.size())
                             .arg(locale.toString(o.value(QStringLiteral("parameters")).toInteger()))
                             .arg(o.value(QStringLiteral("sha256")).toString().left(16) + QStringLiteral("..."),
                                  rows.join(QStringLiteral("<br>"))));
  });
  describer_->start(engine_, args);
}

DesignerView::~DesignerView() {
  for (QProcess* p : {describer_, fileCheck_}) {
    if (!p) continue;
    p->disconnect(this);
    if (p->state() != QProcess::NotRunning) {
      p->kill();
      p->waitForFinished(1000);
    }
  }
}

bool DesignerView::needsFileCheck(const nlohmann::json& runnable) {
  const auto model = runnable.value("model", nlohmann::json::object());
  const auto data = runnable.value("data", nlohmann::json::object());
  return (model.value("name", std::string()) == kTorchScriptModel && !model.value("path", std::string()).empty()) ||
         (data.value("dataset", std::string()) == "tensors" && !data.value("path", std::string()).empty());
}

void DesignerView::checkFiles(const nlohmann::json& runnable) {
  if (!fileCheck_ || engine_.isEmpty()) return;
  const QString key = QString::fromStdString(runnable.dump());
  if (key == fileCheckKey_) return;  // checked, or being checked
  fileCheckKey_ = key;
  fileProblem_.clear();
  fileCheckDone_ = false;
  if (fileCheck_->state() != QProcess::NotRunning) {
    fileCheck_->disconnect(this);
    fileCheck_->kill();
    fileCheck_->waitForFinished(1000);
  }
  // The design as a run reads it (absolute paths), handed over in a file of its own.
  if (!checkDir_) checkDir_ = std::make_unique<QTemporaryDir>();
  const QString path = checkDir_->filePath(QStringLiteral("design-check.json"));
  QFile f(path);
  const QByteArray text = QByteArray::fromStdString(runnable.dump(2));
  if (!checkDir_->isValid() || !f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size()) {
    fileCheckDone_ = true;  // cannot check here: the run will
    return;
  }
  f.close();
  connect(fileCheck_, &QProcess::finished, this, [this, key, path](int code, QProcess::ExitStatus status) {
    fileCheck_->disconnect(this);
    if (key != fileCheckKey_) return;  // an answer for a design since edited
    fileCheckDone_ = true;
    if (status == QProcess::NormalExit && code == 2)
      fileProblem_ = commandError(QJsonDocument::fromJson(fileCheck_->readAllStandardOutput()).object(), code)
                         .replace(path, file_.isEmpty() ? tr("the design") : QFileInfo(file_).fileName());
    validate();  // the status, Run and the planner follow the answer
  });
  fileCheck_->start(engine_, {QStringLiteral("validate"), path, QStringLiteral("--json")});
}

}  // namespace pm::ui
