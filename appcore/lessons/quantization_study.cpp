// The quantization lesson's measurement on its own thread (see quantization_study.h).
#include "appcore/lessons/quantization_study.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "engine/common/error.h"

namespace q = pagedchat::quantize;

namespace {
std::string readText(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    throw pagedchat::Error(QObject::tr("The text %1 is missing (Debian's licence texts are read for this lesson).").arg(path).toStdString());
  return f.readAll().toStdString();
}
}  // namespace

QuantizationStudy::QuantizationStudy(QObject* parent) : QObject(parent) {}

QuantizationStudy::~QuantizationStudy() = default;  // the worker cancels and waits

void QuantizationStudy::cancel() { m_worker.cancel(); }

void QuantizationStudy::start(const Request& r) {
  m_worker.start([this, r](const std::atomic<bool>& cancel, const WorkerThread::Post& post, const WorkerThread::Post& finish) {
    int lastPosted = -1;
    try {
      const auto type = q::file_type_from_name(r.type.toStdString());
      if (!type) throw pagedchat::Error("unknown type " + r.type.toStdString());
      q::ComparisonOptions o;
      o.source_path = r.model.toStdString();
      o.work_dir = r.workDir.toStdString();
      o.calibration_text = readText(r.calibrationText);
      o.calibration_name = QFileInfo(r.calibrationText).fileName().toStdString();
      o.heldout_text = readText(r.heldOutText);
      o.types = {*type};
      o.calibration_chunks = r.calibrationChunks;
      o.heldout_tokens = r.heldOutTokens;
      o.num_threads = r.threads;
      QDir().mkpath(r.workDir);
      auto result = std::make_shared<const q::QualityComparison>(q::compare_quantizations(o, [&](const q::ComparisonProgress& p) {
        const int step = static_cast<int>(p.fraction * 100);  // at most every 1%
        if (step == lastPosted) return;
        lastPosted = step;
        const QString stage = QString::fromStdString(p.stage);
        const double fraction = p.fraction;
        post([this, stage, fraction] { emit progress(stage, fraction); });
      }, &cancel));
      finish([this, result] { emit ended({result, {}}); });
    } catch (const std::exception& e) {
      const QString message = cancel.load() ? QStringLiteral("cancelled") : QString::fromUtf8(e.what());
      finish([this, message] { emit ended({nullptr, message}); });
    }
  });
}
