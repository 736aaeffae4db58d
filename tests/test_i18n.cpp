// The interface in Simplified Chinese: the language chosen from --lang, the saved choice and the
// system's; the window's menus, views, messages and tour drawn from the zh_CN translation, with
// no label or button cut short; and a screenshot of every view in Chinese (build/screenshots/
// zh_CN) for a person to look at.
#include <QAbstractButton>
#include <QCheckBox>
#include <QDir>
#include <QFontDatabase>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "gui_fixture.h"
#include "session/teaching_util.h"
#include "shell/i18n.h"
#include "shell/tour.h"
#include "views/attention/attention_view.h"
#include "views/view.h"
#include "widgets/widgets.h"

using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

const QString kTinyModel = QStringLiteral(ATTNVIZ_TEST_DATA "/nlp_tiny.safetensors");

// What the zh_CN translation says for `source` in MainWindow's context.
QString zh(const char* source) {
  return QCoreApplication::translate("attnviz::gui::MainWindow", source);
}

bool hasHan(const QString& s) {
  for (const QChar c : s)
    if (c.unicode() >= 0x4E00 && c.unicode() <= 0x9FFF) return true;
  return false;
}

// The visible labels and buttons of `root` whose text does not fit their widget (as the English
// suites measure it: the text's advance against the room the widget gives it).
QStringList clippedTexts(QWidget* root) {
  QStringList out;
  for (QLabel* l : root->findChildren<QLabel*>()) {
    if (!l->isVisibleTo(root) || l->wordWrap() || l->text().isEmpty() || !l->pixmap().isNull())
      continue;
    if (auto* fit = qobject_cast<FitLabel*>(l)) {
      // A FitLabel hides a text that does not fit instead of cutting it: drawn means whole.
      if (!fit->fullyShown() &&
          fit->fontMetrics().horizontalAdvance(fit->text()) <= fit->contentsRect().width())
        out << fit->text();
      continue;
    }
    if (Qt::mightBeRichText(l->text())) continue;
    const QString text = QString(l->text()).remove(QLatin1Char('&'));
    int longest = 0;
    for (const QString& line : text.split(QLatin1Char('\n')))
      longest = std::max(longest, l->fontMetrics().horizontalAdvance(line));
    const int room = l->contentsRect().width() - 2 * l->margin() - l->indent();
    if (longest > room)
      out << QStringLiteral("label “%1”: %2 > %3 px").arg(text).arg(longest).arg(room);
  }
  for (QAbstractButton* b : root->findChildren<QAbstractButton*>()) {
    if (!b->isVisibleTo(root) || b->text().isEmpty()) continue;
    if (!qobject_cast<QPushButton*>(b) && !qobject_cast<QCheckBox*>(b)) continue;
    // A button's size hint is its text, icon and frame: a narrower button cuts the text.
    if (b->width() < b->sizeHint().width())
      out << QStringLiteral("button “%1”: %2 < %3 px")
                 .arg(b->text())
                 .arg(b->width())
                 .arg(b->sizeHint().width());
  }
  return out;
}

}  // namespace

class I18nTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase();
  void languageIsChosen();
  void menusComeFromTheTranslation();
  void viewsAndMessagesAreTranslated();
  void tourIsTranslated();
  void chineseGlyphsHaveAFont();
  void everyViewInChinese();
  void cleanupTestCase();
};

void I18nTest::initTestCase() {
  QCoreApplication::setOrganizationName(QStringLiteral("attnviz-test-i18n"));
  QCoreApplication::setApplicationName(QStringLiteral("test_i18n"));
  QVERIFY(availableLanguages().contains(QStringLiteral("zh_CN")));
  // The tests' fonts are the bundled ones (tests/fonts.conf.in); a CJK font of the machine
  // (CMake's ATTNVIZ_CJK_FONT: fonts-wqy-microhei or fonts-noto-cjk) is added for the Han glyphs.
  const QString cjk = QStringLiteral(ATTNVIZ_CJK_FONT);
  if (!cjk.isEmpty()) QVERIFY2(QFontDatabase::addApplicationFont(cjk) >= 0, qPrintable(cjk));
  QVERIFY(installTranslators(QStringLiteral("zh_CN")));
  QCOMPARE(currentLanguage(), QStringLiteral("zh_CN"));
}

void I18nTest::cleanupTestCase() {
  QVERIFY(installTranslators(QStringLiteral("en")));
}

