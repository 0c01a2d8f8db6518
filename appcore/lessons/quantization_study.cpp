// The quantization lesson's measurement on its own thread (see quantization_study.h).
#include "appcore/lessons/quantization_study.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QThread>

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

QuantizationStudy::~QuantizationStudy() {
  if (m_thread) {
    m_cancel->store(true);
    m_thread->wait();
    delete m_thread;
  }
}

void QuantizationStudy::cancel() {
  if (m_cancel) m_cancel->store(true);
}

void QuantizationStudy::finish() {
  if (!m_thread) return;
  m_thread->wait();
  delete m_thread;
  m_thread = nullptr;
}

void QuantizationStudy::start(const Request& r) {
  if (m_thread) return;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  QPointer<QuantizationStudy> self(this);
  auto flag = m_cancel;
  auto post = [self](auto f) {
    QMetaObject::invokeMethod(self.data(), [self, f] {
      if (self) f(*self);
    }, Qt::QueuedConnection);
  };
  m_thread = QThread::create([r, flag, post] {
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
        const int step = static_cast<int>(p.fraction * 100);
        if (step == lastPosted) return;
        lastPosted = step;
        const QString stage = QString::fromStdString(p.stage);
        const double fraction = p.fraction;
        post([stage, fraction](QuantizationStudy& s) { emit s.progress(stage, fraction); });
      }, flag.get()));
      post([result](QuantizationStudy& s) {
        s.finish();
        emit s.ended({result, {}});
      });
    } catch (const std::exception& e) {
      const QString message = flag->load() ? QStringLiteral("cancelled") : QString::fromUtf8(e.what());
      post([message](QuantizationStudy& s) {
        s.finish();
        emit s.ended({nullptr, message});
      });
    }
  });
  m_thread->start();
}
