// Quantize… in the model library, as a user goes through it: a model picked in the list, a
// type chosen, Quantize; the new file appears in PagedChat's models folder and in the list as
// a model that runs here. An already-quantized source is named as such and needs "Quantize it
// anyway"; Cancel during the importance measurement leaves nothing; a name that exists is
// refused before anything starts; the GPTQ-style correction needs a calibration text and writes
// a file that opens.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTreeWidget>

#include "appcore/library/model_quantization.h"
#include "engine/gguf/gguf_file.h"
#include "models/model_paths.h"
#include "models/model_summary.h"
#include "tests/support/test_env.h"
#include "ui/library/model_library_dialog.h"
#include "ui/library/model_list_widget.h"
#include "ui/library/quantize_dialog.h"

namespace {

QTreeWidgetItem* rowEndingWith(ModelListWidget* list, const QString& name) {
  for (int i = 0; i < list->topLevelItemCount(); ++i)
    if (list->topLevelItem(i)->data(0, ModelListWidget::kPathRole).toString().endsWith(name)) return list->topLevelItem(i);
  return nullptr;
}

template <typename T>
T* child(QWidget* w, const char* name) {
  return w->findChild<T*>(QString::fromLatin1(name));
}

}  // namespace

class TestQuantizeDialog : public QObject {
  Q_OBJECT
  QTemporaryDir m_home;
  QString m_folder, m_modelsDir, m_source;