void I18nTest::languageIsChosen() {
  // --lang first, in any spelling of Simplified Chinese; an unknown code is English.
  QCOMPARE(chooseLanguage(QStringLiteral("zh_CN"), QStringLiteral("en")), QStringLiteral("zh_CN"));
  QCOMPARE(matchLanguage(QStringLiteral("zh-CN")), QStringLiteral("zh_CN"));
  QCOMPARE(matchLanguage(QStringLiteral("zh_CN.UTF-8")), QStringLiteral("zh_CN"));
  QCOMPARE(matchLanguage(QStringLiteral("zh-Hans-CN")), QStringLiteral("zh_CN"));
  QCOMPARE(matchLanguage(QStringLiteral("en_GB.UTF-8")), QStringLiteral("en"));
  QCOMPARE(matchLanguage(QStringLiteral("fr_FR")), QString());
  QCOMPARE(chooseLanguage(QStringLiteral("fr"), QString()), QStringLiteral("en"));
  // Then the saved choice, then the system's: LANGUAGE's list, else the locale variables.
  const QByteArray saved[] = {qgetenv("LANGUAGE"), qgetenv("LC_ALL"), qgetenv("LC_MESSAGES"),
                              qgetenv("LANG")};
  qunsetenv("LC_ALL");
  qunsetenv("LC_MESSAGES");
  qputenv("LANGUAGE", "de_DE:zh_CN:en");
  qputenv("LANG", "de_DE.UTF-8");
  QCOMPARE(chooseLanguage(QString(), QStringLiteral("en")), QStringLiteral("en"));
  QCOMPARE(chooseLanguage(QString(), QString()), QStringLiteral("zh_CN"));
  qunsetenv("LANGUAGE");
  qputenv("LANG", "zh_CN.UTF-8");
  QCOMPARE(chooseLanguage(QString(), QString()), QStringLiteral("zh_CN"));
  qputenv("LC_ALL", "C");
  QCOMPARE(chooseLanguage(QString(), QString()), QStringLiteral("en"));
  const char* names[] = {"LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"};
  for (int i = 0; i < 4; ++i) {
    if (saved[i].isNull())
      qunsetenv(names[i]);
    else
      qputenv(names[i], saved[i]);
  }
  QCOMPARE(languageDisplayName(QStringLiteral("zh_CN")), QStringLiteral("简体中文"));
}

void I18nTest::menusComeFromTheTranslation() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QStringList titles;
  for (QAction* a : w->menuBar()->actions()) titles << a->text();
  QVERIFY2(titles.contains(QStringLiteral("文件(&F)")), qPrintable(titles.join(' ')));
  QVERIFY2(titles.contains(QStringLiteral("视图(&V)")), qPrintable(titles.join(' ')));
  // One Help menu: the tour finds the translated one.
  QCOMPARE(titles.count(QStringLiteral("帮助(&H)")), 1);
  QCOMPARE(w->action(QStringLiteral("openModel")) ? w->action(QStringLiteral("openModel"))->text()
                                                  : zh("&Open model…"),
           zh("&Open model…"));
  QCOMPARE(zh("&Open model…"), QStringLiteral("打开模型(&O)…"));
  // View › Language lists both, the one in use checked; choosing one says it applies at the next
  // start and keeps the window as it is.
  auto* lang = w->findChild<QMenu*>(QStringLiteral("languageMenu"));
  QVERIFY(lang);
  QCOMPARE(lang->title(), QStringLiteral("语言(&L)"));
  QAction* zh_action = w->findChild<QAction*>(QStringLiteral("language-zh_CN"));
  QAction* en_action = w->findChild<QAction*>(QStringLiteral("language-en"));
  QVERIFY(zh_action && en_action);
  QVERIFY(zh_action->isChecked());
  QCOMPARE(en_action->text(), QStringLiteral("English"));
  const QString src = w->sourceEdit()->text();
  en_action->trigger();
  auto* box = w->findChild<QMessageBox*>(QStringLiteral("languageRestartBox"));
  QVERIFY(box);
  QVERIFY2(box->text().contains(QStringLiteral("--lang en")), qPrintable(box->text()));
  QVERIFY(hasHan(box->text()));
  box->close();
  QCOMPARE(w->sourceEdit()->text(), src);
  QCOMPARE(currentLanguage(), QStringLiteral("zh_CN"));
}

