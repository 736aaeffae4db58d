// Opening a user's own checkpoint through the GUI's open path — Engine::loadModel, then the answers
// dialog or the refusal of unknown names, then the load — with the dialog answered here: each
// tutorial checkpoint of tools/make_tutorial_checkpoints.py (the test command's fixture) asks at
// most the head count, the activation and the special ids; the padding id is a field, checked
// against the vocabulary; a model of the user's own names opens with a names map.
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "arch/weights.h"
#include "compute/cpu_backend.h"
#include "gui_fixture.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "session/engine.h"
#include "shell/answers_dialog.h"
#include "widgets/widgets.h"

using namespace attnviz;
using attnviz::gui::AnswersDialog;
using attnviz::gui::MessageBar;
using namespace gui_fixture;

namespace {

const QString kTinyModel = QStringLiteral(ATTNVIZ_TEST_DATA "/nlp_tiny.safetensors");

QString tutorialsDir() {
  return QString::fromLocal8Bit(qgetenv("ATTNVIZ_TUTORIALS_DIR"));
}

nlohmann::json tutorialCase(const std::string& name) {
  std::ifstream in(tutorialsDir().toStdString() + "/cases.json");
  if (!in) return {};
  for (const auto& c : nlohmann::json::parse(in))
    if (c["case"] == name) return c;
  return {};
}

QString tutorialPath(const nlohmann::json& c) {
  return tutorialsDir() + QLatin1Char('/') + QString::fromStdString(c["path"].get<std::string>());
}

// Opens the tiny model, then `path` as File › Open does, waiting for both: returns the tiny model
// (which stays while the dialog asks or the refusal is shown), or null when a load did not run.
const Model* openAfterTinyModel(MainWindow& w, const QString& path) {
  if (!w.engine()->loadModel(kTinyModel) || !idle(w)) return nullptr;
  const Model* before = w.engine()->model();
  if (!w.engine()->loadModel(path) || !idle(w)) return nullptr;
  return before;
}

// The dialog the window opened for the last load, once it is there.
AnswersDialog* waitForDialog(MainWindow& w) {
  for (int i = 0; i < 200 && w.findChildren<AnswersDialog*>().isEmpty(); ++i) QTest::qWait(10);
  const auto all = w.findChildren<AnswersDialog*>();
  return all.isEmpty() ? nullptr : all.front();
}

QPushButton* okButton(AnswersDialog* d) {
  return d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
}

// Answers a dialog without keeping the answers beside the file (the fixture's files are shared
// with test_tutorials, which checks what they ask).
void answer(AnswersDialog* d, const nlohmann::json& supplied) {
  d->findChild<QCheckBox*>()->setChecked(false);
  if (supplied.contains("n_heads")) {
    auto* heads = qobject_cast<QComboBox*>(d->field(QStringLiteral("n_heads")));
    QVERIFY(heads);
    const int at = heads->findData(supplied["n_heads"].get<int>());
    QVERIFY(at > 0);
    heads->setCurrentIndex(at);
  }
  if (supplied.contains("activation")) {
    QVERIFY(d->activationField());
    d->activationField()->setCurrentIndex(d->activationField()->findData(
        QString::fromStdString(supplied["activation"].get<std::string>())));
  }
}

// A character model's meta.pkl as nanoGPT's prepare.py pickles it (protocol 4: {'itos': {i: char,
// …}}): the characters ' ' + i.
void writeMetaPkl(const QString& path, int characters) {
  std::ofstream out(path.toStdString(), std::ios::binary);
  out << "\x80\x04}(\x8c\x04itos}(";
  for (int i = 0; i < characters; ++i) out << 'K' << char(i) << "\x8c\x01" << char(' ' + i);
  out << "uu.";
}

// The fields a dialog shows: its questions and what it offers to change.
std::set<std::string> fieldsShown(AnswersDialog* d) {
  std::set<std::string> keys;
  for (const char* key : {"n_heads", "bos_id", "eos_id", "pad_id"})
    if (d->field(QString::fromLatin1(key))) keys.insert(key);
  if (d->normField()) keys.insert("norm");
  if (d->activationField()) keys.insert("activation");
  return keys;
}

}  // namespace

class GuiOpenTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase() { window_.reset(); }
  void tutorialsAskLittle_data();
  void tutorialsAskLittle();
  void paddingIdField();
  void characterVocabulary();
  void namesMap();
  void vocabularyFile();

 private:
  std::unique_ptr<MainWindow> window_;
};

void GuiOpenTest::initTestCase() {
  if (tutorialsDir().isEmpty())
    QSKIP(
        "ATTNVIZ_TUTORIALS_DIR is not set: run through CTest, whose fixture writes the "
        "checkpoints with PyTorch (tools/make_tutorial_checkpoints.py)");
  QVERIFY2(!tutorialCase("annotated").is_null(), "the tutorial cases were not written");
  window_ = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QVERIFY(window_->engine()->hasModel());
  QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR));
}

void GuiOpenTest::tutorialsAskLittle_data() {
  // case, what the dialog asks (its questions), the fields it may show besides; none: no dialog.
  QTest::addColumn<QString>("name");
  QTest::addColumn<QStringList>("asks");
  QTest::addColumn<QStringList>("offers");
  QTest::newRow("nanoGPT") << "nanogpt" << QStringList() << QStringList();
  QTest::newRow("minGPT") << "mingpt" << QStringList{"n_heads"} << QStringList{"activation"};
  QTest::newRow("ng-video-lecture") << "ngvideo" << QStringList() << QStringList();
  QTest::newRow("Annotated Transformer")
      << "annotated" << QStringList{"n_heads"} << QStringList{"pad_id"};
  QTest::newRow("LLMs from scratch") << "raschka" << QStringList{"n_heads"} << QStringList();
  QTest::newRow("llama2.c") << "llama2c" << QStringList() << QStringList();
  QTest::newRow("Hugging Face GPT-2") << "hf_gpt2" << QStringList() << QStringList();
  QTest::newRow("Hugging Face BERT") << "hf_bert" << QStringList() << QStringList();
  QTest::newRow("Hugging Face Llama") << "hf_llama" << QStringList() << QStringList();
}

void GuiOpenTest::tutorialsAskLittle() {
  QFETCH(QString, name);
  QFETCH(QStringList, asks);
  QFETCH(QStringList, offers);
  const nlohmann::json c = tutorialCase(name.toStdString());
  QVERIFY2(!c.is_null(), qPrintable(name));
  const QString path = tutorialPath(c);
  MainWindow& w = *window_;
  const Model* before = openAfterTinyModel(w, path);
  QVERIFY(before);
  if (!asks.isEmpty()) {
    AnswersDialog* d = waitForDialog(w);
    QVERIFY2(d, qPrintable(w.messageBar()->text()));
    QCOMPARE(w.engine()->model(), before);  // nothing replaced while asking
    // The questions are exactly the case's; the rest offered is the activation or the padding id
    // only — never a command-line flag, never the norm of a model whose names tell it.
    std::set<std::string> questions;
    for (const char* key : {"n_heads", "bos_id", "eos_id"})
      if (d->field(QString::fromLatin1(key))) questions.insert(key);
    std::set<std::string> want_questions, want_all;
    for (const QString& a : asks) want_questions.insert(a.toStdString());
    want_all = want_questions;
    for (const QString& o : offers) want_all.insert(o.toStdString());
    QVERIFY(questions == want_questions);
    QVERIFY(fieldsShown(d) == want_all);
    QVERIFY(!okButton(d)->isEnabled());  // the heads are not guessed
    if (name == QLatin1String("mingpt")) {
      // minGPT's NewGELU is preselected: the tanh approximation.
      QCOMPARE(d->activationField()->currentData().toString(), QStringLiteral("gelu_tanh"));
      d->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/open-mingpt.png"));
    }
    answer(d, c["supplied"]);
    if (QTest::currentTestFailed()) return;
    QVERIFY(okButton(d)->isEnabled());
    d->accept();
    QVERIFY(idle(w));
  }
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  QVERIFY2(w.engine()->model() != before, qPrintable(w.messageBar()->text()));
  const ModelConfig& got = w.engine()->model()->config();
  QCOMPARE(got.family, c["family"].get<std::string>());
  // Every case of the fixture has two layers and four heads of width 8 (d_model 32).
  QCOMPARE(got.hasEncoder() ? got.n_encoder_layers : got.n_decoder_layers, 2);
  if (got.hasCross()) QCOMPARE(got.n_decoder_layers, 2);
  QCOMPARE(got.n_heads, 4);
  QCOMPARE(got.d_model, 32);
  QVERIFY(!QFile::exists(path + QStringLiteral(".attnviz.json")));
}

