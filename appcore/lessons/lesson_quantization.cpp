// The quantization lesson: the user's model rounded to Q3_K_M plainly, weighted by an importance
// matrix and GPTQ-style, each read against the original on a held-out text
// (quantization_study.h); each Next event shows one way's result, the last being the key.
#include "appcore/lessons/lesson_runner.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include "appcore/lessons/next_signal.h"

#include "appcore/session/app_session.h"
#include "appcore/session/pool_control.h"

namespace {
// Past this the three quantizations and four readings of the text take minutes on a laptop.
constexpr qint64 kLargestModelBytes = qint64{1536} << 20;

}  // namespace

QCoro::Task<bool> LessonRunner::studyQuantization(int generation) {
  QPointer<LessonRunner> self(this);
  const QString model = userModel();
  if (model.isEmpty() || !QFileInfo::exists(model)) {
    setState(State::failed, tr("Load a model first: this lesson quantizes the model you chat with."));
    co_return false;
  }
  if (QFileInfo(model).size() > kLargestModelBytes) {
    setState(State::failed, tr("%1 is %2 MB: quantizing it three ways and reading a text with each would take minutes. "
                               "Load a smaller model (the default SmolLM2-135M) for this lesson.")
                                .arg(QFileInfo(model).fileName())
                                .arg(QFileInfo(model).size() >> 20));
    co_return false;
  }
  if (!m_study) {
    m_study = new QuantizationStudy(this);
    connect(m_study, &QuantizationStudy::progress, this, [this](const QString& stage, double fraction) {
      if (m_state == State::preparing)
        setState(State::preparing, tr("Quantizing your model three ways: %1 (%2%)").arg(stage).arg(qRound(fraction * 100)));
    });
  }
  if (m_study->isRunning()) {  // an earlier start's: cancelled, and its end awaited
    auto ended = nextSignal(m_study, &QuantizationStudy::ended, kTurnTimeout);
    m_study->cancel();
    co_await std::move(ended);
    if (!self || generation != m_generation) co_return false;
  }
  setState(State::preparing, tr("Quantizing your model three ways…"));
  QuantizationStudy::Request r;
  r.model = model;
  r.workDir = QDir(QStandardPaths::writableLocation(QStandardPaths::CacheLocation)).filePath(QStringLiteral("quantization-lesson"));
  auto ended = nextSignal(m_study, &QuantizationStudy::ended, std::chrono::minutes(20));
  m_study->start(r);
  const auto outcome = co_await std::move(ended);
  if (!self || generation != m_generation) co_return false;
  if (!outcome || !outcome->result) {
    setState(State::failed, tr("The quantization could not be measured: %1").arg(outcome ? outcome->error : tr("it took too long")));
    co_return false;
  }
  m_quantization = outcome->result;
  m_quantizationShown = 0;
  emit quantizationShownChanged(m_quantization, 0);
  co_return true;
}

void LessonRunner::showNextVariant() {
  if (!m_quantization || (m_state != State::ready && m_state != State::reached)) return;
  const int n = static_cast<int>(m_quantization->variants.size());
  if (m_quantizationShown >= n) {
    if (m_state == State::reached)
      setState(State::finished, tr("Every way's result is on the chart. Start again to measure it again, or pick another lesson."));
    return;
  }
  const QString line = variantSentence(m_quantizationShown++);
  m_lastSentence = line;
  emit sentence(line);
  emit quantizationShownChanged(m_quantization, m_quantizationShown);
  if (m_quantizationShown == n)
    setState(State::reached, tr("That was the lesson's key event: the three files are the same size, only where their rounding "
                                "error lands differs."));
}

QString LessonRunner::variantSentence(int i) const {
  const auto& r = *m_quantization;
  const auto& v = r.variants[static_cast<size_t>(i)];
  const auto& plain = r.variants.front();
  const auto& p = r.channels;
  const auto share = p.error_of(static_cast<size_t>(i));
  const double error = share.total, loudShare = share.total > 0 ? share.loud / share.total : 0;
  const QString type = QString::fromLatin1(pagedchat::quantize::file_type_info(v.type).name.data());
  const QString tensor = QString::fromStdString(p.tensor);
  const QString measured =
      tr("on the held-out text its next-token distributions are KL %1 from the original's (the mean over %2 positions), it "
         "picks the original's top token %3% of the time, and its perplexity is %4 against the original's %5")
          .arg(v.mean_kl, 0, 'f', 3)
          .arg(r.positions)
          .arg(100.0 * v.top1, 0, 'f', 1)
          .arg(v.perplexity, 0, 'f', 2)
          .arg(r.reference_perplexity, 0, 'f', 2);
  if (v.gptq)
    return tr("GPTQ-style: each block of a row's columns is rounded in turn, and its error moved onto the columns not yet "
              "rounded, as far as the activations' correlations (X^T X, measured on the calibration text) let them cancel it: "
              "%1 (%2% of plain rounding's KL). In %3 its output error is %4 (plain: %5). The three files are the same size, "
              "%6 bits a weight: only where the rounding error lands differs.")
        .arg(measured)
        .arg(qRound(100.0 * v.mean_kl / plain.mean_kl))
        .arg(tensor)
        .arg(error, 0, 'g', 2)
        .arg(p.error_of(0).total, 0, 'g', 2)
        .arg(v.bits_per_weight, 0, 'f', 2);
  if (v.importance)
    return tr("Weighted by the importance matrix (each input channel's mean square activation, summed as the engine read the "
              "calibration text): the rounding spends its precision where an error costs the most, AWQ's observation; %1 "
              "(%2% of plain rounding's KL). In %3 the output error falls to %4 from %5; the loudest channels now carry %6% "
              "of it.")
        .arg(measured)
        .arg(qRound(100.0 * v.mean_kl / plain.mean_kl))
        .arg(tensor)
        .arg(error, 0, 'g', 2)
        .arg(p.error_of(0).total, 0, 'g', 2)
        .arg(100.0 * loudShare, 0, 'f', 1);
  return tr("Plain rounding to %1, llama.cpp's search, every weight's error counted alike (%2 bits a weight): %3. In %4 the "
            "loudest %5 of its %6 input channels (red) carry %7% of the rounding's output error: a few channels meet large "
            "activations, so their weights' errors cost the most.")
      .arg(type)
      .arg(v.bits_per_weight, 0, 'f', 2)
      .arg(measured)
      .arg(tensor)
      .arg(p.loud_count())
      .arg(p.activation.size())
      .arg(100.0 * loudShare, 0, 'f', 1);
}