 private slots:
  void initTestCase() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    qputenv("HOME", m_home.path().toLocal8Bit());
    for (const char* v : {"XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS", "PAGEDCHAT_MODEL"})
      qunsetenv(v);
    m_folder = m_home.filePath("my-models");
    m_modelsDir = QString::fromStdString(pagedchat::models_dir());  // PagedChat's own folder, under this HOME
    QVERIFY(QDir().mkpath(m_folder));
    QVERIFY(QDir().mkpath(m_modelsDir));
    m_source = m_folder + "/SmolLM2-135M-Instruct.Q4_1.gguf";
    QVERIFY(QFile::link(QString::fromStdString(model), m_source));
  }

  void aModelQuantizedInTheLibraryIsListedAndRuns() {
    ModelLibraryDialog lib({m_folder}, {}, QString(), m_modelsDir);
    lib.show();
    ModelListWidget* list = lib.modelList();
    QTRY_VERIFY_WITH_TIMEOUT(!list->isScanning() && rowEndingWith(list, "SmolLM2-135M-Instruct.Q4_1.gguf"), 10000);
    list->setCurrentItem(rowEndingWith(list, "SmolLM2-135M-Instruct.Q4_1.gguf"));
    auto* quantizeButton = child<QPushButton>(&lib, "libraryQuantize");
    QVERIFY(quantizeButton && quantizeButton->isEnabled());
    QuantizeDialog* dialog = lib.openQuantize(list->selectedPath());
    QVERIFY(dialog && dialog->isVisible());

    // Q4_1 is quantized already: said, and Quantize waits for "Quantize it anyway".
    auto* warning = child<QLabel>(dialog, "quantizeWarning");
    QVERIFY(warning->isVisible());
    QVERIFY2(warning->text().contains("already quantized (Q4_1)"), qPrintable(warning->text()));
    auto* start = child<QPushButton>(dialog, "quantizeStart");
    QVERIFY(!start->isEnabled());
    auto* anyway = child<QCheckBox>(dialog, "quantizeAnyway");
    QVERIFY2(anyway->isVisible(), "the way past the warning must be there to click");
    QTest::mouseClick(anyway, Qt::LeftButton, {}, QPoint(8, anyway->height() / 2));  // on the box itself
    QVERIFY(anyway->isChecked());
    QVERIFY(start->isEnabled());

    dialog->setType("Q8_0");
    const QString out = m_modelsDir + "/SmolLM2-135M-Instruct.Q4_1-Q8_0.gguf";
    QCOMPARE(dialog->outputPath(), out);
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY(!start->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(dialog->message().startsWith("Done."), 60000);
    QVERIFY2(dialog->message().contains("Q8_0"), qPrintable(dialog->message()));
    QVERIFY(QFile::exists(out));
    QVERIFY(!QFile::exists(out + ".part"));
    QCOMPARE(child<QProgressBar>(dialog, "quantizeProgress")->value(), 1000);
    // Listed, from PagedChat's own folder, as a model that runs here.
    QTRY_VERIFY_WITH_TIMEOUT(!list->isScanning() && rowEndingWith(list, "Q4_1-Q8_0.gguf"), 10000);
    QTreeWidgetItem* row = rowEndingWith(list, "Q4_1-Q8_0.gguf");
    QVERIFY2(row->text(ModelListWidget::kRuns).startsWith("yes"), qPrintable(row->text(ModelListWidget::kRuns)));
    QCOMPARE(row->text(ModelListWidget::kQuantization), QString("Q8_0"));

    // The next run is offered a free name; one that exists is refused before anything starts.
    QCOMPARE(dialog->outputPath(), m_modelsDir + "/SmolLM2-135M-Instruct.Q4_1-Q8_0-2.gguf");
    dialog->findChild<QLineEdit*>("quantizeOutput")->setText(out);
    QTest::mouseClick(start, Qt::LeftButton);
    QVERIFY2(dialog->message().contains("exists already"), qPrintable(dialog->message()));
    QVERIFY(!dialog->job()->isRunning());
    dialog->close();
  }

  // With a calibration text the importance is measured first; Cancel then stops it and
  // nothing is written.
  void cancelWhileMeasuringLeavesNothing() {
    QuantizeDialog dialog(m_source, m_modelsDir);
    dialog.show();
    child<QCheckBox>(&dialog, "quantizeAnyway")->setChecked(true);
    dialog.setType("Q4_K_M");
    dialog.setCalibrationText("/usr/share/common-licenses/GPL-3");
    QSignalSpy progress(dialog.job(), &ModelQuantization::progress);
    dialog.start();
    QTRY_VERIFY_WITH_TIMEOUT(dialog.message().startsWith("Measuring importance"), 60000);
    QTest::mouseClick(child<QPushButton>(&dialog, "quantizeCancel"), Qt::LeftButton);
    QVERIFY2(dialog.message().startsWith("Cancelling"), qPrintable(dialog.message()));  // said at once
    QVERIFY(!child<QPushButton>(&dialog, "quantizeCancel")->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(dialog.message(), QString("Cancelled; nothing was written."), 60000);
    QVERIFY(!QFile::exists(dialog.outputPath()));
    QVERIFY(!QFile::exists(dialog.outputPath() + ".part"));
    QVERIFY(!progress.isEmpty());
  }

  // The GPTQ-style correction: refused without a calibration text, said before anything starts;
  // with one, the file is written, its header names the pass, and it opens as a model here.
  void gptqCorrectionNeedsATextAndWritesARunnableFile() {
    QuantizeDialog dialog(m_source, m_modelsDir);
    dialog.show();
    child<QCheckBox>(&dialog, "quantizeAnyway")->setChecked(true);
    dialog.setType("Q3_K_M");
    child<QCheckBox>(&dialog, "quantizeGptq")->setChecked(true);
    dialog.start();
    QVERIFY2(dialog.message().contains("needs a calibration text"), qPrintable(dialog.message()));
    QVERIFY(!dialog.job()->isRunning());
    // Under the sanitizers the pass runs 4-7 times slower: an eighth of the text (its first 4 KB,
    // about a thousand tokens) keeps it inside the timeout there.
    QString calibration = "/usr/share/common-licenses/GPL-3";
    if (pagedchat::test::sanitized()) {
      QFile whole(calibration), part(m_home.filePath("calibration.txt"));
      QVERIFY(whole.open(QIODevice::ReadOnly) && part.open(QIODevice::WriteOnly));
      QCOMPARE(part.write(whole.read(4096)), qint64{4096});
      calibration = part.fileName();
    }
    dialog.setCalibrationText(calibration);
    const QString out = dialog.outputPath();
    dialog.start();
    QTRY_VERIFY_WITH_TIMEOUT(dialog.message().startsWith("Done."), 240000);
    const pagedchat::GgufFile file = pagedchat::GgufFile::open(out.toStdString());
    QVERIFY2(file.find("quantize.gptq") && file.find("quantize.imatrix.file"), "the header names both");
    QVERIFY(pagedchat::models::summarize_model(out.toStdString()).supported);
  }
};

QTEST_MAIN(TestQuantizeDialog)
#include "test_quantize_dialog.moc"