void GuiOpenTest::paddingIdField() {
  // The Annotated Transformer pads with <blank>, id 2: the dialog proposes it; an id outside the
  // smaller vocabulary (the target's 28 tokens) keeps Open disabled and says why; another id is
  // the one the model masks.
  const nlohmann::json c = tutorialCase("annotated");
  const QString path = tutorialPath(c);
  MainWindow& w = *window_;
  auto open = [&]() -> AnswersDialog* {
    if (!w.engine()->loadModel(path) || !idle(w)) return nullptr;
    return waitForDialog(w);
  };
  AnswersDialog* d = open();
  QVERIFY(d);
  QSpinBox* pad = d->padField();
  QVERIFY(pad);
  QCOMPARE(pad->value(), 2);
  answer(d, c["supplied"]);
  QVERIFY(okButton(d)->isEnabled());
  QVERIFY(d->problem().isEmpty());
  pad->setValue(28);
  QVERIFY(!okButton(d)->isEnabled());
  QVERIFY2(d->problem().contains(QStringLiteral("Padding token's id: 28")) &&
               d->problem().contains(QStringLiteral("28 tokens (0 to 27)")),
           qPrintable(d->problem()));
  d->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/open-padding-id.png"));
  pad->setValue(3);
  QVERIFY(okButton(d)->isEnabled());
  QVERIFY(d->problem().isEmpty());
  d->accept();
  QVERIFY(idle(w));
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  QVERIFY2(w.engine()->hasModel(), qPrintable(w.messageBar()->text()));
  const ModelConfig& chosen = w.engine()->model()->config();
  QCOMPARE(chosen.family, std::string("annotated-transformer"));
  QCOMPARE(chosen.src_pad_id, 3);
  QCOMPARE(chosen.tgt_pad_id, 3);

  // Left as proposed, the tutorial's id is the one used.
  d = open();
  QVERIFY(d);
  QCOMPARE(d->padField()->value(), 2);
  answer(d, c["supplied"]);
  d->accept();
  QVERIFY(idle(w));
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  QCOMPARE(w.engine()->model()->config().src_pad_id, 2);
  QCOMPARE(w.engine()->model()->config().tgt_pad_id, 2);

  // A model without padding (minGPT: a language model) shows no padding field.
  d = nullptr;
  QVERIFY(w.engine()->loadModel(tutorialPath(tutorialCase("mingpt"))));
  QVERIFY(idle(w));
  QVERIFY((d = waitForDialog(w)) != nullptr);
  QVERIFY(!d->padField());
  d->reject();
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
}

void GuiOpenTest::characterVocabulary() {
  // A character model's meta.pkl (nanoGPT's prepare.py: itos, stoi, vocab_size) given in the
  // dialog's vocabulary field: the model then reads typed text one character a token.
  const nlohmann::json c = tutorialCase("mingpt");
  QVERIFY(!c.is_null());
  const QString path = tutorialPath(c);
  QTemporaryDir dir;
  const int V = 41;  // the fixture's minGPT: a token table of 41 rows
  writeMetaPkl(dir.filePath(QStringLiteral("meta.pkl")), V);
  MainWindow& w = *window_;
  const Model* before = openAfterTinyModel(w, path);
  QVERIFY(before);
  AnswersDialog* d = waitForDialog(w);
  QVERIFY(d);
  answer(d, c["supplied"]);
  d->vocabularyField(false)->setText(dir.filePath(QStringLiteral("meta.pkl")));
  d->accept();
  QVERIFY2(d->problem().isEmpty(), qPrintable(d->problem()));
  QVERIFY(idle(w));
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  QVERIFY2(w.engine()->model() != before, qPrintable(w.messageBar()->text()));
  const auto& vocab = w.engine()->model()->config().tgt_vocab;
  QCOMPARE((int)vocab.size(), V);
  QCOMPARE(vocab[1], std::string("!"));
  const auto tok = w.engine()->model()->loaded().tokenizer;
  QVERIFY(tok);
  QCOMPARE(tok->encodeTarget("#!"), (std::vector<int>{3, 1}));
}