void I18nTest::viewsAndMessagesAreTranslated() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  // A view's tab and heading.
  QCOMPARE(w->attentionView()->title(), QStringLiteral("注意力"));
  QCOMPARE(w->tabs()->tabText(w->tabs()->indexOf(w->attentionView())), QStringLiteral("注意力"));
  QCOMPARE(w->attentionView()->explanation()->findChild<QAbstractButton*>()
               ? w->attentionView()->explanation()->findChild<QAbstractButton*>()->text()
               : QString(),
           QStringLiteral("我在看什么？"));
  // The explanation the core writes (model/explanations.h, through base/translate.h).
  const QString explained = w->attentionView()->explanation()->html();
  QVERIFY2(explained.contains(QStringLiteral("缩放点积注意力")), qPrintable(explained));
  QVERIFY2(explained.contains(QStringLiteral("形状")), qPrintable(explained));
  // The heatmap's tooltip.
  const QString tip = w->attentionView()->heatmap()->tooltipText(0, 1);
  QVERIFY2(tip.contains(QStringLiteral("第 1 行")), qPrintable(tip));
  // An error message: a file that is no model.
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("bad.safetensors"));
  QFile f(bad);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("\x10\x00\x00\x00\x00\x00\x00\x00{not json at all", 24);
  f.close();
  QVERIFY(w->engine()->loadModel(bad));
  QVERIFY(idle(*w));
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Error);
  QVERIFY2(hasHan(w->messageBar()->title()), qPrintable(w->messageBar()->title()));
  // A message the GUI words itself (a batch of one sentence), translated through
  // QT_TRANSLATE_NOOP("attnviz::Error").
  QCOMPARE(messageSentence("a batch needs at least two sentences (one per line)"),
           QStringLiteral("一批至少需要两个句子（每行一个）。"));
  // Nothing cut short at the default size (and the measure does see a cut: a label too narrow).
  QWidget probe;
  auto* narrow = new QLabel(QStringLiteral("注意力 · 掩码 · 位置编码"), &probe);
  narrow->setGeometry(0, 0, 30, 20);
  probe.show();
  QCOMPARE(clippedTexts(&probe).size(), 1);
  QCoreApplication::processEvents();
  const QStringList clipped = clippedTexts(w.get());
  QVERIFY2(clipped.isEmpty(), qPrintable(clipped.join(QStringLiteral("\n"))));
  // Nor in presentation mode (large fonts for a projector).
  w->setPresentationMode(true);
  QCoreApplication::processEvents();
  const QStringList clipped_large = clippedTexts(w.get());
  QVERIFY2(clipped_large.isEmpty(), qPrintable(clipped_large.join(QStringLiteral("\n"))));
  w->setPresentationMode(false);
}

void I18nTest::tourIsTranslated() {
  auto w = showWindow(false);
  QVERIFY(startAndWait(*w));
  Tour* tour = w->findChild<Tour*>(QStringLiteral("tour"));
  QVERIFY(tour);
  QVERIFY(hasHan(w->action(QStringLiteral("tour"))->text()));
  w->action(QStringLiteral("tour"))->trigger();
  QTRY_VERIFY_WITH_TIMEOUT(tour->ready(), 60000);
  QVERIFY(hasHan(tour->panel()->nextButton()->text()));
  QVERIFY(hasHan(tour->panel()->endButton()->text()));
  // Every step: its title and text in Chinese, its buttons whole.
  for (int i = 0; i < tour->count(); ++i) {
    if (i > 0) {
      tour->panel()->nextButton()->click();
      QTRY_VERIFY_WITH_TIMEOUT(tour->ready() && tour->current() == i, 60000);
    }
    QVERIFY2(hasHan(tour->panel()->titleLabel()->text()), qPrintable(QString::number(i)));
    QVERIFY2(hasHan(tour->panel()->textLabel()->text()), qPrintable(QString::number(i)));
    const QStringList clipped = clippedTexts(tour->panel());
    QVERIFY2(clipped.isEmpty(), qPrintable(clipped.join(QStringLiteral("\n"))));
  }
  tour->panel()->endButton()->click();
}

void I18nTest::chineseGlyphsHaveAFont() {
  if (QStringLiteral(ATTNVIZ_CJK_FONT).isEmpty())
    QSKIP(
        "no CJK font on this machine (scripts/install-deps.sh installs fonts-wqy-microhei): "
        "Chinese text draws as boxes");
  QVERIFY(!QFontDatabase::families(QFontDatabase::SimplifiedChinese).isEmpty());
}

void I18nTest::everyViewInChinese() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const QString dir = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/zh_CN");
  QVERIFY(QDir().mkpath(dir));
  for (View* v : w->views()) {
    w->setCurrentView(v->name());
    QVERIFY(settle(*w));
    v->refreshNow();
    QCoreApplication::processEvents();
    QVERIFY2(hasHan(w->tabs()->tabText(w->tabs()->indexOf(v))), qPrintable(v->name()));
    const QStringList clipped = clippedTexts(v);
    QVERIFY2(clipped.isEmpty(),
             qPrintable(v->name() + QStringLiteral(": ") + clipped.join(QStringLiteral("\n"))));
    QVERIFY(w->grab().save(dir + QStringLiteral("/%1.png").arg(v->name())));
  }
}

QTEST_MAIN(I18nTest)
#include "test_i18n.moc"
