// Quantizing a model on its own thread (see model_quantization.h).
#include "appcore/library/model_quantization.h"

#include <QDir>
#include <QFileInfo>

#include <fstream>
#include <sstream>

#include "engine/common/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/quantize/calibration.h"
#include "engine/quantize/model_quantizer.h"
#include "engine/quantize/quantize_rows.h"
#include "models/model_summary.h"

namespace q = pagedchat::quantize;

ModelQuantization::ModelQuantization(QObject* parent) : QObject(parent) {}

ModelQuantization::~ModelQuantization() = default;  // the worker cancels and waits

QString ModelQuantization::defaultOutput(const QString& source, const QString& type, const QString& modelsDir) {
  QString stem = QFileInfo(source).completeBaseName();
  for (const char* marker : {"-F32", "-F16", "-BF16", ".F32", ".F16", ".BF16"}) {
    if (stem.endsWith(QLatin1String(marker), Qt::CaseInsensitive)) {
      stem.chop(static_cast<int>(qstrlen(marker)));
      break;
    }
  }
  return QDir(modelsDir).filePath(stem + "-" + type + ".gguf");
}

QList<QPair<QString, QString>> ModelQuantization::fileTypes() {
  QList<QPair<QString, QString>> out;
  for (const auto& info : q::file_types())
    out.append({QString::fromLatin1(info.name.data(), static_cast<int>(info.name.size())),
                QString::fromUtf8(info.description.data(), static_cast<int>(info.description.size()))});
  return out;
}

QString ModelQuantization::requantizeWarning(const QString& source) {
  try {
    const auto file = pagedchat::GgufFile::open(source.toStdString());
    for (const auto& t : file.tensors()) {
      if (t.shape.size() < 2) continue;
      if (!q::is_quantized(t.type)) continue;
      // The file's own name for its mix ("Q4_K_M"), as the library lists it.
      const auto summary = pagedchat::models::summarize_model(source.toStdString());
      return tr("This model is already quantized (%1). Quantizing it again loses more than quantizing its "
                "16-bit original, if you have it.")
          .arg(QString::fromStdString(summary.quantization));
    }
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

void ModelQuantization::cancel() { m_worker.cancel(); }

void ModelQuantization::start(const Request& r) {
  m_worker.start([this, r](const std::atomic<bool>& cancel, const WorkerThread::Post& post, const WorkerThread::Post& finish) {
    const std::atomic<bool>* flag = &cancel;
    // Progress is posted at most every 1/10 %, so the UI thread is not flooded.
    int lastPosted = -1;
    auto report = [&](const QString& stage, double fraction) {
      const int step = static_cast<int>(fraction * 1000);
      if (step == lastPosted) return;
      lastPosted = step;
      post([this, stage, fraction] { emit progress(stage, fraction); });
    };
    try {
      const auto type = q::file_type_from_name(r.type.toStdString());
      if (!type) throw pagedchat::Error("unknown type " + r.type.toStdString());
      q::QuantizeOptions o;
      o.source_path = r.source.toStdString();
      o.output_path = r.output.toStdString();
      o.file_type = *type;
      o.allow_requantize = r.allowRequantize;
      o.num_threads = r.threads;
      QDir().mkpath(QFileInfo(r.output).absolutePath());  // PagedChat's models folder may not exist yet
      q::ImportanceMatrix importance;
      q::HessianSet hessians;
      if (r.gptq && r.calibrationText.isEmpty()) throw pagedchat::Error("a GPTQ-style pass needs a calibration text");
      const double measured_share = r.calibrationText.isEmpty() ? 0.0 : 0.4;
      if (!r.calibrationText.isEmpty()) {
        std::ifstream in(r.calibrationText.toStdString(), std::ios::binary);
        if (!in) throw pagedchat::Error("cannot read the calibration text " + r.calibrationText.toStdString());
        std::stringstream text;
        text << in.rdbuf();
        report(tr("Loading the model to measure which weights matter"), 0.0);
        auto model = pagedchat::Model::load(o.source_path);
        q::CalibrationOptions c;
        c.max_chunks = r.calibrationChunks;
        c.num_threads = r.threads;
        c.hessians = r.gptq;
        c.dataset_name = QFileInfo(r.calibrationText).fileName().toStdString();
        q::Calibration measured = q::calibrate(*model, text.str(), c, [&](const q::CalibrationProgress& p) {
          report(tr("Measuring importance: chunk %1 of %2 (perplexity %3)").arg(p.chunk).arg(p.num_chunks).arg(p.perplexity, 0, 'f', 2),
                 measured_share * p.chunk / p.num_chunks);
        }, flag);
        importance = std::move(measured.importance);
        hessians = std::move(measured.hessians);
        if (r.gptq) o.hessians = &hessians;
        o.importance = &importance;
        o.importance_path = "measured on " + c.dataset_name;
      }
      const auto summary = q::quantize_model(o, [&](const q::QuantizeProgress& p) {
        const double done = p.source_bytes_total ? double(p.source_bytes_done) / double(p.source_bytes_total) : 0.0;
        report(tr("Writing %1 (%2 of %3)").arg(QString::fromStdString(p.tensor_name)).arg(p.tensor + 1).arg(p.num_tensors),
               measured_share + (1.0 - measured_share) * done);
      }, flag);
      const auto checked = pagedchat::models::summarize_model(o.output_path);
      const QString text =
          tr("%1: %2 (%3 bits per weight)%4")
              .arg(r.type, QString::fromStdString(pagedchat::models::format_bytes(summary.output_bytes)))
              .arg(8.0 * double(summary.output_bytes) / double(summary.num_elements), 0, 'f', 2)
              .arg(checked.supported ? QString() : tr("; this build cannot run it: %1").arg(QString::fromStdString(checked.problem)));
      const QString path = r.output;
      finish([this, path, text] { emit finished(path, text); });
    } catch (const std::exception& e) {
      if (flag->load()) {
        finish([this] { emit cancelled(); });
        return;
      }
      const QString message = QString::fromUtf8(e.what());
      finish([this, message] { emit failed(message); });
    }
  });
}