void GuiOpenTest::namesMap() {
  // minGPT's checkpoint with its blocks renamed (transformer.blocks.N.{norm1,attn.qkv,…}): its
  // names follow no architecture. Refused, naming the closest one and the roles it lacks, with
  // "Open with a names map…"; a wrong map is refused naming its file and what is wrong, the
  // refusal still shown; the right map asks the heads and opens a model that computes what
  // minGPT's computes.
  const nlohmann::json c = tutorialCase("mingpt");
  const std::string original = tutorialPath(c).toStdString();
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("own.safetensors"));
  {
    const std::pair<const char*, const char*> renames[] = {
        {"transformer.h.", "transformer.blocks."},
        {".ln_1.", ".norm1."},
        {".attn.c_attn.", ".attn.qkv."},
        {".attn.c_proj.", ".attn.proj."},
        {".ln_2.", ".norm2."},
        {".mlp.c_fc.", ".mlp.fc1."},
        {".mlp.c_proj.", ".mlp.fc2."},
        {".attn.bias", ".attn.mask"}};
    std::vector<NamedTensor> renamed;
    for (NamedTensor t : floatTensors(*openTensorFile(original))) {
      for (const auto& [from, to] : renames)
        if (size_t at = t.name.find(from); at != std::string::npos)
          t.name.replace(at, strlen(from), to);
      renamed.push_back(std::move(t));
    }
    writeSafetensors(path.toStdString(), renamed, {});
  }
  auto writeMap = [&](const QString& name, const QByteArray& text) {
    const QString file = dir.filePath(name);
    QFile f(file);
    if (f.open(QIODevice::WriteOnly)) f.write(text);
    return file;
  };
  const QString good = writeMap(QStringLiteral("names.json"), R"({
      "architecture": "decoder-only", "activation": "gelu_tanh", "norm": "pre",
      "names": {"token_embd": "transformer.wte.weight", "position_embd": "transformer.wpe.weight",
                "attn_norm": "transformer.blocks.{N}.norm1",
                "attn_qkv": "transformer.blocks.{N}.attn.qkv",
                "attn_output": "transformer.blocks.{N}.attn.proj",
                "ffn_norm": "transformer.blocks.{N}.norm2",
                "ffn_up": "transformer.blocks.{N}.mlp.fc1",
                "ffn_down": "transformer.blocks.{N}.mlp.fc2",
                "output_norm": "transformer.ln_f", "output": "lm_head"},
      "ignore": ["transformer.blocks.{N}.attn.mask"]})");
  const QString wrong_role = writeMap(QStringLiteral("wrong-role.json"),
                                      R"({"names": {"attn_query": "transformer.blocks.{N}.q"}})");
  const QString not_json = writeMap(QStringLiteral("not-json.json"), "{\"names\": ");

  MainWindow& w = *window_;
  const Model* before = openAfterTinyModel(w, path);
  QVERIFY(before);
  QCOMPARE(w.engine()->model(), before);
  QTest::qWait(20);
  QVERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  MessageBar* bar = w.messageBar();
  QCOMPARE(bar->level(), MessageBar::Level::Error);
  const QString refusal = bar->text();
  QVERIFY2(refusal.contains(QStringLiteral("Closest: ")) &&
               refusal.contains(QStringLiteral("attn_qkv (transformer.h.0.attn.c_attn.weight)")),
           qPrintable(refusal));
  QVERIFY2(!refusal.contains(QStringLiteral("--names")), qPrintable(refusal));  // no CLI words
  QVERIFY(bar->actionButton()->isVisibleTo(bar));
  QCOMPARE(bar->actionButton()->text(), QStringLiteral("Open with a names map…"));
  QVERIFY(w.action(QStringLiteral("openModelNames")));
  bar->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/open-names-refused.png"));

  // A map that is not JSON, and one with a role that is none: the file and the problem named,
  // the model's refusal kept below, the offer to choose another map kept.
  QVERIFY(!w.openWithNamesMap(path, not_json));
  QCOMPARE(bar->level(), MessageBar::Level::Error);
  QVERIFY2(bar->text().contains(QStringLiteral("not-json.json")), qPrintable(bar->text()));
  QVERIFY(!w.openWithNamesMap(path, wrong_role));
  QVERIFY2(bar->text().contains(QStringLiteral("wrong-role.json")) &&
               bar->text().contains(QStringLiteral("\"attn_query\", which is not a role")) &&
               bar->text().contains(QStringLiteral("Closest: ")),
           qPrintable(bar->text()));
  QVERIFY(bar->actionButton()->isVisibleTo(bar));
  bar->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/open-names-map-error.png"));
  QCOMPARE(w.engine()->model(), before);

  // The right map: the heads are asked (the names cannot tell them), then it opens.
  QVERIFY(w.openWithNamesMap(path, good));
  QVERIFY(idle(w));
  AnswersDialog* d = waitForDialog(w);
  QVERIFY2(d, qPrintable(bar->text()));
  QVERIFY(d->field(QStringLiteral("n_heads")));
  answer(d, nlohmann::json{{"n_heads", 4}});
  d->accept();
  QVERIFY(idle(w));
  QTRY_VERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  QVERIFY2(w.engine()->model() != before, qPrintable(bar->text()));
  const ModelConfig& got = w.engine()->model()->config();
  QCOMPARE(got.family, std::string("custom"));
  QCOMPARE(got.n_decoder_layers, 2);
  QCOMPARE(got.n_heads, 4);
  // The same logits as minGPT's checkpoint opened as minGPT.
  LoadOptions o;
  o.supplied.n_heads = 4;
  Model want(loadModel(original, o), makeCpuBackend());
  const Inputs in{{}, {}, {{3, 40, 12, 7, 25, 1, 33}}};
  const Trace a = want.forward(in), b = w.engine()->model()->forward(in);
  QCOMPARE(b.logits.dense().shape, a.logits.dense().shape);
  float worst = 0;
  for (size_t i = 0; i < a.logits.dense().data.size(); ++i)
    worst = std::max(worst, std::abs(a.logits.dense().data[i] - b.logits.dense().data[i]));
  QVERIFY2(worst < 1e-5f, qPrintable(QString::number(worst)));
}

void GuiOpenTest::vocabularyFile() {
  // File › Use a vocabulary file…: nanoGPT's checkpoint opens without a question, so the dialog
  // never offers its vocabulary field; the action opens it again with a meta.pkl. A model whose
  // config names its vocabulary (the bundled ones) is told so, and a file that is not a
  // vocabulary is refused naming it; the model shown stays.
  MainWindow& w = *window_;
  QVERIFY(w.engine()->loadModel(kTinyModel) && idle(w));
  QAction* act = w.action(QStringLiteral("vocabularyFile"));
  QVERIFY(act && !act->isEnabled());
  QTemporaryDir dir;
  const QString meta = dir.filePath(QStringLiteral("meta.pkl"));
  writeMetaPkl(meta, 30);
  QVERIFY(!w.openWithVocabulary(meta));
  QVERIFY2(w.messageBar()->text().contains(QStringLiteral("names its vocabulary")),
           qPrintable(w.messageBar()->text()));

  const nlohmann::json c = tutorialCase("nanogpt");
  QVERIFY(!c.is_null());
  QVERIFY(w.engine()->loadModel(tutorialPath(c)) && idle(w));
  QVERIFY(w.findChildren<AnswersDialog*>().isEmpty());
  const Model* ids_only = w.engine()->model();
  QVERIFY(ids_only && !ids_only->loaded().tokenizer);
  QVERIFY(act->isEnabled());
  const QString bad = dir.filePath(QStringLiteral("bad.pkl"));
  {
    std::ofstream out(bad.toStdString(), std::ios::binary);
    out << "not a pickle";
  }
  QVERIFY(!w.openWithVocabulary(bad));
  QVERIFY2(w.messageBar()->text().contains(QStringLiteral("bad.pkl")),
           qPrintable(w.messageBar()->text()));
  QCOMPARE(w.engine()->model(), ids_only);

  QVERIFY(w.openWithVocabulary(meta));
  QVERIFY(idle(w));
  const Model* m = w.engine()->model();
  QVERIFY(m != ids_only && m->loaded().tokenizer);
  QCOMPARE(m->config().tgt_vocab[1], std::string("!"));
  QCOMPARE(m->loaded().tokenizer->encodeTarget("!#"), (std::vector<int>{1, 3}));
}

QTEST_MAIN(GuiOpenTest)
#include "test_gui_open.moc"
